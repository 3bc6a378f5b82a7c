// Scalar reference of the fused RoPE (docs/spec.md §8.4), pair by pair: the rotation of
// one row of a model dtype, and the checks both operations that take one make.
#pragma once

#include <cstdint>
#include <vector>

#include "impl/kv_format.h"  // KvDtype
#include "impl/op_args.h"    // KVInput, RopeArgs

namespace kvcheck::ref {

/// docs/spec.md §8.4: `row` (width elements of `dtype`, bf16 or fp16 bits) rotated with
/// the table row `cos_sin` (rot_dim floats) into `out` (width elements): for each pair,
/// fl(fl(x*c) - fl(y*s)) and fl(fl(y*c) + fl(x*s)) in fp32, then rounded to `dtype`
/// (§4's RNE, NaN -> 0x7FFF); the elements outside the rotated range copied. Inputs
/// assumed valid.
void rope_row(const uint16_t* row, uint16_t* out, int32_t width, KvDtype dtype, const RopeArgs& rope,
              const float* cos_sin);
/// Rows [0, n) of k_pe (rope_dim BF16 elements each) rotated at their positions, as n *
/// rope_dim BF16 bit patterns (concat_and_cache_mla, §8.4). Inputs assumed valid.
std::vector<bf16_bits> rope_rows(const KVInput& k_pe, int32_t rope_dim, int64_t n, const RopeArgs& rope);

/// rope_rows into `storage`, as the KVInput of its n rows of rope_dim elements.
KVInput rotated_input(const KVInput& k_pe, int32_t rope_dim, int64_t n, const RopeArgs& rope,
                      std::vector<bf16_bits>& storage);

/// §8.4's checks that read no metadata: rot_dim odd or < 2, the rotated range outside a
/// row of `width` elements, max_position < 1 (kInvalidArgument).
void check_rope_shape(const RopeArgs& rope, int32_t width);
/// §8.4's checks for n > 0 rows: positions short or null, a null table (kShapeMismatch),
/// then the first position outside [0, max_position) (kInvalidArgument).
void check_rope_inputs(const RopeArgs& rope, int64_t n);

}  // namespace kvcheck::ref
