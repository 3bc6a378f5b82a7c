// The fused RoPE arguments of concat_and_cache_mla (docs/spec.md §8.4): plain C++17, so
// the host views (impl/op_args.h) and the CUDA device API (impl/cuda/device_api.h) share
// one type.
#pragma once

#include <cstdint>

namespace kvcheck {

/// Fused rotary embedding (docs/spec.md §8.4): k_pe row i rotated at positions[i] before
/// concat_and_cache_mla stores it. cos_sin_cache[max_position][rot_dim] fp32, row p holding
/// cos at [0, rot_dim/2) and sin at [rot_dim/2, rot_dim) (vLLM's layout); the pairs are
/// (o + j, o + j + rot_dim/2) (NeoX) or (o + 2j, o + 2j + 1) (GPT-J), o = rope_offset,
/// elements of a k_pe row. The same view for host and device pointers.
struct RopeArgs {
  const float* cos_sin_cache = nullptr;
  int64_t max_position = 0;            // rows of cos_sin_cache (>= 1)
  const int64_t* positions = nullptr;  // [positions_rows]; every positions[i < n] in [0, max_position)
  int64_t positions_rows = 0;          // what the buffer holds (>= n)
  int32_t rot_dim = 0;                 // elements rotated: even, >= 2
  int32_t rope_offset = 0;             // >= 0, rope_offset + rot_dim <= rope_dim
  bool is_neox = true;
};

}  // namespace kvcheck
