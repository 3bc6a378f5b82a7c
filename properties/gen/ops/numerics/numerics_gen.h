// The scenario type of the numerics operation (SPEC §4: the e4m3/e2m1/bf16 conversions,
// ceil_log2, one scale group's quantisation and dequantisation) and its one builder.
// The builder draws through a Source (source.h): it is the RapidCheck generator
// (gen_numerics_scenario) and the fuzz decoder (fuzzers/ops/numerics/decode_numerics.cpp).
#pragma once

#include <rapidcheck.h>

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "impl/format.h"
#include "properties/gen/source.h"

namespace kvcheck::props {

struct NumericsScenario {
  std::vector<uint32_t> floats;   // fp32 bit patterns for the scalar conversions (0-64)
  KVCacheFormat format;           // a quantised format: SPEC §2 table or custom (gen/choices.h)
  std::vector<bf16_bits> group;   // format.elements_per_sf values: one scale group
};

/// The builder: the format (table 3 : custom 1), the group's values (choose_value_mix;
/// zeros per group or per element; one group in four with its amax pinned where the
/// scale is an exact power of two), then up to 64 floats at 5 input bytes each (random
/// bits, a BF16 value, 2^k, or a conversion boundary of SPEC §4.5, within 2 ulp).
/// Simplest case (an exhausted fuzz input): V41, plain normal values, no floats.
NumericsScenario build_numerics_scenario(Source& src);

/// RapidCheck generator: the builder on an RcSource.
rc::Gen<NumericsScenario> gen_numerics_scenario();

/// The one printer (RapidCheck counterexamples, fuzz reports, `kvcheck explain`).
void showValue(const NumericsScenario& s, std::ostream& os);
std::string describe(const NumericsScenario& s);

}  // namespace kvcheck::props
