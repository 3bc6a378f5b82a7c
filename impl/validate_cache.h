// The cache-view check every checked store / load runs (docs/spec.md §5.2 validation
// order, step 1): a view's layout must fit in the buffer it claims to describe. Shared
// by the cpu validators, the CUDA device API's checked entries and every adapter that
// builds on them, so each backend rejects the same views with the same message.
#pragma once

#include <cstdint>

#include "impl/layout.h"

namespace kvcheck {

/// Throws Error(kShapeMismatch) when `base` is non-null and `size_bytes` is smaller
/// than layout.size_bytes() ((num_blocks - 1) * block_stride + the packed stride, SPEC
/// §3; num_blocks * block_stride when packed): the view claims more blocks,
/// or a larger block, than its allocation holds. A null base is left to the null-cache
/// checks that follow (a store of n > 0 rows, a segment that reads the cache). O(1);
/// `layout` must already be valid (CacheLayout::make's rules).
void validate_cache_bytes(const CacheLayout& layout, const void* base, int64_t size_bytes);

}  // namespace kvcheck
