// The numerics operation's one check (SPEC §4): the reference conversions against
// NVIDIA's host conversions (cuda_fp8.h, cuda_fp4.h, cuda_bf16.h), and reference
// quantize_group / dequantize against the SPEC §4.1-4.4 formulas written out here with
// those conversions. See numerics_check.h for the invariants.
#include "properties/ops/numerics/numerics_check.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <cstdio>

#include "reference/numerics.h"

#ifdef KVCHECK_HAVE_CUDA_HEADERS
#include <cuda_bf16.h>
#include <cuda_fp4.h>
#include <cuda_fp8.h>
#endif

namespace kvcheck::props {
namespace {

std::string hex(uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%08X", v);
  return b;
}

bool same_float(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
}

// Smallest k with 2^k >= s (s > 0 finite), by exact double arithmetic; +Inf -> 128.
int oracle_ceil_log2(float s) {
  if (std::isinf(s)) return 128;
  const int k = std::ilogb(static_cast<double>(s));  // floor(log2 s), exact for subnormals
  return std::ldexp(1.0, k) == static_cast<double>(s) ? k : k + 1;
}

#ifdef KVCHECK_HAVE_CUDA_HEADERS
uint8_t nv_e4m3(float x) { return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3); }
uint8_t nv_e2m1(float x) {
  return static_cast<uint8_t>(__nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest) & 0xF);
}
float nv_e4m3_value(uint8_t c) {
  __nv_fp8_e4m3 v;
  v.__x = c;
  return static_cast<float>(v);
}
float nv_e2m1_value(uint8_t c) {
  __nv_fp4_e2m1 v;
  v.__x = static_cast<__nv_fp4_storage_t>(c & 0xF);
  return static_cast<float>(v);
}
uint16_t nv_bf16(float x) {
  const __nv_bfloat16 h = __float2bfloat16_rn(x);
  return std::bit_cast<uint16_t>(h);
}

std::string check_float(uint32_t bits) {
  const float x = std::bit_cast<float>(bits);
  std::string out;
  const std::string at = " of " + hex(bits) + " (" + std::to_string(x) + ")";
  if (ref::cvt_e4m3(x) != nv_e4m3(x))
    out += "cvt_e4m3" + at + ": reference " + hex(ref::cvt_e4m3(x)) + ", NVIDIA " + hex(nv_e4m3(x)) + "\n";
  if (ref::cvt_e2m1(x) != nv_e2m1(x))
    out += "cvt_e2m1" + at + ": reference " + hex(ref::cvt_e2m1(x)) + ", NVIDIA " + hex(nv_e2m1(x)) + "\n";
  // SPEC §4: any NaN -> 0x7FFF (NVIDIA's host path gives the same; pinned explicitly).
  const uint16_t want_bf16 = std::isnan(x) ? 0x7FFF : nv_bf16(x);
  if (ref::float_to_bf16_rn(x) != want_bf16)
    out += "float_to_bf16_rn" + at + ": reference " + hex(ref::float_to_bf16_rn(x)) + ", NVIDIA " +
           hex(want_bf16) + "\n";
  const uint8_t code = static_cast<uint8_t>(bits);
  if (!same_float(ref::e4m3_to_float(code), nv_e4m3_value(code)))
    out += "e4m3_to_float(" + hex(code) + "): reference " + std::to_string(ref::e4m3_to_float(code)) +
           ", NVIDIA " + std::to_string(nv_e4m3_value(code)) + "\n";
  if (!same_float(ref::e2m1_to_float(code & 0xF), nv_e2m1_value(code)))
    out += "e2m1_to_float(" + hex(code & 0xF) + ") differs from NVIDIA\n";
  if (x > 0.0f && ref::ceil_log2(x) != oracle_ceil_log2(x))
    out += "ceil_log2" + at + ": reference " + std::to_string(ref::ceil_log2(x)) + ", want " +
           std::to_string(oracle_ceil_log2(x)) + "\n";
  return out;
}
#else
// No NVIDIA headers: the group formulas below use the reference's conversions.
uint8_t nv_e4m3(float x) { return ref::cvt_e4m3(x); }
uint8_t nv_e2m1(float x) { return ref::cvt_e2m1(x); }
float nv_e4m3_value(uint8_t c) { return ref::e4m3_to_float(c); }
float nv_e2m1_value(uint8_t c) { return ref::e2m1_to_float(c); }
uint16_t nv_bf16(float x) { return ref::float_to_bf16_rn(x); }

