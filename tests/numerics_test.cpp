// Known answers for reference/numerics (SPEC §4), derived by hand in the comments.
// Notation: e4m3 code = s eeee mmm, value (1+m/8)*2^(e-7) (e=0: m/8*2^-6);
// e2m1 codes 0..7 = 0, 0.5, 1, 1.5, 2, 3, 4, 6 (bit 3 = sign).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "impl/error.h"
#include "reference/numerics.h"

namespace kvcheck::ref {
namespace {

constexpr bf16_bits kPosInf = 0x7F80, kNegInf = 0xFF80, kNaN = 0x7FC0, kNegZero = 0x8000;

float from_bits(uint32_t b) { return std::bit_cast<float>(b); }

struct Quantized {
  std::vector<uint8_t> codes, scale;
};

// Quantises one group: `head` then zeros up to the group size.
Quantized quantize(const KVCacheFormat& f, std::vector<bf16_bits> head) {
  head.resize(static_cast<size_t>(f.elements_per_sf), 0);
  Quantized q{std::vector<uint8_t>(head.size()),
              std::vector<uint8_t>(static_cast<size_t>(f.scale_width()))};
  quantize_group(f, head, q.codes, q.scale);
  return q;
}

std::vector<uint8_t> first(const Quantized& q, size_t n) {
  return {q.codes.begin(), q.codes.begin() + static_cast<std::ptrdiff_t>(n)};
}

// nearest_even_code locates the entry at or below a value from its binade instead of
// searching: on the four tables the conversions use (e4m3, e2m1, and the K/V family's
// fp16 and e5m2), it must pick what a search over the whole table picks, for every
// entry, every midpoint (the ties), the floats next to both, and a sweep of floats.
// (A one-off run over all 2^32 floats, through the conversions, agreed too: docs/fuzzing.md.)
TEST(Numerics, NearestEvenCodeIsTheWholeTableSearch) {
  struct Fmt {
    const char* name;
    int mbits, bias, last_code;
  };
  for (const Fmt& f : {Fmt{"e4m3", 3, 7, 0x7E}, Fmt{"e2m1", 1, 1, 7}, Fmt{"fp16", 10, 15, 0x7BFF},
                       Fmt{"e5m2", 2, 15, 0x7B}}) {
    std::vector<double> t;  // the values of codes 0..last_code, written from the format's fields
    for (int c = 0; c <= f.last_code; ++c) {
      const int e = c >> f.mbits, m = c & ((1 << f.mbits) - 1);
      t.push_back(e == 0 ? std::ldexp(m, 1 - f.bias - f.mbits) : std::ldexp((1 << f.mbits) + m, e - f.bias - f.mbits));
    }
    const auto search = [&](double mag) {  // the whole-table search the reference used to do
      const int lo = static_cast<int>(std::upper_bound(t.begin(), t.end(), mag) - t.begin()) - 1;
      if (t[static_cast<size_t>(lo)] == mag || lo + 1 == static_cast<int>(t.size())) return lo;
      const double mid = (t[static_cast<size_t>(lo)] + t[static_cast<size_t>(lo) + 1]) / 2;
      return mag < mid ? lo : mag > mid ? lo + 1 : (lo % 2 == 0 ? lo : lo + 1);
    };
    std::vector<float> xs;
    for (size_t i = 0; i < t.size(); ++i) {
      const float v = static_cast<float>(t[i]);
      xs.insert(xs.end(), {v, std::nextafter(v, 0.0f), std::nextafter(v, 1e30f)});
      if (i + 1 < t.size()) {
        const float mid = static_cast<float>((t[i] + t[i + 1]) / 2);  // exact in float
        xs.insert(xs.end(), {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f)});
      }
    }
    for (uint32_t b = 0; b < 0x7F800000u; b += 4099) xs.push_back(std::bit_cast<float>(b));
    int64_t checked = 0;
    for (const float x : xs) {
      const double mag = x;
      if (!(mag >= 0) || mag >= t.back()) continue;  // the callers saturate or round these first
      ASSERT_EQ(nearest_even_code(t, mag, f.mbits, 1 - f.bias), search(mag)) << f.name << " " << x;
      ++checked;
    }
    EXPECT_GT(checked, 100000) << f.name;
  }
  // A table that is not the format described: the bracket check refuses it.
  const std::vector<double> e2m1 = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};
  EXPECT_THROW(nearest_even_code(e2m1, 5.0, 2, 0), std::logic_error);
}

TEST(Numerics, ConstantBits) {
  EXPECT_EQ(std::bit_cast<uint32_t>(kInv448), 0x3B124925u);
  EXPECT_EQ(std::bit_cast<uint32_t>(kInv6), 0x3E2AAAABu);
}

