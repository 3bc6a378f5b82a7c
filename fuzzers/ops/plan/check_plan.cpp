// plan target (SPEC §5.3): host load plans, the input decoded by decode_plan and checked
// by the plan properties' own check (properties/metadata_checks.h) with every invariant:
// each append throws what the SPEC [decided] rules say and then leaves the builder
// unchanged, or appends the SPEC's segments; the plan expands to the per-row reference
// rows; SWA plans have exactly the SPEC's pieces (at most 3 per sequence) and window
// rows per sequence, compressed plans max(seqlen_k / ratio, 1). The backend is not
// involved (host code); it is accepted for the common signature.
#include "fuzzers/checks.h"
#include "properties/metadata_checks.h"

namespace kvcheck::fuzz {

CheckResult check_plan(const uint8_t* data, size_t size, const Backend&) {
  return decode_and_check(data, size, decode_plan,
                          [](const auto& s) { return props::Verdict{props::check_plan(s).failure, ""}; });
}

}  // namespace kvcheck::fuzz
