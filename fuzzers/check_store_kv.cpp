// store_kv target (SPEC §7.4): reference and backend store into identical K/V buffers
// (pattern-filled, canary-framed, strided or one-allocation views); the whole buffers
// must agree bit for bit, an error must carry the same code on both sides and leave
// every byte unchanged.
#include <fuzzer/FuzzedDataProvider.h>

#include "fuzzers/checks.h"
#include "fuzzers/decoders.h"
#include "properties/kv_harness.h"

namespace kvcheck::fuzz {

CheckResult check_store_kv(const uint8_t* data, size_t size, const Backend& backend) {
  FuzzedDataProvider fdp(data, size);
  const props::StoreKvScenario s = decode_store_kv(fdp);
  CheckResult result{props::describe(s) + "\n", "", ""};
  const props::KvBuffers pristine(s.cache);
  props::KvBuffers ref_buf(s.cache), be_buf(s.cache);
  Outcome ref, be;
  if (const auto c = props::run_store_kv(nullptr, s, ref_buf, &ref.message)) ref.code = c;
  if (const auto c = props::run_store_kv(&backend, s, be_buf, &be.message)) be.code = c;
  if (be.code == ErrorCode::kUnsupported) {
    result.skipped = "store_kv: " + be.message;
    return result;
  }
  std::string& fail = result.failure;
  fail += compare_outcomes(ref, be, backend.name());
  if (!ref_buf.guards_intact()) fail += "reference wrote into the canary bands\n";
  if (!be_buf.guards_intact()) fail += "backend wrote into the canary bands\n";
  if (ref.code) {
    const std::string d = props::diff_kv_buffers(ref_buf, pristine.bytes, ref_buf.bytes);
    if (!d.empty()) fail += "reference changed the buffer although it threw:\n" + d + "\n";
  }
  if (be.code) {
    const std::string d = props::diff_kv_buffers(be_buf, pristine.bytes, be_buf.bytes);
    if (!d.empty()) fail += "backend changed the buffer although it threw:\n" + d + "\n";
  }
  if (!ref.code && !be.code) {
    const std::string d = props::diff_kv_buffers(be_buf, ref_buf.bytes, be_buf.bytes);
    if (!d.empty()) fail += "K/V buffer after store_kv differs (expected = reference):\n" + d + "\n";
  }
  if (!fail.empty()) fail = "op=store_kv backend=" + std::string(backend.name()) + "\n" + fail;
  return result;
}

}  // namespace kvcheck::fuzz
