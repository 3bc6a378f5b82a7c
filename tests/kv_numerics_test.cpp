// SPEC §7.3 numerics: the hand-worked table, the reference's plainly written fp16/e5m2
// conversions against NVIDIA's host cuda_fp8.h / cuda_fp16.h (exhaustive over bf16 and
// fp16 inputs, sampled over floats), and the cpu backend's bit tricks against the
// reference on the same inputs.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "impl/cpu/kv_numerics.h"
#include "reference/kv_numerics.h"
#include "reference/numerics.h"

#ifdef KVCHECK_HAVE_CUDA_HEADERS
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#endif

namespace kvcheck::ref {
namespace {

float f(uint32_t bits) { return std::bit_cast<float>(bits); }

// SPEC §7.3 table, row by row (worked by hand there).
TEST(KvNumerics, SpecWorkedTable) {
  const KvDtype e4 = KvDtype::kE4M3, e5 = KvDtype::kE5M2, b = KvDtype::kBF16, h = KvDtype::kFP16;
  auto bf = [](uint16_t x) { return bf16_to_float(x); };
  EXPECT_EQ(quantize_kv(e4, bf(0x4040), 2.0f), 0x3C);
  EXPECT_EQ(float_to_model(b, dequantize_kv(e4, 0x3C, 2.0f)), 0x4040);
  EXPECT_EQ(quantize_kv(e4, bf(0x3F80), 3.0f), 0x2B);
  EXPECT_EQ(float_to_model(b, dequantize_kv(e4, 0x2B, 3.0f)), 0x3F84);
  EXPECT_EQ(float_to_model(h, dequantize_kv(e4, 0x2B, 3.0f)), 0x3C20);
  EXPECT_EQ(quantize_kv(e4, bf(0x3FAF), 7.0f), 0x24);  // a tie: the even code
  EXPECT_EQ(cvt_e4m3(bf(0x3FAF) * (1.0f / 7.0f)), 0x25);  // what a reciprocal multiply gives
  EXPECT_EQ(float_to_model(b, dequantize_kv(e4, 0x24, 7.0f)), 0x3FA8);
  EXPECT_EQ(quantize_kv(e4, bf(0x447A), 1.0f), 0x7E);
  EXPECT_EQ(float_to_model(b, dequantize_kv(e4, 0x7E, 1.0f)), 0x43E0);
  EXPECT_EQ(quantize_kv(e5, bf(0x447A), 1.0f), 0x64);
  EXPECT_EQ(float_to_model(b, dequantize_kv(e5, 0x64, 1.0f)), 0x4480);
  EXPECT_EQ(quantize_kv(e5, bf(0xFF80), 1.0f), 0xFB);
  EXPECT_EQ(float_to_model(b, dequantize_kv(e5, 0xFB, 1.0f)), 0xC760);
  EXPECT_EQ(quantize_kv(e4, bf(0xFFC0), 1.0f), 0x7F);
  EXPECT_EQ(quantize_kv(e5, bf(0xFFC0), 1.0f), 0x7F);
  EXPECT_EQ(float_to_model(b, dequantize_kv(e4, 0x7F, 1.0f)), 0x7FFF);
  EXPECT_EQ(float_to_model(h, dequantize_kv(e5, 0x7F, 1.0f)), 0x7FFF);
}

// SPEC §7.3.1 table, row by row (worked by hand there).
TEST(KvNumerics, RecipesWorkedTable) {
  const KvDtype e4 = KvDtype::kE4M3, e5 = KvDtype::kE5M2;
  const auto bf = [](uint32_t b) { return f(b << 16); };
  for (const KvRecipe r : {KvRecipe::kSpec, KvRecipe::kVllm}) {
    EXPECT_EQ(quantize_kv(e4, bf(0x3FAF), 7.0f, r), 0x24);
    EXPECT_EQ(quantize_kv(e4, bf(0xFFC0), 1.0f, r), 0x7F);
    EXPECT_EQ(quantize_kv(e5, bf(0xFFC0), 1.0f, r), 0x7F);
  }
  const KvRecipe sg = KvRecipe::kSglang;
  EXPECT_EQ(1.0f / 7.0f, f(0x3E124925));
  EXPECT_EQ(bf(0x3FAF) * f(0x3E124925), f(0x3E480001));
  EXPECT_EQ(quantize_kv(e4, bf(0x3FAF), 7.0f, sg), 0x25);
  EXPECT_EQ(quantize_kv(e4, bf(0x4040), 2.0f, sg), 0x3C);
  EXPECT_EQ(quantize_kv(e4, bf(0xFFC0), 1.0f, sg), 0x7E);
  EXPECT_EQ(quantize_kv(e4, bf(0x7FC0), 1.0f, sg), 0x7E);  // either NaN sign: +max
  EXPECT_EQ(quantize_kv(e5, bf(0xFFC0), 1.0f, sg), 0x7B);
  for (const KvRecipe r : kv_recipes()) {
    EXPECT_EQ(quantize_kv(e4, bf(0xFF80), 1.0f, r), 0xFE) << to_string(r);
    EXPECT_EQ(quantize_kv(e4, bf(0x447A), 1.0f, r), 0x7E) << to_string(r);
  }
}

TEST(KvNumerics, Fp16AndE5m2KnownValues) {
  EXPECT_EQ(float_to_fp16_rn(1.0f), 0x3C00);
  EXPECT_EQ(float_to_fp16_rn(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_fp16_rn(65519.0f), 0x7BFF);
  EXPECT_EQ(float_to_fp16_rn(65520.0f), 0x7C00);  // the tie with 2^16 goes to Inf
  EXPECT_EQ(float_to_fp16_rn(-std::numeric_limits<float>::infinity()), 0xFC00);
  EXPECT_EQ(float_to_fp16_rn(f(0xFFC00001)), 0x7FFF);
  EXPECT_EQ(float_to_fp16_rn(0x1p-24f), 0x0001);   // smallest subnormal
  EXPECT_EQ(float_to_fp16_rn(0x1p-25f), 0x0000);   // tie with 0 -> even
  EXPECT_EQ(float_to_fp16_rn(-0.0f), 0x8000);
  EXPECT_EQ(fp16_to_float(0x0001), 0x1p-24f);
  EXPECT_EQ(fp16_to_float(0x7BFF), 65504.0f);
  EXPECT_TRUE(std::isnan(fp16_to_float(0x7C01)));
  EXPECT_EQ(cvt_e5m2(57344.0f), 0x7B);
  EXPECT_EQ(cvt_e5m2(61440.0f), 0x7B);  // would be Inf without SATFINITE
  EXPECT_EQ(cvt_e5m2(0x1p-16f), 0x01);  // smallest subnormal
  EXPECT_EQ(cvt_e5m2(0x1p-14f), 0x04);  // smallest normal
  EXPECT_EQ(cvt_e5m2(-0.0f), 0x80);
  EXPECT_EQ(e5m2_to_float(0x7B), 57344.0f);
  EXPECT_EQ(e5m2_to_float(0xFC), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(e5m2_to_float(0x7D)));
}

// Floats the oracle tests run: every bf16 pattern, every fp16 value, and a sweep.
template <typename F>
void for_test_floats(F&& fn) {
  for (uint32_t x = 0; x <= 0xFFFF; ++x) fn(f(x << 16));
  for (uint32_t x = 0; x <= 0xFFFF; ++x) fn(fp16_to_float(static_cast<uint16_t>(x)));
  for (uint64_t x = 0; x <= 0xFFFFFFFFull; x += 0x1001) fn(f(static_cast<uint32_t>(x)));
}

TEST(KvNumerics, CpuFastConversionsMatchReference) {
  int failures = 0;
  for_test_floats([&](float x) {
    const uint32_t bits = std::bit_cast<uint32_t>(x);
    if (cpu::fast::f32_to_fp16(x) != float_to_fp16_rn(x) || cpu::fast::f32_to_e5m2(x) != cvt_e5m2(x))
      if (++failures <= 10)
        ADD_FAILURE() << std::hex << "float 0x" << bits << ": fp16 cpu 0x" << cpu::fast::f32_to_fp16(x)
                      << " ref 0x" << float_to_fp16_rn(x) << ", e5m2 cpu 0x" << int{cpu::fast::f32_to_e5m2(x)}
                      << " ref 0x" << int{cvt_e5m2(x)};
  });
  EXPECT_EQ(failures, 0);
  for (uint32_t x = 0; x <= 0xFFFF; ++x) {
    const float a = cpu::fast::fp16_to_f32(static_cast<uint16_t>(x)), b = fp16_to_float(static_cast<uint16_t>(x));
    ASSERT_TRUE(std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b) || (std::isnan(a) && std::isnan(b)))
        << std::hex << x;
  }
  for (uint32_t c = 0; c < 256; ++c) {
    const float a = cpu::fast::e5m2_to_f32(static_cast<uint8_t>(c)), b = e5m2_to_float(static_cast<uint8_t>(c));
    ASSERT_TRUE(std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b) || (std::isnan(a) && std::isnan(b))) << c;
  }
}

#ifdef KVCHECK_HAVE_CUDA_HEADERS

uint16_t nv_fp16(float x) {
  const __half h = __float2half_rn(x);
  uint16_t bits;
  std::memcpy(&bits, &h, 2);
  return bits;
}

TEST(KvNumericsOracle, ReferenceMatchesNvidiaHostConversions) {
  int failures = 0;
  for_test_floats([&](float x) {
    const uint8_t nv_e5 = static_cast<uint8_t>(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2));
    const uint8_t nv_e4 = static_cast<uint8_t>(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3));
    const uint16_t nv_h = nv_fp16(x);
    // Where SPEC §7.3 fixes NaN results assert SPEC (NVIDIA agrees today).
    const bool nan = std::isnan(x);
    if (cvt_e5m2(x) != (nan ? 0x7F : nv_e5) || cvt_e4m3(x) != nv_e4 ||
        float_to_fp16_rn(x) != (nan ? 0x7FFF : nv_h))
      if (++failures <= 10)
        ADD_FAILURE() << std::hex << "float 0x" << std::bit_cast<uint32_t>(x) << ": e5m2 ref 0x"
                      << int{cvt_e5m2(x)} << " nv 0x" << int{nv_e5} << ", fp16 ref 0x"
                      << float_to_fp16_rn(x) << " nv 0x" << nv_h;
    if (nan && (nv_e5 != 0x7F || nv_h != 0x7FFF) && ++failures <= 10)
      ADD_FAILURE() << "NVIDIA's NaN result changed: e5m2 " << int{nv_e5} << " fp16 " << nv_h;
  });
  EXPECT_EQ(failures, 0);
}

