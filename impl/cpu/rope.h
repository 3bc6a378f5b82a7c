// The cpu fused RoPE (docs/spec.md §8.4): one row of a model dtype rotated with its
// position's table row, each output from its pair in fp32 (the products rounded before
// the sum: the build's -ffp-contract=off keeps them apart), then rounded to the dtype.
// concat_and_cache_mla (impl/cpu/store.cpp: k_pe rows, BF16) and store_kv
// (impl/cpu/store_kv.cpp: each head of a key row, bf16 or fp16) rotate into a buffer
// first, then store it as they store any row.
#pragma once

#include <cstdint>
#include <cstring>

#include "impl/cpu/kv_numerics.h"
#include "impl/rope_args.h"

namespace kvcheck::cpu {

/// `in` (width elements of M) rotated with `cos_sin` (rot_dim floats) into `out`.
template <KvDtype M>
inline void rope_row(const uint16_t* in, uint16_t* out, int32_t width, const RopeArgs& rope, const float* cos_sin) {
  std::memcpy(out, in, static_cast<size_t>(width) * 2);
  const int32_t half = rope.rot_dim / 2;
  const int32_t step = rope.is_neox ? 1 : 2, partner = rope.is_neox ? half : 1;  // pair j: (o + j*step, + partner)
  const uint16_t* x_in = in + rope.rope_offset;
  uint16_t* o = out + rope.rope_offset;
  for (int32_t j = 0; j < half; ++j) {
    const int32_t a = j * step, b = a + partner;
    const float x = fast::model_to_f32<M>(x_in[a]), y = fast::model_to_f32<M>(x_in[b]), c = cos_sin[j],
                sn = cos_sin[half + j];
    const float xc = x * c, ys = y * sn, yc = y * c, xs = x * sn;
    o[a] = fast::f32_to_model<M>(xc - ys);
    o[b] = fast::f32_to_model<M>(yc + xs);
  }
}

}  // namespace kvcheck::cpu
