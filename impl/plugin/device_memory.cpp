#include "impl/plugin/device_memory.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace kvcheck::cuda {
namespace {

void check_rt(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("cuda ") + what + ": " + cudaGetErrorString(e));
}

// Freed allocations kept for the next case of the same size (device and pinned apart):
// a case's buffers cost a cudaMalloc + cudaFree (which waits for the whole device) or a
// cudaMallocHost (page locking) each, more than the case's own kernels. Off with
// KVCHECK_DEVICE_POOL=0 (tests/cuda/sanitize.sh: memcheck then sees every buffer's own
// bounds). Sizes are rounded up to 4 KiB classes; at most kPoolBytes per kind is kept.
class Pool {
 public:
  static constexpr size_t kPoolBytes = size_t{1} << 30;
  static size_t size_class(size_t bytes) { return (bytes + 4095) & ~size_t{4095}; }
  static bool on() {
    static const bool enabled = [] {
      const char* v = std::getenv("KVCHECK_DEVICE_POOL");
      return !(v && std::string(v) == "0");
    }();
    return enabled;
  }
  void* take(size_t bytes) {
    const auto it = free_.find(bytes);
    if (it == free_.end()) return nullptr;
    void* p = it->second;
    free_.erase(it);
    kept_ -= bytes;
    return p;
  }
  bool keep(void* p, size_t bytes) {  // false: the caller frees it
    if (kept_ + bytes > kPoolBytes) return false;
    free_.emplace(bytes, p);
    kept_ += bytes;
    return true;
  }

 private:
  std::multimap<size_t, void*> free_;
  size_t kept_ = 0;
};

Pool& pool(bool pinned) {
  static Pool device, host;
  return pinned ? host : device;
}

}  // namespace

DeviceBuffer::DeviceBuffer(size_t bytes, bool pinned) : pinned_(pinned) {
  if (bytes == 0) return;
  bytes_ = Pool::on() ? Pool::size_class(bytes) : bytes;
  void* p = Pool::on() ? pool(pinned).take(bytes_) : nullptr;
  if (p == nullptr && pinned)
    check_rt(cudaMallocHost(&p, bytes_), ("cudaMallocHost(" + std::to_string(bytes_) + ")").c_str());
  else if (p == nullptr)
    check_rt(cudaMalloc(&p, bytes_), ("cudaMalloc(" + std::to_string(bytes_) + ")").c_str());
  ptr_ = static_cast<uint8_t*>(p);
}

DeviceBuffer::~DeviceBuffer() {
  if (!ptr_) return;
  // Nothing may still use the buffer when the next case takes it: wait for the device,
  // as cudaFree would (a call that threw skipped the transport's wait). A device in
  // an error state frees it instead.
  if (Pool::on() && cudaDeviceSynchronize() == cudaSuccess && pool(pinned_).keep(ptr_, bytes_)) return;
  if (pinned_)
    cudaFreeHost(ptr_);
  else
    cudaFree(ptr_);
}

GuardedBuffer::GuardedBuffer(const void* host, size_t bytes, size_t guard, const char* what, void* stream,
                             bool pinned)
    : bytes_(bytes),
      guard_(bytes ? guard : 0),
      front_(bytes ? guard + reinterpret_cast<uintptr_t>(host) % 256 : 0),
      what_(what),
      stream_(stream),
      pinned_(pinned),
      buf_(bytes ? front_ + bytes + guard_ : 0, pinned) {
  if (bytes_ == 0) return;
  if (pinned_) {  // fresh host memory no stream touches yet: filled by the CPU
    std::memset(buf_.get(), kSentinel, front_ + bytes_ + guard_);
    if (host) std::memcpy(get(), host, bytes_);
    return;
  }
  const auto s = static_cast<cudaStream_t>(stream);
  check_rt(cudaMemsetAsync(buf_.get(), kSentinel, front_, s), "cudaMemsetAsync(guard)");
  check_rt(cudaMemsetAsync(buf_.get() + front_ + bytes_, kSentinel, guard_, s), "cudaMemsetAsync(guard)");
  if (host) {
    to_device(get(), host, bytes_, stream);
  } else {
    check_rt(cudaMemsetAsync(get(), kSentinel, bytes_, s), "cudaMemsetAsync(buffer)");
  }
}

