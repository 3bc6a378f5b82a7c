// The scenario type of the format/layout operation (SPEC §2 validation and derived
// sizes, §3 layout offsets, resolve_format) and its one builder. The builder draws
// through a Source (source.h), so it is both the RapidCheck generator (gen_* below) and
// the fuzz decoder (fuzzers/ops/format/decode_format.cpp: the builder on the input bytes).
#pragma once

#include <rapidcheck.h>

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "impl/format.h"
#include "properties/gen/source.h"

namespace kvcheck::props {

/// One format case: a format (valid, or with fields changed so it may be invalid),
/// a cache geometry and a location in it for the offsets, and resolve_format inputs.
struct FormatScenario {
  KVCacheFormat format;         // valid, "<name>~mutated" (one field changed) or "fuzzed" (every field)
  int32_t block_size = 1;
  int64_t num_blocks = 1;       // the cache's blocks (1, 2, 1000, 70000 or 2^20)
  int64_t block = 0, token = 0;  // where offsets are checked: block < num_blocks, token < block_size
  CacheDtype dtype = CacheDtype::kUInt8;  // resolve_format(dtype, shape, sf)
  std::vector<int64_t> shape;   // rank 0-4; the last dimension names the record size
  int sf_choice = 0;            // 0: no sf_format given, else the SfFormat value
};

/// Which formats the builder draws.
enum class FormatFields {
  kValid,  // choose_format (gen/choices.h): table, BF16(8k), custom
  kAny,    // kValid, one field of it changed, or every field arbitrary (1 : 1 : 1)
};

/// The builder. Simplest case (an exhausted fuzz input): V41, block_size 1, one block,
/// offsets at (0, 0), resolve_format(uint8, [], no sf).
FormatScenario build_format_scenario(Source& src, FormatFields fields);

/// RapidCheck generators: the builder on an RcSource.
rc::Gen<FormatScenario> gen_format_scenario(FormatFields fields);

/// The one printer (RapidCheck counterexamples, fuzz reports, `kvcheck explain`):
/// "format scenario" then one line each for the fields, offsets and resolve inputs.
void showValue(const FormatScenario& s, std::ostream& os);
std::string describe(const FormatScenario& s);

}  // namespace kvcheck::props
