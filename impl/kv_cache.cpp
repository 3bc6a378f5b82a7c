#include "impl/kv_cache.h"

#include <algorithm>
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

KVCache KVCache::with_canaries(const CacheLayout& layout, uint8_t fill) {
  return KVCache(layout, fill, canary_bytes_for(layout));
}

int64_t KVCache::canary_bytes_for(const CacheLayout& layout) {
  return (std::max<int64_t>(4096, layout.block_stride) + 255) / 256 * 256;
}

bool KVCache::guards_intact() const { return canary_hits().empty(); }

std::vector<KVCache::CanaryHit> KVCache::canary_hits() const { return canary_hits(base_, layout_.size_bytes(), guard_bytes_); }

std::string KVCache::canary_report() const { return canary_report(base_, layout_.size_bytes(), guard_bytes_); }

std::vector<KVCache::CanaryHit> KVCache::canary_hits(const uint8_t* base, int64_t size_bytes, int64_t guard_bytes) {
  std::vector<CanaryHit> hits;
  const struct {
    CanaryHit::Band band;
    int64_t offset;  // of the band's first byte from base
  } bands[] = {{CanaryHit::Band::kBefore, -guard_bytes}, {CanaryHit::Band::kAfter, size_bytes}};
  for (const auto& b : bands) {
    const uint8_t* band = base + b.offset;
    // Intact (the common case): every byte equals the next, and the first is the canary.
    if (guard_bytes == 0 ||
        (band[0] == kCanary && std::memcmp(band, band + 1, static_cast<size_t>(guard_bytes - 1)) == 0))
      continue;
    CanaryHit hit;
    hit.band = b.band;
    for (int64_t i = 0; i < guard_bytes; ++i) {
      const uint8_t v = band[i];
      if (v == kCanary) continue;
      if (hit.changed++ == 0) {
        hit.first_offset = b.offset + i;
        hit.value = v;
      }
    }
    if (hit.changed > 0) hits.push_back(hit);
  }
  return hits;
}

std::string KVCache::canary_report(const uint8_t* base, int64_t size_bytes, int64_t guard_bytes) {
  const auto hex = [](uint8_t v) {
    const char* digits = "0123456789ABCDEF";
    return std::string("0x") + digits[v >> 4] + digits[v & 15];
  };
  std::string report;
  for (const CanaryHit& h : canary_hits(base, size_bytes, guard_bytes)) {
    const bool before = h.band == CanaryHit::Band::kBefore;
    const int64_t band_byte = before ? h.first_offset + guard_bytes : h.first_offset - size_bytes;
    if (!report.empty()) report += '\n';
    report += std::string("canary band ") + (before ? "before" : "after") + " the cache: " +
              std::to_string(h.changed) + " of its " + std::to_string(guard_bytes) +
              " bytes changed, the first at band byte " + std::to_string(band_byte) + " (cache offset " +
              std::to_string(h.first_offset) + ") = " + hex(h.value) + ", expected " + hex(kCanary);
  }
  return report;
}

}  // namespace kvcheck