TEST(Numerics, Bf16Conversions) {
  EXPECT_EQ(std::bit_cast<uint32_t>(bf16_to_float(0x3F80)), 0x3F800000u);
  EXPECT_EQ(std::bit_cast<uint32_t>(bf16_to_float(0x8001)), 0x80010000u);  // subnormal exact
  EXPECT_EQ(float_to_bf16_rn(1.0f), 0x3F80);
  // bf16 keeps 7 mantissa bits; float 0x3F80_8000 is the midpoint of 0x3F80 and 0x3F81.
  EXPECT_EQ(float_to_bf16_rn(from_bits(0x3F808000)), 0x3F80);  // tie -> even
  EXPECT_EQ(float_to_bf16_rn(from_bits(0x3F818000)), 0x3F82);  // tie -> even (up)
  EXPECT_EQ(float_to_bf16_rn(from_bits(0x3F808001)), 0x3F81);  // just above the tie
  EXPECT_EQ(float_to_bf16_rn(from_bits(0x3F807FFF)), 0x3F80);  // just below
  EXPECT_EQ(float_to_bf16_rn(from_bits(0xBF808001)), 0xBF81);  // sign kept
  EXPECT_EQ(float_to_bf16_rn(-0.0f), 0x8000);
  EXPECT_EQ(float_to_bf16_rn(from_bits(0x00018000)), 0x0002);  // subnormal tie -> even
  EXPECT_EQ(float_to_bf16_rn(from_bits(0x7F7F7FFF)), 0x7F7F);
  // Midpoint between bf16 max 0x7F7F and 2^128: ties to even 0x7F80 = +Inf.
  EXPECT_EQ(float_to_bf16_rn(from_bits(0x7F7F8000)), 0x7F80);
  EXPECT_EQ(float_to_bf16_rn(std::numeric_limits<float>::max()), 0x7F80);
  EXPECT_EQ(float_to_bf16_rn(-std::numeric_limits<float>::infinity()), 0xFF80);
  EXPECT_EQ(float_to_bf16_rn(std::numeric_limits<float>::quiet_NaN()), 0x7FFF);
  EXPECT_EQ(float_to_bf16_rn(from_bits(0xFF800001)), 0x7FFF);  // any NaN, sign dropped
}