// SPEC §7.3.1 recipes, each written again over NVIDIA's SATFINITE conversion, on every
// bf16 and fp16 input and scales that round differently: spec/vllm divide (NaN: SPEC's
// 0x7F, which NVIDIA gives too); sglang multiplies by 1.0f / s and clamps with C's
// fminf/fmaxf before the conversion.
TEST(KvNumericsOracle, RecipesMatchNvidiaOnEveryInput) {
  int failures = 0;
  for (const KvDtype fp8 : {KvDtype::kE4M3, KvDtype::kE5M2}) {
    const __nv_fp8_interpretation_t nv = fp8 == KvDtype::kE4M3 ? __NV_E4M3 : __NV_E5M2;
    const float max = fp8 == KvDtype::kE4M3 ? 448.0f : 57344.0f;
    for (const KvDtype model : {KvDtype::kBF16, KvDtype::kFP16})
      for (const float s : {1.0f, 7.0f, 3.0f, 0.1f, 1e-3f, 448.0f, 1e-30f, 3e30f, 1e-40f, 1e38f})
        for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
          float x;
          if (model == KvDtype::kBF16) {
            x = std::bit_cast<float>(bits << 16);
          } else {
            __half_raw hr;
            hr.x = static_cast<unsigned short>(bits);
            x = __half2float(__half(hr));
          }
          const float inv = 1.0f / s;
          const float clamped = std::fmax(std::fmin(x * inv, max), -max);
          const uint8_t nv_div = static_cast<uint8_t>(__nv_cvt_float_to_fp8(x / s, __NV_SATFINITE, nv));
          const uint8_t nv_sgl = static_cast<uint8_t>(__nv_cvt_float_to_fp8(clamped, __NV_SATFINITE, nv));
          const uint8_t spec = quantize_kv(fp8, x, s, KvRecipe::kSpec), vllm = quantize_kv(fp8, x, s, KvRecipe::kVllm),
                        sgl = quantize_kv(fp8, x, s, KvRecipe::kSglang);
          if ((spec != nv_div || vllm != nv_div || sgl != nv_sgl) && ++failures <= 10)
            ADD_FAILURE() << to_string(model) << "->" << to_string(fp8) << " scale " << s << " x 0x" << std::hex
                          << bits << ": spec 0x" << int{spec} << " vllm 0x" << int{vllm} << " nv 0x" << int{nv_div}
                          << "; sglang 0x" << int{sgl} << " nv 0x" << int{nv_sgl};
        }
  }
  EXPECT_EQ(failures, 0);
}

TEST(KvNumericsOracle, DecodeMatchesNvidia) {
  for (uint32_t c = 0; c < 256; ++c) {
    const __half_raw hr = __nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(c), __NV_E5M2);
    const float nv = __half2float(__half(hr)), mine = e5m2_to_float(static_cast<uint8_t>(c));
    EXPECT_TRUE(std::bit_cast<uint32_t>(nv) == std::bit_cast<uint32_t>(mine) || (std::isnan(nv) && std::isnan(mine))) << c;
  }
  for (uint32_t x = 0; x <= 0xFFFF; ++x) {
    __half_raw hr;
    hr.x = static_cast<unsigned short>(x);
    const float nv = __half2float(__half(hr)), mine = fp16_to_float(static_cast<uint16_t>(x));
    ASSERT_TRUE(std::bit_cast<uint32_t>(nv) == std::bit_cast<uint32_t>(mine) || (std::isnan(nv) && std::isnan(mine))) << x;
  }
}

#endif

}  // namespace
}  // namespace kvcheck::ref
