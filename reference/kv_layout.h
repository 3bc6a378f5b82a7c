// The reference's own K/V layout rules and offsets (SPEC §7.2, §7.3), written out
// independently of impl/kv_layout.h so an offset or validation bug cannot hide on
// both sides.
#pragma once

#include <cstdint>

#include "impl/kv_format.h"

namespace kvcheck::ref {

/// Element offset of (block, token, head, d) from a cache's base (SPEC §7.2).
int64_t kv_element_offset(const KvCacheLayout& l, int64_t block, int64_t token, int64_t head,
                          int64_t d);

/// Byte offset from the side's scale-cache base of the e4m3 scale of group `group` of
/// (block, token, head) in an e2m1 cache (SPEC §7.9, both scale layouts).
int64_t kv_sf_byte_offset(const ConstKvCacheView& cache, int64_t block, int64_t token, int64_t head, int64_t group);

/// SPEC §7.2 then §7.3 checks of a cache view and its scales, in the spec's order;
/// throws kvcheck::Error.
void check_kv_cache(const ConstKvCacheView& cache);

/// SPEC §7.1 model dtype rule for rows stored into / gathered from the cache.
void check_model_dtype(KvDtype cache_dtype, KvDtype rows_dtype, const char* what);
/// SPEC §7.1: key and value (out_k and out_v) share one model dtype; kInvalidArgument
/// naming both otherwise.
void check_same_model_dtype(KvDtype k, KvDtype v, const char* what_k, const char* what_v);

/// True when the strided axes (stride, extent) address distinct elements by the
/// SPEC §7.2 rule. n <= 5.
bool non_overlapping(const int64_t* strides, const int64_t* extents, int n);

/// k_scale (is_v false) or v_scale of head h; only for FP8 caches.
float head_scale(const KvScales& scales, bool is_v, int64_t h);

}  // namespace kvcheck::ref
