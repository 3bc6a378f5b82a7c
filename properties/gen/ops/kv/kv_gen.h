// Scenario types, builders and printers of the K/V family (SPEC §7.7). Each builder
// draws through a props::Source (gen/source.h): on an RcSource it is the RapidCheck
// generator (gen_*), on a fuzz::ByteSource the fuzz decoder (fuzzers/ops/kv/decode_kv.cpp).
// One check per op (properties/ops/kv/kv_check.h) runs them, so properties, fuzzers, replay
// and explain agree. Builders: kv_gen.cpp; fault injectors: kv_faults.cpp; printers:
// kv_show.cpp; JSON forms (regression files): kv_json.cpp.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <rapidcheck.h>

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "impl/error.h"
#include "impl/kv_format.h"
#include "properties/gen/rope_gen.h"
#include "properties/gen/source.h"

namespace kvcheck::props {

/// How the K and V views sit in memory (SPEC §7.2): two regions of one buffer with a
/// sentinel gap between, one layer of nano-vllm's [2, L, ...] allocation,
/// FlashInfer's [num_blocks, 2, ...] with K and V pages interleaved, or one layer of a
/// [num_blocks, L, 2, ...] allocation whose every block holds all L layers' K and V
/// pages (the page stride is 2L pages: other layers' pages lie between this layer's,
/// and must come back unchanged, as canaries do; the block stride != block size x
/// record class of vLLM #54465).
/// kNvfp4Pages (e2m1 caches only, SPEC §7.9): vLLM's NVFP4 pages, one page =
/// [K data | K scales | V data | V scales] (its nvfp4_split_data_scale), dense; every
/// other allocation keeps an e2m1 cache's two scale caches after the data.
enum class KvAlloc : uint8_t { kSeparate, kNanoVllm, kFlashInfer, kLayerPages, kNvfp4Pages };

/// A fault of an e2m1 cache's scale caches (SPEC §7.9): none, k_sf's buffer one byte
/// short, v_sf on k_sf's bytes, v_sf null, k_sf one byte into K's data (vLLM's pages
/// only: the last data byte of every page is also a scale byte).
enum class KvSfFault : uint8_t { kNone, kShortKSf, kVSfOnKSf, kNullVSf, kKSfIntoData, kShortVSf, kNullKSf };

/// A K/V cache pair: dense NHD/HND strides plus padding elements per axis.
struct KvCacheShape {
  KvDtype dtype = KvDtype::kBF16;
  KvHeadLayout order = KvHeadLayout::kNHD;
  int32_t num_blocks = 1, block_size = 1, num_kv_heads = 1, head_dim = 1;
  int32_t pad_head = 0, pad_token = 0, pad_page = 0;  // elements added to each stride
  KvAlloc alloc = KvAlloc::kSeparate;
  int32_t num_layers = 1, layer = 0;  // kNanoVllm, kLayerPages
  KvScaleKind scale_kind = KvScaleKind::kNone;
  std::vector<float> k_scale, v_scale;
  KvRecipe recipe = KvRecipe::kSpec;  // FP8 caches: one of the backend's declared recipes (SPEC §7.3.1)
  uint64_t fill_seed = 0;  // prior contents of the whole buffer
  int64_t capacity_cut = 0;  // fault injection: k_capacity = span - capacity_cut
  KvSfLayout sf_layout = KvSfLayout::kLinear;  // e2m1 caches: where each scale byte sits (SPEC §7.9)
  KvSfFault sf_fault = KvSfFault::kNone;
  int64_t num_slots() const { return int64_t{num_blocks} * block_size; }
};

/// Rows [rows][H][D] of a model dtype with their own strides; `data` holds the bits.
struct KvRows {
  KvDtype dtype = KvDtype::kBF16;
  int64_t rows = 0;
  int64_t token_stride = 0, head_stride = 0;  // elements
  std::vector<uint16_t> data;
};

struct StoreKvScenario {
  KvCacheShape cache;
  std::vector<int32_t> slot_mapping;  // n = size(); key/value may hold more rows
  KvRows key, value;
  std::string fault;  // "" or what was made invalid on purpose
  std::optional<ErrorCode> code;   // what the fault demands; none with a fault: raw values (the reference's code)
  int32_t threads = 0;             // > 0: the backend splits the call as on `threads` threads
  std::vector<int32_t> slot_tail;  // entries after slot_mapping in its buffer (CUDA-graph padding): never read
  std::optional<ScenarioRope> rope;  // a fused RoPE of every head of the key rows (docs/spec.md §8.4)
};

struct GatherKvScenario {
  KvCacheShape cache;
  std::vector<int32_t> block_table;  // [num_seqs][max_blocks]
  int32_t max_blocks = 0;
  std::vector<int32_t> cu_seqlens_k;  // [num_seqs + 1]
  KvDtype out_k_dtype = KvDtype::kBF16, out_v_dtype = KvDtype::kBF16;
  int64_t out_rows = 0;
  int32_t out_pad_head = 0, out_pad_token = 0;  // elements
  // out_v's own rows and token pad when a fault breaks out_v alone (a validator that
  // judges out_v by out_k's rule must show); nullopt: out_k's.
  std::optional<int64_t> out_v_rows;
  std::optional<int32_t> out_v_pad_token;
  int64_t rows_of(int side) const { return side == 1 && out_v_rows ? *out_v_rows : out_rows; }
  int32_t pad_token_of(int side) const { return side == 1 && out_v_pad_token ? *out_v_pad_token : out_pad_token; }
  uint64_t out_seed = 0;
  std::string fault;                // "" or what was made invalid on purpose
  std::optional<ErrorCode> code;    // what the fault demands; none with a fault: raw values
  int32_t threads = 0;     // > 0: the backend splits the call as on `threads` threads
  int32_t out_offset = 0;  // elements the output rows start past an aligned allocation
  std::vector<int32_t> seq_starts;  // [num_seqs] tokens, or empty (every start 0)
  SeqStartUnit seq_start_unit = SeqStartUnit::kToken;
};

/// The end-to-end step of seed 004 (SPEC §7.7): sequences with distinct blocks, an
/// earlier step that stored [0, num_cached), this step's store of [num_cached,
/// num_tokens) with CUDA-graph padding rows, then gather_kv through the step's
/// block tables and cu_seqlens_k.
struct KvStepScenario {
  KvCacheShape cache;
  std::vector<std::vector<int32_t>> block_tables;  // per sequence, -1 tail allowed
  std::vector<int32_t> num_cached, num_tokens;
  KvDtype key_dtype = KvDtype::kBF16, value_dtype = KvDtype::kBF16;
  int32_t graph_padding = 0;  // extra -1 rows appended to the step's store
  bool decode = false;        // a decode step: one new token per sequence, prepare_decode's slots
  uint64_t value_seed = 0;
  bool page_table = false;    // prefill: the step's slots through FlashInfer's page table (SPEC §7.8)
};

void showValue(const KvCacheShape& s, std::ostream& os);
void showValue(const KvRows& r, std::ostream& os);
void showValue(const StoreKvScenario& s, std::ostream& os);
void showValue(const GatherKvScenario& s, std::ostream& os);
void showValue(const KvStepScenario& s, std::ostream& os);
std::string describe(const KvCacheShape& s);
std::string describe(const StoreKvScenario& s);
std::string describe(const GatherKvScenario& s);
std::string describe(const KvStepScenario& s);

// JSON forms (nlohmann ADL; regression files, SPEC §6; kv_json.cpp): "type" store_kv |
// gather_kv, "cache" {dtype, order, num_blocks, block_size, num_kv_heads, head_dim,
// pad_*, alloc, scale_kind, fill_seed; num_layers/layer, recipe (a name, or the number
// of an unknown value; absent = spec), k_scale/v_scale (finite floats
// as numbers, others as "0x%08x" bits), capacity_cut when set}, rows {dtype, rows,
// token_stride, head_stride, data: hex 16-bit values, token_stride a string}; "fault"
// and "expected_error" when set. Round-trips exactly; from_json throws
// std::exception on a malformed scenario.
void to_json(nlohmann::json& j, const KvCacheShape& s);
void from_json(const nlohmann::json& j, KvCacheShape& s);
void to_json(nlohmann::json& j, const KvRows& r);
void from_json(const nlohmann::json& j, KvRows& r);
void to_json(nlohmann::json& j, const StoreKvScenario& s);
void from_json(const nlohmann::json& j, StoreKvScenario& s);
void to_json(nlohmann::json& j, const GatherKvScenario& s);
void from_json(const nlohmann::json& j, GatherKvScenario& s);

/// How large one case may get. The properties' limits allow multi-MiB caches; the fuzz
/// decoders' keep an input fast (a few hundred KiB per buffer).
struct KvLimits {
  int64_t cache_elements;  // per cache view
  int64_t row_elements;    // store: rows x H x D; gather: total rows x H x D
  int64_t max_rows;        // store rows
  int64_t max_gather_rows; // gather: cu_seqlens_k[b]
};
inline constexpr KvLimits kPropertyKvLimits{int64_t{3} << 19, int64_t{1} << 18, 64, 300};
inline constexpr KvLimits kFuzzKvLimits{int64_t{1} << 17, int64_t{1} << 16, 64, 256};
/// Largest cache pair a generated case may allocate, in elements per cache.
inline constexpr int64_t kMaxKvCacheElements = kPropertyKvLimits.cache_elements;
/// The same for a store drawn at validate_slot_mapping's bitmap limit (tens of
/// thousands of slots, Source::large_caches): 8 MiB of bf16 per cache.
inline constexpr int64_t kMaxEdgeKvCacheElements = int64_t{1} << 22;

/// The model-dtype element of a value drawn for token (seq, t) head h element d:
/// deterministic in `seed`, with specials (NaN, ±Inf, ±0, subnormals, huge) mixed in.
uint16_t kv_value_bits(KvDtype dtype, uint64_t seed, int64_t a, int64_t b, int64_t h, int64_t d);
/// kv_value_bits' ordinary values: RN(±(1 + k/2^16) * 2^e) in bf16 (or fp16 for
/// kFP16), e in [-12, 9], k < 2^16, from the bits directly: equal to
/// ref::float_to_model on every such value (KvGen.NormalBitsMatchTheReference), without
/// its table search, which cost a fifth of fuzz_store_kv's time under instrumentation.
uint16_t kv_normal_bits(KvDtype dtype, bool negative, int e, uint32_t k);
/// A global decode scale of an e2m1 cache (SPEC §7.9), from a fixed list, by seed.
float nvfp4_global_scale(uint64_t seed);
/// Scales that make FP8 codes interesting for values of kv_value_bits.
std::vector<float> kv_scales(KvScaleKind kind, int32_t num_kv_heads, uint64_t seed);
/// Rows filled from kv_value_bits(seed, row, 0, h, d); stride gaps hold NaN bits.
KvRows make_kv_rows(KvDtype dtype, int64_t rows, int64_t token_stride, int64_t head_stride,
                    int32_t num_kv_heads, int32_t head_dim, uint64_t seed);

// Builders. The low end of every choice is the simplest (gen/source.h): an exhausted
// fuzz input gives a BF16 NHD cache of one block of one token, an empty store, no
// sequence. Counts (blocks, rows, sequence lengths) cost input in proportion to their
// bytes, so a fuzz scenario grows with its input.
/// Every cache dtype the backend supports (generator_caps()), NHD/HND, head_dim 64-576
/// or 1-16, 1-128 heads, the shared block sizes, pads per axis, the three allocations,
/// per-tensor/per-head FP8 scales; halves block_size to stay under cache_elements.
KvCacheShape build_kv_cache_shape(Source& src, const KvLimits& lim);
/// The same with head_dim >= min_head_dim where the backend's contract allows it.
KvCacheShape build_kv_cache_shape(Source& src, const KvLimits& lim, int32_t min_head_dim);
/// Valid store: the shared slot mappings (-1 padding, -1 before slot 0), kv longer than
/// slot_mapping (CUDA-graph rows) with the buffer going on with unused slots, padded or
/// head-major rows, bf16/fp16 rows for FP8 caches, a work split.
StoreKvScenario build_store_kv_scenario(Source& src, const KvLimits& lim);
StoreKvScenario build_store_kv_scenario(Source& src, const KvLimits& lim, int32_t min_head_dim);
/// A store_kv case with a fused RoPE of the key rows (docs/spec.md §8.4, build_rope over
/// head_dim >= 2); rows at a cancelling table row get every head's pairs equal.
StoreKvScenario build_store_kv_rope_scenario(Source& src, const KvLimits& lim);
/// A rope rule broken (inject_rope_fault), a bad position after a bad slot (the position
/// is the error), or a store_kv fault with the rope valid.
void inject_store_kv_rope_fault(Source& src, StoreKvScenario& s);
/// Valid gather: 0-4 sequences (none 1 in 20), tables with -1, junk or real unneeded
/// entries, extra output rows, padded / odd output strides, misaligned bases, a split;
/// for backends with KVCHECK_OP_GATHER_KV_SEQ_STARTS, 1 in 3 with seq_starts (either
/// unit; starts mid-block, at the row's end, block-unit starts off their block).
GatherKvScenario build_gather_kv_scenario(Source& src, const KvLimits& lim);
/// The same with seq_starts always (1-4 sequences, tables of 1-5 columns), whatever
/// the capabilities: the seq_starts properties, which need the feature bit.
GatherKvScenario build_gather_kv_seq_starts_scenario(Source& src, const KvLimits& lim);
/// The two-step scenario: distinct shuffled blocks per sequence, prefix hits, decode.
KvStepScenario build_kv_step_scenario(Source& src, const KvLimits& lim);
/// One SPEC §7.4 fault on a valid scenario; sets fault and the code it demands (bad or
/// duplicate slot, short or null rows, bad or extra scale, wrong dtype, short buffer,
/// overlapping heads, negative stride).
void inject_store_kv_fault(Source& src, StoreKvScenario& s);
/// One SPEC §7.5 fault: a needed table entry -1 or out of range, cu_seqlens_k broken,
/// an extra table entry, too few output rows, an FP8 output, a bad scale, overlapping
/// rows; with seq_starts also a negative start, a start whose sequence reaches past its
/// row (vLLM #27909), a seq_starts of the wrong length.
void inject_gather_kv_fault(Source& src, GatherKvScenario& s);
/// One seq_starts fault only (negative, past the row, wrong length); s has seq_starts.
void inject_gather_kv_seq_starts_fault(Source& src, GatherKvScenario& s);
/// Raw values (fuzz only; several errors at once, no demanded code): raw slots (and,
/// for FP8 caches, raw positive scale bits); raw table entries.
void raw_store_kv(Source& src, StoreKvScenario& s);
void raw_gather_kv(Source& src, GatherKvScenario& s);

// RapidCheck generators: the builders on an RcSource with kPropertyKvLimits.
rc::Gen<KvCacheShape> gen_kv_cache_shape();
rc::Gen<StoreKvScenario> gen_store_kv_scenario();
rc::Gen<GatherKvScenario> gen_gather_kv_scenario();
rc::Gen<KvStepScenario> gen_kv_step_scenario();
/// A valid scenario with one injected fault.
rc::Gen<StoreKvScenario> gen_store_kv_fault_scenario();
rc::Gen<StoreKvScenario> gen_store_kv_rope_scenario();
rc::Gen<StoreKvScenario> gen_store_kv_rope_fault_scenario();
rc::Gen<GatherKvScenario> gen_gather_kv_fault_scenario();
rc::Gen<GatherKvScenario> gen_gather_kv_seq_starts_scenario();
rc::Gen<GatherKvScenario> gen_gather_kv_seq_starts_fault_scenario();

}  // namespace kvcheck::props
