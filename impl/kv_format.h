// The vLLM-style K/V cache family (SPEC §7): element dtypes and the plain argument
// types of store_kv / gather_kv. Like impl/format.h this is shared by reference/ and
// the backends; it holds fields only. Offsets live in impl/kv_paged_layout.h and
// validation in impl/kv_layout.h (production); reference/ writes both out again (the
// reference's own).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace kvcheck {

/// Element dtype of a K/V cache or of the model's K/V rows (SPEC §7.1). kE2M1: NVFP4
/// caches (SPEC §7.9), 4-bit codes packed two per byte, with a block-scale cache.
enum class KvDtype : uint8_t { kBF16, kFP16, kE4M3, kE5M2, kE2M1 };
/// Axis order of a dense cache: [blocks, block_size, H, D] or [blocks, H, block_size, D].
enum class KvHeadLayout : uint8_t { kNHD, kHND };
/// FP8 scales: none (bf16/fp16 caches), one float per tensor, one per KV head.
enum class KvScaleKind : uint8_t { kNone, kPerTensor, kPerHead };
/// How an FP8 K/V store quantises with its scale (SPEC §7.3.1, a recipe of an engine):
/// kSpec and kVllm q = cvt(x / scale) with IEEE division; kSglang q = cvt(clamp(x *
/// RN(1 / scale))) with a NaN sent to +max. The values are the plugin ABI's
/// kvcheck_recipe (backend_abi.h). Loads dequantise alike in every recipe.
enum class KvRecipe : int32_t { kSpec = 0, kVllm = 1, kSglang = 2 };
inline constexpr int kNumKvRecipes = 3;

/// Bytes per element: 2 (bf16, fp16) or 1 (e4m3, e5m2); for e2m1 (half a byte) 1, the
/// unit its addresses are aligned to: byte extents go through kv_bytes.
int64_t kv_dtype_bytes(KvDtype dtype);
/// Bytes that `elements` elements of `dtype` occupy: elements * 2, * 1 or / 2 (e2m1;
/// a valid e2m1 layout's extents are even, SPEC §7.9; an odd count rounds up).
int64_t kv_bytes(KvDtype dtype, int64_t elements);
bool is_fp8(KvDtype dtype);
/// The NVFP4 cache dtype (SPEC §7.9).
inline bool is_nvfp4(KvDtype dtype) { return dtype == KvDtype::kE2M1; }
/// A dtype quantised with scales: FP8 or e2m1.
inline bool is_quantized_kv(KvDtype dtype) { return dtype == KvDtype::kE4M3 || dtype == KvDtype::kE5M2 || dtype == KvDtype::kE2M1; }
/// bf16 or fp16: the dtypes a model hands to store_kv and gets from gather_kv.
bool is_model_dtype(KvDtype dtype);
/// "bf16", "fp16", "e4m3", "e5m2", "e2m1".
std::string to_string(KvDtype dtype);
/// "NHD", "HND".
std::string to_string(KvHeadLayout layout);
/// "none", "per-tensor", "per-head".
std::string to_string(KvScaleKind kind);
/// "spec", "vllm", "sglang"; "recipe(N)" for a value that is none of them.
std::string to_string(KvRecipe recipe);
/// Whether `recipe` is one of KvRecipe's values (a value from a plugin call may not be).
bool is_kv_recipe(KvRecipe recipe);
/// The recipe named `name` ("spec", "vllm", "sglang"); throws kvcheck::Error
/// (kInvalidArgument) naming the known ones otherwise.
KvRecipe kv_recipe_from_string(const std::string& name);
/// All recipes, in enum order.
std::vector<KvRecipe> kv_recipes();
/// All five dtypes, in enum order.
std::vector<KvDtype> kv_dtypes();
/// The dtypes a row can claim to have (bf16, fp16, e4m3, e5m2: the ABI's pair bits
/// KVCHECK_KV_PAIR(cache, rows) give rows 4 bits, so e2m1, a cache-only dtype the
/// generators never put in rows, is left out).
std::vector<KvDtype> kv_row_dtypes();

/// Geometry shared by a layer's K and V cache (SPEC §7.2). Element (block b, token t,
/// head h, d) is at element offset b*stride_page + t*stride_token + h*stride_head + d
/// from a cache's base; head_dim is contiguous. Strides are in elements.
struct KvCacheLayout {
  KvDtype dtype = KvDtype::kBF16;
  int64_t num_blocks = 0;
  int32_t block_size = 0;    // tokens per block, any value >= 1
  int32_t num_kv_heads = 0;  // H
  int32_t head_dim = 0;      // D
  int64_t stride_page = 0, stride_token = 0, stride_head = 0;  // elements
  bool operator==(const KvCacheLayout&) const = default;
};

