// The fuzz decoders, one per target (fuzzers/decode_<target>.cpp): input bytes -> the
// scenario the target checks. None throws, every byte string is a valid input, and
// `kvcheck explain` and the corpus generator call the same functions, so a crash file
// always decodes to the scenario that crashed.
//
// store, load, round_trip, store_kv, gather_kv, prefill: the builders of
// properties/gen/ (store_load_gen.h, kv_gen.h, prefill_gen.h) on a ByteSource
// (byte_reader.h) — the same code and types as the RapidCheck generators — plus what
// only a fuzzer needs: injected faults and raw values (invalid inputs), the input's last
// bytes steering kv values (store, round_trip), the wrong order (prefill). format,
// numerics, index, plan: fuzz-only types below (their properties draw inline), read
// with FuzzedDataProvider as their tracked corpora expect.
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
#include "properties/gen/kv_gen.h"
#include "properties/gen/store_load_gen.h"
#include "properties/gen/prefill_gen.h"
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
/// store_kv, gather_kv: a scenario from the K/V builder with kFuzzKvLimits (small
/// buffers: at most 2^17 elements per cache view, 2^16 row elements); then one input in
/// four a fault from the properties' injector (the code to expect is known), one in
/// eight raw values (raw slots and scale bits; raw table entries).
props::StoreKvScenario decode_store_kv(ByteSource& src);
props::GatherKvScenario decode_gather_kv(ByteSource& src);
/// prefill: a valid batch from the prefill builder; one input in eight stores before
/// it loads (the check then demands a failure exactly on overlap).
props::PrefillScenario decode_prefill(ByteSource& src);
/// The store, load, round_trip and K/V decoders drop the builder's work split (threads = 0): the cpu backend spawns its
/// threads per call, some 30 plain cases under ASan each, and inputs that split reach
/// new coverage, so libFuzzer keeps and mutates them until most of a run splits. The
/// multi-thread paths are the properties' (3 cases in 4 split; class floor 25%). They
/// never draw far kv rows either (ByteSource::huge_inputs() is false).

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

FormatScenario decode_format(FuzzedDataProvider& fdp);
NumericsScenario decode_numerics(FuzzedDataProvider& fdp);
IndexScenario decode_index(FuzzedDataProvider& fdp);
PlanScenario decode_plan(FuzzedDataProvider& fdp);

/// Readable multi-line descriptions, used in crash reports and `kvcheck explain`.
std::string describe(const FormatScenario& s);
std::string describe(const NumericsScenario& s);
std::string describe(const IndexScenario& s);
std::string describe(const PlanScenario& s);

/// Helpers of the FuzzedDataProvider decoders. fdp_block_size: the shared block sizes
/// (props::kBlockSizes, then kOddBlockSizes) by index, one in ten random in [1, 300] —
/// the byte format their corpora were made with.
int32_t fdp_block_size(FuzzedDataProvider& fdp);
/// SPEC §6's awkward index values (num_slots / num_blocks added by the callers).
inline constexpr int32_t kAwkward[] = {-2, INT32_MIN, INT32_MAX, -1, 0};
std::string hex(uint32_t v, int width);

}  // namespace kvcheck::fuzz
