// The reference's own cache-layout formulas (SPEC §3), written out independently of
// impl/layout.h so an offset bug cannot hide on both sides.
#pragma once

#include <cstdint>
#include <span>

#include "impl/format.h"

namespace kvcheck::ref {

/// `stride` arguments: the cache's block stride in bytes, 0 = the packed SPEC §3 stride.
/// Validates the format (kInvalidFormat) and the cache geometry: block_size >= 1,
/// num_blocks >= 1, num_blocks*block_size <= INT32_MAX (slots are int32), the stride a
/// multiple of 32 at least the packed one, and num_blocks*stride fits in int64
/// (kInvalidArgument).
void check_cache_geometry(const KVCacheFormat& format, int64_t num_blocks, int32_t block_size, int64_t stride = 0);
/// After check_cache_geometry: a non-null `cache` buffer of fewer than
/// (num_blocks - 1)*stride + packed stride bytes (a caller claiming more blocks, or a
/// larger block, than it allocated) is kShapeMismatch. A null cache is checked where it
/// is used.
void check_cache_bytes(const KVCacheFormat& format, int64_t num_blocks, int32_t block_size,
                       std::span<const uint8_t> cache, int64_t stride = 0);

/// SPEC §3 packed block_stride in bytes.
int64_t block_stride(const KVCacheFormat& format, int32_t block_size);
/// Byte offset of token `token`'s data in block `block`.
int64_t data_offset(const KVCacheFormat& format, int32_t block_size, int64_t block, int64_t token,
                    int64_t stride = 0);
/// Byte offset of token `token`'s first scale byte in block `block` (quantised only).
int64_t scale_offset(const KVCacheFormat& format, int32_t block_size, int64_t block, int64_t token,
                     int64_t stride = 0);
/// Byte offset of token `token`'s tail in block `block` (formats with one: after the
/// record's data and scales, or after its data in a block-planar or scales_last
/// record, SPEC §2).
int64_t tail_offset(const KVCacheFormat& format, int32_t block_size, int64_t block, int64_t token,
                    int64_t stride = 0);
/// Byte of group `group`'s scale from the token's first scale byte: group * width, or
/// (scales_last) transposed, (n/4)*(group%4) + group/4 of n scales (SPEC §2).
int64_t scale_byte(const KVCacheFormat& format, int64_t group);

}  // namespace kvcheck::ref
