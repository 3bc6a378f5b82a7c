// The K/V family's layout rules in production code (SPEC §7.2, §7.3): the validity of
// a layout, a view and its scales, and the bridge from the views' KvCacheLayout to
// KvPagedLayout (impl/kv_paged_layout.h), the one owner of this family's offsets that
// every backend addresses through (cpu kernels, CUDA kernels, validators). reference/
// writes the formula out on its own and a property checks that the two agree.
#pragma once

#include <cstdint>
#include <span>

#include "impl/kv_format.h"
#include "impl/kv_paged_layout.h"

namespace kvcheck {

/// The dense NHD [num_blocks, block_size, H, D] or HND [num_blocks, H, block_size, D]
/// layout. Does not validate (validate_kv_layout does).
KvCacheLayout kv_dense_layout(KvDtype dtype, KvHeadLayout order, int64_t num_blocks,
                              int32_t block_size, int32_t num_kv_heads, int32_t head_dim);

/// The KvPagedLayout of a view's layout: K and V get the same strides (the v1 ABI and
/// KvCacheLayout have one set). Copies fields; does not validate.
KvPagedLayout kv_paged_layout(const KvCacheLayout& l);

/// Elements a valid layout can touch from a cache's base: 1 + sum (extent-1)*stride
/// over the page, token, head and element axes (of cache `side` for a KvPagedLayout).
int64_t kv_span_elements(const KvCacheLayout& l);
int64_t kv_span_elements(const KvPagedLayout& l, int side);

/// kv_axes_non_overlapping (impl/kv_paged_layout.h) of a span of axes.
inline bool kv_axes_non_overlapping(std::span<const KvAxis> axes) {
  return kv_axes_non_overlapping(axes.data(), static_cast<int>(axes.size()));
}

/// SPEC §7.2 layout rules: num_blocks, block_size, num_kv_heads, head_dim >= 1,
/// num_blocks*block_size <= INT32_MAX, strides >= 0, non-overlapping, span*bytes in
/// int64. Throws Error(kInvalidArgument) naming the rule and the values.
void validate_kv_layout(const KvCacheLayout& layout);

/// The layout, then both caches: non-null (kShapeMismatch), aligned to the element
/// size (kInvalidArgument), span within k_capacity / v_capacity (kShapeMismatch),
/// then K and V sharing no element (kInvalidArgument), then (e2m1) validate_kv_sf. Pointers are compared, never
/// dereferenced (device pointers are fine).
void validate_kv_cache(const ConstKvCacheView& cache);

/// SPEC §7.9, e2m1 caches only (a no-op otherwise): the scale layout is known, strides
/// >= 0, interleave4 needs block_size % 4 == 0 and stride_token == head_dim / 16, the
/// scale view does not overlap itself (kInvalidArgument); k_sf then v_sf non-null and
/// their span within k_sf_capacity / v_sf_capacity (kShapeMismatch); then the scale
/// caches share no byte with each other or with K's or V's data (kInvalidArgument).
/// validate_kv_cache ends with it.
void validate_kv_sf(const ConstKvCacheView& cache);
/// The scale caches' device geometry (impl/kv_paged_layout.h) of a layout; no validation.
KvSfDevLayout kv_sf_layout(const KvCacheLayout& layout, const KvSfGeometry& sf);
/// Bytes a valid scale view spans from its base (-1 on int64 overflow).
int64_t kv_sf_span_bytes(const KvCacheLayout& layout, const KvSfGeometry& sf);

/// SPEC §7.3 for FP8 layouts (no-op for bf16/fp16): kind not kNone (kInvalidArgument),
/// spans of 1 or num_kv_heads floats (kShapeMismatch), a known recipe (SPEC §7.3.1;
/// kInvalidArgument), then the values: k_scale's,
/// then v_scale's, each > 0 and finite (kv_scale_ok; kInvalidArgument). Reads the
/// values, so the scales must be host memory.
void validate_kv_scales(const KvCacheLayout& layout, const KvScales& scales);
/// The checks of validate_kv_scales that read no value (kind, sizes, recipe): for backends
/// whose scales are device memory and checked there (impl/cuda/device_api.h).
void validate_kv_scales_shape(const KvCacheLayout& layout, const KvScales& scales);

}  // namespace kvcheck
