// SPEC §4 numerics on the device. e4m3 is NVIDIA's __nv_cvt_float_to_fp8(SATFINITE)
// (one hardware cvt on sm_90) and bf16 __float2bfloat16_rn; e2m1 is our own
// scale-and-round, one code (cvt_e2m1) or two at once in bf16x2 (cvt_e2m1x2; NVIDIA's
// __nv_cvt_float_to_fp4 is emulated in software on sm_90), equal to NVIDIA's for every
// float (tests/cuda/device_numerics.cu checks all 2^32 floats, and the pair forms
// against cvt_e2m1, on the GPU). Products and reciprocals use the _rn intrinsics so nothing can
// be contracted into an FMA or approximated (the target also builds -fmad=false).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp4.h>
#include <cuda_fp8.h>

#include <cstdint>

#include "impl/paged_layout.h"

namespace kvcheck::cuda::dev {

constexpr float kInv448 = 0x1.24924Ap-9f;  // RN(1/448) = 0x3B124925 (SPEC §4)
constexpr float kInv6 = 0x1.555556p-3f;    // RN(1/6)   = 0x3E2AAAAB (SPEC §4)
static_assert(kInv448 == 1.0f / 448.0f && kInv6 == 1.0f / 6.0f, "SPEC §4 constants");
constexpr float kAmaxMargin = 1e-4f;                  // FP8_AMAX_MARGIN (SPEC §4.1)
constexpr float kFp4AmaxFloor = 0.001953125f * 6.0f;  // 2^-9 * 6 (SPEC §4.3), exact

__device__ __forceinline__ float bf16_to_f32(uint16_t x) { return __uint_as_float(uint32_t{x} << 16); }
__device__ __forceinline__ uint16_t f32_to_bf16(float f) {
  return __bfloat16_as_ushort(__float2bfloat16_rn(f));
}
__device__ __forceinline__ uint8_t cvt_e4m3(float x) {
  return static_cast<uint8_t>(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3));
}
/// RN-even e2m1 code of x, saturating to +-6; NaN -> 0x7 (+6); the sign of zero kept.
/// The codes 0..7 are 0, .5, 1, 1.5, 2, 3, 4, 6: the grid step is 0.5 on [0,2), 1 on
/// [2,4) and 2 on [4,6], so adding C = 2^22 * step / 0.5 (2^22, 2^23, 2^24: C's ulp is
/// the step) rounds |x| to the grid, ties to even, and the sum's bits less C's are
/// |x| / step; the code is that plus 0, 2 or 4. On the bits: |x| clamped as an integer
/// (NaN, Inf and overflow have larger bits than 6.0), C from |x|'s binade, one add:
/// about 10 instructions. Equal to the reference's cvt_e2m1 on all 2^32 floats (a host
/// replica, tests/numerics_test.cpp) and to NVIDIA's conversion on the GPU
/// (tests/cuda/device_numerics.cu).
__device__ __forceinline__ uint8_t cvt_e2m1(float x) {
  const uint32_t u = __float_as_uint(x), a = u & 0x7FFFFFFFu;
  const uint32_t t = min(a, 0x40C00000u);                   // |x| <= 6.0
  const uint32_t e = max(t & 0x7F800000u, 0x3F800000u);     // [0, 2) as one binade
  const uint32_t c = e + (22u << 23);                       // C: 2^22, 2^23 or 2^24
  const uint32_t r = __float_as_uint(__fadd_rn(__uint_as_float(t), __uint_as_float(c))) - c;
  const uint32_t code = r + ((e >> 22) - 254u);             // + 0, 2 or 4
  const uint32_t sign = a > 0x7F800000u ? 0u : (u >> 28) & 0x8u;  // NaN: +6, no sign
  return static_cast<uint8_t>(code | sign);
}
/// Four bytes, each the low 8 bits of its argument (the rest zero), as one little-endian
/// word: b0 in bits 0-7 ... b3 in bits 24-31 (a 4-byte store or load of packed codes).
__device__ __forceinline__ uint32_t pack_bytes4(uint32_t b0, uint32_t b1, uint32_t b2, uint32_t b3) {
  return b0 | b1 << 8 | b2 << 16 | b3 << 24;
}
// Packed 16-bit pairs, one sm_90 PTX instruction each: per-half integer min / max
// (min_u16x2, max_u16x2), IEEE minNum per bf16 half (min_bf16x2: a NaN half gives the
// other operand's half), RN(a * b) and RN(a + b) per bf16 half (mul_bf16x2, add_bf16x2).
#define KVCHECK_PACKED_PAIR_OP(name, ptx)                                  \
  __device__ __forceinline__ uint32_t name(uint32_t a, uint32_t b) {       \
    uint32_t r;                                                            \
    asm(ptx " %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));                    \
    return r;                                                              \
  }
KVCHECK_PACKED_PAIR_OP(min_u16x2, "min.u16x2")
KVCHECK_PACKED_PAIR_OP(max_u16x2, "max.u16x2")
KVCHECK_PACKED_PAIR_OP(min_bf16x2, "min.bf16x2")
KVCHECK_PACKED_PAIR_OP(mul_bf16x2, "mul.rn.bf16x2")
KVCHECK_PACKED_PAIR_OP(add_bf16x2, "add.rn.bf16x2")
#undef KVCHECK_PACKED_PAIR_OP
/// cvt_e2m1 of the two bf16 halves of p at once, as one byte: the low half's code in
/// bits 0-3, the high half's in bits 4-7. cvt_e2m1's steps on both halves together:
/// clamp by min.bf16x2 (a NaN half gives +6, as cvt_e2m1's NaN), |x| <= 6 as a 16-bit
/// integer min, the binade constant C per half (max.u16x2), the rounding add in bf16x2
/// (C = 2^6 * step: C's ulp is the step, and |x| <= 6 < C keeps the sum in C's binade),
/// the code from the sum's bits less C's (no half borrows: every half's sum >= C), the
/// sign from the clamped half. About 8 instructions a code where cvt_e2m1 takes 13.
/// kNanZero: a NaN half gives code 0 instead (SPEC §7.9's K/V store). Equal to
/// cvt_e2m1 of each half's value, checked on the GPU over every bf16 in each half
/// (the halves are independent; tests/cuda/device_numerics.cu).
template <bool kNanZero = false>
__device__ __forceinline__ uint32_t e2m1x2_of_bf16x2(uint32_t p) {
  const uint32_t mn = min_bf16x2(p, 0x40C040C0u);                // x > 6 -> 6, NaN -> +6
  const uint32_t t = min_u16x2(mn & 0x7FFF7FFFu, 0x40C040C0u);  // |x| <= 6
  const uint32_t e = max_u16x2(t & 0x7F807F80u, 0x3F803F80u);   // [0, 2) as one binade
  const uint32_t c = e + 0x03000300u;                            // C: 64, 128 or 256
  const uint32_t r = add_bf16x2(t, c) - c;                       // |x| / step, RN-even
  uint32_t v = (r + (e >> 6) - 0x00FE00FEu) | ((mn >> 12) & 0x00080008u);  // + 0, 2 or 4; sign
  if constexpr (kNanZero) {  // a half whose |x| bits exceed 0x7F80 (NaN): bit 15 of |x| + 0x7F,
    // spread over the half by prmt's sign replication (selector nibbles 9 and B: bytes 1
    // and 3, msb replicated). Inline PTX: __byte_perm keeps only 3 bits of each selector.
    uint32_t nan_mask;
    asm("prmt.b32 %0, %1, %2, 0xBB99;" : "=r"(nan_mask) : "r"((p & 0x7FFF7FFFu) + 0x007F007Fu), "r"(0u));
    v &= ~nan_mask;
  }
  return (v | (v >> 12)) & 0xFFu;
}
/// cvt_e2m1(lo) | cvt_e2m1(hi) << 4 (kNanZero: a NaN gives 0), for every pair of floats.
/// Each float first becomes a bf16 rounded to odd (its top half, the lowest bit ORed
/// with "the bottom half is not zero": one byte_perm each and a min.u16x2): 8
/// significant bits, at least the 2 + 2 that make a second rounding to e2m1's 2 bits
/// the float's own rounding (round-to-odd; NaN stays NaN, Inf Inf, the sign kept),
/// then e2m1x2_of_bf16x2. About 10 instructions a code where cvt_e2m1 takes 13, and
/// no per-code packing. Checked on the GPU over every float against cvt_e2m1.
template <bool kNanZero = false>
__device__ __forceinline__ uint32_t cvt_e2m1x2(float lo, float hi) {
  const uint32_t ul = __float_as_uint(lo), uh = __float_as_uint(hi);
  const uint32_t sticky = min_u16x2(__byte_perm(ul, uh, 0x5410), 0x00010001u);
  return e2m1x2_of_bf16x2<kNanZero>(__byte_perm(ul, uh, 0x7632) | sticky);
}
/// NVIDIA's software conversion, kept as the oracle of the device numerics test.
__device__ __forceinline__ uint8_t cvt_e2m1_nvidia(float x) {
  return static_cast<uint8_t>(__nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest) & 0xF);
}
/// Two FP8 codes (e4m3 or e5m2, SATFINITE) in one cvt: lo in bits 0-7, hi in bits
/// 8-15. NaN inputs are not pinned here: callers that promise a code do it.
template <__nv_fp8_interpretation_t K>
__device__ __forceinline__ uint32_t cvt_fp8x2(float lo, float hi) {
  return static_cast<uint32_t>(__nv_cvt_float2_to_fp8x2(make_float2(lo, hi), __NV_SATFINITE, K));
}
__device__ __forceinline__ uint32_t cvt_e4m3x2(float lo, float hi) { return cvt_fp8x2<__NV_E4M3>(lo, hi); }
/// Two bf16 (RN) packed: lo in bits 0-15.
__device__ __forceinline__ uint32_t f32x2_to_bf16x2(float lo, float hi) {
  return uint32_t{f32_to_bf16(lo)} | (uint32_t{f32_to_bf16(hi)} << 16);
}

/// x / s correctly rounded (IEEE div.rn, what __fdiv_rn(x, s) returns) for every float
/// x and s, in 3 instructions where __fdiv_rn takes about 15, when the operands allow:
/// the caller takes rcp = __frcp_rn(s) and fast_div_ok(s) once per scale. Where
/// fast_div_ok(s) and fast_div_operand(x) (2^-60 <= |x| <= 2^64), div_rn_fast is
/// Markstein's sequence q0 = RN(x * rcp), r = x - q0 * s (exact in an FMA),
/// q = RN(q0 + r * rcp), which is RN(x / s): every step stays far from underflow and
/// overflow there, so each result is the one for the significands scaled by a power
/// of two, and tests/cuda/device_numerics.cu checks every significand pair that a
/// bf16 or fp16 x can have (2^11 x 2^23, both signs) against __fdiv_rn on the GPU, plus
/// every bf16/fp16 x against scales of every exponent. div_rn takes the rest: x = +-0
/// gives RN(x * rcp) (+-0, the sign of x, as IEEE); a tiny or huge x or s, Inf, NaN or
/// a scale nobody validated go to __fdiv_rn.
__device__ __forceinline__ bool fast_div_ok(float s) { return s >= 0x1p-60f && s <= 0x1p60f; }
__device__ __forceinline__ bool fast_div_operand(float x) {
  const float ax = fabsf(x);
  return ax >= 0x1p-60f && ax <= 0x1p64f;
}
__device__ __forceinline__ float div_rn_fast(float x, float s, float rcp) {
  const float q0 = __fmul_rn(x, rcp);
  return __fmaf_rn(__fmaf_rn(-q0, s, x), rcp, q0);
}
__device__ __forceinline__ float div_rn(float x, float s, float rcp, bool s_ok) {
  if (s_ok && fast_div_operand(x)) return div_rn_fast(x, s, rcp);
  if (s_ok && x == 0.0f) return __fmul_rn(x, rcp);
  return __fdiv_rn(x, s);
}

/// Two FP8 codes (lo in bits 0-7) to their values, exact: the hardware cvt to f16x2
/// (every e4m3 and e5m2 value is an f16 value; NaN codes give NaN), then f16 -> f32.
template <__nv_fp8_interpretation_t K>
__device__ __forceinline__ float2 fp8x2_to_f32(uint32_t q) {
  const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(q), K);
  return __half22float2(__half2(h));
}
/// Value of an e4m3 code, exact; 0x7F/0xFF -> NaN.
__device__ __forceinline__ float e4m3_to_f32(uint8_t code) {
  const uint32_t mag = code & 0x7Fu, sign = uint32_t{code & 0x80u} << 24;
  if (mag == 0x7Fu) return __uint_as_float(0x7FC00000u);
  const float v = mag < 8 ? __fmul_rn(static_cast<float>(mag), 0.001953125f)  // k * 2^-9
                          : __uint_as_float((mag << 20) + (120u << 23));
  return __uint_as_float(__float_as_uint(v) | sign);
}
/// Value of an e2m1 nibble (low 4 bits), exact.
__device__ __forceinline__ float e2m1_to_f32(uint8_t nibble) {
  const uint32_t mag = nibble & 0x7u, sign = uint32_t{nibble & 0x8u} << 28;
  const uint32_t bits = mag < 2 ? (mag ? 0x3F000000u : 0u) : (mag << 22) + (126u << 23);
  return __uint_as_float(bits | sign);
}
/// 2^(byte-127); 0xFF -> NaN; 0 -> 2^-127 (subnormal, no flush).
__device__ __forceinline__ float ue8m0_to_f32(uint8_t b) {
  return __uint_as_float(b == 0xFFu ? 0x7FC00000u : (b == 0 ? 0x00400000u : uint32_t{b} << 23));
}

