// Reference fused RoPE (docs/spec.md §8.4): the definition, one pair at a time.
#include "reference/rope.h"

#include <string>

#include "impl/error.h"
#include "reference/kv_numerics.h"

namespace kvcheck::ref {

void rope_row(const uint16_t* row, uint16_t* out, int32_t width, KvDtype dtype, const RopeArgs& rope,
              const float* cos_sin) {
  for (int32_t e = 0; e < width; ++e) out[e] = row[e];
  const int32_t half = rope.rot_dim / 2;
  for (int32_t j = 0; j < half; ++j) {
    const int32_t a = rope.rope_offset + (rope.is_neox ? j : 2 * j);
    const int32_t b = rope.rope_offset + (rope.is_neox ? j + half : 2 * j + 1);
    const float x = model_to_float(dtype, row[a]), y = model_to_float(dtype, row[b]);
    const float c = cos_sin[j], s = cos_sin[half + j];
    // Each product rounded to fp32 before the sum (volatile: the compiler may not
    // contract x*c - y*s into an FMA, whatever -ffp-contract says).
    volatile float xc = x * c, ys = y * s, yc = y * c, xs = x * s;
    out[a] = float_to_model(dtype, xc - ys);
    out[b] = float_to_model(dtype, yc + xs);
  }
}

std::vector<bf16_bits> rope_rows(const KVInput& k_pe, int32_t rope_dim, int64_t n, const RopeArgs& rope) {
  std::vector<bf16_bits> out(static_cast<size_t>(n * rope_dim));
  for (int64_t i = 0; i < n; ++i)
    rope_row(k_pe.data + i * k_pe.row_stride, out.data() + i * rope_dim, rope_dim, KvDtype::kBF16, rope,
             rope.cos_sin_cache + rope.positions[i] * rope.rot_dim);
  return out;
}

KVInput rotated_input(const KVInput& k_pe, int32_t rope_dim, int64_t n, const RopeArgs& rope,
                      std::vector<bf16_bits>& storage) {
  storage = rope_rows(k_pe, rope_dim, n, rope);
  return {storage.data(), n, rope_dim};
}

void check_rope_shape(const RopeArgs& rope, int32_t width) {
  if (rope.rot_dim < 2 || rope.rot_dim % 2 != 0)
    throw Error(ErrorCode::kInvalidArgument, "rot_dim " + std::to_string(rope.rot_dim) + " is odd or < 2");
  if (rope.rope_offset < 0 || int64_t{rope.rope_offset} + rope.rot_dim > width)
    throw Error(ErrorCode::kInvalidArgument, "rope_offset + rot_dim outside the rotated row");
  if (rope.max_position < 1) throw Error(ErrorCode::kInvalidArgument, "max_position < 1");
}

void check_rope_inputs(const RopeArgs& rope, int64_t n) {
  if (rope.positions_rows < n)
    throw Error(ErrorCode::kShapeMismatch, "positions has " + std::to_string(rope.positions_rows) + " rows < n");
  if (rope.positions == nullptr || rope.cos_sin_cache == nullptr)
    throw Error(ErrorCode::kShapeMismatch, "positions or cos_sin_cache is null");
  for (int64_t i = 0; i < n; ++i)
    if (rope.positions[i] < 0 || rope.positions[i] >= rope.max_position)
      throw Error(ErrorCode::kInvalidArgument, "positions[" + std::to_string(i) + "] = " +
                                                   std::to_string(rope.positions[i]) + " is not a row of cos_sin_cache");
}

}  // namespace kvcheck::ref
