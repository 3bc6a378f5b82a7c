// gather_kv target (SPEC §7.5): reference and backend gather from the same K/V
// buffers (arbitrary prior bytes: every FP8 code, NaN and Inf included) into
// identical pattern-filled outputs; both outputs must agree bit for bit, an error must
// carry the same code on both sides and leave the outputs unchanged, and the cache is
// never written.
#include <fuzzer/FuzzedDataProvider.h>

#include "fuzzers/checks.h"
#include "fuzzers/decoders.h"
#include "properties/kv_harness.h"

namespace kvcheck::fuzz {

CheckResult check_gather_kv(const uint8_t* data, size_t size, const Backend& backend) {
  FuzzedDataProvider fdp(data, size);
  const props::GatherKvScenario s = decode_gather_kv(fdp);
  CheckResult result{props::describe(s) + "\n", "", ""};
  const props::KvBuffers cache(s.cache), cache_before(s.cache);
  props::KvOutBuffers pristine(s), ref_out(s), be_out(s);
  Outcome ref, be;
  if (const auto c = props::run_gather_kv(nullptr, s, cache, ref_out, &ref.message)) ref.code = c;
  if (const auto c = props::run_gather_kv(&backend, s, cache, be_out, &be.message)) be.code = c;
  if (be.code == ErrorCode::kUnsupported) {
    result.skipped = "gather_kv: " + be.message;
    return result;
  }
  std::string& fail = result.failure;
  fail += compare_outcomes(ref, be, backend.name());
  if (cache.bytes != cache_before.bytes) fail += "the cache changed (gather_kv only reads it)\n";
  const int32_t h = s.cache.num_kv_heads, d = s.cache.head_dim;
  auto diff = [&](const props::KvOutBuffers& want, const props::KvOutBuffers& got) {
    return props::diff_kv_out("out_k", got.out_k, h, d, want.k, got.k) +
           props::diff_kv_out("out_v", got.out_v, h, d, want.v, got.v);
  };
  if (ref.code && !diff(pristine, ref_out).empty()) fail += "reference wrote although it threw:\n" + diff(pristine, ref_out) + "\n";
  if (be.code && !diff(pristine, be_out).empty()) fail += "backend wrote although it threw:\n" + diff(pristine, be_out) + "\n";
  if (!ref.code && !be.code && !diff(ref_out, be_out).empty())
    fail += "outputs differ (expected = reference):\n" + diff(ref_out, be_out) + "\n";
  if (!fail.empty()) fail = "op=gather_kv backend=" + std::string(backend.name()) + "\n" + fail;
  return result;
}

}  // namespace kvcheck::fuzz
