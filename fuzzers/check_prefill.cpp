// prefill target (SPEC §5.3-§5.6): a small valid multi-sequence prefill step (short
// histories, seqlen_k < ratio, wrapping rings, chunks longer than the ring, BF16 and
// V41) run end to end by props::run_prefill_step on the backend; its report is the
// failure. One input in eight stores the chunk before loading the history: that must
// fail exactly when a stored slot holds a visible history token.
#include <fuzzer/FuzzedDataProvider.h>

#include "fuzzers/checks.h"
#include "fuzzers/decoders.h"
#include "properties/prefill_step.h"

namespace kvcheck::fuzz {

CheckResult check_prefill(const uint8_t* data, size_t size, const Backend& backend) {
  FuzzedDataProvider fdp(data, size);
  const PrefillFuzzScenario s = decode_prefill(fdp);
  CheckResult result{describe(s), "", ""};
  const BackendCapabilities caps = backend.capabilities();
  if (!caps.store_load || !caps.index_transforms) {
    result.skipped = "backend lacks store/load or index transforms";
    return result;
  }
  const std::string report = props::run_prefill_step(s.step, backend);
  if (!s.step.store_before_load) {
    result.failure = report;
  } else {
    const bool overlap = props::store_overlaps_visible_history(s.step);
    if (overlap && report.empty())
      result.failure = "store before load overwrote a visible history slot, yet the check passed\n";
    if (!overlap && !report.empty())
      result.failure = "store before load overlaps no visible history, yet: " + report;
  }
  if (!result.failure.empty())
    result.failure = "op=prefill backend=" + std::string(backend.name()) + "\n" + result.failure;
  return result;
}

}  // namespace kvcheck::fuzz
