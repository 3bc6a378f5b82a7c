// The copy loop of the cpu copy_blocks (SPEC §8.1) and swap_blocks (docs/spec.md §8.3),
// defined in impl/cpu/copy_blocks.cpp: copy_blocks is the case src = dst, one stride.
#pragma once

#include <array>
#include <cstdint>
#include <span>

namespace kvcheck::cpu {

/// For every view (src_offset, dst_offset, block_bytes) and every pair (s, d) of
/// block_mapping [n][2] without a -1: bytes [src_offset + s*src_stride, +block_bytes)
/// of src copied to [dst_offset + d*dst_stride, +block_bytes) of dst, one memcpy each,
/// split over threads by (view, pair). The caller has validated the call and merged
/// views that write one byte, so the copies are independent and any split gives one
/// result.
void copy_block_views(const uint8_t* src, int64_t src_stride, uint8_t* dst, int64_t dst_stride,
                      std::span<const std::array<int64_t, 3>> views, std::span<const int64_t> block_mapping);

}  // namespace kvcheck::cpu
