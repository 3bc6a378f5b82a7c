// Plain conversions of SPEC §7.3: build the value table of the format, pick the
// nearest entry by comparison in double (exact for every float), ties to the even
// code (nearest_even_code, reference/numerics.h: the entry below is located from the
// value's binade and checked to bracket it, rather than searched for).
#include "reference/kv_numerics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "impl/error.h"
#include "reference/numerics.h"

namespace kvcheck::ref {
namespace {

// Value of the non-negative code `m` (exponent field e, mantissa field f) of a
// binary format with `mbits` mantissa bits and exponent bias `bias`.
double binary_value(int code, int mbits, int bias) {
  const int e = code >> mbits, f = code & ((1 << mbits) - 1);
  const double frac = f / static_cast<double>(1 << mbits);
  return e == 0 ? std::ldexp(frac, 1 - bias) : std::ldexp(1.0 + frac, e - bias);
}

// Non-negative finite values in code order: fp16 0x0000..0x7BFF, e5m2 0x00..0x7B.
std::vector<double> table(int last_code, int mbits, int bias) {
  std::vector<double> t;
  for (int c = 0; c <= last_code; ++c) t.push_back(binary_value(c, mbits, bias));
  return t;
}
const std::vector<double> kFp16 = table(0x7BFF, 10, 15);  // kFp16.back() == 65504
const std::vector<double> kE5M2 = table(0x7B, 2, 15);     // kE5M2.back() == 57344

}  // namespace

float fp16_to_float(uint16_t x) {
  const int mag = x & 0x7FFF;
  float v;
  if (mag >= 0x7C00)
    v = mag == 0x7C00 ? std::numeric_limits<float>::infinity() : std::numeric_limits<float>::quiet_NaN();
  else
    v = static_cast<float>(binary_value(mag, 10, 15));
  return (x & 0x8000) ? -v : v;
}

uint16_t float_to_fp16_rn(float x) {
  if (std::isnan(x)) return 0x7FFF;
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double mag = std::fabs(static_cast<double>(x));
  // 65520 is the midpoint between 65504 (0x7BFF, odd) and 2^16 (where Inf sits): ties
  // and above go to Inf, as IEEE rounding with an unbounded exponent would.
  if (mag >= 65520.0) return static_cast<uint16_t>(sign | 0x7C00);
  return static_cast<uint16_t>(sign | nearest_even_code(kFp16, mag, 10, -14));
}

uint8_t cvt_e5m2(float x) {
  if (std::isnan(x)) return 0x7F;
  const uint8_t sign = std::signbit(x) ? 0x80 : 0;
  const double mag = std::fabs(static_cast<double>(x));
  if (mag >= 57344.0) return static_cast<uint8_t>(sign | 0x7B);  // SATFINITE, Inf too
  return static_cast<uint8_t>(sign | nearest_even_code(kE5M2, mag, 2, -14));
}

float e5m2_to_float(uint8_t code) {
  const int mag = code & 0x7F;
  float v;
  if (mag >= 0x7C)
    v = mag == 0x7C ? std::numeric_limits<float>::infinity() : std::numeric_limits<float>::quiet_NaN();
  else
    v = static_cast<float>(binary_value(mag, 2, 15));
  return (code & 0x80) ? -v : v;
}

float model_to_float(KvDtype dtype, uint16_t bits) {
  if (dtype == KvDtype::kBF16) return bf16_to_float(bits);
  if (dtype == KvDtype::kFP16) return fp16_to_float(bits);
  throw Error(ErrorCode::kInvalidArgument, to_string(dtype) + " is not a model dtype");
}

uint16_t float_to_model(KvDtype dtype, float x) {
  if (dtype == KvDtype::kBF16) return float_to_bf16_rn(x);
  if (dtype == KvDtype::kFP16) return float_to_fp16_rn(x);
  throw Error(ErrorCode::kInvalidArgument, to_string(dtype) + " is not a model dtype");
}

uint8_t quantize_kv(KvDtype fp8, float x, float scale, KvRecipe recipe) {
  float y;
  if (recipe == KvRecipe::kSglang) {
    const float inv = 1.0f / scale;  // one IEEE division, RNE
    y = x * inv;                     // one RN multiply
    // C's fminf/fmaxf return the number when one operand is NaN: the clamp sends NaN
    // to +max, and ±Inf to ±max (which SATFINITE would give as well).
    const float max = fp8 == KvDtype::kE4M3 ? 448.0f : 57344.0f;
    y = std::fmax(std::fmin(y, max), -max);
  } else if (recipe == KvRecipe::kSpec || recipe == KvRecipe::kVllm) {
    y = x / scale;  // IEEE binary32 division, RNE
  } else {
    throw Error(ErrorCode::kInvalidArgument, "unknown recipe " + std::to_string(static_cast<int>(recipe)));
  }
  if (fp8 == KvDtype::kE4M3) return cvt_e4m3(y);
  if (fp8 == KvDtype::kE5M2) return cvt_e5m2(y);
  throw Error(ErrorCode::kInvalidArgument, to_string(fp8) + " is not an FP8 dtype");
}

float dequantize_kv(KvDtype fp8, uint8_t q, float scale) {
  if (fp8 == KvDtype::kE4M3) return e4m3_to_float(q) * scale;
  if (fp8 == KvDtype::kE5M2) return e5m2_to_float(q) * scale;
  throw Error(ErrorCode::kInvalidArgument, to_string(fp8) + " is not an FP8 dtype");
}

uint8_t nvfp4_group_scale(const float* x, float g) {
  float amax = 0.0f;
  for (int i = 0; i < 16; ++i)
    if (!std::isnan(x[i])) amax = std::max(amax, std::fabs(x[i]));
  if (amax == 0.0f) return 0x00;
  const float six_g = 6.0f * g;  // rounded once, before the division (FlashInfer's 6.0f * g)
  return cvt_e4m3(amax / six_g);
}

float nvfp4_group_inv(const float* x, uint8_t sf, float g) {
  float amax = 0.0f;
  for (int i = 0; i < 16; ++i)
    if (!std::isnan(x[i])) amax = std::max(amax, std::fabs(x[i]));
  const float s = e4m3_to_float(sf);
  if (!(amax > 0.0f) || !(s > 0.0f)) return 0.0f;
  const float sg = s * g;
  return 1.0f / sg;
}

uint8_t nvfp4_code(float x, float inv) {
  const float v = x * inv;
  // The threshold ladder of FlashInfer's encoder is round-to-nearest-even onto the e2m1
  // grid, saturating at 6; only a NaN differs from cvt_e2m1 (it gives 0, not 6).
  if (std::isnan(v)) return 0x0;
  return cvt_e2m1(v);
}

float dequantize_nvfp4(uint8_t code, uint8_t sf, float g) {
  const float qs = e2m1_to_float(code) * e4m3_to_float(sf);  // exact: 2 x 4 significant bits
  return qs * g;
}

}  // namespace kvcheck::ref
