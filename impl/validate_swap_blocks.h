// Checked-entry validation of swap_blocks (docs/spec.md §8.3), shared by the cpu and
// cuda backends (and the plugin adapter's bound) so all report one code and message.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "impl/op_args.h"

namespace kvcheck {

/// docs/spec.md §8.3 steps 1–2, everything that reads no block_mapping entry: the pool
/// sizes and entry counts (kInvalidArgument), each view's rules (kInvalidArgument; a
/// block past its pool's allocation or a null pool: kShapeMismatch), src and dst
/// sharing a byte (kInvalidArgument), then two views that put a dst byte in different
/// blocks or fill it from different src bytes (kInvalidArgument). O(num_views^2);
/// `views` is read on the host. Pointers are compared, never dereferenced.
void validate_swap_blocks_shape(const SwapBlocksArgs& a);

/// docs/spec.md §8.3 step 3 on host memory (O(pairs log pairs)): the smallest failing
/// position (2p = src, 2p+1 = dst of pair p): kBlockOutOfRange against its own pool's
/// num_blocks, kBlockConflict for a dst written twice. Without views nothing is read.
void validate_swap_blocks_mapping(const SwapBlocksArgs& a);

/// validate_swap_blocks_shape, then validate_swap_blocks_mapping.
void validate_swap_blocks(const SwapBlocksArgs& a);

/// The copies validated views make, once each: views whose dst blocks overlap (they
/// then read the same src bytes, step 2) merged into one (src_offset, dst_offset,
/// block_bytes) per union, sorted by dst_offset, so two threads never write one byte.
std::vector<std::array<int64_t, 3>> merge_swap_views(std::span<const int64_t> views);

}  // namespace kvcheck
