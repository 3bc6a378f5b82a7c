// PluginBackend: the Backend interface over a plugin table, shared by the host and
// device adapters: name, capabilities, and the capability gate every call passes
// (an op the plugin lacks, a format or block size outside its capabilities: Error
// kUnsupported, and the plugin is not called).
#pragma once

#include <memory>
#include <string>

#include "impl/backend.h"
#include "impl/plugin/loader.h"

namespace kvcheck::plugin {

class PluginBackend : public Backend {
 public:
  explicit PluginBackend(std::shared_ptr<Library> lib);
  std::string_view name() const override { return name_; }
  BackendCapabilities capabilities() const override { return caps_; }
  /// The table's optional set_test_parallelism (false when absent or refused).
  bool set_test_parallelism(int32_t max_threads, int64_t min_bytes_per_thread) const override;
  const kvcheck_backend_v1_t& table() const { return *lib_->table; }
  const std::string& path() const { return lib_->path; }

 protected:
  /// Throws kUnsupported when `bit` is not in the plugin's ops.
  void require_op(uint32_t bit, const char* op) const;
  /// Throws kUnsupported when the paged cache is outside the capabilities.
  void require_paged(const CacheLayout& layout, const char* op) const;
  /// Throws kUnsupported when the K/V cache is outside the capabilities.
  void require_kv(const KvCacheLayout& layout, const char* op) const;

  std::shared_ptr<Library> lib_;
  std::string name_;
  BackendCapabilities caps_;
};

}  // namespace kvcheck::plugin
