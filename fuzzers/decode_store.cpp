// Decoders of the store and round_trip targets: the store builder on the input bytes.
#include "fuzzers/decoders.h"

namespace kvcheck::fuzz {
namespace {

// The input's last bytes (what the builder left) set the first kv values directly, so
// libFuzzer can aim at rounding and saturation boundaries.
void steer_values(ByteSource& src, props::StoreScenario& s) {
  for (size_t i = 0; i < s.kv.size() && src.remaining() >= 2; ++i) s.kv[i] = src.u16();
}

}  // namespace

props::StoreFaultScenario decode_store(ByteSource& src) {
  props::StoreFaultScenario c;
  c.scenario = props::build_store_scenario(src, props::build_cache_shape(src));
  props::StoreScenario& s = c.scenario;
  s.threads = 0;  // no work split: see decoders.h
  const int64_t kind = src.range(0, 7);  // 0-4: valid, 5-6: one fault, 7: raw slots
  if (kind == 5 || kind == 6) {
    props::inject_store_fault(src, c);
  } else if (kind == 7) {
    const int64_t num_slots = int64_t{s.shape.num_blocks} * s.shape.block_size;
    s.slot_mapping = props::raw_slot_mapping(src, num_slots, static_cast<int64_t>(s.slot_mapping.size()));
    c.fault = "raw slot_mapping";
  }
  steer_values(src, s);
  return c;
}

props::StoreScenario decode_round_trip(ByteSource& src) {
  props::StoreScenario s = props::build_store_scenario(src, props::build_cache_shape(src));
  s.threads = 0;  // no work split: see decoders.h
  steer_values(src, s);
  return s;
}

}  // namespace kvcheck::fuzz
