// KVCHECK_HD: marks the inline helpers that host code and CUDA kernels share (the
// layout structs impl/paged_layout.h and impl/kv_paged_layout.h): __host__ __device__
// under nvcc, plain `inline` for the host compiler.
#pragma once

#if defined(__CUDACC__)
#define KVCHECK_HD __host__ __device__ __forceinline__
#else
#define KVCHECK_HD inline
#endif
