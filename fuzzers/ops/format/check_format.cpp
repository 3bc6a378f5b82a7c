// format target (SPEC §2, §3): the input decoded by decode_format, checked by the format
// and layout properties' own check (properties/ops/format/format_check.h) with every invariant:
// validation of arbitrary fields, derived sizes against the SPEC §2 formulas, impl/layout
// against reference/layout, resolve_format against the table.
#include "fuzzers/checks.h"
#include "properties/ops/format/format_check.h"

namespace kvcheck::fuzz {

CheckResult check_format(const uint8_t* data, size_t size, const Backend&) {
  return decode_and_check(data, size, decode_format, [](const auto& s) { return props::check_format(s); });
}

}  // namespace kvcheck::fuzz
