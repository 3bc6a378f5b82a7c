// C++17 launch API of the K/V family's CUDA kernels (kv_family.cu, SPEC §7): store_kv
// and gather_kv. No CUDA or C++20 headers, so both the C++20 host side and nvcc
// (CUDA_STANDARD 17) include it. Contract: every pointer is a DEVICE pointer; the
// metadata has been validated (on the host with impl/validate_kv.h, SPEC §7.4/§7.5,
// or by validation kernels writing `status`); launchers enqueue on opts.stream (PDL
// when opts.pdl), never allocate, copy or synchronise, and return "" or the CUDA
// error text of the launch. Kernels wait for the previous grid (PDL) before reading,
// return without writing when `status` (may be null) holds an error, and let
// dependents launch after their last write; grids come from dev::grid_for, so the
// test-only grid cap applies. Strides are in ELEMENTS, as in KvCacheLayout / KvTokens.
#pragma once

#include <cstdint>
#include <string>

#include "impl/cuda/device_api.h"  // LaunchOptions, DeviceStatus

namespace kvcheck::cuda {

/// Mirrors kvcheck::KvDtype (same values).
enum class KvDevDtype : int32_t { kBF16 = 0, kFP16 = 1, kE4M3 = 2, kE5M2 = 3 };

/// SPEC §7.2 geometry shared by K and V: element (b, t, h, d) at
/// b*stride_page + t*stride_token + h*stride_head + d.
struct KvDevLayout {
  KvDevDtype dtype = KvDevDtype::kBF16;
  int32_t block_size = 1, num_kv_heads = 1, head_dim = 1;
  int64_t stride_page = 0, stride_token = 0, stride_head = 0;
};

/// Token rows [rows][H][D] of a model dtype (bf16/fp16): token i head h at element
/// i*token_stride + h*head_stride.
struct KvDevRows {
  const void* data = nullptr;
  KvDevDtype dtype = KvDevDtype::kBF16;
  int64_t token_stride = 0, head_stride = 0;
};
struct KvDevRowsOut {
  void* data = nullptr;
  KvDevDtype dtype = KvDevDtype::kBF16;
  int64_t token_stride = 0, head_stride = 0;
};

/// store_kv body (SPEC §7.4): rows r < n with slot_mapping[r] >= 0 write every head
/// of key row r / value row r to the K / V record of that slot. FP8 caches:
/// q = cvt(x / scale) with __fdiv_rn and SATFINITE; k_scale / v_scale are device
/// arrays of 1 (per tensor) or num_kv_heads (per_head_scale) floats.
struct StoreKvLaunch {
  KvDevRows key, value;
  const int32_t* slot_mapping = nullptr;
  int64_t n = 0;
  void* k_cache = nullptr;
  void* v_cache = nullptr;
  KvDevLayout layout;
  const float* k_scale = nullptr;
  const float* v_scale = nullptr;
  bool per_head_scale = false;
};
std::string launch_store_kv(const StoreKvLaunch& a, const DeviceStatus* status, const LaunchOptions& opts);

/// gather_kv body (SPEC §7.5): output row r < total_tokens (= cu_seqlens_k[num_seqs],
/// known to the host that validated it) of sequence i (cu[i] <= r < cu[i+1]) is token
/// t = r - cu[i], block block_table[i*max_blocks + t/block_size]. FP8 caches
/// dequantise: round_rn(float(q) * scale) to the output's model dtype.
struct GatherKvLaunch {
  const void* k_cache = nullptr;
  const void* v_cache = nullptr;
  KvDevLayout layout;
  const float* k_scale = nullptr;
  const float* v_scale = nullptr;
  bool per_head_scale = false;
  const int32_t* block_table = nullptr;
  int32_t max_blocks = 0;
  const int32_t* cu_seqlens_k = nullptr;
  int32_t num_seqs = 0;
  int64_t total_tokens = 0;
  KvDevRowsOut out_k, out_v;
};
std::string launch_gather_kv(const GatherKvLaunch& a, const DeviceStatus* status, const LaunchOptions& opts);

}  // namespace kvcheck::cuda
