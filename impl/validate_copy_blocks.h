// Checked-entry validation of copy_blocks (SPEC §8.1), shared by the cpu and cuda
// backends so both report the same code and message.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "impl/error.h"
#include "impl/op_args.h"

namespace kvcheck {

/// SPEC §8.1 steps 1–2, everything that reads no block_mapping entry: the sizes
/// (kInvalidArgument), each view's rules (kInvalidArgument; past the allocation or a
/// null cache: kShapeMismatch), then two views that put a shared byte in different
/// blocks (kInvalidArgument), decided in closed form (O(num_views^2)). `views` is
/// read on the host.
void validate_copy_blocks_shape(const CopyBlocksArgs& a);

/// SPEC §8.1 step 3 on host memory (O(pairs log pairs)): the smallest failing position
/// (2p = src, 2p+1 = dst of pair p): kBlockOutOfRange, kBlockConflict. Without views
/// nothing is read.
void validate_copy_blocks_mapping(const CopyBlocksArgs& a);

/// Views (o1, b1), (o2, b2) of n >= 1 blocks `stride` bytes apart share a byte that lies
/// in different blocks of the two (SPEC §8.1 step 2's rule, in closed form).
bool views_straddle(int64_t o1, int64_t b1, int64_t o2, int64_t b2, int64_t stride, int64_t n);

/// validate_copy_blocks_shape, then validate_copy_blocks_mapping.
void validate_copy_blocks(const CopyBlocksArgs& a);

/// The copies validated views make, once each: views whose blocks overlap merged into
/// one (offset, block_bytes) per union, sorted by offset, so two threads never write
/// one byte.
std::vector<std::pair<int64_t, int64_t>> merge_aliased_views(std::span<const int64_t> views);

/// The step-3 messages (the CUDA validation reports through them too): entry k (0 =
/// src, 1 = dst) of pair p is not a block; pair p's dst is the dst of the earlier pair
/// q; pair p's dst is the src of pair q.
/// `pool` prefixes num_blocks in the message: "" (copy_blocks), "src." or "dst."
/// (swap_blocks, docs/spec.md §8.3).
Error copy_blocks_range_error(int64_t p, int k, int64_t value, int64_t num_blocks, const char* pool = "");
Error copy_blocks_duplicate_error(int64_t p, int64_t dst, int64_t q);
Error copy_blocks_source_error(int64_t p, int64_t dst, int64_t q);

}  // namespace kvcheck
