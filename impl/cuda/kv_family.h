// C++17 launch API of the K/V family's CUDA kernels (kv_family.cu, SPEC §7): store_kv
// and gather_kv. No CUDA or C++20 headers, so both the C++20 host side and nvcc
// (CUDA_STANDARD 17) include it. Contract: every pointer is a DEVICE pointer; the
// metadata is valid (SPEC §7.4/§7.5), or is being validated by the validation kernels
// that write `status` (the checked entries of device_api.h); launchers enqueue on opts.stream (PDL
// when opts.pdl), never allocate, copy or synchronise, and return "" or the CUDA
// error text of the launch. Kernels wait for the previous grid (PDL) before reading,
// return without writing when `status` (may be null) holds an error, and let
// dependents launch after their last write; grids come from dev::grid_for, so the
// test-only grid cap applies. Strides are in ELEMENTS, as in KvCacheLayout / KvTokens.
// Every cache address goes through KvPagedLayout (impl/kv_paged_layout.h: K's and V's
// strides, the slot split); the checked entries (device_api.h: store_kv_checked,
// gather_kv_checked) build it and validate before they call these.
#pragma once

#include <cstdint>
#include <string>

#include "impl/cuda/device_api.h"  // LaunchOptions, DeviceStatus
#include "impl/kv_paged_layout.h"  // KvPagedLayout, KvDevDtype

namespace kvcheck::cuda {

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
/// q = cvt(x / scale) with __fdiv_rn and SATFINITE, or with `reciprocal` (recipe
/// kSglang, SPEC §7.3.1) q = cvt(x * RN(1 / scale)) with a NaN sent to +max;
/// k_scale / v_scale are device arrays of 1 (per tensor) or num_kv_heads
/// (per_head_scale) floats. e2m1 caches (SPEC §7.9): each 16-element group gets its
/// e4m3 scale sf = cvt(amax / RN(6 g)) in k_sf / v_sf and its codes
/// cvt_e2m1(RN(x * RN(1 / RN(float(sf) * g)))), two per byte (element 2i low).
struct StoreKvLaunch {
  KvDevRows key, value;
  const int32_t* slot_mapping = nullptr;
  int64_t n = 0;
  void* k_cache = nullptr;
  void* v_cache = nullptr;
  KvPagedLayout layout;
  const float* k_scale = nullptr;
  const float* v_scale = nullptr;
  bool per_head_scale = false;
  bool reciprocal = false;  // recipe kSglang
  // A fused RoPE of the key rows (docs/spec.md §8.4; device pointers; cos_sin_cache
  // null: none): each key element in the rotated range from itself and its partner.
  RopeArgs rope{};
  // e2m1 caches (SPEC §7.9): K's and V's block-scale caches (bytes; the scale of group
  // g of (block, token, head) at k_sf / v_sf + sf.offset(block, token, head, g)). The
  // global decode scale g is k_scale[0] / v_scale[0] (per tensor). Unused otherwise.
  void* k_sf = nullptr;
  void* v_sf = nullptr;
  KvSfDevLayout sf{};
};
std::string launch_store_kv(const StoreKvLaunch& a, const DeviceStatus* status, const LaunchOptions& opts);

/// gather_kv body (SPEC §7.5): output row r < total = cu_seqlens_k[num_seqs] (read on
/// the device, after the PDL wait: the host need not know it) of sequence i (cu[i] <=
/// r < cu[i+1]) is token t = r - cu[i] at table position p = start_i + t (start_i:
/// kv_seq_start of seq_starts[i], 0 without seq_starts), block
/// block_table[i*max_blocks + p/block_size].
/// max_tokens (host) bounds total: the grid is sized for it, and it is at least the
/// validated total (the rows both outputs hold will do); 0 launches nothing. FP8 caches
/// dequantise: round_rn(float(q) * scale) to the output's model dtype; e2m1 caches
/// (SPEC §7.9) round_rn(RN(e2m1(q) * e4m3(sf)) * g), g = k_scale[0] / v_scale[0].
struct GatherKvLaunch {
  const void* k_cache = nullptr;
  const void* v_cache = nullptr;
  KvPagedLayout layout;
  const float* k_scale = nullptr;
  const float* v_scale = nullptr;
  bool per_head_scale = false;
  const int32_t* block_table = nullptr;
  int32_t max_blocks = 0;
  const int32_t* cu_seqlens_k = nullptr;
  const int32_t* seq_starts = nullptr;  // [num_seqs] or nullptr
  bool block_unit = false;
  int32_t num_seqs = 0;
  int64_t max_tokens = 0;
  KvDevRowsOut out_k, out_v;
  // e2m1 caches (SPEC §7.9): the block-scale caches, as StoreKvLaunch's (read here).
  const void* k_sf = nullptr;
  const void* v_sf = nullptr;
  KvSfDevLayout sf{};
};
std::string launch_gather_kv(const GatherKvLaunch& a, const DeviceStatus* status, const LaunchOptions& opts);

}  // namespace kvcheck::cuda
