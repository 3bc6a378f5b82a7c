// The device transport (plugin_backend.h): a CUDA_DEVICE plugin runs on buffers the
// HARNESS owns. One path for every operation, driven by the op's ArgGroups
// (op_decl.h): each group becomes one DeviceViews (guard bands on both sides, the host
// address's alignment kept, overlapping views as one copy), the plugin is called on
// the harness's stream, the stream is waited for under the watchdog, written groups
// come back (also after a refusal), read groups must come back unchanged.
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "impl/error.h"
#include "impl/plugin/device_memory.h"
#include "impl/plugin/plugin_backend.h"
#include "impl/plugin/watchdog.h"

namespace kvcheck::plugin {
namespace {

// transport_profile()'s sums: one process, calls from one thread at a time.
TransportProfile g_profile;

double since(std::chrono::steady_clock::time_point& t) {
  const auto now = std::chrono::steady_clock::now();
  const double s = std::chrono::duration<double>(now - t).count();
  t = now;
  return s;
}

class CudaTransport final : public DeviceTransport {
 public:
  ~CudaTransport() override {
    if (stream_) cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
  }

  void run(const std::string& backend, const char* op, const std::vector<ArgGroup>& buffers,
           const std::function<void(void* stream)>& call) const override {
    void* s = stream();
    auto t = std::chrono::steady_clock::now();
    ++g_profile.calls;
    std::vector<std::unique_ptr<cuda::DeviceViews>> copies;
    std::vector<std::vector<uint8_t>> host_before(buffers.size());
    for (size_t i = 0; i < buffers.size(); ++i) {
      const ArgGroup& g = buffers[i];
      if (g.host) {  // stays where it is; kept to compare
        for (const ArgView& v : g.views)
          host_before[i].insert(host_before[i].end(), static_cast<const uint8_t*>(v.host),
                                static_cast<const uint8_t*>(v.host) + v.bytes);
        copies.push_back(nullptr);
        continue;
      }
      std::vector<std::pair<const void*, size_t>> views;
      for (const ArgView& v : g.views) views.emplace_back(v.host, v.bytes);
      copies.push_back(std::make_unique<cuda::DeviceViews>(views, g.guard, g.what, s, g.pinned));
      for (const ArgView& v : g.views) v.set(copies.back()->map(v.host));
    }
    g_profile.upload += since(t);
    std::exception_ptr refusal;
    try {
      call(s);
    } catch (const Error&) {
      refusal = std::current_exception();
    }
    g_profile.call += since(t);
    {
      // A device plugin may return before its kernels finish: the wait for them is
      // under the same limit, or a hung kernel would hang the harness unbounded.
      const std::string waiting = std::string(op) + "'s kernels (still running after the call returned)";
      const WatchdogScope watchdog(backend, waiting.c_str());
      cuda::synchronize(s, op);
    }
    g_profile.wait += since(t);
    const std::string who = "plugin '" + backend + "' " + op;
    for (size_t i = 0; i < buffers.size(); ++i) {
      if (buffers[i].host) {
        size_t at = 0;
        for (const ArgView& v : buffers[i].views) {
          if (v.bytes && std::memcmp(host_before[i].data() + at, v.host, v.bytes) != 0)
            throw std::runtime_error(who + " wrote into " + buffers[i].what + ", which it only reads");
          at += v.bytes;
        }
      } else if (buffers[i].written)
        copies[i]->download();
      else
        copies[i]->expect_unchanged(who.c_str());
    }
    g_profile.download += since(t);
    copies.clear();
    g_profile.free += since(t);
    if (refusal) std::rethrow_exception(refusal);
  }

 private:
  /// The harness's stream, created on first use (never in a process that only loads
  /// plugins and forks: the campaign's parent).
  void* stream() const {
    std::call_once(stream_once_, [this] {
      auto t = std::chrono::steady_clock::now();
      cudaStream_t s = nullptr;
      const cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
      if (e != cudaSuccess)
        throw std::runtime_error(std::string("cuda cudaStreamCreateWithFlags: ") + cudaGetErrorString(e));
      stream_ = s;
      g_profile.init += since(t);  // the process's first CUDA call: its context
    });
    return stream_;
  }

  mutable std::once_flag stream_once_;
  mutable void* stream_ = nullptr;
};

}  // namespace

std::unique_ptr<DeviceTransport> make_device_transport() { return std::make_unique<CudaTransport>(); }

TransportProfile transport_profile() { return g_profile; }

}  // namespace kvcheck::plugin