/// SPEC §4 ceil_log2 from the bits, s > 0 and not NaN; +Inf -> 128.
__device__ __forceinline__ int32_t ceil_log2(float s) {
  const uint32_t u = __float_as_uint(s);
  const int32_t e = static_cast<int32_t>(u >> 23);
  const uint32_t m = u & 0x7FFFFFu;
  if (e == 0xFF) return 128;
  if (e == 0) return m <= 1 ? -149 : 32 - __clz(static_cast<int>(m - 1)) - 149;
  return e - 127 + (m != 0 ? 1 : 0);
}
/// 2^-k for k in [-126, 126]: a normal float, so x * 2^-k is exact.
__device__ __forceinline__ float exp2_neg(int32_t k) {
  return __uint_as_float(static_cast<uint32_t>(127 - k) << 23);
}

/// One group's scale (SPEC §4.1-4.4): `code` is the stored scale (a ue8m0 or e4m3
/// byte, or fp32 bits), `mult` the multiplier for every element (2^-k or RN(1/sf)).
struct GroupScale {
  float mult;
  uint32_t code;
};
template <PagedDtype D, PagedSf S>
__device__ __forceinline__ GroupScale group_scale(float amax) {
  if constexpr (S == PagedSf::kUE8M0) {
    const float a = amax < kAmaxMargin ? kAmaxMargin : amax;
    int32_t k = ceil_log2(__fmul_rn(a, D == PagedDtype::kE4M3 ? kInv448 : kInv6));
    k = k < -126 ? -126 : (k > 126 ? 126 : k);
    return {exp2_neg(k), static_cast<uint32_t>(k + 127)};
  } else if constexpr (S == PagedSf::kE4M3) {
    float t = __fmul_rn(amax < kFp4AmaxFloor ? kFp4AmaxFloor : amax, kInv6);
    t = 448.0f < t ? 448.0f : t;
    const uint8_t sf = cvt_e4m3(t);
    return {__frcp_rn(e4m3_to_f32(sf)), sf};  // RN(1/sf): the same rounded scale both ways
  } else if constexpr (S == PagedSf::kE4M3RoundUp) {
    // SPEC §4.9 (vLLM nvfp4_ds_mla): the 2^-9 floor after the IEEE division by 6, then
    // the next e4m3 code up when the rounded one decodes below t (never past 0x7E).
    float t = div_rn(amax, 6.0f, kInv6, true);
    t = t < 0x1p-9f ? 0x1p-9f : t;
    uint8_t sf = cvt_e4m3(t);
    if (e4m3_to_f32(sf) < t && sf < 0x7E) ++sf;
    return {__frcp_rn(e4m3_to_f32(sf)), sf};
  } else if constexpr (S == PagedSf::kFP32Pow2 || S == PagedSf::kFP32Pow2FloorFirst ||
                       S == PagedSf::kUE8M0FloorAfter) {
    // SPEC §4.6 (fp8_ds_mla) and §4.8 (MODEL1, the exponent as a ue8m0 byte): the 1e-4
    // floor after the IEEE division; §4.7 (the indexer's ue8m0 option): before it.
    float t;
    // amax is a bf16 value (or 0): div_rn is IEEE division for it (numerics test).
    if constexpr (S != PagedSf::kFP32Pow2FloorFirst) {
      t = div_rn(amax, 448.0f, kInv448, true);
      t = t < kAmaxMargin ? kAmaxMargin : t;
    } else {  // the floor itself is no bf16 value: its one quotient by IEEE division
      t = amax < kAmaxMargin ? __fdiv_rn(kAmaxMargin, 448.0f) : div_rn(amax, 448.0f, kInv448, true);
    }
    const int32_t k = ceil_log2(t);  // -22 / -13 .. 120, or 128 for an Inf amax (code +Inf / 0xFF)
    const uint32_t code = S == PagedSf::kUE8M0FloorAfter ? static_cast<uint32_t>(k + 127)
                                                          : static_cast<uint32_t>(k + 127) << 23;
    return {k == 128 ? 0.0f : exp2_neg(k), code};
  } else {
    static_assert(S == PagedSf::kFP32, "scale format");
    const float sf = __fmul_rn(amax < kAmaxMargin ? kAmaxMargin : amax, kInv448);
    return {__frcp_rn(sf), __float_as_uint(sf)};
  }
}
/// Writes a scale code's bytes (1, or 4 little-endian; `scale` may be unaligned).
template <PagedSf S>
__device__ __forceinline__ void put_scale(uint8_t* scale, uint32_t code) {
  if constexpr (paged_scale_width(S) == 4) {
    scale[0] = static_cast<uint8_t>(code);
    scale[1] = static_cast<uint8_t>(code >> 8);
    scale[2] = static_cast<uint8_t>(code >> 16);
    scale[3] = static_cast<uint8_t>(code >> 24);
  } else {
    *scale = static_cast<uint8_t>(code);
  }
}

