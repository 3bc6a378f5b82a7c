// Host-side device memory of the plugin harness (C++, CUDA runtime API only): the
// guarded buffers every device plugin call runs on (impl/plugin/device_backend.cpp).
// Every failure throws std::runtime_error naming the call and the CUDA error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace kvcheck::cuda {

/// An owned device allocation (cudaMalloc), or page-locked host memory
/// (cudaMallocHost) when `pinned`; size 0 holds nullptr. Freed allocations go to a
/// per-process pool the next buffer of the same 4 KiB size class reuses
/// (KVCHECK_DEVICE_POOL=0: plain cudaMalloc/cudaFree, as the sanitizer runs use).
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes, bool pinned = false);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  uint8_t* get() const { return ptr_; }
  template <typename T>
  T* as() const { return reinterpret_cast<T*>(ptr_); }

 private:
  uint8_t* ptr_ = nullptr;
  size_t bytes_ = 0;  // allocated: the request rounded up to its pool size class
  bool pinned_ = false;
};

/// A device copy of `bytes` host bytes between two guard bands of at least `guard`
/// bytes (a multiple of 256) filled with kSentinel. The copy starts at the host
/// address's offset modulo 256 (the front band grows by it), so a kernel's or a
/// validator's alignment checks see the host buffer's alignment. download() brings the whole allocation back, guards included,
/// and throws when a guard byte changed: a kernel wrote outside its buffer.
class GuardedBuffer {
 public:
  static constexpr uint8_t kSentinel = 0xA5;
  /// `what` names the buffer in reports ("cache", "out.data", ...). Fills and
  /// uploads on `stream` (a cudaStream_t), so kernels later on it see them.
  /// `pinned`: the copy lives in page-locked host memory (a device kernel reaches it
  /// through its mapped address), else in device memory.
  GuardedBuffer(const void* host, size_t bytes, size_t guard, const char* what, void* stream, bool pinned = false);
  uint8_t* get() const { return bytes_ ? buf_.get() + front_ : nullptr; }
  /// Copies the buffer's bytes to host (may be nullptr: only the guards are
  /// checked) after the stream's work, and checks both guard bands.
  void download(void* host) const;

 private:
  size_t bytes_, guard_, front_;  // front_ = guard_ + the host's offset modulo 256
  const char* what_;
  void* stream_;
  bool pinned_;
  DeviceBuffer buf_;
};

/// Guarded device copies of several host views (byte ranges) at once: views that
/// overlap (K and V caches as views of one buffer, key and value rows of one packed
/// tensor) travel as ONE copy of their union, so a write through one view is not
/// undone by downloading another; disjoint views travel separately. Empty views
/// (size 0 or nullptr) map to nullptr.
class DeviceViews {
 public:
  DeviceViews(const std::vector<std::pair<const void*, size_t>>& views, size_t guard, const char* what,
              void* stream, bool pinned = false);
  /// The device address of host address `host` (inside one of the views).
  template <typename T = uint8_t>
  T* map(const void* host) const { return reinterpret_cast<T*>(map_bytes(host)); }
  /// Downloads every copy back over its host bytes and checks all guard bands.
  void download() const;
  /// Checks all guard bands and that every copy still holds its host bytes (inputs
  /// a kernel only reads); throws std::runtime_error naming `op` and the views otherwise.
  void expect_unchanged(const char* op) const;

 private:
  uint8_t* map_bytes(const void* host) const;
  struct Copy {
    const uint8_t* lo;
    size_t bytes;
    std::unique_ptr<GuardedBuffer> buf;
  };
  std::vector<Copy> copies_;
  const char* what_;
};

/// Guard band for a buffer whose rows are `row_bytes` apart: at least 4 KiB and at
/// least one row, rounded up to 256 bytes (host arithmetic: also in builds without CUDA).
inline size_t guard_for(int64_t row_bytes) {
  const size_t g = row_bytes > 4096 ? static_cast<size_t>(row_bytes) : 4096;
  return (g + 255) / 256 * 256;
}

/// Copy to the device on `stream` (a cudaStream_t), ordered before later work on
/// it; a no-op for 0 bytes.
void to_device(void* dst, const void* src, size_t bytes, void* stream);
/// Waits for `stream` (a cudaStream_t) and throws on an asynchronous kernel error.
void synchronize(void* stream, const char* what);

}  // namespace kvcheck::cuda
