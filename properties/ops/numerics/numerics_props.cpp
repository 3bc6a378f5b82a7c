// Numerics properties (SPEC §4), each stating one invariant of the one numerics check
// (numerics_check.h) on scenarios of the one numerics builder (gen/ops/numerics/numerics_gen.h):
// the reference's scalar conversions and its per-group scale computation. Host
// properties: they test reference/, the oracle of every backend property.
#include <rapidcheck.h>

#include "properties/ops/numerics/numerics_check.h"
#include "properties/registry.h"

namespace kvcheck::props {
namespace {

template <unsigned Invariant>
void numerics_property(const Backend&) {
  require(check_numerics(*gen_numerics_scenario(), Invariant));
}

}  // namespace

void register_numerics_properties(Registry& r) {
  r.add({"prop_numerics_conversions_match_nvidia", "numerics",
         "reference cvt_e4m3, cvt_e2m1, float_to_bf16_rn, the e4m3/e2m1 decoders and ceil_log2 equal NVIDIA's host "
         "conversions on every fp32 (boundaries within 2 ulp, BF16 values, random bits)",
         false, numerics_property<kNumericsConversions>});
  r.add({"prop_numerics_group_matches_spec", "numerics",
         "reference quantize_group (codes, scale bytes) and dequantize of one group equal SPEC §4.1-4.4 written out "
         "with NVIDIA's conversions (amax ignoring NaN, margins, clamp, saturation)",
         false, numerics_property<kNumericsGroupMatchesSpec>});
}

}  // namespace kvcheck::props