TEST(Numerics, E4M3KnownCodes) {
  EXPECT_EQ(cvt_e4m3(1.0f), 0x38);     // e=7, m=0
  EXPECT_EQ(cvt_e4m3(448.0f), 0x7E);   // e=15, m=6: 1.75*2^8
  EXPECT_EQ(cvt_e4m3(464.0f), 0x7E);   // midpoint to 480 would round up: saturates
  EXPECT_EQ(cvt_e4m3(1e30f), 0x7E);
  EXPECT_EQ(cvt_e4m3(-std::numeric_limits<float>::infinity()), 0xFE);
  EXPECT_EQ(cvt_e4m3(std::ldexp(1.0f, -9)), 0x01);     // smallest subnormal
  EXPECT_EQ(cvt_e4m3(std::ldexp(1.0f, -10)), 0x00);    // tie 0 / 2^-9 -> even 0
  EXPECT_EQ(cvt_e4m3(std::ldexp(3.0f, -10)), 0x02);    // tie code 1 / 2 -> 2
  EXPECT_EQ(cvt_e4m3(1.0625f), 0x38);   // tie 1.0 (0x38) / 1.125 (0x39) -> 0x38
  EXPECT_EQ(cvt_e4m3(1.1875f), 0x3A);   // tie 0x39 / 0x3A -> 0x3A
  EXPECT_EQ(cvt_e4m3(-1e-30f), 0x80);   // tiny negative -> -0
  EXPECT_EQ(cvt_e4m3(-0.0f), 0x80);
  EXPECT_EQ(cvt_e4m3(std::numeric_limits<float>::quiet_NaN()), 0x7F);
  EXPECT_EQ(cvt_e4m3(-std::numeric_limits<float>::quiet_NaN()), 0x7F);
  EXPECT_EQ(e4m3_to_float(0x38), 1.0f);
  EXPECT_EQ(e4m3_to_float(0x7E), 448.0f);
  EXPECT_EQ(e4m3_to_float(0xFE), -448.0f);
  EXPECT_EQ(e4m3_to_float(0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(e4m3_to_float(0x55), 13.0f);  // e=10, m=5: 1.625*8
  EXPECT_TRUE(std::isnan(e4m3_to_float(0x7F)));
  EXPECT_TRUE(std::isnan(e4m3_to_float(0xFF)));
}

TEST(Numerics, E2M1KnownCodes) {
  EXPECT_EQ(cvt_e2m1(0.25f), 0x0);   // tie 0 / 0.5 -> code 0
  EXPECT_EQ(cvt_e2m1(0.75f), 0x2);   // tie 0.5 (1) / 1 (2) -> 2
  EXPECT_EQ(cvt_e2m1(1.25f), 0x2);   // tie 1 (2) / 1.5 (3) -> 2
  EXPECT_EQ(cvt_e2m1(1.75f), 0x4);   // tie 1.5 (3) / 2 (4) -> 4
  EXPECT_EQ(cvt_e2m1(2.5f), 0x4);    // tie 2 (4) / 3 (5) -> 4
  EXPECT_EQ(cvt_e2m1(3.5f), 0x6);    // tie 3 (5) / 4 (6) -> 6
  EXPECT_EQ(cvt_e2m1(5.0f), 0x6);    // tie 4 (6) / 6 (7) -> 6
  EXPECT_EQ(cvt_e2m1(5.01f), 0x7);
  EXPECT_EQ(cvt_e2m1(7.0f), 0x7);    // saturates
  EXPECT_EQ(cvt_e2m1(std::numeric_limits<float>::infinity()), 0x7);
  EXPECT_EQ(cvt_e2m1(-std::numeric_limits<float>::infinity()), 0xF);
  EXPECT_EQ(cvt_e2m1(-0.25f), 0x8);
  EXPECT_EQ(cvt_e2m1(-0.0f), 0x8);
  EXPECT_EQ(cvt_e2m1(-std::numeric_limits<float>::quiet_NaN()), 0x7);
  EXPECT_EQ(e2m1_to_float(0x7), 6.0f);
  EXPECT_EQ(e2m1_to_float(0xD), -3.0f);
  EXPECT_EQ(e2m1_to_float(0x8), 0.0f);
  EXPECT_TRUE(std::signbit(e2m1_to_float(0x8)));
}

TEST(Numerics, E8M0AndCeilLog2) {
  EXPECT_EQ(e8m0_to_float(127), 1.0f);
  EXPECT_EQ(e8m0_to_float(0), std::ldexp(1.0f, -127));
  EXPECT_EQ(e8m0_to_float(254), std::ldexp(1.0f, 127));
  EXPECT_TRUE(std::isnan(e8m0_to_float(255)));
  EXPECT_EQ(ceil_log2(1.0f), 0);
  EXPECT_EQ(ceil_log2(1.5f), 1);
  EXPECT_EQ(ceil_log2(0.5f), -1);
  EXPECT_EQ(ceil_log2(0.75f), 0);
  EXPECT_EQ(ceil_log2(448.0f), 9);
  EXPECT_EQ(ceil_log2(std::ldexp(1.0f, -149)), -149);
  EXPECT_EQ(ceil_log2(std::numeric_limits<float>::max()), 128);
  EXPECT_EQ(ceil_log2(std::numeric_limits<float>::infinity()), 128);
  // The log2f trap of SPEC §4: log2f(2^20 * (1 + 2^-23)) rounds to 20.0f, the truth is 21.
  EXPECT_EQ(ceil_log2(from_bits(0x49800001)), 21);
  EXPECT_THROW(ceil_log2(0.0f), Error);
}

TEST(Numerics, GroupAmax) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(group_amax(std::vector<float>{nan, -3.0f, 2.0f}), 3.0f);
  EXPECT_EQ(group_amax(std::vector<float>{nan, nan}), 0.0f);
  EXPECT_EQ(group_amax(std::vector<float>{1.0f, -inf}), inf);
  EXPECT_EQ(group_amax(std::vector<float>{}), 0.0f);
}

// §4.1, MXFP8_INDEX (group 32): x = [3, 1, -0.5, bf16(0.1)=0x3DCD=0.10009765625, 1.0625].
// amax 3: 3*INV448 = 0.00669..., in (2^-8, 2^-7] -> k = -7, scale byte 120 = 0x78.
// x*2^7: 384 = 1.5*2^8 -> e=15,m=4 -> 0x7C; 128 -> 0x70; -64 -> 0xE8;
// 12.8125 -> nearest 13 = 1.625*2^3 -> 0x55; 136 = tie 128/144 -> even 0x70.
// dequant: 384*2^-7 = 3 (0x4040), 1 (0x3F80), -0.5 (0xBF00), 13/128 = 0.1015625 (0x3DD0).
TEST(Numerics, Recipe41Mxfp8) {
  const auto f = KVCacheFormat::MXFP8_INDEX();
  const Quantized q = quantize(f, {0x4040, 0x3F80, 0xBF00, 0x3DCD, 0x3F88});
  EXPECT_EQ(q.scale, std::vector<uint8_t>{0x78});
  EXPECT_EQ(first(q, 6), (std::vector<uint8_t>{0x7C, 0x70, 0xE8, 0x55, 0x70, 0x00}));
  EXPECT_EQ(dequantize(f, 0x7C, q.scale), 0x4040);
  EXPECT_EQ(dequantize(f, 0x70, q.scale), 0x3F80);
  EXPECT_EQ(dequantize(f, 0xE8, q.scale), 0xBF00);
  EXPECT_EQ(dequantize(f, 0x55, q.scale), 0x3DD0);
  EXPECT_EQ(dequantize(f, 0x00, q.scale), 0x0000);
  // V41 uses the same recipe on groups of 32.
  EXPECT_EQ(quantize(KVCacheFormat::V41(), {0x4040, 0x3F88}).scale, std::vector<uint8_t>{0x78});
}

// §4.2, FP4_INDEX (group 32): x = [3, -1.25, 0.75, 0.125]. amax 3: 3*INV6 =
// 3*0xAAAAAB*2^-26 = (2^25+1)*2^-26 = 0.5 + 2^-26, RN to float -> 0.5 -> k = -1,
// byte 126 = 0x7E. x*2: 6 -> 7; -2.5 tie 2/3 -> even code 4 -> 0xC; 1.5 -> 3;
// 0.25 tie 0/0.5 -> 0. dequant: 6*0.5 = 3 (0x4040), -2*0.5 = -1 (0xBF80), 0.75 (0x3F40).
TEST(Numerics, Recipe42Fp4Index) {
  const auto f = KVCacheFormat::FP4_INDEX();
  const Quantized q = quantize(f, {0x4040, 0xBFA0, 0x3F40, 0x3E00});
  EXPECT_EQ(q.scale, std::vector<uint8_t>{0x7E});
  EXPECT_EQ(first(q, 5), (std::vector<uint8_t>{0x7, 0xC, 0x3, 0x0, 0x0}));
  EXPECT_EQ(dequantize(f, 0x7, q.scale), 0x4040);
  EXPECT_EQ(dequantize(f, 0xC, q.scale), 0xBF80);
  EXPECT_EQ(dequantize(f, 0x3, q.scale), 0x3F40);
}

// §4.3, V41_FP4 (group 16): x = [5.625, 2.34375, 1.171875, 4.6875, -2.34375].
// amax 5.625: 5.625*INV6 = 0.9375000x, e4m3 -> 0.9375 = 1.875*2^-1 -> sf 0x37.
// inv = RN(1/0.9375) = RN(16/15) = 1.06666672 (> 16/15). Each x/sf is an e2m1 tie
// (6, 2.5, 1.25, 5, -2.5) but x*inv lands just above it:
// 6.0000003 -> 7; 2.5000002 -> 5 (x/sf would give 4); 1.2500001 -> 3 (not 2);
// 5.0000005 -> 7 (not 6); -2.5000002 -> 0xD.
// dequant: 6*0.9375 = 5.625 (0x40B4), 3*0.9375 = 2.8125 (0x4034), 1.5*0.9375 =
// 1.40625 (0x3FB4), -2.8125 (0xC034).
TEST(Numerics, Recipe43V41Fp4MultipliesByReciprocal) {
  const auto f = KVCacheFormat::V41_FP4();
  const Quantized q = quantize(f, {0x40B4, 0x4016, 0x3F96, 0x4096, 0xC016});
  EXPECT_EQ(q.scale, std::vector<uint8_t>{0x37});
  EXPECT_EQ(first(q, 6), (std::vector<uint8_t>{0x7, 0x5, 0x3, 0x7, 0xD, 0x0}));
  EXPECT_EQ(dequantize(f, 0x7, q.scale), 0x40B4);
  EXPECT_EQ(dequantize(f, 0x5, q.scale), 0x4034);
  EXPECT_EQ(dequantize(f, 0x3, q.scale), 0x3FB4);
  EXPECT_EQ(dequantize(f, 0xD, q.scale), 0xC034);
}

// §4.4, FP8_FP32SF_INDEX (group 128): x = [100, 1, -0.5].
// sf = 100*INV448 = 100*0x924925*2^-32 = 958698100*2^-32 -> 24 bits: 14979657.8125*2^-26
// -> 14979658*2^-26 = 0.22321430 = 0x3E64924A (bytes 4A 92 64 3E).
// inv = RN(1/sf) = 4.4799995. 100*inv = 447.99994 -> 448 (0x7E); 4.4799995 -> 4.5
// (e=9,m=1: 0x49); -2.2399998 -> -2.25 (e=8,m=1: 0xC1).
// dequant: 4.5*sf = 1.00446439 > midpoint 1.00390625 -> bf16 1.0078125 (0x3F81);
// -2.25*sf = -0.50223219 > midpoint 0.501953125 -> -0.50390625 (0xBF01); 448*sf = 100 (0x42C8).
TEST(Numerics, Recipe44Fp32Scale) {
  const auto f = KVCacheFormat::FP8_FP32SF_INDEX();
  const Quantized q = quantize(f, {0x42C8, 0x3F80, 0xBF00});
  EXPECT_EQ(q.scale, (std::vector<uint8_t>{0x4A, 0x92, 0x64, 0x3E}));
  EXPECT_EQ(first(q, 4), (std::vector<uint8_t>{0x7E, 0x49, 0xC1, 0x00}));
  EXPECT_EQ(dequantize(f, 0x49, q.scale), 0x3F81);
  EXPECT_EQ(dequantize(f, 0xC1, q.scale), 0xBF01);
  EXPECT_EQ(dequantize(f, 0x7E, q.scale), 0x42C8);
}

// §4.6 (FP8_DS_MLA, fp32 power-of-two tile scale, the floor after the division):
// s = 2^ceil_log2(max(RN(amax / 448), 1e-4)), stored as fp32 bits little-endian.
//  - amax 336 (0x43A8): 336/448 = 0.75 -> k = 0, s = 1.0 (0x3F800000). 336 = 2^8 * 1.3125
//    lies halfway between 320 (m = 2) and 352 (m = 3): ties to even, code 15<<3|2 = 0x7A.
//  - amax 452 (0x43E2): RN(452/448) = 1.0089 -> k = 1, s = 2.0 (0x40000000); 452/2 = 226 =
//    2^7 * 1.765625, nearest 1.75 (m = 6): code 14<<3|6 = 0x76. -1 (0xBF80) / 2 = -0.5 =
//    2^-1 * 1.0: code 0x80|6<<3 = 0xB0.
//  - all zero: max(0, 1e-4) = 1e-4 in (2^-14, 2^-13] -> k = -13, s = 0x39000000 (V41's
//    rule, the floor before the division, gives 2^-22 instead: Numerics.AllZeroGroups).
//  - an Inf amax: t = Inf -> s = +Inf (0x7F800000); finite x / Inf = ±0, Inf / Inf = NaN -> 0x7F.
TEST(Numerics, Recipe46Fp32PowerOfTwoTileScale) {
  const auto f = KVCacheFormat::FP8_DS_MLA();
  const Quantized a = quantize(f, {0x43A8, 0x43A0});
  EXPECT_EQ(a.scale, (std::vector<uint8_t>{0x00, 0x00, 0x80, 0x3F}));
  EXPECT_EQ(first(a, 3), (std::vector<uint8_t>{0x7A, 0x7A, 0x00}));
  EXPECT_EQ(dequantize(f, 0x7A, a.scale), 0x43A0);  // 320
  const Quantized b = quantize(f, {0x43E2, 0xBF80});
  EXPECT_EQ(b.scale, (std::vector<uint8_t>{0x00, 0x00, 0x00, 0x40}));
  EXPECT_EQ(first(b, 2), (std::vector<uint8_t>{0x76, 0xB0}));
  EXPECT_EQ(dequantize(f, 0x76, b.scale), 0x43E0);  // 1.75 * 2^7 * 2 = 448 = 1.75 * 2^8
  const Quantized zero = quantize(f, {kNegZero});
  EXPECT_EQ(zero.scale, (std::vector<uint8_t>{0x00, 0x00, 0x00, 0x39}));
  EXPECT_EQ(first(zero, 2), (std::vector<uint8_t>{0x80, 0x00}));
  const Quantized inf = quantize(f, {kPosInf, 0xBF80, kNaN});
  EXPECT_EQ(inf.scale, (std::vector<uint8_t>{0x00, 0x00, 0x80, 0x7F}));
  EXPECT_EQ(first(inf, 4), (std::vector<uint8_t>{0x7F, 0x80, 0x7F, 0x00}));
}

// §4.7 (FP8_POW2SF_INDEX, the floor before the division): t = max(amax, 1e-4) / 448.
//  - all zero: 1e-4 / 448 = 2.23e-7 in (2^-23, 2^-22] -> 2^-22 (0x34800000), where §4.6
//    gives 2^-13.
//  - amax 0x3A83 = 1.0234375 * 2^-10: t = 2.231e-6 in (2^-19, 2^-18] -> 2^-18 (0x36800000)
//    (§4.6: max(2.2e-6, 1e-4) -> 2^-13); the element / 2^-18 = 262, nearest e4m3 256 ->
//    15<<3 = 0x78.
//  - amax 336: 336 / 448 = 0.75 -> 1.0, as §4.6.
TEST(Numerics, Recipe47Fp32PowerOfTwoScaleFloorFirst) {
  const auto f = KVCacheFormat::FP8_POW2SF_INDEX();
  const Quantized zero = quantize(f, {});
  EXPECT_EQ(zero.scale, (std::vector<uint8_t>{0x00, 0x00, 0x80, 0x34}));
  const Quantized small = quantize(f, {0x3A83});
  EXPECT_EQ(small.scale, (std::vector<uint8_t>{0x00, 0x00, 0x80, 0x36}));
  EXPECT_EQ(first(small, 2), (std::vector<uint8_t>{0x78, 0x00}));
  const Quantized ds = quantize(KVCacheFormat::FP8_DS_MLA(), {0x3A83});
  EXPECT_EQ(ds.scale, (std::vector<uint8_t>{0x00, 0x00, 0x00, 0x39}));
  const Quantized a = quantize(f, {0x43A8});
  EXPECT_EQ(a.scale, (std::vector<uint8_t>{0x00, 0x00, 0x80, 0x3F}));
  EXPECT_EQ(first(a, 1), (std::vector<uint8_t>{0x7A}));
}

// §4.8 (MODEL1, groups of 64): §4.6's rule, k + 127 stored as one ue8m0 byte.
//  - amax 336 (0x43A8): t = 0.75 -> k = 0, byte 0x7F; 336 ties 320/352 -> even 0x7A.
//  - amax 452 (0x43E2): t = RN(452/448) = 1.0089 -> k = 1, byte 0x80; 226 -> 224 = 0x76,
//    -1 -> -0.5 = 0xB0.
//  - all zero: t = 1e-4 in (2^-14, 2^-13] -> k = -13, byte 114 (0x72) (V41's rule: 2^-22).
//  - amax 0x3A83 (1.0234375 * 2^-10): t floored to 1e-4 -> 2^-13; the element / 2^-13 =
//    8.1875 -> 8 = 0x50 (V41's rule: 2^-18, byte 109).
//  - an Inf: k = 128, byte 0xFF; finite elements / Inf = +-0, Inf / Inf = NaN -> 0x7F.
//  Dequant: 0xFF reads as e8m0's NaN, so every element of an Inf tile loads as NaN.
TEST(Numerics, Recipe48Ue8m0TileScaleFloorAfter) {
  const auto f = KVCacheFormat::MODEL1();
  ASSERT_EQ(f.elements_per_sf, 64);
  const Quantized a = quantize(f, {0x43A8, 0x43A0});
  EXPECT_EQ(a.scale, (std::vector<uint8_t>{0x7F}));
  EXPECT_EQ(first(a, 3), (std::vector<uint8_t>{0x7A, 0x7A, 0x00}));
  EXPECT_EQ(dequantize(f, 0x7A, a.scale), 0x43A0);  // 320
  const Quantized b = quantize(f, {0x43E2, 0xBF80});
  EXPECT_EQ(b.scale, (std::vector<uint8_t>{0x80}));
  EXPECT_EQ(first(b, 2), (std::vector<uint8_t>{0x76, 0xB0}));
  EXPECT_EQ(dequantize(f, 0x76, b.scale), 0x43E0);  // 1.75 * 2^7 * 2 = 448
  const Quantized zero = quantize(f, {kNegZero});
  EXPECT_EQ(zero.scale, (std::vector<uint8_t>{0x72}));
  EXPECT_EQ(first(zero, 2), (std::vector<uint8_t>{0x80, 0x00}));
  const Quantized small = quantize(f, {0x3A83});
  EXPECT_EQ(small.scale, (std::vector<uint8_t>{0x72}));
  EXPECT_EQ(first(small, 1), (std::vector<uint8_t>{0x50}));
  EXPECT_EQ(quantize(KVCacheFormat::MXFP8_INDEX(), {0x3A83}).scale, (std::vector<uint8_t>{109}));
  const Quantized inf = quantize(f, {kPosInf, 0xBF80, kNaN});
  EXPECT_EQ(inf.scale, (std::vector<uint8_t>{0xFF}));
  EXPECT_EQ(first(inf, 4), (std::vector<uint8_t>{0x7F, 0x80, 0x7F, 0x00}));
  EXPECT_EQ(dequantize(f, 0x80, inf.scale), 0x7FFF);  // -0 * NaN
}

// §4.9 (NVFP4_DS_MLA, groups of 16): t = max(amax / 6, 2^-9), sf = cvt_e4m3(t), then the
// next code up when float(sf) < t (never past 0x7E); q = cvt_e2m1(x * RN(1 / sf)).
//  - amax 0.9453125 (0x3F72): t = 0.1575521; e4m3 neighbours 0.15625 (0x22) and 0.171875
//    (0x23), midpoint 0.1640625: RN gives 0x22 < t, so 0x23 (V41_FP4's §4.3: 0x22);
//    0.9453125 / 0.171875 = 5.5 -> e2m1 6 (code 0x7).
//  - amax 1.0: t = RN(1/6) = 0.16666667 -> RN 0.171875 (0x23) >= t, kept; 1 / 0.171875 =
//    5.82 -> 6 (0x7); dequant 6 * 0.171875 = 1.03125 (bf16 0x3F84).
//  - amax 0.0146484375 (0x3C70 = 1.25 * 6 * 2^-9): t = 1.25 * 2^-9 -> RN 2^-9 (0x01) < t,
//    so 2 * 2^-9 (0x02); x / 2^-8 = 3.75 -> 4 (0x6).
//  - all zero: t = 2^-9 exactly -> 0x01; -0 -> e2m1 0x8.
//  - amax 3000 (0x453B, 2992 in bf16): t = 498.67 saturates to 448 (0x7E), not raised past
//    0x7E; 2992 / 448 = 6.68 -> 6 (0x7).
//  - an Inf: t = Inf -> 0x7E; Inf * RN(1/448) = Inf -> 6 (0x7); 1.0 / 448 -> 0.
TEST(Numerics, Recipe49E4m3ScaleRoundedUp) {
  const auto f = KVCacheFormat::NVFP4_DS_MLA();
  ASSERT_EQ(f.elements_per_sf, 16);
  const Quantized a = quantize(f, {0x3F72});
  EXPECT_EQ(a.scale, (std::vector<uint8_t>{0x23}));
  EXPECT_EQ(first(a, 2), (std::vector<uint8_t>{0x7, 0x0}));
  EXPECT_EQ(quantize(KVCacheFormat::V41_FP4(), {0x3F72}).scale, (std::vector<uint8_t>{0x22}));
  const Quantized one = quantize(f, {0x3F80});
  EXPECT_EQ(one.scale, (std::vector<uint8_t>{0x23}));
  EXPECT_EQ(first(one, 1), (std::vector<uint8_t>{0x7}));
  EXPECT_EQ(dequantize(f, 0x7, one.scale), 0x3F84);
  const Quantized small = quantize(f, {0x3C70});
  EXPECT_EQ(small.scale, (std::vector<uint8_t>{0x02}));
  EXPECT_EQ(first(small, 1), (std::vector<uint8_t>{0x6}));
  EXPECT_EQ(dequantize(f, 0x6, small.scale), 0x3C80);  // 4 * 2^-8
  const Quantized zero = quantize(f, {kNegZero});
  EXPECT_EQ(zero.scale, (std::vector<uint8_t>{0x01}));
  EXPECT_EQ(first(zero, 2), (std::vector<uint8_t>{0x8, 0x0}));
  const Quantized big = quantize(f, {0x453B});
  EXPECT_EQ(big.scale, (std::vector<uint8_t>{0x7E}));
  EXPECT_EQ(first(big, 1), (std::vector<uint8_t>{0x7}));
  const Quantized inf = quantize(f, {kPosInf, 0x3F80});
  EXPECT_EQ(inf.scale, (std::vector<uint8_t>{0x7E}));
  EXPECT_EQ(first(inf, 2), (std::vector<uint8_t>{0x7, 0x0}));
}

// All-zero groups. ue8m0: a = 1e-4f. e4m3: 1e-4*INV448 = 2.232e-7 in (2^-23, 2^-22]
// -> k = -22, byte 105. e2m1: 1e-4*INV6 = 1.667e-5 in (2^-16, 2^-15] -> k = -15, byte 112.
// V41_FP4: 6*2^-9*INV6 = 3*0xAAAAAB*2^-34 = 2^-9 + 2^-34 -> RN 2^-9 -> e4m3 0x01.
TEST(Numerics, AllZeroGroups) {
  const Quantized mx = quantize(KVCacheFormat::MXFP8_INDEX(), {0x0000, kNegZero});
  EXPECT_EQ(mx.scale, std::vector<uint8_t>{105});
  EXPECT_EQ(first(mx, 3), (std::vector<uint8_t>{0x00, 0x80, 0x00}));  // sign of zero kept
  const Quantized fp4 = quantize(KVCacheFormat::FP4_INDEX(), {0x0000, kNegZero});
  EXPECT_EQ(fp4.scale, std::vector<uint8_t>{112});
  EXPECT_EQ(first(fp4, 3), (std::vector<uint8_t>{0x0, 0x8, 0x0}));
  const Quantized v41fp4 = quantize(KVCacheFormat::V41_FP4(), {kNegZero});
  EXPECT_EQ(v41fp4.scale, std::vector<uint8_t>{0x01});  // never a zero scale
  EXPECT_EQ(first(v41fp4, 2), (std::vector<uint8_t>{0x8, 0x0}));
  // fp32: sf = 1e-4f * INV448, both fp32, one RN multiply.
  const auto f = KVCacheFormat::FP8_FP32SF_INDEX();
  const Quantized fp32 = quantize(f, {});
  EXPECT_EQ(std::bit_cast<uint32_t>(scale_value(f, fp32.scale)),
            std::bit_cast<uint32_t>(1e-4f * (1.0f / 448.0f)));
}

// §4.5: NaN ignored by amax and encoded as the format's NaN / +6; Inf drives k to
// 128 -> clamped 126 (byte 253), finite neighbours *2^-126 -> ±0, Inf -> ±448 / ±6.
TEST(Numerics, SpecialInputsUe8m0) {
  const Quantized nan_mixed = quantize(KVCacheFormat::MXFP8_INDEX(), {kNaN, 0x4040});
  EXPECT_EQ(nan_mixed.scale, std::vector<uint8_t>{0x78});  // as amax 3 (Recipe41)
  EXPECT_EQ(first(nan_mixed, 2), (std::vector<uint8_t>{0x7F, 0x7C}));

  std::vector<bf16_bits> all_nan(32, kNaN);
  all_nan[3] = 0xFFC1;  // a negative NaN too
  const Quantized nan_only = quantize(KVCacheFormat::MXFP8_INDEX(), all_nan);
  EXPECT_EQ(nan_only.scale, std::vector<uint8_t>{105});  // amax 0 -> as all-zero
  EXPECT_EQ(nan_only.codes, std::vector<uint8_t>(32, 0x7F));

  const std::vector<bf16_bits> inf_group = {kPosInf, 0x3F80, 0xBF80, kNegZero, kNaN, kNegInf};
  const Quantized e4 = quantize(KVCacheFormat::MXFP8_INDEX(), inf_group);
  EXPECT_EQ(e4.scale, std::vector<uint8_t>{253});
  EXPECT_EQ(first(e4, 7), (std::vector<uint8_t>{0x7E, 0x00, 0x80, 0x80, 0x7F, 0xFE, 0x00}));
  // 448 * 2^126 overflows float -> +Inf.
  EXPECT_EQ(dequantize(KVCacheFormat::MXFP8_INDEX(), 0x7E, e4.scale), kPosInf);
  EXPECT_EQ(dequantize(KVCacheFormat::MXFP8_INDEX(), 0x7F, e4.scale), 0x7FFF);

  const Quantized e2 = quantize(KVCacheFormat::FP4_INDEX(), inf_group);
  EXPECT_EQ(e2.scale, std::vector<uint8_t>{253});
  EXPECT_EQ(first(e2, 7), (std::vector<uint8_t>{0x7, 0x0, 0x8, 0x8, 0x7, 0xF, 0x0}));

  // Largest finite bf16 0x7F7F = 255*2^120: *INV448 = 0.569*2^120 -> k = 120, byte 247;
  // 255 -> nearest e4m3 256 = 2^8 -> 0x78.
  const Quantized huge = quantize(KVCacheFormat::MXFP8_INDEX(), {0x7F7F});
  EXPECT_EQ(huge.scale, std::vector<uint8_t>{247});
  EXPECT_EQ(huge.codes[0], 0x78);
}

// V41_FP4 with Inf: min(Inf*INV6, 448) = 448 -> sf 0x7E, inv = RN(1/448) = INV448;
// 4*INV448 = 0.0089 -> +0. FP8_FP32SF_INDEX with Inf: sf = +Inf, inv = 1/Inf = 0, so
// finite x -> x*0 = ±0 and ±Inf*0 = NaN -> 0x7F (what §4.4's formula gives).
TEST(Numerics, SpecialInputsOtherScales) {
  const Quantized v = quantize(KVCacheFormat::V41_FP4(), {kPosInf, 0x4080, kNegZero, kNaN, kNegInf});
  EXPECT_EQ(v.scale, std::vector<uint8_t>{0x7E});
  EXPECT_EQ(first(v, 6), (std::vector<uint8_t>{0x7, 0x0, 0x8, 0x7, 0xF, 0x0}));
  const Quantized s = quantize(KVCacheFormat::FP8_FP32SF_INDEX(), {kPosInf, 0x3F80, 0xBF80, kNaN});
  EXPECT_EQ(s.scale, (std::vector<uint8_t>{0x00, 0x00, 0x80, 0x7F}));  // +Inf
  EXPECT_EQ(first(s, 5), (std::vector<uint8_t>{0x7F, 0x00, 0x80, 0x7F, 0x00}));
}

// k is clamped to [-126, 126] and amax >= 1e-4 (k >= -22), so a ue8m0 byte is in
// [105, 253] for every single-element group and never 0xFF.
TEST(Numerics, Ue8m0ByteNeverFF) {
  for (const auto& f : {KVCacheFormat::MXFP8_INDEX(), KVCacheFormat::FP4_INDEX()}) {
    for (uint32_t x = 0; x <= 0xFFFF; x += 7) {
      const Quantized q = quantize(f, {static_cast<bf16_bits>(x)});
      ASSERT_NE(q.scale[0], 0xFF) << f.name << " x=0x" << std::hex << x;
      ASSERT_GE(q.scale[0], 105) << f.name << " x=0x" << std::hex << x;
      ASSERT_LE(q.scale[0], 253) << f.name << " x=0x" << std::hex << x;
    }
  }
}

TEST(Numerics, QuantizeGroupRejectsBadArguments) {
  std::vector<bf16_bits> x(32);
  std::vector<uint8_t> codes(32), scale(1);
  EXPECT_THROW(quantize_group(KVCacheFormat::BF16(8), x, codes, scale), Error);
  std::vector<uint8_t> short_codes(31);
  try {
    quantize_group(KVCacheFormat::MXFP8_INDEX(), x, short_codes, scale);
    ADD_FAILURE() << "no throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace kvcheck::ref
