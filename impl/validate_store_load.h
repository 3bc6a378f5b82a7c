// Checked-entry validation of store_kv_cache and load_paged_kv_cache, in the order fixed
// by docs/spec.md §5.2 "Validation order" (the reference follows the same order): the
// cpu kernels run all of it, the CUDA device API and the device-plugin adapter the
// parts that read no metadata (validate layer, docs/layers.md).
#pragma once

#include <cstdint>
#include <span>

#include "impl/error.h"
#include "impl/op_args.h"

namespace kvcheck {

/// Throws kInvalidFormat / kInvalidArgument when `layout` is not what
/// CacheLayout::make(format, num_blocks, block_size) gives.
void validate_layout(const CacheLayout& layout);

/// The row checks of validate_store_shape without the layout's: kv.rows >= n,
/// kv.row_stride >= elements, non-null kv and cache (O(1), for hot paths whose
/// layout was validated once).
void validate_store_rows(const KVInput& kv, int64_t n, int64_t elements, const void* cache_base);
/// The output checks of validate_load_shape without the layout's; scale_row_bytes
/// 0 = the format has no scale output (O(1)).
void validate_load_outputs(int64_t num_ints, int32_t total_k, const LoadOutput& out, int64_t row_bytes,
                           int64_t scale_row_bytes);
/// The checks of validate_store that read no metadata (layout, sizes, strides,
/// null pointers), for n = slot_mapping.size() rows; also used by backends that
/// check the metadata elsewhere (the CUDA validation kernels).
void validate_store_shape(const KVInput& kv, int64_t n, const CacheView& cache);
/// The checks of validate_load that read no segment (layout, num_ints % 4,
/// total_k, output buffers); num_ints = load_segments.size().
void validate_load_shape(const ConstCacheView& cache, int64_t num_ints, int32_t total_k,
                         const LoadOutput& out);
/// The checks of validate_concat_mla that read no metadata (docs/spec.md §8.2 steps
/// 1-2): the cache's as validate_store_shape; with a pe_cache,
/// validate_concat_pe_cache; then validate_concat_mla_rows.
void validate_concat_mla_shape(const ConcatMlaArgs& args);
/// The caches of a concat_and_cache_mla call as its O(1) checks see them: the cache's
/// buffer (bytes) and row width (elements); one cache (split false: its rows are
/// kv_lora_rank + rope_dim = elements), or split caches with pe_cache's buffer and row
/// width.
struct ConcatCacheExtents {
  const void* base = nullptr;
  int64_t size_bytes = 0;
  int64_t elements = 0;
  bool split = false;
  const void* pe_base = nullptr;
  int64_t pe_size_bytes = 0;
  int64_t pe_elements = 0;
};
/// Rethrows a check's Error on pe_cache with the same code and "pe_cache: " before its
/// message (docs/spec.md §8.2: step 1 names the cache it broke).
[[noreturn]] void rethrow_for_pe_cache(const Error& e);
/// docs/spec.md §8.2 "Split caches", step 1 for pe_cache: validate_layout and the
/// buffer's size as for the cache (messages start "pe_cache: "), then its num_blocks
/// and block_size against the cache's (kShapeMismatch).
void validate_concat_pe_cache(const CacheLayout& cache, const CacheLayout& pe, const void* pe_base,
                              int64_t pe_size_bytes);
/// The last check of validate_concat_pe_cache (O(1), for hot paths whose layouts were
/// validated once).
void validate_concat_pe_geometry(int64_t num_blocks, int32_t block_size, int64_t pe_num_blocks,
                                 int32_t pe_block_size);
/// validate_concat_mla_shape without the layouts' checks (O(1)), for n rows:
/// kv_lora_rank / rope_dim < 1 (kInvalidArgument); one cache: kv_lora_rank + rope_dim
/// != E (kShapeMismatch); split caches: kv_lora_rank != the cache's E, rope_dim !=
/// pe_cache's (kShapeMismatch). For n > 0 each source's rows (kShapeMismatch) and
/// stride (kInvalidArgument), kv_c before k_pe, then null kv_c, k_pe, cache, pe_cache
/// (kShapeMismatch), then two caches sharing a byte (kInvalidArgument). With rope
/// (docs/spec.md §8.4): after the widths, its rot_dim, rope_offset and max_position
/// (kInvalidArgument); for n > 0, last, positions_rows < n, then null positions or
/// cos_sin_cache (kShapeMismatch): impl/validate_rope.h. Not the positions' values
/// (validate_rope_positions).
void validate_concat_mla_rows(const KVInput& kv_c, const KVInput& k_pe, int32_t kv_lora_rank, int32_t rope_dim,
                              int64_t n, const ConcatCacheExtents& caches, const RopeArgs* rope = nullptr);
/// docs/spec.md §8.2: validate_concat_mla_shape, then (rope) validate_rope_positions, then
/// the slot rules of §5.1.
void validate_concat_mla(const ConcatMlaArgs& args);
/// SPEC §5.1 checks, first failure thrown (docs/spec.md §5.2 order): kInvalidFormat,
/// kInvalidArgument (layout), kShapeMismatch (a non-null view whose buffer is smaller
/// than its layout, impl/validate_cache.h); for n > 0: kShapeMismatch (kv.rows < n),
/// kInvalidArgument (kv.row_stride < E), kShapeMismatch (null kv.data / cache base),
/// then the smallest bad row: kSlotOutOfRange, kDuplicateSlot. O(n) expected.
void validate_store(const KVInput& kv, std::span<const int32_t> slot_mapping,
                    const CacheView& cache);

/// SPEC §5.2 checks, first failure thrown (docs/spec.md §5.2 order): kInvalidFormat,
/// kInvalidArgument (layout), kShapeMismatch (view buffer smaller than its layout),
/// kInvalidArgument (segment count % 4, total_k < 0), kShapeMismatch
/// (out.rows < total_k, null or too-narrow out buffers), then the smallest bad
/// segment: kSegmentBlockOutOfRange, kSegmentRangeInvalid,
/// kSegmentDestinationOutOfRange, kShapeMismatch (reads a null cache),
/// kSegmentOverlap. O(S + total_k/64) or O(S log S). Returns the rows written.
int64_t validate_load(const ConstCacheView& cache, std::span<const int32_t> load_segments,
                      int32_t total_k, const LoadOutput& out);

}  // namespace kvcheck
