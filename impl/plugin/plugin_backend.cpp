#include "impl/plugin/plugin_backend.h"

#include "impl/error.h"
#include "impl/plugin/abi_convert.h"

namespace kvcheck::plugin {

PluginBackend::PluginBackend(std::shared_ptr<Library> lib)
    : lib_(std::move(lib)), name_(lib_->table->name), caps_(from_abi(lib_->table->capabilities)) {}

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
