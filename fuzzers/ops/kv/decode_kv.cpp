// Decoders of the store_kv and gather_kv targets: the K/V builders (properties/gen/
// kv_gen.h) on the input bytes, with the fuzz limits (kFuzzKvLimits: small buffers).
#include "fuzzers/decoders.h"
#include "properties/gen/gen_caps.h"

namespace kvcheck::fuzz {

props::StoreKvScenario decode_store_kv(ByteSource& src) {
  // What the input is for comes first (0-4: valid, 5-6: one fault, 7: raw values), so a
  // case whose shape spends most of the input (NVFP4's head_dim >= 16 rows) keeps the
  // invalid rates.
  const int64_t kind = src.range(0, 7);
  // 1 in 3 a fused RoPE of the key rows (docs/spec.md §8.4), when the backend takes one.
  const bool rope = (props::generator_caps().ops & KVCHECK_OP_STORE_KV_ROPE) && src.weighted({2, 1}) == 1;
  props::StoreKvScenario s = rope ? props::build_store_kv_rope_scenario(src, props::kFuzzKvLimits)
                                  : props::build_store_kv_scenario(src, props::kFuzzKvLimits);
  s.threads = 0;  // no work split: see decoders.h
  if (kind == 5 || kind == 6) (rope ? props::inject_store_kv_rope_fault : props::inject_store_kv_fault)(src, s);
  if (kind == 7) props::raw_store_kv(src, s);
  return s;
}

props::GatherKvScenario decode_gather_kv(ByteSource& src) {
  props::GatherKvScenario s = props::build_gather_kv_scenario(src, props::kFuzzKvLimits);
  s.threads = 0;
  const int64_t kind = src.range(0, 7);
  if (kind == 5 || kind == 6) props::inject_gather_kv_fault(src, s);
  if (kind == 7) props::raw_gather_kv(src, s);
  return s;
}

}  // namespace kvcheck::fuzz
