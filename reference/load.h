// Scalar reference load_paged_kv_cache (SPEC §5.2), one output row at a time.
#pragma once

#include <cstdint>
#include <span>

#include "impl/op_args.h"  // plain argument types only; no production code is called

namespace kvcheck::ref {

/// SPEC §5.2. `cache` is the whole buffer (at least (num_blocks - 1)*block_stride +
/// the packed stride bytes; an empty span with a null pointer is a null cache;
/// block_stride 0 = packed, SPEC §3); load_segments holds S*4 int32.
/// Validates everything first (kInvalidFormat, kInvalidArgument, kShapeMismatch,
/// kSegmentBlockOutOfRange, kSegmentRangeInvalid, kSegmentDestinationOutOfRange,
/// kSegmentOverlap) and writes nothing on error. Rows no segment covers keep their values.
void load_paged_kv_cache(std::span<const uint8_t> cache, const KVCacheFormat& format, int64_t num_blocks,
                         int32_t block_size, std::span<const int32_t> load_segments,
                         int32_t total_k, const LoadOutput& out, int64_t block_stride = 0);

}  // namespace kvcheck::ref
