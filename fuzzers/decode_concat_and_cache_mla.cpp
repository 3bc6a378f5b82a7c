// Decoder of the concat_and_cache_mla target: the concat builder on the input bytes.
#include "fuzzers/decoders.h"

namespace kvcheck::fuzz {

props::StoreFaultScenario decode_concat_and_cache_mla(ByteSource& src) {
  props::StoreFaultScenario c;
  c.scenario = props::build_concat_scenario(src);
  props::StoreScenario& s = c.scenario;
  s.threads = 0;  // no work split: see decoders.h
  const int64_t kind = src.range(0, 7);  // 0-4: valid, 5-6: one fault, 7: raw slots
  if (kind == 5 || kind == 6) {
    props::inject_concat_fault(src, c);
  } else if (kind == 7) {
    const int64_t num_slots = int64_t{s.shape.num_blocks} * s.shape.block_size;
    s.slot_mapping = props::raw_slot_mapping(src, num_slots, static_cast<int64_t>(s.slot_mapping.size()));
    c.fault = "raw slot_mapping";
  }
  // The input's last bytes set the first kv values (kv_c, and k_pe's through the view or
  // its copy): libFuzzer aims at rounding boundaries as in the store target.
  for (size_t i = 0; i < s.kv.size() && src.remaining() >= 2; ++i) s.kv[i] = src.u16();
  return c;
}

}  // namespace kvcheck::fuzz
