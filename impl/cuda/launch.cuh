// How every kvcheck kernel is launched (cudaLaunchKernelEx: PDL attribute, grid cap)
// and the device side of programmatic dependent launch.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <utility>

#include "impl/cuda/device_api.h"

namespace kvcheck::cuda::dev {

constexpr int kThreads = 256;  // threads per CTA of every kvcheck kernel

/// Waits until the previous grid in the stream has completed and its writes are
/// visible (griddepcontrol.wait); a no-op for launches without PDL. Every kernel
/// calls it before its first read of metadata or inputs.
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
/// Lets the next grid in the stream launch (griddepcontrol.launch_dependents);
/// kernels call it after their last write.
__device__ __forceinline__ void pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/// True when a checked call's validation found an error: data kernels then return
/// before writing anything.
__device__ __forceinline__ bool failed(const DeviceStatus* status) {
  return status != nullptr && *reinterpret_cast<const volatile unsigned long long*>(&status->first) != kStatusOk;
}

/// CTAs for a grid-stride loop over `ctas_wanted` CTAs of work: at least 1, at most
/// 2^31-1 and at most KVCHECK_CUDA_MAX_GRID when that is set.
int64_t grid_for(int64_t ctas_wanted);
/// How many CTAs of `kernel` (kThreads threads, no dynamic shared memory) the device
/// holds at once: one full wave. Queried once per kernel.
int64_t resident_ctas(const void* kernel);

/// Launches `kernel` with `grid` CTAs of kThreads on o.stream, with the PDL attribute
/// when o.pdl. The grid is first capped at one wave of resident CTAs (persistent: a
/// grid-stride loop then gives every CTA the same trips and none waits for a second
/// wave) unless `one_wave` is false (the store kernels, whose short row loops ran
/// faster on H200 with a CTA per piece of work than on one wave).
/// cudaLaunchKernelEx of grid x threads with o's stream and PDL attribute; "" or
/// "<name>: <CUDA error>". The launch's own status, so an error the caller left
/// pending is neither cleared nor taken for this launch's.
template <typename... P, typename... A>
std::string launch_exactly(const char* name, void (*kernel)(P...), int64_t grid, dim3 threads, const LaunchOptions& o,
                           A&&... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(grid));
  cfg.blockDim = threads;
  cfg.stream = static_cast<cudaStream_t>(o.stream);
  cudaLaunchAttribute attr[1];
  if (o.pdl) {
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
  }
  const cudaError_t e = cudaLaunchKernelEx(&cfg, kernel, std::forward<A>(args)...);
  return e == cudaSuccess ? std::string() : std::string(name) + ": " + cudaGetErrorString(e);
}

template <typename... P, typename... A>
std::string launch_grid(const char* name, void (*kernel)(P...), int64_t grid, bool one_wave, const LaunchOptions& o,
                        A&&... args) {
  if (one_wave) {
    const int64_t wave = resident_ctas(reinterpret_cast<const void*>(kernel));
    if (grid > wave) grid = wave;
  }
  return launch_exactly(name, kernel, grid, kThreads, o, std::forward<A>(args)...);
}

/// One thread of `kernel`: the blame kernels, which read and write one DeviceStatus
/// (a CTA of them would race on its fields).
template <typename... P, typename... A>
std::string launch_one_thread(const char* name, void (*kernel)(P...), const LaunchOptions& o, A&&... args) {
  return launch_exactly(name, kernel, 1, 1, o, std::forward<A>(args)...);
}

/// launch_grid with one wave at most (every kernel but the stores).
template <typename... P, typename... A>
std::string launch(const char* name, void (*kernel)(P...), int64_t grid, const LaunchOptions& o, A&&... args) {
  return launch_grid(name, kernel, grid, true, o, std::forward<A>(args)...);
}

}  // namespace kvcheck::cuda::dev
