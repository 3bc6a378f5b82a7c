// Decoders of the store, concat_and_cache_mla and round_trip targets: the store and
// concat builders on the input bytes.
#include "fuzzers/decoders.h"
#include "properties/gen/gen_caps.h"

namespace kvcheck::fuzz {
namespace {

// The input's last bytes (what the builder left) set the first kv values directly, so
// libFuzzer can aim at rounding and saturation boundaries.
void steer_values(ByteSource& src, props::StoreScenario& s) {
  for (size_t i = 0; i < s.kv.size() && src.remaining() >= 2; ++i) s.kv[i] = src.u16();
}

// A drawn scenario made a case: no work split (see decoders.h); 0-4 valid, 5-6 one
// fault of `inject`, 7 raw slots; then the values steered.
props::StoreFaultScenario faulted(ByteSource& src, props::StoreScenario s,
                                  void (*inject)(props::Source&, props::StoreFaultScenario&)) {
  props::StoreFaultScenario c{std::move(s), "", std::nullopt};
  c.scenario.threads = 0;
  const int64_t kind = src.range(0, 7);
  if (kind == 5 || kind == 6) {
    inject(src, c);
  } else if (kind == 7) {
    props::StoreScenario& sc = c.scenario;
    const int64_t num_slots = int64_t{sc.shape.num_blocks} * sc.shape.block_size;
    sc.slot_mapping = props::raw_slot_mapping(src, num_slots, static_cast<int64_t>(sc.slot_mapping.size()));
    c.fault = "raw slot_mapping";
  }
  steer_values(src, c.scenario);  // kv_c, and k_pe's values through its view or copy
  return c;
}

}  // namespace

props::StoreFaultScenario decode_store(ByteSource& src) {
  return faulted(src, props::build_store_scenario(src, props::build_cache_shape(src)), props::inject_store_fault);
}

props::StoreFaultScenario decode_concat_and_cache_mla(ByteSource& src) {
  // 1 in 3 split caches (docs/spec.md §8.2), when the backend under test takes them; then
  // 1 in 3 a fused RoPE (§8.4, itself split half the time), when it takes that.
  const uint32_t ops = props::generator_caps().ops;
  const bool split = (ops & KVCHECK_OP_CONCAT_MLA_PE_CACHE) && src.weighted({2, 1}) == 1;
  if (!split && (ops & KVCHECK_OP_CONCAT_MLA_ROPE) && src.weighted({2, 1}) == 1)
    return faulted(src, props::build_concat_rope_scenario(src), props::inject_concat_rope_fault);
  return faulted(src, split ? props::build_concat_split_scenario(src) : props::build_concat_scenario(src),
                 props::inject_concat_fault);
}

props::StoreScenario decode_round_trip(ByteSource& src) {
  props::StoreScenario s = props::build_store_scenario(src, props::build_cache_shape(src));
  s.threads = 0;  // no work split: see decoders.h
  steer_values(src, s);
  return s;
}

}  // namespace kvcheck::fuzz
