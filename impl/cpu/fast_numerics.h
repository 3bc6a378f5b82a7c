// Fast SPEC §4 numerics for the CPU backend: branch-free bit manipulation that the
// compiler vectorises. Written independently of reference/numerics (which searches
// value tables); the differential tests prove the two agree on every input.
#pragma once

#include <bit>
#include <cstdint>

#define KVCHECK_CPU_INLINE inline __attribute__((always_inline))
// The same for a lambda (after its parameter list): inlined into the ISA-specific rows.
#define KVCHECK_CPU_ALWAYS_INLINE __attribute__((always_inline))

namespace kvcheck::cpu::fast {

static_assert(std::endian::native == std::endian::little, "scales are stored little-endian");

constexpr float kInv448 = 1.0f / 448.0f;  // 0x3B124925 (SPEC §4)
constexpr float kInv6 = 1.0f / 6.0f;      // 0x3E2AAAAB (SPEC §4)
constexpr float kAmaxMargin = 1e-4f;      // FP8_AMAX_MARGIN (SPEC §4.1)
constexpr float kFp4AmaxFloor = 0.001953125f * 6.0f;  // 2^-9 * 6 (SPEC §4.3)
constexpr uint32_t kMagic = 0x4B000000u;  // 2^23: x + 2^23 rounds x to an integer (RNE)

KVCHECK_CPU_INLINE float bits_f(uint32_t b) { return std::bit_cast<float>(b); }
KVCHECK_CPU_INLINE uint32_t f_bits(float f) { return std::bit_cast<uint32_t>(f); }

/// Exact (SPEC §4).
KVCHECK_CPU_INLINE float bf16_to_f32(uint16_t x) { return bits_f(uint32_t{x} << 16); }

/// cond ? a : b on integers without control flow. GCC sinks a float computation
/// used by one arm of a ?: into a branch and then (trapping math) cannot if-convert
/// it back, which blocks vectorisation; a mask blend keeps the loop straight-line.
KVCHECK_CPU_INLINE uint32_t sel(bool cond, uint32_t a, uint32_t b) {
  const uint32_t m = 0u - static_cast<uint32_t>(cond);
  return (a & m) | (b & ~m);
}

/// x < lo ? lo : x and hi < x ? hi : x (NaN x: x), as blends: GCC sinks the float
/// arithmetic after such a ?: (e4m3's x * 512) into its arms, so a loop over the
/// scales of several groups kept a branch and did not vectorise (see sel).
KVCHECK_CPU_INLINE float at_least(float x, float lo) { return bits_f(sel(x < lo, f_bits(lo), f_bits(x))); }
KVCHECK_CPU_INLINE float at_most(float x, float hi) { return bits_f(sel(hi < x, f_bits(hi), f_bits(x))); }

/// Round to nearest even on the bits; any NaN -> 0x7FFF (SPEC §4).
KVCHECK_CPU_INLINE uint16_t f32_to_bf16(float f) {
  const uint32_t u = f_bits(f);
  const uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  return static_cast<uint16_t>(sel((u & 0x7FFFFFFFu) > 0x7F800000u, 0x7FFFu, rounded));
}

/// SATFINITE e4m3, RNE; NaN -> 0x7F; sign of zero kept (SPEC §4).
/// Normals: round the float mantissa to 3 bits and rebias 127 -> 7. Below 2^-6 the
/// e4m3 grid is uniform (step 2^-9): |x|*2^9 (exact) + 2^23 rounds it to the code.
KVCHECK_CPU_INLINE uint8_t f32_to_e4m3(float x) {
  const uint32_t u = f_bits(x);
  const uint32_t a = u & 0x7FFFFFFFu;
  const uint32_t sign = (u >> 24) & 0x80u;
  const uint32_t normal = ((a + 0x7FFFFu + ((a >> 20) & 1u)) >> 20) - (120u << 3);
  const uint32_t sub = f_bits(bits_f(a) * 512.0f + bits_f(kMagic)) - kMagic;
  uint32_t mag = sel(a < 0x3C800000u, sub, normal);  // 2^-6, the smallest normal
  mag = sel(a >= 0x43E00000u, 0x7Eu, mag);           // >= 448 (Inf too) saturates
  return static_cast<uint8_t>(sel(a > 0x7F800000u, 0x7Fu, sign | mag));
}

/// e2m1 nibble, RNE, saturate to ±6; NaN -> 0x7; -0 -> 0x8 (SPEC §4).
/// Same scheme as e4m3: 1 mantissa bit, bias 1, subnormal step 0.5 below 1.0.
KVCHECK_CPU_INLINE uint8_t f32_to_e2m1(float x) {
  const uint32_t u = f_bits(x);
  const uint32_t a = u & 0x7FFFFFFFu;
  const uint32_t sign = (u >> 28) & 0x8u;
  const uint32_t normal = ((a + 0x1FFFFFu + ((a >> 22) & 1u)) >> 22) - (126u << 1);
  const uint32_t sub = f_bits(bits_f(a) * 2.0f + bits_f(kMagic)) - kMagic;
  uint32_t mag = sel(a < 0x3F800000u, sub, normal);  // 1.0
  mag = sel(a >= 0x40C00000u, 0x7u, mag);            // >= 6 (Inf too) saturates
  return static_cast<uint8_t>(sel(a > 0x7F800000u, 0x7u, sign | mag));
}

/// Value of an e4m3 code; 0x7F/0xFF -> NaN.
KVCHECK_CPU_INLINE float e4m3_to_f32(uint8_t code) {
  const uint32_t mag = code & 0x7Fu;
  const uint32_t sign = uint32_t{code & 0x80u} << 24;
  const uint32_t sub = f_bits(static_cast<float>(static_cast<int32_t>(mag)) * 0.001953125f);
  const uint32_t normal = (mag << 20) + (120u << 23);
  const uint32_t bits = sel(mag < 8, sub, normal) | sign;
  return bits_f(sel(mag == 0x7Fu, 0x7FC00000u, bits));
}

/// Value of an e2m1 nibble (low 4 bits).
KVCHECK_CPU_INLINE float e2m1_to_f32(uint8_t nibble) {
  const uint32_t mag = nibble & 0x7u;
  const uint32_t sign = uint32_t{nibble & 0x8u} << 28;
  const uint32_t sub = f_bits(static_cast<float>(static_cast<int32_t>(mag)) * 0.5f);
  const uint32_t normal = (mag << 22) + (126u << 23);
  return bits_f(sel(mag < 2, sub, normal) | sign);
}

/// 2^(byte-127); 0xFF -> NaN; 0 -> 2^-127 (a subnormal).
KVCHECK_CPU_INLINE float ue8m0_to_f32(uint8_t byte) {
  const uint32_t b = byte;
  return bits_f(b == 0xFFu ? 0x7FC00000u : (b == 0 ? 0x00400000u : b << 23));
}

/// SPEC §4 ceil_log2 from the bits for s > 0 (not NaN): +Inf -> 128.
KVCHECK_CPU_INLINE int32_t ceil_log2(float s) {
  const uint32_t u = f_bits(s);
  const int32_t e = static_cast<int32_t>(u >> 23);
  const uint32_t m = u & 0x7FFFFFu;
  if (e == 0xFF) return 128;
  if (e == 0)  // subnormal: s = m * 2^-149
    return m <= 1 ? -149 : 32 - std::countl_zero(m - 1) - 149;
  return e - 127 + (m != 0 ? 1 : 0);
}

/// 2^-k for k in [-126, 126] (a normal float, so multiplying by it is exact).
KVCHECK_CPU_INLINE float exp2_neg(int32_t k) { return bits_f(static_cast<uint32_t>(127 - k) << 23); }

/// Max over |x| of bf16 bit patterns ignoring NaN, as the bf16 bits of the result.
/// Works on the integers: for non-NaN values |x| orders like its bits.
KVCHECK_CPU_INLINE uint32_t bf16_amax_bits(const uint16_t* x, int32_t n) {
  uint16_t m = 0;  // 16-bit lanes and a mask (not ?:) so the loop vectorises
  for (int32_t i = 0; i < n; ++i) {
    uint16_t a = static_cast<uint16_t>(x[i] & 0x7FFFu);
    a = static_cast<uint16_t>(a & static_cast<uint16_t>(0u - static_cast<uint32_t>(a <= 0x7F80u)));
    m = a > m ? a : m;
  }
  return m;
}

}  // namespace kvcheck::cpu::fast