/// NaN-ignoring max |x| of two bf16 packed in a word, per half, as two 16-bit lanes
/// (m starts at 0). One max.bf16x2: IEEE maxNum returns the other operand when one is
/// NaN, so a NaN half never wins and an all-NaN group stays 0; |x| orders like its bits.
__device__ __forceinline__ uint32_t abs_max_bf16x2(uint32_t m, uint32_t w) {
  uint32_t r;
  asm("max.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(m), "r"(w & 0x7FFF7FFFu));
  return r;
}

/// The float value of one group's scale bytes (dequantisation, SPEC §4).
template <PagedSf S>
__device__ __forceinline__ float scale_value(const uint8_t* scale) {
  if constexpr (S == PagedSf::kUE8M0 || S == PagedSf::kUE8M0FloorAfter) {
    return ue8m0_to_f32(scale[0]);
  } else if constexpr (S == PagedSf::kE4M3 || S == PagedSf::kE4M3RoundUp) {
    return e4m3_to_f32(scale[0]);
  } else {
    static_assert(paged_scale_width(S) == 4, "scale format");
    return __uint_as_float(pack_bytes4(scale[0], scale[1], scale[2], scale[3]));
  }
}

// ---- fused RoPE (docs/spec.md §8.4) ----

/// Element k (0 <= k < rot_dim) of a rotated range: its pair's index j (the table
/// column: cos at j, sin at rot_dim/2 + j), its partner element and whether it is the
/// pair's first (x) or second (y). NeoX pairs (j, j + rot_dim/2), GPT-J (2j, 2j + 1).
struct RopePlace {
  int32_t j, partner;
  bool first;
};
__device__ __forceinline__ RopePlace rope_place(int32_t k, int32_t rot_dim, bool is_neox) {
  const int32_t half = rot_dim / 2;
  if (is_neox) return k < half ? RopePlace{k, k + half, true} : RopePlace{k - half, k - half, false};
  return RopePlace{k >> 1, k ^ 1, (k & 1) == 0};
}
/// The rotated value of an element from its own value, its partner's, c and s:
/// x' = (x*c) - (y*s) for a first, y' = (y*c) + (x*s) for a second, each product
/// rounded before the sum (no FMA, whatever -fmad says). A first's difference is taken
/// as x*c + (-y)*s: the same bits (IEEE defines a - b as a + (-b), and RN(-y*s) is
/// -RN(y*s)), so a `first` that differs between a warp's lanes selects an operand's
/// sign, not one of two instructions (a divergent branch, or both predicated).
__device__ __forceinline__ float rope_value(float self, float other, float c, float s, bool first) {
  return __fadd_rn(__fmul_rn(self, c), __fmul_rn(first ? -other : other, s));
}

// The 8-element (16-byte) fast path: elements k0 .. k0+7 of a rotated range, all of them
// inside it (0 <= k0, k0 + 8 <= rot_dim), rotated together with the same arithmetic as
// rope_value element by element. NeoX: needs half % 8 == 0 and k0 % 8 == 0, so the 8
// are one side of 8 pairs, their partners one aligned chunk at k0 +- half and their
// table columns 8 consecutive floats. GPT-J: needs k0 even, so the 8 are 4 whole pairs.
__device__ __forceinline__ bool rope_chunk_fast(int32_t k0, int32_t rot_dim, bool is_neox) {
  return is_neox ? (rot_dim / 2) % 8 == 0 && k0 % 8 == 0 : k0 % 2 == 0;
}
/// NeoX: where the partner chunk of the chunk at k0 starts, relative to k0.
__device__ __forceinline__ int32_t rope_partner_offset(int32_t k0, int32_t rot_dim) {
  return k0 < rot_dim / 2 ? rot_dim / 2 : -(rot_dim / 2);
}
/// 4 consecutive table floats: one float4 load where `aligned16` (p % 16 == 0), else 4
/// scalar ones. A caller whose offsets are all multiples of 4 floats passes the table
/// row's alignment, tested once, rather than a test a load.
__device__ __forceinline__ void load_table4(const float* p, float* f, bool aligned16) {
  if (aligned16) {
    const float4 v = __ldg(reinterpret_cast<const float4*>(p));
    f[0] = v.x;
    f[1] = v.y;
    f[2] = v.z;
    f[3] = v.w;
  } else {
#pragma unroll
    for (int i = 0; i < 4; ++i) f[i] = __ldg(p + i);
  }
}
/// load_table4 at p's own alignment (the table's base and rot_dim decide it).
__device__ __forceinline__ void load_table4(const float* p, float* f) {
  load_table4(p, f, reinterpret_cast<uintptr_t>(p) % 16 == 0);
}
/// The table values of the chunk at k0 (rope_chunk_fast holds), cs the position's row:
/// NeoX c[i], s[i] for element i; GPT-J c[t], s[t] for pair t < 4 (c[4..7], s[4..7] not
/// written). Every read stays below cs + rot_dim (NeoX: j0 + 7 < half; GPT-J: k0/2 + 3 < half).
__device__ __forceinline__ void rope_chunk_table(const float* cs, int32_t k0, int32_t rot_dim, bool is_neox,
                                                 float (&c)[8], float (&s)[8]) {
  const int32_t half = rot_dim / 2;
  const int32_t j0 = is_neox ? (k0 < half ? k0 : k0 - half) : k0 / 2;
  load_table4(cs + j0, c);
  load_table4(cs + half + j0, s);
  if (is_neox) {
    load_table4(cs + j0 + 4, c + 4);
    load_table4(cs + half + j0 + 4, s + 4);
  }
}
/// Rotates x (elements k0 .. k0+7, fp32) in place where rope_chunk_fast(k0, ...) holds;
/// y: the NeoX partner chunk's values (unread for GPT-J); c, s from rope_chunk_table.
__device__ __forceinline__ void rope_chunk_apply(float (&x)[8], const float (&y)[8], const float (&c)[8],
                                                 const float (&s)[8], int32_t k0, int32_t rot_dim, bool is_neox) {
  if (is_neox) {
    const bool first = k0 < rot_dim / 2;  // all 8 on one side of their pairs
#pragma unroll
    for (int i = 0; i < 8; ++i) x[i] = rope_value(x[i], y[i], c[i], s[i], first);
  } else {
#pragma unroll
    for (int t = 0; t < 4; ++t) {
      const float a = x[2 * t], b = x[2 * t + 1];
      x[2 * t] = rope_value(a, b, c[t], s[t], true);
      x[2 * t + 1] = rope_value(b, a, c[t], s[t], false);
    }
  }
}

}  // namespace kvcheck::cuda::dev