std::string check_float(uint32_t bits) {
  const float x = std::bit_cast<float>(bits);
  const uint8_t c = static_cast<uint8_t>(bits);
  std::string out;
  if ((c & 0x7F) != 0x7F && ref::cvt_e4m3(ref::e4m3_to_float(c)) != c)
    out += "cvt_e4m3(e4m3_to_float(" + hex(c) + ")) is not the code\n";
  if (ref::cvt_e2m1(ref::e2m1_to_float(c & 0xF)) != (c & 0xF))
    out += "cvt_e2m1(e2m1_to_float(" + hex(c & 0xF) + ")) is not the code\n";
  if (x > 0.0f && ref::ceil_log2(x) != oracle_ceil_log2(x))
    out += "ceil_log2 of " + hex(bits) + ": reference " + std::to_string(ref::ceil_log2(x)) + ", want " +
           std::to_string(oracle_ceil_log2(x)) + "\n";
  return out;
}
#endif

// SPEC §4.1-4.4, §4.6-§4.9: expected codes (one per element) and scale bytes.
void oracle_group(const KVCacheFormat& f, const std::vector<bf16_bits>& g, std::vector<uint8_t>& codes,
                  std::vector<uint8_t>& scale) {
  const float inv448 = std::bit_cast<float>(0x3B124925u), inv6 = std::bit_cast<float>(0x3E2AAAABu);
  const bool e4m3 = f.quantized_dtype == QuantizedDtype::kE4M3;
  auto cvt = [&](float v) { return e4m3 ? nv_e4m3(v) : nv_e2m1(v); };
  std::vector<float> x(g.size());
  float amax = 0.0f;
  for (size_t i = 0; i < g.size(); ++i) {
    x[i] = std::bit_cast<float>(uint32_t{g[i]} << 16);
    if (!std::isnan(x[i])) amax = std::fmax(amax, std::fabs(x[i]));
  }
  codes.resize(g.size());
  if (f.sf_format == SfFormat::kUE8M0) {
    const float a = std::fmax(amax, 1e-4f);
    const int k = std::clamp(oracle_ceil_log2(a * (e4m3 ? inv448 : inv6)), -126, 126);
    scale = {static_cast<uint8_t>(k + 127)};
    for (size_t i = 0; i < x.size(); ++i) codes[i] = cvt(x[i] * std::ldexp(1.0f, -k));
  } else if (f.sf_format == SfFormat::kE4M3) {
    const uint8_t sf = nv_e4m3(std::fmin(std::fmax(amax, std::ldexp(1.0f, -9) * 6.0f) * inv6, 448.0f));
    const float inv = 1.0f / nv_e4m3_value(sf);
    scale = {sf};
    for (size_t i = 0; i < x.size(); ++i) codes[i] = cvt(x[i] * inv);
  } else if (f.sf_format == SfFormat::kE4M3RoundUp) {  // §4.9: the smallest e4m3 value >= t, at most 448
    const float t = std::fmax(amax / 6.0f, std::ldexp(1.0f, -9));
    uint8_t sf = 0x7E;
    for (uint8_t c = 0x01; c < 0x7E; ++c)
      if (nv_e4m3_value(c) >= t) {
        sf = c;
        break;
      }
    const float inv = 1.0f / nv_e4m3_value(sf);
    scale = {sf};
    for (size_t i = 0; i < x.size(); ++i) codes[i] = cvt(x[i] * inv);
  } else if (f.sf_format == SfFormat::kUE8M0FloorAfter) {  // §4.8: §4.6's t, the exponent as a byte
    const float t = std::fmax(amax / 448.0f, 1e-4f);
    const int k = std::isinf(t) ? 128 : static_cast<int>(std::ceil(std::log2(double{t})));
    const float sf = std::isinf(t) ? t : std::ldexp(1.0f, k);
    scale = {static_cast<uint8_t>(k + 127)};
    for (size_t i = 0; i < x.size(); ++i) codes[i] = cvt(x[i] / sf);
  } else if (is_fp32_pow2(f.sf_format)) {  // §4.6 / §4.7: 2^ceil(log2(t)), the floor after / before
    const float t = f.sf_format == SfFormat::kFP32Pow2 ? std::fmax(amax / 448.0f, 1e-4f) : std::fmax(amax, 1e-4f) / 448.0f;
    // log2 in double: a float's distance from a power of two (>= 2^-24 relative) moves it
    // by >= 8e-8, far above double's error, so ceil sees the exact side.
    const float sf = std::isinf(t) ? t : std::ldexp(1.0f, static_cast<int>(std::ceil(std::log2(double{t}))));
    const uint32_t b = std::bit_cast<uint32_t>(sf);
    scale = {static_cast<uint8_t>(b), static_cast<uint8_t>(b >> 8), static_cast<uint8_t>(b >> 16),
             static_cast<uint8_t>(b >> 24)};
    for (size_t i = 0; i < x.size(); ++i) codes[i] = cvt(x[i] / sf);
  } else {
    const float sf = std::fmax(amax, 1e-4f) * inv448;
    const float inv = 1.0f / sf;
    const uint32_t b = std::bit_cast<uint32_t>(sf);
    scale = {static_cast<uint8_t>(b), static_cast<uint8_t>(b >> 8), static_cast<uint8_t>(b >> 16),
             static_cast<uint8_t>(b >> 24)};
    for (size_t i = 0; i < x.size(); ++i) codes[i] = cvt(x[i] * inv);
  }
}

