// The argument views of the SPEC §5 operations (host pointers and sizes, no code):
// what a backend, the reference, a validator and a harness pass between them. Core
// layer (docs/layers.md): plain types only, so a kernel or the reference includes this
// and not the Backend interface.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "impl/format.h"  // bf16_bits
#include "impl/layout.h"  // CacheLayout
#include "impl/rope_args.h"

namespace kvcheck {

/// A paged cache in host memory: `base` points at a buffer of `size_bytes` bytes
/// (what the allocation holds) laid out by `layout` (see KVCache for an owning
/// allocation). Every checked entry rejects a non-null view whose buffer is smaller
/// than its layout, layout.size_bytes() = num_blocks * block_stride (kShapeMismatch,
/// docs/spec.md §5.2 validation order), before reading or writing a byte.
struct CacheView {
  uint8_t* base = nullptr;
  CacheLayout layout;
  int64_t size_bytes = 0;
};
struct ConstCacheView {
  const uint8_t* base = nullptr;
  CacheLayout layout;
  int64_t size_bytes = 0;
};

/// Store input kv[rows][E] of BF16 bit patterns; row r starts at data + r*row_stride
/// (elements, >= E). `rows` is what the buffer holds: the operation takes its row
/// count from slot_mapping and throws kShapeMismatch when rows < slot_mapping.size().
struct KVInput {
  const bf16_bits* data = nullptr;
  int64_t rows = 0;
  int64_t row_stride = 0;  // elements
};

/// Load output (SPEC §5.2). data: `rows` rows of format.load_row_bytes() bytes at
/// data_row_stride bytes apart; scales: index formats only, `rows` rows of
/// format.load_scale_row_bytes() bytes at scale_row_stride bytes apart (ue8m0 as
/// int32 little-endian packs, fp32 as floats). rows must be >= total_k.
struct LoadOutput {
  uint8_t* data = nullptr;
  int64_t data_row_stride = 0;  // bytes
  uint8_t* scales = nullptr;
  int64_t scale_row_stride = 0;  // bytes
  int64_t rows = 0;
};

/// A load segment (SPEC §5.2): copy tokens [src_begin, src_end) of block
/// src_block_id (-1: zeros) to output rows [dst_offset, dst_offset+len).
/// Stored as 4 consecutive int32 in this order in `load_segments` spans.
struct LoadSegment {
  int32_t src_block_id, src_begin, src_end, dst_offset;
  bool operator==(const LoadSegment&) const = default;
};
static_assert(sizeof(LoadSegment) == 16);

/// convert_kv_index (SPEC §5.5) arguments. topk[num_q][k] holds logical token
/// indices (or -1); row q looks up block_table row seq_ids[q] (an empty seq_ids
/// means seq_ids[q] == q) and is valid below context_lens[q].
struct ConvertKvIndexArgs {
  std::span<const int32_t> topk;          // [num_q * k]
  int32_t num_q = 0, k = 0;
  std::span<const int32_t> block_table;   // [num_seqs * max_blocks]
  int32_t max_blocks = 0;
  std::span<const int32_t> seq_ids;       // [num_q] or empty
  std::span<const int32_t> context_lens;  // [num_q], tokens
  int32_t block_size = 0;
};

/// copy_blocks (SPEC §8.1): one allocation of size_bytes bytes at base, written in
/// place; views [num_views][2] int64 = (offset, block_bytes), bytes: view v's block b
/// is [offset + b*block_stride, +block_bytes); block_mapping [num_pairs][2] int64 =
/// (src, dst), a pair with a -1 is padding. Every view has num_blocks blocks.
struct CopyBlocksArgs {
  uint8_t* base = nullptr;
  int64_t size_bytes = 0;
  std::span<const int64_t> views;
  int64_t num_blocks = 0;
  int64_t block_stride = 0;  // bytes
  std::span<const int64_t> block_mapping;
};

/// One side of swap_blocks (docs/spec.md §8.3): an allocation of size_bytes bytes
/// whose blocks are block_stride bytes apart, num_blocks of them. `host`: where a DEVICE
/// backend takes it (page-locked host memory, cudaMallocHost / cudaHostRegister; false:
/// device memory); a host backend ignores it.
struct BlockPool {
  int64_t size_bytes = 0;
  int64_t num_blocks = 0;
  int64_t block_stride = 0;  // bytes
  bool host = false;
};

/// swap_blocks (docs/spec.md §8.3): blocks moved between two allocations. views
/// [num_views][3] int64 = (src_offset, dst_offset, block_bytes), bytes: view v's block b
/// is [src_offset + b*src_pool.block_stride, +block_bytes) of src and [dst_offset +
/// b*dst_pool.block_stride, +block_bytes) of dst; block_mapping [num_pairs][2] int64 =
/// (src block, dst block), a pair with a -1 is padding. src is only read.
struct SwapBlocksArgs {
  const uint8_t* src = nullptr;
  BlockPool src_pool;
  uint8_t* dst = nullptr;
  BlockPool dst_pool;
  std::span<const int64_t> views;
  std::span<const int64_t> block_mapping;
};

/// concat_and_cache_mla (docs/spec.md §8.2): the store row of token i is kv_c row i
/// (kv_lora_rank elements) followed by k_pe row i (rope_dim elements), stored as
/// store_kv_cache stores a row of E = kv_lora_rank + rope_dim elements (SPEC §5.1).
/// kv_c and k_pe are BF16 bit patterns with their own rows (what the buffer holds, >= n)
/// and row strides (elements); they may be views of one tensor (k_pe = kv_c +
/// kv_lora_rank, one stride: vLLM's split of kv_lora). n = slot_mapping.size().
/// With pe_cache (split caches, FlashInfer's ckv / kpe): kv_c row i is stored into
/// `cache` as a row of E = kv_lora_rank elements and k_pe row i into `pe_cache` as a row
/// of rope_dim elements, both at slot_mapping[i]; the two caches share num_blocks and
/// block_size and no byte (docs/spec.md §8.2 "Split caches"). With rope, k_pe's rows are
/// rotated first (docs/spec.md §8.4); k_pe's buffer is only read.
struct ConcatMlaArgs {
  KVInput kv_c;
  KVInput k_pe;
  int32_t kv_lora_rank = 0;  // elements of a kv_c row
  int32_t rope_dim = 0;      // elements of a k_pe row
  std::span<const int32_t> slot_mapping;
  CacheView cache;
  std::optional<CacheView> pe_cache;  // split caches: k_pe's own cache
  std::optional<RopeArgs> rope;       // fused RoPE of k_pe (docs/spec.md §8.4)
};

}  // namespace kvcheck
