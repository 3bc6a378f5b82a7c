// Small device helpers shared by the CUDA kernels.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace kvcheck::cuda::dev {

/// Copies n bytes with the widest access both pointers and n allow (16, 4 or 1
/// bytes); threads tid, tid+nt, ... of the caller's group share the work.
__device__ __forceinline__ void copy_bytes(uint8_t* dst, const uint8_t* src, int64_t n, int tid,
                                           int nt) {
  const uint64_t a = reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src) |
                     static_cast<uint64_t>(n);
  if (a % 16 == 0) {
    for (int64_t i = tid; i < n / 16; i += nt)
      reinterpret_cast<uint4*>(dst)[i] = reinterpret_cast<const uint4*>(src)[i];
  } else if (a % 4 == 0) {
    for (int64_t i = tid; i < n / 4; i += nt)
      reinterpret_cast<uint32_t*>(dst)[i] = reinterpret_cast<const uint32_t*>(src)[i];
  } else {
    for (int64_t i = tid; i < n; i += nt) dst[i] = src[i];
  }
}

/// Zeroes n bytes, widest access first (as copy_bytes).
__device__ __forceinline__ void zero_bytes(uint8_t* dst, int64_t n, int tid, int nt) {
  const uint64_t a = reinterpret_cast<uintptr_t>(dst) | static_cast<uint64_t>(n);
  if (a % 16 == 0) {
    for (int64_t i = tid; i < n / 16; i += nt) reinterpret_cast<uint4*>(dst)[i] = make_uint4(0, 0, 0, 0);
  } else if (a % 4 == 0) {
    for (int64_t i = tid; i < n / 4; i += nt) reinterpret_cast<uint32_t*>(dst)[i] = 0;
  } else {
    for (int64_t i = tid; i < n; i += nt) dst[i] = 0;
  }
}

}  // namespace kvcheck::cuda::dev
