// The one deterministic byte source of the harness (properties, fuzzers, explain):
// splitmix64, so a scenario carries a seed instead of its bulk bytes.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <span>

// The harness's bulk loops (fill patterns, rows of values, the round trip's per-element
// recipe and bound): no libFuzzer coverage or comparison hooks there. They guide nothing
// (the kernels' own coverage does) and cost a hook per element; ASan and UBSan still
// instrument them.
#if defined(__clang__)
#define KVCHECK_BULK __attribute__((no_sanitize("coverage")))
#else
#define KVCHECK_BULK
#endif

namespace kvcheck::props {

struct SplitMix64 {
  uint64_t state;
  KVCHECK_BULK uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
};

/// Fills `bytes` with the little-endian stream of SplitMix64{seed}: the prior contents
/// of caches and outputs, so any byte a kernel wrongly writes or skips shows.
KVCHECK_BULK inline void fill_pattern(std::span<uint8_t> bytes, uint64_t seed) {
  SplitMix64 rng{seed};
  size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    const uint64_t r = rng.next();
    if constexpr (std::endian::native == std::endian::little)
      std::memcpy(&bytes[i], &r, 8);  // the same bytes, one store
    else
      for (int b = 0; b < 8; ++b) bytes[i + b] = static_cast<uint8_t>(r >> (8 * b));
  }
  const uint64_t r = rng.next();
  for (int b = 0; i < bytes.size(); ++i, ++b) bytes[i] = static_cast<uint8_t>(r >> (8 * b));
}

}  // namespace kvcheck::props
