// numerics target (SPEC §4): the input decoded by decode_numerics, checked by the
// numerics properties' own check (properties/ops/numerics/numerics_check.h) with both invariants:
// the reference conversions against NVIDIA's host conversions, and quantize_group /
// dequantize against the SPEC §4.1-4.4 formulas.
#include "fuzzers/checks.h"
#include "properties/ops/numerics/numerics_check.h"

namespace kvcheck::fuzz {

CheckResult check_numerics(const uint8_t* data, size_t size, const Backend&) {
  return decode_and_check(data, size, decode_numerics, [](const auto& s) { return props::check_numerics(s); });
}

}  // namespace kvcheck::fuzz
