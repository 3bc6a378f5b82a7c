// KvCacheLayout in production code (SPEC §7.2): the one owner of the K/V family's
// strides and element offsets, and of the validity of a view. Every address a
// backend computes goes through kv_offset / kv_slot_offset; reference/ writes the
// formula out on its own and a property checks that the two agree.
#pragma once

#include <cstdint>
#include <span>

#include "impl/kv_format.h"

namespace kvcheck {

/// The dense NHD [num_blocks, block_size, H, D] or HND [num_blocks, H, block_size, D]
/// layout. Does not validate (validate_kv_layout does).
KvCacheLayout kv_dense_layout(KvDtype dtype, KvHeadLayout order, int64_t num_blocks,
                              int32_t block_size, int32_t num_kv_heads, int32_t head_dim);

/// Element offset of (block, token, head, 0) from a cache's base.
inline int64_t kv_offset(const KvCacheLayout& l, int64_t block, int64_t token, int64_t head) {
  return block * l.stride_page + token * l.stride_token + head * l.stride_head;
}
/// Element offset of head `head` of slot `slot` (= block*block_size + token).
inline int64_t kv_slot_offset(const KvCacheLayout& l, int64_t slot, int64_t head) {
  return kv_offset(l, slot / l.block_size, slot % l.block_size, head);
}
/// Elements a valid layout can touch from its base: 1 + sum (extent-1)*stride over
/// the page, token, head and element axes.
int64_t kv_span_elements(const KvCacheLayout& l);

/// One axis of a strided view: stride and extent, in elements.
struct KvAxis {
  int64_t stride = 0, extent = 1;
};
/// SPEC §7.2 non-overlap rule: sorted by stride, every axis of extent > 1 has a
/// stride >= 1 + sum (extent-1)*stride of the axes before it (computed without
/// overflow). Sufficient for every index tuple to address a distinct element.
bool kv_axes_non_overlapping(std::span<const KvAxis> axes);

/// SPEC §7.2 layout rules: num_blocks, block_size, num_kv_heads, head_dim >= 1,
/// num_blocks*block_size <= INT32_MAX, strides >= 0, non-overlapping, span*bytes in
/// int64. Throws Error(kInvalidArgument) naming the rule and the values.
void validate_kv_layout(const KvCacheLayout& layout);

/// The layout, then both caches: non-null (kShapeMismatch), aligned to the element
/// size (kInvalidArgument), span within k_capacity / v_capacity (kShapeMismatch),
/// then K and V sharing no element (kInvalidArgument). Pointers are compared, never
/// dereferenced (device pointers are fine).
void validate_kv_cache(const ConstKvCacheView& cache);

/// SPEC §7.3 for FP8 layouts (no-op for bf16/fp16): kind not kNone and values > 0 and
/// finite (kInvalidArgument), spans of 1 or num_kv_heads floats (kShapeMismatch).
void validate_kv_scales(const KvCacheLayout& layout, const KvScales& scales);

/// The scale of head `head` in `scales` (k_scale or v_scale) of a validated view.
inline float kv_head_scale(KvScaleKind kind, std::span<const float> scales, int64_t head) {
  return scales[kind == KvScaleKind::kPerHead ? static_cast<size_t>(head) : 0];
}

}  // namespace kvcheck
