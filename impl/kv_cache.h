// Host allocation of a paged cache (SPEC §3) with optional canary
// bands, so a harness can prove a kernel wrote nothing outside its view and say
// where it did.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "impl/op_args.h"
#include "impl/layout.h"

namespace kvcheck {

/// Owns num_blocks*block_stride bytes, base aligned to 256, optionally framed by
/// `guard_bytes` of canary on each side (one allocation: a write into a band is a
/// decoded report, not heap corruption). Contents start as `fill`.
class KVCache {
 public:
  static constexpr uint8_t kCanary = 0xA5;

  /// Throws Error(kInvalidArgument) when guard_bytes is not a non-negative multiple
  /// of 256 or the allocation fails.
  KVCache(const CacheLayout& layout, uint8_t fill = 0, int64_t guard_bytes = 0);
  /// The harness's cache: bands of canary_bytes_for(layout) on each side.
  static KVCache with_canaries(const CacheLayout& layout, uint8_t fill = 0);
  /// Canary band width for a cache of `layout`: at least one block stride (a record,
  /// or a whole block, written one block past either end stays inside the band) and
  /// at least 4 KiB, rounded up to 256 bytes (the rule of the CUDA guard bands).
  static int64_t canary_bytes_for(const CacheLayout& layout);
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
  int64_t size_bytes() const { return layout_.size_bytes(); }
  int64_t guard_bytes() const { return guard_bytes_; }
  /// The cache as a backend receives it: base, layout and the buffer's size.
  CacheView view() { return {base_, layout_, layout_.size_bytes()}; }
  ConstCacheView view() const { return const_view(); }
  ConstCacheView const_view() const { return {base_, layout_, layout_.size_bytes()}; }

  /// True when every canary byte before and after the cache is unchanged.
  bool guards_intact() const;
  /// One damaged band: which, how many of its bytes changed, and the first (lowest
  /// address) changed byte as an offset from the cache base (negative: before it;
  /// >= size_bytes(): after it) with the value found there.
  struct CanaryHit {
    enum class Band { kBefore, kAfter } band = Band::kAfter;
    int64_t changed = 0;
    int64_t first_offset = 0;
    uint8_t value = 0;
  };
  /// The damaged bands, before first; empty when intact.
  std::vector<CanaryHit> canary_hits() const;
  /// The same for any buffer laid out as [guard_bytes canary | size_bytes | guard_bytes
  /// canary] around `base` (the harness's pooled caches use it too).
  static std::vector<CanaryHit> canary_hits(const uint8_t* base, int64_t size_bytes, int64_t guard_bytes);
  static std::string canary_report(const uint8_t* base, int64_t size_bytes, int64_t guard_bytes);
  /// "" when intact, else one line per damaged band, e.g. "canary band after the
  /// cache: 528 of its 4096 bytes changed, the first at band byte 0 (cache offset
  /// 2112) = 0x8D, expected 0xA5".
  std::string canary_report() const;

 private:
  struct Free {
    void operator()(uint8_t* p) const;
  };
  CacheLayout layout_;
  int64_t guard_bytes_ = 0;
  std::unique_ptr<uint8_t, Free> storage_;
  uint8_t* base_ = nullptr;
};

}  // namespace kvcheck
