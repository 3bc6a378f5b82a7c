// Shared by the CUDA device-API tests: the GPU skip, the CUDA status assertion, and
// a call's outcome as the text the cpu backend's error would give.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "impl/cuda/device_api.h"
#include "impl/error.h"

/// Skips the test, with the reason, where no device runs this build's kernels.
#define KVCHECK_NEED_GPU()                                                                                     \
  do {                                                                                                         \
    const std::string why = ::kvcheck::cuda::probe_device();                                                   \
    if (!why.empty()) GTEST_SKIP() << "no usable CUDA device here (" << why << "); runs on the GPU machine"; \
  } while (0)

namespace kvcheck::cuda_test {

inline void ck(cudaError_t e) { ASSERT_EQ(e, cudaSuccess) << cudaGetErrorString(e); }

/// `n` elements of T in device memory (one byte more, so n = 0 is not a null pointer),
/// freed with the test.
template <class T>
struct DeviceArray {
  T* p = nullptr;
  explicit DeviceArray(size_t n) { ck(cudaMalloc(reinterpret_cast<void**>(&p), n * sizeof(T) + 1)); }
  ~DeviceArray() { cudaFree(p); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
};

/// What a call did: "" when it returned, else "<code>: <message>" of its Error.
inline std::string outcome(const std::function<void()>& op) {
  try {
    op();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace kvcheck::cuda_test
