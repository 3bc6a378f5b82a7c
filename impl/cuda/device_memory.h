// Host-side device memory helpers of the CUDA backend (C++, CUDA runtime API only).
// Every failure throws std::runtime_error naming the call and the CUDA error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace kvcheck::cuda {

/// Throws std::runtime_error("cuda <what>: <err>") when err is not empty.
void check(const std::string& err, const char* what);

/// An owned device allocation (cudaMalloc); size 0 holds nullptr.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  uint8_t* get() const { return ptr_; }
  template <typename T>
  T* as() const { return reinterpret_cast<T*>(ptr_); }

 private:
  uint8_t* ptr_ = nullptr;
};

/// Synchronous copies; no-ops for 0 bytes.
void to_device(void* dst, const void* src, size_t bytes);
void to_host(void* dst, const void* src, size_t bytes);
/// Waits for the default stream and throws on an asynchronous kernel error.
void synchronize(const char* what);

}  // namespace kvcheck::cuda
