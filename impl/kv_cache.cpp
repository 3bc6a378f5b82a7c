#include "impl/kv_cache.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "impl/error.h"

namespace kvcheck {

void KVCache::Free::operator()(uint8_t* p) const { std::free(p); }

KVCache::KVCache(const CacheLayout& layout, uint8_t fill, int64_t guard_bytes)
    : layout_(layout), guard_bytes_(guard_bytes) {
  if (guard_bytes < 0 || guard_bytes % 256 != 0)
    throw Error(ErrorCode::kInvalidArgument, "guard_bytes must be a non-negative multiple of 256");
  const int64_t total = layout.size_bytes() + 2 * guard_bytes;
  void* p = std::aligned_alloc(256, static_cast<size_t>((total + 255) / 256 * 256));
  if (p == nullptr)
    throw Error(ErrorCode::kInvalidArgument,
                "cannot allocate a cache of " + std::to_string(total) + " bytes");
  storage_.reset(static_cast<uint8_t*>(p));
  base_ = storage_.get() + guard_bytes;
  std::memset(storage_.get(), kCanary, static_cast<size_t>(guard_bytes));
  std::memset(base_, fill, static_cast<size_t>(layout.size_bytes()));
  std::memset(base_ + layout.size_bytes(), kCanary, static_cast<size_t>(guard_bytes));
}

bool KVCache::guards_intact() const {
  const uint8_t* after = base_ + layout_.size_bytes();
  for (int64_t i = 0; i < guard_bytes_; ++i)
    if (storage_.get()[i] != kCanary || after[i] != kCanary) return false;
  return true;
}

KVCache alloc_kv_cache(const KVCacheFormat& format, int64_t num_blocks, int32_t block_size) {
  return KVCache(CacheLayout::make(format, num_blocks, block_size));
}

SplitKVCache split_kv_cache(KVCache& cache) {
  const CacheLayout& l = cache.layout();
  SplitKVCache s;
  s.data = cache.data() + l.data_offset(0, 0);
  s.data_block_stride = l.block_stride;
  s.data_token_stride = l.data_token_stride();
  if (l.format.is_quantized()) {
    s.scales = cache.data() + l.scale_offset(0, 0);
    s.scale_block_stride = l.block_stride;
    s.scale_token_stride = l.scale_token_stride();
  }
  return s;
}

}  // namespace kvcheck
