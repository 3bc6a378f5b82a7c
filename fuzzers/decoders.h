// The fuzz decoders, one per target (fuzzers/decode_<target>.cpp): input bytes -> the
// scenario the target checks. None throws, every byte string is a valid input, and
// `kvcheck explain` and the corpus generator call the same functions, so a crash file
// always decodes to the scenario that crashed.
//
// store, load, round_trip: the builders of properties/gen/store_load_gen.h on a
// ByteSource (byte_reader.h) — the same code and types as the RapidCheck generators —
// plus what only a fuzzer needs: injected faults and raw values (invalid inputs), and the
// input's last bytes steering kv values. index, plan, format, numerics: the same, with
// the builders of properties/gen/index_gen.h, plan_gen.h, format_gen.h and
// numerics_gen.h (the numerics input's last bytes steer the group's values); their
// properties run the same builders and checks. store_kv, gather_kv: the K/V family's
// property types (properties/gen/kv_gen.h). prefill: props::PrefillScenario. These
// three read their bytes with FuzzedDataProvider, as their tracked corpora expect.
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzzers/byte_reader.h"
#include "impl/backend.h"
#include "impl/format.h"
#include "impl/load_plan.h"
#include "properties/gen/choices.h"
#include "properties/gen/format_gen.h"
#include "properties/gen/index_gen.h"
#include "properties/gen/kv_gen.h"
#include "properties/gen/numerics_gen.h"
#include "properties/gen/plan_gen.h"
#include "properties/gen/store_load_gen.h"
#include "properties/prefill_step.h"

class FuzzedDataProvider;

namespace kvcheck::fuzz {

using props::SplitMix64;

/// store: a scenario from the store builder; then, one input in four, an injected fault
/// (the property's injector: the expected code is known) and one in eight raw slots
/// (several errors: the backend must match the reference); the input's last bytes
/// overwrite the first kv values, so libFuzzer can steer values.
props::StoreFaultScenario decode_store(ByteSource& src);
/// load: a scenario from the load builder; one input in four a fault, one in eight raw
/// segments.
props::LoadFaultScenario decode_load(ByteSource& src);
/// round_trip: a valid store scenario (values steered as for store).
props::StoreScenario decode_round_trip(ByteSource& src);
/// The three drop the builder's work split (threads = 0): the cpu backend spawns its
/// threads per call, some 30 plain cases under ASan each, and inputs that split reach
/// new coverage, so libFuzzer keeps and mutates them until most of a run splits. The
/// multi-thread paths are the properties' (3 cases in 4 split; class floor 25%). They
/// never draw far kv rows either (ByteSource::huge_inputs() is false).

/// index: the index builder (properties/gen/index_gen.h) of a drawn op; one
/// convert_kv_index input in five gets an injected fault (its code known), one in five
/// raw values (the SPEC §5.5 rules decide).
props::IndexScenario decode_index(ByteSource& src);
/// plan: the plan builder (properties/gen/plan_gen.h) of a drawn mode, builder block
/// sizes huge or < 1 too (choose_builder_block_size); one append in five, and one
/// compressed / SWA input in five, made invalid by the properties' injectors.
props::PlanScenario decode_plan(ByteSource& src);

/// format: props::build_format_scenario with any fields (valid, one field changed,
/// arbitrary; gen/format_gen.h).
props::FormatScenario decode_format(ByteSource& src);
/// numerics: props::build_numerics_scenario; the bytes the builder left overwrite the
/// group's values, so libFuzzer can aim at rounding boundaries.
props::NumericsScenario decode_numerics(ByteSource& src);

/// Prefill-step scenario (SPEC §5.3-§5.6) for props::run_prefill_step: always valid
/// (distinct state ids, disjoint compressed block tables, distinct top-k per row).
struct PrefillFuzzScenario {
  props::PrefillScenario step;
};

PrefillFuzzScenario decode_prefill(FuzzedDataProvider& fdp);

/// The K/V family (SPEC §7): also invalid inputs (raw slots, table entries, scales,
/// strides, dtypes) so the error paths are fuzzed too. Caps keep one input small.
inline constexpr int64_t kMaxKvCacheElements = 1 << 17;  // per cache view
inline constexpr int32_t kMaxKvRows = 64;
inline constexpr int64_t kMaxKvRowElements = 1 << 16;  // rows * H * D
props::KvCacheShape decode_kv_cache_shape(FuzzedDataProvider& fdp);
props::StoreKvScenario decode_store_kv(FuzzedDataProvider& fdp);
props::GatherKvScenario decode_gather_kv(FuzzedDataProvider& fdp);

/// Readable multi-line descriptions, used in crash reports and `kvcheck explain`.
std::string describe(const PrefillFuzzScenario& s);

/// Helpers of the FuzzedDataProvider decoders. fdp_block_size: the shared block sizes
/// (props::kBlockSizes, then kOddBlockSizes) by index, one in ten random in [1, 300] —
/// the byte format their corpora were made with.
int32_t fdp_block_size(FuzzedDataProvider& fdp);
/// SPEC §6's awkward index values (num_slots / num_blocks added by the callers).
inline constexpr int32_t kAwkward[] = {-2, INT32_MIN, INT32_MAX, -1, 0};
std::string hex(uint32_t v, int width);

}  // namespace kvcheck::fuzz
