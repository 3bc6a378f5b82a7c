// The fuzz decoders, one per target (fuzzers/decode_<target>.cpp): input bytes -> the
// scenario the target checks. None throws, every byte string is a valid input, and
// `kvcheck explain` and the corpus generator call the same functions, so a crash file
// always decodes to the scenario that crashed.
//
// store, load, round_trip: the builders of properties/gen/store_load_gen.h on a
// ByteSource (byte_reader.h) — the same code and types as the RapidCheck generators —
// plus what only a fuzzer needs: injected faults and raw values (invalid inputs), and the
// input's last bytes steering kv values. format, numerics: the same, with the builders
// of properties/gen/format_gen.h and numerics_gen.h (the numerics input's last bytes
// steer the group's values). store_kv, gather_kv: the K/V family's property types
// (properties/gen/kv_gen.h). prefill: props::PrefillScenario. index, plan: fuzz-only
// types below (their properties draw inline). These three and the K/V pair read their
// bytes with FuzzedDataProvider, as their tracked corpora expect.
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
#include "properties/gen/kv_gen.h"
#include "properties/gen/numerics_gen.h"
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

/// format: props::build_format_scenario with any fields (valid, one field changed,
/// arbitrary; gen/format_gen.h).
props::FormatScenario decode_format(ByteSource& src);
/// numerics: props::build_numerics_scenario; the bytes the builder left overwrite the
/// group's values, so libFuzzer can aim at rounding boundaries.
props::NumericsScenario decode_numerics(ByteSource& src);

/// Index transform scenario (SPEC §5.5), one operation per input. Inputs are valid
/// (the reference assumes so) except when `invalid` names what was broken for
/// convert_kv_index (a -1 or missing table entry a valid index needs).
struct IndexScenario {
  enum class Op { kConvert, kCat, kExpand, kSwaDecode } op = Op::kConvert;
  int32_t num_q = 0;
  // convert_kv_index
  std::vector<int32_t> topk, block_table, seq_ids, context_lens;
  int32_t k = 0, max_blocks = 0, block_size = 1;
  // kv_index_cat
  std::vector<int32_t> left, right;
  int32_t wl = 0, wr = 0, total_k_swa_cached = 0, total_k_swa_cur = 0;
  // expand_swa_index (pivots) / swa_decode_index (start_len)
  std::vector<int32_t> pivots, start_len;
  int32_t width = 0, ring_size = 1;
  std::string invalid;  // "" = valid input
};

/// One BlockLoadPlanBuilder call (SPEC §5.3). Fields by kind: segment (a = block,
/// b = src_begin, c = src_end), zero fill (a = num_tokens), paged range (b = token_begin,
/// c = token_end over `table`), ring range (a = state_id, b = begin, c = end).
struct PlanOp {
  enum class Kind { kSegment, kZeroFill, kPaged, kRing } kind = Kind::kSegment;
  int32_t a = 0, b = 0, c = 0;
  std::vector<int32_t> table;
  std::string note;  // how it was made ("shuffled table", "wraps", "invalid: ...")
};

/// Load-plan scenario (SPEC §5.3), one of: a sequence of builder appends over
/// source blocks of block_size tokens (block_size may be invalid, or huge so that
/// total_k overflows); build_compressed_plan(seqs, block_size, ratio);
/// build_swa_plan(seqs, window, ring_size). Arguments may be invalid on purpose
/// (`note` of the op or `broken` names what).
struct PlanScenario {
  enum class Mode { kBuilder, kCompressed, kSwa } mode = Mode::kBuilder;
  int32_t block_size = 1;
  std::vector<PlanOp> ops;
  int32_t ratio = 1, window = 1, ring_size = 1;
  std::vector<SeqMeta> seqs;
  std::string broken;  // compressed/SWA: what was made invalid ("" = valid arguments)
  std::string table_mode;
};

/// Prefill-step scenario (SPEC §5.3-§5.6) for props::run_prefill_step: always valid
/// (distinct state ids, disjoint compressed block tables, distinct top-k per row).
struct PrefillFuzzScenario {
  props::PrefillScenario step;
};

IndexScenario decode_index(FuzzedDataProvider& fdp);
PlanScenario decode_plan(FuzzedDataProvider& fdp);
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
std::string describe(const IndexScenario& s);
std::string describe(const PlanScenario& s);
std::string describe(const PrefillFuzzScenario& s);

/// Helpers of the FuzzedDataProvider decoders. fdp_block_size: the shared block sizes
/// (props::kBlockSizes, then kOddBlockSizes) by index, one in ten random in [1, 300] —
/// the byte format their corpora were made with.
int32_t fdp_block_size(FuzzedDataProvider& fdp);
/// SPEC §6's awkward index values (num_slots / num_blocks added by the callers).
inline constexpr int32_t kAwkward[] = {-2, INT32_MIN, INT32_MAX, -1, 0};
std::string hex(uint32_t v, int width);

}  // namespace kvcheck::fuzz
