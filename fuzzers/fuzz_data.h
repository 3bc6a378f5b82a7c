// The one input decoder of kvcheck's fuzzers: turns libFuzzer bytes into scenario
// structs (FuzzedDataProvider underneath). Never throws and accepts any byte string,
// so every file is a valid input; `kvcheck explain` and the corpus generator use the
// same functions, so a crash file always decodes to the scenario that crashed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "impl/backend.h"
#include "impl/format.h"
#include "impl/load_plan.h"
#include "properties/gen/splitmix.h"
#include "properties/prefill_step.h"

class FuzzedDataProvider;

namespace kvcheck::fuzz {

/// Caps that keep one input small and fast (SPEC §6 scenarios, not sizes).
inline constexpr int64_t kMaxCacheBytes = 1 << 18;  // per cache buffer
inline constexpr int32_t kMaxBlocks = 64;
inline constexpr int32_t kMaxRows = 256;             // kv rows / load rows
inline constexpr int64_t kMaxKvElements = 1 << 15;   // rows * row_stride
inline constexpr int32_t kMaxSegments = 64;

/// Bulk bytes a scenario needs (cache contents, most kv values) come from a seed.
using props::SplitMix64;

/// A cache shape: format (the SPEC §2 table, BF16(E), or a custom quantised format),
/// block_size (1, 2, 16, 64, 133, 256, odd, random) and
/// num_blocks, capped so num_blocks*block_stride <= kMaxCacheBytes.
struct CacheShape {
  KVCacheFormat format;
  int32_t block_size = 1;
  int32_t num_blocks = 1;
  int64_t num_slots() const { return int64_t{num_blocks} * block_size; }
};

/// store_kv_cache scenario (SPEC §5.1). kv holds kv_rows rows of row_stride
/// elements (row_stride >= E); kv_rows < slot_mapping.size() is a shape error on
/// purpose. cache_seed fills the cache with a sentinel pattern before the store.
struct StoreScenario {
  CacheShape shape;
  std::vector<int32_t> slot_mapping;
  int64_t kv_rows = 0;
  int64_t row_stride = 0;  // elements
  std::vector<bf16_bits> kv;
  uint64_t cache_seed = 0;
  std::string slot_mode;   // how slot_mapping was made, for reports
  std::string value_mode;  // how kv values were made
};

/// load_paged_kv_cache scenario (SPEC §5.2). The cache holds bytes from cache_seed
/// (ue8m0 scale bytes of do_cast formats kept in [1, 253], the values a store can
/// write); the output buffers are pre-filled from out_seed.
struct LoadScenario {
  CacheShape shape;
  uint64_t cache_seed = 0;
  std::vector<int32_t> segments;  // S*4: src_block_id, src_begin, src_end, dst_offset
  int32_t total_k = 0;
  int64_t out_rows = 0;           // >= total_k unless a shape error is wanted
  int64_t data_row_pad = 0;       // bytes past load_row_bytes() per output row
  int64_t scale_row_pad = 0;
  uint64_t out_seed = 0;
  std::string segment_mode;
};

/// store -> load round trip: a valid store, then a load of the stored blocks
/// (whole blocks, in shuffled order, with zero-fill pieces between).
struct RoundTripScenario {
  StoreScenario store;
  LoadScenario load;  // shape and cache_seed unused: the cache is the stored one
};

/// Format validation / derived sizes / resolve_format scenario (SPEC §2, §3).
struct FormatScenario {
  KVCacheFormat format;  // arbitrary fields, often invalid
  int32_t block_size = 1;
  int64_t block = 0, token = 0;    // a location to check offsets at
  CacheDtype dtype = CacheDtype::kUInt8;
  std::vector<int64_t> shape;      // for resolve_format
  int sf_choice = 0;               // 0: none, else SfFormat value
};

/// Numerics scenario (SPEC §4): raw float bit patterns and one BF16 scale group.
struct NumericsScenario {
  std::vector<uint32_t> floats;
  KVCacheFormat format;            // a quantised format
  std::vector<bf16_bits> group;    // elements_per_sf values
};

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

CacheShape decode_cache_shape(FuzzedDataProvider& fdp);
StoreScenario decode_store(FuzzedDataProvider& fdp);
LoadScenario decode_load(FuzzedDataProvider& fdp);
RoundTripScenario decode_round_trip(FuzzedDataProvider& fdp);
FormatScenario decode_format(FuzzedDataProvider& fdp);
NumericsScenario decode_numerics(FuzzedDataProvider& fdp);
IndexScenario decode_index(FuzzedDataProvider& fdp);
PlanScenario decode_plan(FuzzedDataProvider& fdp);
PrefillFuzzScenario decode_prefill(FuzzedDataProvider& fdp);
/// A valid quantised format outside the SPEC §2 table (odd group sizes, every
/// dtype/scale pairing, do_cast or index), so the run-time group-size kernels run.
KVCacheFormat decode_custom_format(FuzzedDataProvider& fdp);

/// Fills `bytes` from seed; for do_cast ue8m0 formats the scale bytes of every
/// record are mapped into [1, 253] (k + 127, k in [-126, 126], SPEC §4.1).
void fill_cache_bytes(const CacheShape& shape, uint64_t seed, uint8_t* bytes);

/// Readable multi-line descriptions, used in crash reports and `kvcheck explain`.
std::string describe(const CacheShape& s);
std::string describe(const StoreScenario& s);
std::string describe(const LoadScenario& s);
std::string describe(const RoundTripScenario& s);
std::string describe(const FormatScenario& s);
std::string describe(const NumericsScenario& s);
std::string describe(const IndexScenario& s);
std::string describe(const PlanScenario& s);
std::string describe(const PrefillFuzzScenario& s);

/// "[1, -1, 7, ...]" with at most `max_items` entries shown.
std::string format_ints(const std::vector<int32_t>& v, size_t max_items = 64);

}  // namespace kvcheck::fuzz
