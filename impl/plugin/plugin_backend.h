// PluginBackend: the Backend interface over a plugin table. Every operation fills its
// ABI argument struct from the harness's views (plugin_backend.cpp, one function per
// operation) and goes through invoke(), which is the same for all of them: the
// capability gate (an op the plugin lacks, a format, K/V dtype or block size outside
// its capabilities: Error kUnsupported, the plugin is not called), then the call —
// on the harness's host buffers for a HOST plugin, through the DeviceTransport for a
// CUDA_DEVICE plugin, both driven by the op's declaration (op_decl.h).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "impl/backend.h"
#include "impl/plugin/call.h"
#include "impl/plugin/loader.h"
#include "impl/plugin/op_decl.h"

namespace kvcheck::plugin {

/// How a device plugin's call travels (device_backend.cpp; builds without CUDA have
/// none): uploads every group of `buffers` into guarded device copies (the args'
/// pointers are set to them), runs `call` with the harness's stream, waits for the
/// stream under the watchdog, downloads the written groups (also after a refusal: a
/// write despite it must show), checks the guards and that every read group came
/// back unchanged, and only then rethrows the plugin's refusal. Guard hits and CUDA
/// failures throw std::runtime_error (never a kvcheck::Error: the harnesses treat
/// kUnsupported as a skip).
class DeviceTransport {
 public:
  virtual ~DeviceTransport() = default;
  virtual void run(const std::string& backend, const char* op, const std::vector<ArgGroup>& buffers,
                   const std::function<void(void* stream)>& call) const = 0;
};
/// The CUDA transport (throws in builds without CUDA: load_library refuses device
/// plugins there first).
std::unique_ptr<DeviceTransport> make_device_transport();

/// Wall time the device transports of this process spent in each phase of their
/// calls, in seconds, for `kvcheck run` with KVCHECK_PROFILE=1: the harness stream's
/// creation (init: the CUDA context's start-up), buffers allocated,
/// filled and uploaded (upload), the plugin call (call), the wait for its kernels
/// (wait: the uploads' and kernels' device time), download and comparison, and the
/// frees. All zero in builds without CUDA.
struct TransportProfile {
  int64_t calls = 0;
  double init = 0, upload = 0, call = 0, wait = 0, download = 0, free = 0;
};
TransportProfile transport_profile();

class PluginBackend final : public Backend {
 public:
  explicit PluginBackend(std::shared_ptr<Library> lib);
  std::string_view name() const override { return name_; }
  BackendCapabilities capabilities() const override { return caps_; }
  /// The table's optional set_test_parallelism (false when absent or refused).
  bool set_test_parallelism(int32_t max_threads, int64_t min_bytes_per_thread) const override;
  const kvcheck_backend_v1_t& table() const { return *lib_->table; }
  const std::string& path() const { return lib_->path; }

  void store_kv_cache(const KVInput& kv, std::span<const int32_t> slot_mapping, const CacheView& cache) const override;
  void load_paged_kv_cache(const ConstCacheView& cache, std::span<const int32_t> load_segments, int32_t total_k,
                           const LoadOutput& out) const override;
  void convert_kv_index(const ConvertKvIndexArgs& args, std::span<int32_t> out) const override;
  void kv_index_cat(std::span<const int32_t> left, int32_t wl, std::span<const int32_t> right, int32_t wr,
                    int32_t num_q, int32_t total_k_swa_cached, int32_t total_k_swa_cur,
                    std::span<int32_t> out) const override;
  void expand_swa_index(std::span<const int32_t> pivots, int32_t num_q, int32_t width,
                        std::span<int32_t> out) const override;
  void swa_decode_index(std::span<const int32_t> start_len, int32_t num_q, int32_t width, int32_t ring_size,
                        std::span<int32_t> out) const override;
  void store_kv(const KvTokensIn& key, const KvTokensIn& value, std::span<const int32_t> slot_mapping,
                const KvCacheView& cache, const RopeArgs* rope = nullptr) const override;
  void gather_kv(const GatherKvArgs& args) const override;
  void copy_blocks(const CopyBlocksArgs& args) const override;
  void concat_and_cache_mla(const ConcatMlaArgs& args) const override;
  void swap_blocks(const SwapBlocksArgs& args) const override;

 private:
  /// The one path of every operation (see the top of this file).
  template <class Args>
  void invoke(Args a) const {
    if (!(caps_.ops & Op<Args>::bit))
      throw Error(ErrorCode::kUnsupported, name_ + " has no " + Op<Args>::name + " (plugin capabilities)");
    ArgDecl d(caps_, name_, Op<Args>::name, device_ != nullptr);
    declare(a, d);
    const auto entry = table().*Op<Args>::entry;
    if (!device_) {
      const PluginFpScope fp(lib_->fp_mode);  // the plugin's floating-point mode, then the harness's (fp_mode.h)
      return call_plugin(name_, Op<Args>::name, entry, table().context, a, nullptr);
    }
    if (d.nothing_to_do()) return;
    device_->run(name_, Op<Args>::name, d.groups(), [&](void* stream) {
      const PluginFpScope fp(lib_->fp_mode);
      call_plugin(name_, Op<Args>::name, entry, table().context, a, stream);
    });
  }

  std::shared_ptr<Library> lib_;
  std::string name_;
  BackendCapabilities caps_;
  std::unique_ptr<DeviceTransport> device_;  // null for HOST plugins
};

}  // namespace kvcheck::plugin
