// The prefill step's one check (SPEC §5.3-§5.6): see prefill_step.h.
#include <string>

#include "properties/ops/prefill/prefill_step.h"

namespace kvcheck::props {

Verdict check_prefill(const Backend& backend, const PrefillScenario& s, unsigned which) {
  Verdict v;
  if (std::string why; !backend.capabilities().supports_property_op("prefill", &why)) {
    v.skipped = "prefill: the backend has " + why;
    return v;
  }
  const unsigned mine = s.store_before_load ? kPrefillStoreBeforeLoadFailsIffOverlap : kPrefillSeesExactlyItsWindow;
  if (!(which & mine)) return v;
  const std::string report = run_prefill_step(s, backend);
  if (!s.store_before_load) {
    v.failure = report;
  } else {
    // The order rule made observable: the wrong order fails exactly when it must.
    const bool overlap = store_overlaps_visible_history(s);
    if (overlap && report.empty())
      v.failure = "store before load overwrote a visible history slot, yet the check passed\n";
    if (!overlap && !report.empty()) v.failure = "store before load overlaps no visible history, yet: " + report;
  }
  if (!v.failure.empty()) v.failure = "op=prefill backend=" + std::string(backend.name()) + "\n" + v.failure;
  return v;
}

}  // namespace kvcheck::props
