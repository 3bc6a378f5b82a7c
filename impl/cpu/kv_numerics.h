// Fast SPEC §7.3 numerics for the CPU backend's K/V family: fp16 and e5m2 by branch-free
// bit manipulation (e4m3 and bf16 come from fast_numerics.h). Written independently
// of reference/kv_numerics (value tables); the differential tests prove they agree.
#pragma once

#include <cstdint>
#include <cstring>

#include "impl/cpu/fast_numerics.h"
#include "impl/kv_format.h"

namespace kvcheck::cpu::fast {

/// Exact. Subnormals through an exact int->float conversion and power-of-two multiply.
KVCHECK_CPU_INLINE float fp16_to_f32(uint16_t h) {
  const uint32_t mag = h & 0x7FFFu;
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  const uint32_t sub = f_bits(static_cast<float>(static_cast<int32_t>(mag)) * 0x1p-24f);
  uint32_t normal = (mag << 13) + (112u << 23);         // rebias 15 -> 127
  normal = sel(mag >= 0x7C00u, normal + (112u << 23), normal);  // Inf/NaN: exponent 255
  return bits_f(sel(mag < 0x400u, sub, normal) | sign);
}

/// RNE; |x| >= 65520 -> ±Inf; any NaN -> 0x7FFF. Below 2^-14 the grid is uniform
/// (step 2^-24): |x|*2^24 (exact) + 2^23 rounds it to the code.
KVCHECK_CPU_INLINE uint16_t f32_to_fp16(float x) {
  const uint32_t u = f_bits(x);
  const uint32_t a = u & 0x7FFFFFFFu;
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t normal = ((a + 0xFFFu + ((a >> 13) & 1u)) >> 13) - (112u << 10);
  const uint32_t sub = f_bits(bits_f(a) * 0x1p24f + bits_f(kMagic)) - kMagic;
  uint32_t mag = sel(a < 0x38800000u, sub, normal);  // 2^-14, the smallest normal
  mag = sel(a >= 0x477FF000u, 0x7C00u, mag);         // >= 65520 (Inf too) -> Inf
  return static_cast<uint16_t>(sel(a > 0x7F800000u, 0x7FFFu, sign | mag));
}

/// SATFINITE e5m2, RNE; NaN -> 0x7F; ±Inf and |x| >= 57344 -> ±0x7B. Subnormal step 2^-16.
KVCHECK_CPU_INLINE uint8_t f32_to_e5m2(float x) {
  const uint32_t u = f_bits(x);
  const uint32_t a = u & 0x7FFFFFFFu;
  const uint32_t sign = (u >> 24) & 0x80u;
  const uint32_t normal = ((a + 0xFFFFFu + ((a >> 21) & 1u)) >> 21) - (112u << 2);
  const uint32_t sub = f_bits(bits_f(a) * 65536.0f + bits_f(kMagic)) - kMagic;
  uint32_t mag = sel(a < 0x38800000u, sub, normal);
  mag = sel(a >= 0x47600000u, 0x7Bu, mag);  // >= 57344 saturates (normal would overshoot)
  return static_cast<uint8_t>(sel(a > 0x7F800000u, 0x7Fu, sign | mag));
}

/// An e5m2 code is the high byte of the fp16 of the same value.
KVCHECK_CPU_INLINE float e5m2_to_f32(uint8_t code) { return fp16_to_f32(static_cast<uint16_t>(code << 8)); }

/// The K/V family's dtypes by template argument (impl/kv_format.h's KvDtype): model
/// rows (bf16/fp16) <-> f32, f32 <-> FP8 codes (e4m3/e5m2).
template <kvcheck::KvDtype In>
KVCHECK_CPU_INLINE float model_to_f32(uint16_t x) {
  if constexpr (In == kvcheck::KvDtype::kBF16) return bf16_to_f32(x);
  else return fp16_to_f32(x);
}
template <kvcheck::KvDtype Out>
KVCHECK_CPU_INLINE uint16_t f32_to_model(float y) {
  if constexpr (Out == kvcheck::KvDtype::kBF16) return f32_to_bf16(y);
  else return f32_to_fp16(y);
}
template <kvcheck::KvDtype Cache>
KVCHECK_CPU_INLINE uint8_t f32_to_fp8(float y) {
  if constexpr (Cache == kvcheck::KvDtype::kE4M3) return f32_to_e4m3(y);
  else return f32_to_e5m2(y);
}
template <kvcheck::KvDtype Cache>
KVCHECK_CPU_INLINE float fp8_to_f32(uint8_t q) {
  if constexpr (Cache == kvcheck::KvDtype::kE4M3) return e4m3_to_f32(q);
  else return e5m2_to_f32(q);
}

/// SPEC §7.9 (FlashInfer's NVFP4 append): kNvfp4Groups groups of 16 model elements at
/// src (32 bytes each) with global decode scale g -> their e4m3 scale bytes (sf[k]) and
/// 8 bytes of e2m1 nibbles each at dst (element 2i low). amax skips NaN; scale
/// cvt_e4m3(amax / RN(6 g)) (0 for a zero group); elements RN(x * inv), inv =
/// 1 / RN(float(sf) * g) (0 when amax or the scale is 0), encoded RNE saturating at 6
/// with a NaN -> 0. Eight groups at a time, each step a loop over all of them (fixed trip
/// counts, so each vectorises): one group at a time left the amax a serial vmaxss
/// chain and the two divisions scalar.
constexpr int kNvfp4Groups = 8;
template <kvcheck::KvDtype In>
KVCHECK_CPU_INLINE void nvfp4_groups(const uint8_t* src, uint8_t* dst, uint8_t* sf, float g) {
  constexpr int kN = 16 * kNvfp4Groups;
  uint16_t bits[kN];
  float x[kN];
  uint32_t mag[kN];
  std::memcpy(bits, src, sizeof bits);
  for (int i = 0; i < kN; ++i) {
    x[i] = model_to_f32<In>(bits[i]);
    const uint32_t a = f_bits(x[i]) & 0x7FFFFFFFu;
    mag[i] = a > 0x7F800000u ? 0u : a;  // a NaN counts as 0: skipped, as fmaxf does
  }
  // Each group's max magnitude, pairwise (the bits of non-negative floats order as the
  // floats do, and an integer max is associative: the same amax as any order). One loop
  // per halving, each of a constant trip count: a loop over the width left every step
  // scalar, through memory (perf: an eighth of the e2m1 store on one store).
  const auto halve = [&mag](int w) KVCHECK_CPU_ALWAYS_INLINE {
    for (int k = 0; k < kNvfp4Groups; ++k)
      for (int i = 0; i < w; ++i) mag[16 * k + i] = mag[16 * k + i + w] > mag[16 * k + i] ? mag[16 * k + i + w] : mag[16 * k + i];
  };
  halve(8);
  halve(4);
  halve(2);
  halve(1);
  float inv[kNvfp4Groups];
  const float six_g = 6.0f * g;
  for (int k = 0; k < kNvfp4Groups; ++k) {
    const float amax = bits_f(mag[16 * k]);
    const uint8_t code = amax == 0.0f ? uint8_t{0} : f32_to_e4m3(amax / six_g);
    const float scale = e4m3_to_f32(code);
    inv[k] = (amax > 0.0f && scale > 0.0f) ? 1.0f / (scale * g) : 0.0f;
    sf[k] = code;
  }
  uint8_t codes[kN];
  for (int i = 0; i < kN; ++i) {
    const float v = x[i] * inv[i / 16];
    codes[i] = static_cast<uint8_t>(sel((f_bits(v) & 0x7FFFFFFFu) > 0x7F800000u, 0u, f32_to_e2m1(v)));
  }
  for (int i = 0; i < kN / 2; ++i) dst[i] = static_cast<uint8_t>(codes[2 * i] | (codes[2 * i + 1] << 4));
}

/// One head of d elements, src (Src codes) -> dst (Dst codes), dst[i] = f(src[i]):
/// in chunks of 64 through fixed-size arrays, so the compiler vectorises the loop.
template <class Src, class Dst, class F>
KVCHECK_CPU_INLINE void convert_head(const uint8_t* src, uint8_t* dst, int64_t d, F f) {
  constexpr int kChunk = 64;
  for (int64_t c = 0; c < d; c += kChunk) {
    const int64_t n = d - c < kChunk ? d - c : kChunk;
    Dst y[kChunk];
    if (n == kChunk) {
      // Read in place (unaligned vector loads): a copy into a local array first was
      // 16-byte stores read back as 32-byte loads, a store-forwarding stall on every
      // vector (e4m3 store_kv on one thread 49.9 -> 41.0 ms, its gather 30.4 -> 26.1 ms,
      // AVX2). Written by a copy of constant size (vector moves): a run-time size and a
      // zero fill took rep movs / rep stos, a fifth of the e4m3 store's time.
      for (int i = 0; i < kChunk; ++i) {
        Src v;
        std::memcpy(&v, src + sizeof(Src) * (c + i), sizeof v);
        y[i] = f(v);
      }
      std::memcpy(dst + sizeof(Dst) * c, y, sizeof y);
    } else {  // a head's tail: through a zero-padded copy
      Src x[kChunk] = {};
      std::memcpy(x, src + sizeof(Src) * c, static_cast<size_t>(n) * sizeof(Src));
      for (int i = 0; i < kChunk; ++i) y[i] = f(x[i]);
      std::memcpy(dst + sizeof(Dst) * c, y, static_cast<size_t>(n) * sizeof(Dst));
    }
  }
}

}  // namespace kvcheck::cpu::fast