std::string check_group(const NumericsScenario& s) {
  const KVCacheFormat& f = s.format;
  std::vector<uint8_t> want_codes, want_scale;
  oracle_group(f, s.group, want_codes, want_scale);
  std::vector<uint8_t> codes(s.group.size()), scale(want_scale.size());
  const Outcome o = capture([&] { ref::quantize_group(f, s.group, codes, scale); });
  if (o.code) return "quantize_group threw " + o.message + "\n";
  if (scale != want_scale)
    return "quantize_group scale of " + f.name + ": reference " + hex(scale[0]) + "..., SPEC formula " +
           hex(want_scale[0]) + "...\n";
  for (size_t i = 0; i < codes.size(); ++i)
    if (codes[i] != want_codes[i])
      return "quantize_group " + f.name + " element " + std::to_string(i) + " (bf16 " + hex(s.group[i]) +
             "): reference code " + hex(codes[i]) + ", SPEC formula " + hex(want_codes[i]) + "\n";
  float sv = 0;
  if (f.sf_format == SfFormat::kUE8M0 || f.sf_format == SfFormat::kUE8M0FloorAfter)  // e8m0: 0xFF is NaN
    sv = scale[0] == 0xFF ? std::numeric_limits<float>::quiet_NaN() : std::ldexp(1.0f, int{scale[0]} - 127);
  else if (is_e4m3_sf(f.sf_format)) sv = nv_e4m3_value(scale[0]);
  else sv = std::bit_cast<float>(uint32_t{scale[0]} | uint32_t{scale[1]} << 8 | uint32_t{scale[2]} << 16 |
                                 uint32_t{scale[3]} << 24);
  const bool e4m3 = f.quantized_dtype == QuantizedDtype::kE4M3;
  for (size_t i = 0; i < codes.size(); ++i) {
    const float q = e4m3 ? nv_e4m3_value(codes[i]) : nv_e2m1_value(codes[i]);
    const uint16_t want = std::isnan(q * sv) ? 0x7FFF : nv_bf16(q * sv);
    const uint16_t got = ref::dequantize(f, codes[i], scale);
    if (got != want)
      return "dequantize " + f.name + " code " + hex(codes[i]) + ": reference " + hex(got) + ", SPEC formula " +
             hex(want) + "\n";
  }
  return "";
}

}  // namespace

bool numerics_oracle_is_nvidia() {
#ifdef KVCHECK_HAVE_CUDA_HEADERS
  return true;
#else
  return false;
#endif
}

Verdict check_numerics(const NumericsScenario& s, unsigned invariants) {
  std::string fail;
  if ((invariants & kNumericsConversions) != 0)
    for (uint32_t bits : s.floats) fail += check_float(bits);
  if ((invariants & kNumericsGroupMatchesSpec) != 0) fail += check_group(s);
  if (!fail.empty())
    fail = std::string("op=numerics (reference vs ") +
           (numerics_oracle_is_nvidia() ? "NVIDIA host conversions" : "itself: no cuda_fp8.h") + ")\n" + fail;
  return {fail, ""};
}

}  // namespace kvcheck::props
