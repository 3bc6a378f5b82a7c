// The one check of the numerics operation (SPEC §4): the numerics properties
// (numerics_props.cpp) call it for the invariant each states; the numerics fuzz
// target, its replay and `kvcheck explain` for both. The host oracle unit tests
// (tests/numerics_oracle_test.cpp) stay separate.
#pragma once

#include "properties/gen/ops/numerics/numerics_gen.h"
#include "properties/harness.h"

namespace kvcheck::props {

enum NumericsInvariant : unsigned {
  // For each float: reference cvt_e4m3, cvt_e2m1, float_to_bf16_rn (NaN -> 0x7FFF),
  // e4m3/e2m1 decoding of its low byte and ceil_log2 (x > 0, exact by doubles) equal
  // NVIDIA's host conversions. Without cuda_fp8.h at build time: decode/encode
  // consistency and ceil_log2 only.
  kNumericsConversions = 1u << 0,
  // The group: reference quantize_group (codes and scale bytes) and dequantize of every
  // code equal SPEC §4.1-4.4 written out here with NVIDIA's conversions (without the
  // headers: with the reference's conversions, so the formulas are still checked).
  kNumericsGroupMatchesSpec = 1u << 1,
  kNumericsAll = 0x3u,
};
/// "" in Verdict::failure when the selected invariants hold, else
/// "op=numerics (...)" and one line per violation. Host code only: nothing is skipped.
Verdict check_numerics(const NumericsScenario& s, unsigned invariants = kNumericsAll);
/// Whether NVIDIA's host conversions (cuda_fp8.h, cuda_fp4.h, cuda_bf16.h) are the
/// oracle in this build.
bool numerics_oracle_is_nvidia();

}  // namespace kvcheck::props