void GuardedBuffer::download(void* host) const {
  if (bytes_ == 0) return;
  const auto s = static_cast<cudaStream_t>(stream_);
  std::vector<uint8_t> guards(front_ + guard_);
  if (pinned_) {  // after the stream's work, read by the CPU
    check_rt(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    std::memcpy(guards.data(), buf_.get(), front_);
    std::memcpy(guards.data() + front_, buf_.get() + front_ + bytes_, guard_);
    if (host) std::memcpy(host, get(), bytes_);
  } else {
    check_rt(cudaMemcpyAsync(guards.data(), buf_.get(), front_, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync(guard)");
    check_rt(cudaMemcpyAsync(guards.data() + front_, buf_.get() + front_ + bytes_, guard_, cudaMemcpyDeviceToHost, s),
             "cudaMemcpyAsync(guard)");
    if (host) check_rt(cudaMemcpyAsync(host, get(), bytes_, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync device->host");
    check_rt(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  }
  const auto bad = std::find_if(guards.begin(), guards.end(), [](uint8_t b) { return b != kSentinel; });
  if (bad != guards.end()) {
    const auto at = static_cast<int64_t>(bad - guards.begin());
    const auto front = static_cast<int64_t>(front_);
    const int64_t offset = at < front ? at - front : static_cast<int64_t>(bytes_) + at - front;
    throw std::runtime_error(std::string("cuda kernel wrote outside ") + what_ + " (" + std::to_string(bytes_) +
                             " bytes): guard byte at offset " + std::to_string(offset) + " is 0x" +
                             [](uint8_t b) {
                               const char* h = "0123456789ABCDEF";
                               return std::string{h[b >> 4], h[b & 15]};
                             }(*bad) +
                             ", not the sentinel 0xA5");
  }
}

DeviceViews::DeviceViews(const std::vector<std::pair<const void*, size_t>>& views, size_t guard,
                         const char* what, void* stream, bool pinned)
    : what_(what) {
  std::vector<std::pair<const uint8_t*, const uint8_t*>> ranges;  // [lo, hi)
  for (const auto& [p, n] : views)
    if (p != nullptr && n > 0) ranges.emplace_back(static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 0; i < ranges.size();) {
    const uint8_t* lo = ranges[i].first;
    const uint8_t* hi = ranges[i].second;
    for (++i; i < ranges.size() && ranges[i].first < hi; ++i) hi = std::max(hi, ranges[i].second);
    const size_t bytes = static_cast<size_t>(hi - lo);
    copies_.push_back({lo, bytes, std::make_unique<GuardedBuffer>(lo, bytes, guard, what, stream, pinned)});
  }
}

uint8_t* DeviceViews::map_bytes(const void* host) const {
  const auto* h = static_cast<const uint8_t*>(host);
  if (h == nullptr) return nullptr;
  for (const Copy& c : copies_)
    if (h >= c.lo && h < c.lo + c.bytes) return c.buf->get() + (h - c.lo);
  return nullptr;  // an empty view
}

void DeviceViews::download() const {
  for (const Copy& c : copies_) c.buf->download(const_cast<uint8_t*>(c.lo));
}

void DeviceViews::expect_unchanged(const char* op) const {
  for (const Copy& c : copies_) {
    std::vector<uint8_t> now(c.bytes);
    c.buf->download(now.data());
    if (std::memcmp(now.data(), c.lo, c.bytes) != 0)
      throw std::runtime_error(std::string(op) + " wrote into " + what_ + ", which it only reads");
  }
}

void to_device(void* dst, const void* src, size_t bytes, void* stream) {
  if (bytes)
    check_rt(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, static_cast<cudaStream_t>(stream)),
             "cudaMemcpyAsync host->device");
}

void synchronize(void* stream, const char* what) {
  check_rt(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), what);
}

}  // namespace kvcheck::cuda
