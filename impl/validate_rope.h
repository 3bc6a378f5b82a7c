// Validation of a fused RoPE (docs/spec.md §8.4), shared by the two operations that take
// one: concat_and_cache_mla (the rotated row is k_pe, rope_dim elements) and store_kv
// (each head of a key row, head_dim elements). Each operation calls the three checks at
// its places in its own order (§8.4).
#pragma once

#include <cstdint>

#include "impl/rope_args.h"

namespace kvcheck {

/// The checks that read no metadata (every call, n == 0 included): rot_dim odd or < 2,
/// rope_offset < 0 or rope_offset + rot_dim > width, max_position < 1 — all
/// kInvalidArgument. width: the rotated row's elements, named width_name in messages.
void validate_rope_shape(const RopeArgs& rope, int32_t width, const char* width_name);
/// For n > 0 rows: positions_rows < n, then null positions, then a null cos_sin_cache
/// (kShapeMismatch).
void validate_rope_inputs(const RopeArgs& rope, int64_t n);
/// The first i < n with positions[i] outside [0, max_position) (kInvalidArgument,
/// rope_position_error). Host memory; O(n).
void validate_rope_positions(const RopeArgs& rope, int64_t n);

}  // namespace kvcheck