/// k_scale / v_scale of an FP8 cache (SPEC §7.3): 1 float each (per tensor) or
/// num_kv_heads floats each (per head), and the recipe that applies them (§7.3.1).
/// Ignored for bf16/fp16 caches.
struct KvScales {
  KvScaleKind kind = KvScaleKind::kNone;
  std::span<const float> k_scale, v_scale;
  KvRecipe recipe = KvRecipe::kSpec;
};

/// Where an NVFP4 cache keeps the e4m3 scale of group g (elements [16g, 16g + 16)) of
/// head h of token t in block b (SPEC §7.9), with S = head_dim / 16 groups: byte
/// b*stride_page + h*stride_head + pos from the side's scale-cache base, pos = t*stride_token
/// + g (kLinear: FlashInfer's append, the fa2 reader) or (t/4)*4S + 4g + t%4 (kInterleave4:
/// vLLM's swizzle_scale_offset, TRT-LLM's V scales; block_size % 4 == 0 and stride_token
/// == S, each (block, head) tile of block_size x S bytes dense).
enum class KvSfLayout : int32_t { kLinear = 0, kInterleave4 = 1 };
/// "linear", "interleave4".
std::string to_string(KvSfLayout layout);

/// The block-scale caches' geometry (SPEC §7.9): strides in BYTES, one set for K's and
/// V's scale cache (each has its own base).
struct KvSfGeometry {
  KvSfLayout layout = KvSfLayout::kLinear;
  int64_t stride_page = 0, stride_token = 0, stride_head = 0;  // bytes
  bool operator==(const KvSfGeometry&) const = default;
};

/// A layer's K and V caches: base pointers (host or device, as the backend says) and
/// capacities = elements from each base that belong to its allocation, so a view
/// running past its buffer is rejected (SPEC §7.2).
template <typename Byte>
struct BasicKvCacheView {
  Byte* k = nullptr;
  int64_t k_capacity = 0;  // elements
  Byte* v = nullptr;
  int64_t v_capacity = 0;  // elements
  KvCacheLayout layout;
  KvScales scales;
  // e2m1 caches (SPEC §7.9): K's and V's block-scale caches, capacities in bytes;
  // ignored (and null) for every other dtype. k_scale / v_scale hold the global scale.
  Byte* k_sf = nullptr;
  int64_t k_sf_capacity = 0;
  Byte* v_sf = nullptr;
  int64_t v_sf_capacity = 0;
  KvSfGeometry sf;
  operator BasicKvCacheView<const uint8_t>() const {
    return {k, k_capacity, v, v_capacity, layout, scales, k_sf, k_sf_capacity, v_sf, v_sf_capacity, sf};
  }
};
using KvCacheView = BasicKvCacheView<uint8_t>;
using ConstKvCacheView = BasicKvCacheView<const uint8_t>;

/// Token rows [rows][H][D] of dtype (store_kv input, gather_kv output): token i,
/// head h starts at element i*token_stride + h*head_stride; D contiguous. `rows` is
/// what the buffer holds (the operation's row count comes from its metadata).
template <typename Byte>
struct BasicKvTokens {
  Byte* data = nullptr;
  KvDtype dtype = KvDtype::kBF16;
  int64_t rows = 0;
  int64_t token_stride = 0, head_stride = 0;  // elements
  operator BasicKvTokens<const uint8_t>() const { return {data, dtype, rows, token_stride, head_stride}; }
};
using KvTokensIn = BasicKvTokens<const uint8_t>;
using KvTokensOut = BasicKvTokens<uint8_t>;

/// How gather_kv's seq_starts[i] places sequence i in its table row (SPEC §7.5): its
/// token t is table position seq_starts[i] + t (kToken, vLLM cp_gather_cache) or
/// seq_starts[i] rounded down to a multiple of block_size, + t (kBlock, vLLM
/// gather_and_maybe_dequant_cache's offset of seq_starts[i] / block_size blocks).
/// The values are the plugin ABI's kvcheck_gather_kv_args.seq_starts_unit.
enum class SeqStartUnit : int32_t { kToken = 1, kBlock = 2 };

/// gather_kv's arguments (SPEC §7.5), the one list every layer passes: the caches
/// (read), block_table [num_seqs][max_blocks] (-1 padded), cu_seqlens_k [num_seqs + 1],
/// seq_starts [num_seqs] tokens (empty: every sequence starts at table position 0)
/// with its unit, and the outputs [rows][H][D] (model dtype, written). Host spans for
/// the cpu backend and the reference; device pointers for the CUDA entries.
struct GatherKvArgs {
  ConstKvCacheView cache;
  std::span<const int32_t> block_table;
  int32_t max_blocks = 0;
  std::span<const int32_t> cu_seqlens_k;
  std::span<const int32_t> seq_starts;
  SeqStartUnit seq_start_unit = SeqStartUnit::kToken;
  KvTokensOut out_k, out_v;
};

}  // namespace kvcheck
