// Host allocation of a paged cache (SPEC §3 alloc_kv_cache) with optional canary
// bands, so a harness can prove a kernel wrote nothing outside its view.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "impl/layout.h"

namespace kvcheck {

/// Owns num_blocks*block_stride bytes, base aligned to 256, optionally framed by
/// `guard_bytes` of canary on each side. Contents start as `fill`.
class KVCache {
 public:
  static constexpr uint8_t kCanary = 0xA5;

  /// Throws what CacheLayout::make throws, or Error(kInvalidArgument) when the
  /// allocation fails.
  KVCache(const CacheLayout& layout, uint8_t fill = 0, int64_t guard_bytes = 0);
  KVCache(const KVCache&) = delete;
  KVCache& operator=(const KVCache&) = delete;
  KVCache(KVCache&&) noexcept = default;
  KVCache& operator=(KVCache&&) noexcept = default;

  const CacheLayout& layout() const { return layout_; }
  uint8_t* data() { return base_; }
  const uint8_t* data() const { return base_; }
  std::span<uint8_t> bytes() { return {base_, static_cast<size_t>(layout_.size_bytes())}; }
  std::span<const uint8_t> bytes() const {
    return {base_, static_cast<size_t>(layout_.size_bytes())};
  }
  /// True when every canary byte before and after the cache is unchanged.
  bool guards_intact() const;

 private:
  struct Free {
    void operator()(uint8_t* p) const;
  };
  CacheLayout layout_;
  int64_t guard_bytes_ = 0;
  std::unique_ptr<uint8_t, Free> storage_;
  uint8_t* base_ = nullptr;
};

/// SPEC §3 alloc_kv_cache: validates and allocates a zeroed cache.
KVCache alloc_kv_cache(const KVCacheFormat& format, int64_t num_blocks, int32_t block_size);

/// SPEC §3 split_kv_cache: the cache as two strided views (data, scales) as kernels
/// consume it. Strides in bytes; scale fields are zero for BF16.
struct SplitKVCache {
  uint8_t* data = nullptr;
  int64_t data_block_stride = 0, data_token_stride = 0;
  uint8_t* scales = nullptr;
  int64_t scale_block_stride = 0, scale_token_stride = 0;
};
SplitKVCache split_kv_cache(KVCache& cache);

}  // namespace kvcheck
