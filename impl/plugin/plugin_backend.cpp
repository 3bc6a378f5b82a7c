#include "impl/plugin/plugin_backend.h"

#include <cstddef>

#include "impl/error.h"
#include "impl/plugin/abi_convert.h"

namespace kvcheck::plugin {

PluginBackend::PluginBackend(std::shared_ptr<Library> lib)
    : lib_(std::move(lib)), name_(lib_->table->name), caps_(from_abi(lib_->table->capabilities)) {
  caps_.host_memory = lib_->table->memory_space == KVCHECK_MEMORY_HOST;
}

bool PluginBackend::set_test_parallelism(int32_t max_threads, int64_t min_bytes_per_thread) const {
  const kvcheck_backend_v1_t& t = table();
  const bool has = t.struct_size >= offsetof(kvcheck_backend_v1_t, set_test_parallelism) + sizeof(void*);
  if (!has || t.set_test_parallelism == nullptr) return false;
  return t.set_test_parallelism(t.context, max_threads, min_bytes_per_thread) == KVCHECK_STATUS_OK;
}

void PluginBackend::require_op(uint32_t bit, const char* op) const {
  if (!(caps_.ops & bit)) throw Error(ErrorCode::kUnsupported, name_ + " has no " + op + " (plugin capabilities)");
}

void PluginBackend::require_paged(const CacheLayout& layout, const char* op) const {
  if (!caps_.supports_format(layout.format))
    throw Error(ErrorCode::kUnsupported, name_ + " " + op + ": format " + layout.format.name +
                                             " is outside the plugin's capabilities");
  if (!caps_.supports_block_size(layout.block_size))
    throw Error(ErrorCode::kUnsupported, name_ + " " + op + ": block_size " + std::to_string(layout.block_size) +
                                             " is outside the plugin's capabilities");
}

void PluginBackend::require_kv(const KvCacheLayout& layout, const char* op) const {
  if (!caps_.supports_kv_dtype(layout.dtype))
    throw Error(ErrorCode::kUnsupported,
                name_ + " " + op + ": K/V dtype " + to_string(layout.dtype) + " is outside the plugin's capabilities");
  if (!caps_.supports_block_size(layout.block_size))
    throw Error(ErrorCode::kUnsupported, name_ + " " + op + ": block_size " + std::to_string(layout.block_size) +
                                             " is outside the plugin's capabilities");
}

}  // namespace kvcheck::plugin
