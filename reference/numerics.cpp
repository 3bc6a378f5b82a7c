// Plain scalar numerics of SPEC §4. Conversions build the OCP value tables and pick
// the nearest entry by explicit comparison in double (exact for every float), ties to
// the even code. Obviously right beats fast here: the one shortcut, nearest_even_code's
// locating the entry below from the value's binade instead of a search, is checked to
// bracket the value on every call.
#include "reference/numerics.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "impl/error.h"

namespace kvcheck::ref {
namespace {

// Non-negative finite E4M3 values, code 0x00..0x7E (0x7F is NaN). OCP MX v1.0 §5.3:
// bias 7; exponent field 0 is subnormal m/8 * 2^-6.
std::array<double, 127> make_e4m3_table() {
  std::array<double, 127> t{};
  for (int code = 0; code < 127; ++code) {
    const int e = code >> 3, m = code & 7;
    t[code] = e == 0 ? std::ldexp(m / 8.0, -6) : std::ldexp(1.0 + m / 8.0, e - 7);
  }
  return t;
}
const std::array<double, 127> kE4M3 = make_e4m3_table();  // kE4M3[126] == 448

// Non-negative E2M1 values, code 0..7 (OCP MX v1.0 §5.3.3): no NaN, no Inf.
constexpr std::array<double, 8> kE2M1 = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};

float bits_to_float(uint32_t b) { return std::bit_cast<float>(b); }

}  // namespace

int nearest_even_code(std::span<const double> table, double mag, int mbits, int emin) {
  // lo = the largest index with table[lo] <= mag: mag's binade e (emin for the
  // subnormals), then the whole steps of its spacing 2^(e - mbits) in mag (exact).
  if (table.size() <= (size_t{1} << mbits)) throw std::logic_error("nearest_even_code: no normal entry in the table");
  const int e = mag < table[size_t{1} << mbits] ? emin : std::ilogb(mag);  // that entry: 2^emin
  const int lo = ((e - emin) << mbits) + static_cast<int>(std::floor(std::ldexp(mag, mbits - e)));
  const int n = static_cast<int>(table.size());
  if (lo < 0 || lo >= n || !(table[static_cast<size_t>(lo)] <= mag) ||
      (lo + 1 < n && !(mag < table[static_cast<size_t>(lo) + 1])))
    throw std::logic_error("nearest_even_code: " + std::to_string(mag) + " is not bracketed by entry " +
                           std::to_string(lo));
  if (table[static_cast<size_t>(lo)] == mag || lo + 1 == n) return lo;
  const double mid = (table[static_cast<size_t>(lo)] + table[static_cast<size_t>(lo) + 1]) / 2;  // exact: entries have few bits
  if (mag < mid) return lo;
  if (mag > mid) return lo + 1;
  return lo % 2 == 0 ? lo : lo + 1;  // a tie: the even index (= even code, since codes are indices)
}

float bf16_to_float(bf16_bits x) { return bits_to_float(uint32_t{x} << 16); }

bf16_bits float_to_bf16_rn(float x) {
  if (std::isnan(x)) return 0x7FFF;
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  // Magnitude codes: `down` truncates toward zero, `up` is the next magnitude (0x7F80
  // is +Inf, which IEEE rounding treats as the value 2^128 when choosing).
  const uint16_t down = static_cast<uint16_t>((bits & 0x7FFFFFFF) >> 16);
  if (down == 0x7F80) return static_cast<bf16_bits>(sign | down);  // ±Inf
  const uint16_t up = static_cast<uint16_t>(down + 1);
  const double mag = std::fabs(static_cast<double>(x));
  const double v_down = std::fabs(static_cast<double>(bf16_to_float(down)));
  const double v_up = up == 0x7F80 ? std::ldexp(1.0, 128)
                                   : static_cast<double>(bf16_to_float(up));
  const double mid = (v_down + v_up) / 2;  // exact in double
  uint16_t pick;
  if (mag < mid) pick = down;
  else if (mag > mid) pick = up;
  else pick = (down % 2 == 0) ? down : up;
  return static_cast<bf16_bits>(sign | pick);
}

uint8_t cvt_e4m3(float x) {
  if (std::isnan(x)) return 0x7F;
  const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  const double mag = std::fabs(static_cast<double>(x));
  if (mag >= 448.0) return static_cast<uint8_t>(sign | 0x7E);  // SATFINITE, Inf too
  return static_cast<uint8_t>(sign | nearest_even_code(kE4M3, mag, 3, -6));
}

uint8_t cvt_e2m1(float x) {
  if (std::isnan(x)) return 0x7;
  const uint8_t sign = std::signbit(x) ? 0x8 : 0x0;
  const double mag = std::fabs(static_cast<double>(x));
  if (mag >= 6.0) return static_cast<uint8_t>(sign | 0x7);
  return static_cast<uint8_t>(sign | nearest_even_code(kE2M1, mag, 1, 0));
}

float e4m3_to_float(uint8_t code) {
  const int mag = code & 0x7F;
  if (mag == 0x7F) return std::numeric_limits<float>::quiet_NaN();
  const float v = static_cast<float>(kE4M3[mag]);
  return (code & 0x80) ? -v : v;
}

float e2m1_to_float(uint8_t nibble) {
  const float v = static_cast<float>(kE2M1[nibble & 0x7]);
  return (nibble & 0x8) ? -v : v;
}

float e8m0_to_float(uint8_t byte) {
  if (byte == 0xFF) return std::numeric_limits<float>::quiet_NaN();
  return std::ldexp(1.0f, int{byte} - 127);  // byte 0 -> 2^-127, a subnormal, exact
}

int ceil_log2(float s) {
  if (!(s > 0.0f))
    throw Error(ErrorCode::kInvalidArgument,
                "ceil_log2 needs s > 0, got " + std::to_string(s));
  if (std::isinf(s)) return 128;
  // s = m * 2^e with m in [0.5, 1): 2^(e-1) < s unless m == 0.5 (s a power of two).
  int e = 0;
  const float m = std::frexp(s, &e);
  return m == 0.5f ? e - 1 : e;
}

float group_amax(std::span<const float> x) {
  float amax = 0.0f;
  for (float v : x)
    if (!std::isnan(v)) amax = std::max(amax, std::fabs(v));
  return amax;
}

void quantize_group(const KVCacheFormat& format, std::span<const bf16_bits> x,
                    std::span<uint8_t> codes, std::span<uint8_t> scale) {
  if (!format.is_quantized())
    throw Error(ErrorCode::kInvalidFormat,
                "quantize_group: format '" + format.name + "' is not quantized");
  const size_t group = static_cast<size_t>(format.elements_per_sf);
  const size_t scale_bytes = static_cast<size_t>(format.scale_width());
  if (x.size() != group || codes.size() != group || scale.size() != scale_bytes)
    throw Error(ErrorCode::kInvalidArgument,
                "quantize_group: need " + std::to_string(group) + " elements and " +
                    std::to_string(scale_bytes) + " scale bytes, got x " +
                    std::to_string(x.size()) + ", codes " + std::to_string(codes.size()) +
                    ", scale " + std::to_string(scale.size()));
  std::vector<float> xf(group);
  for (size_t i = 0; i < group; ++i) xf[i] = bf16_to_float(x[i]);
  const float amax = group_amax(xf);
  const bool e4m3_data = format.quantized_dtype == QuantizedDtype::kE4M3;

  switch (format.sf_format) {
    case SfFormat::kUE8M0: {  // §4.1 (e4m3) and §4.2 (e2m1)
      const float a = std::max(amax, kFp8AmaxMargin);
      const int k = std::clamp(ceil_log2(a * (e4m3_data ? kInv448 : kInv6)), -126, 126);
      scale[0] = static_cast<uint8_t>(k + 127);
      const float inv_pow = std::ldexp(1.0f, -k);  // exact 2^-k, a normal float
      for (size_t i = 0; i < group; ++i)
        codes[i] = e4m3_data ? cvt_e4m3(xf[i] * inv_pow) : cvt_e2m1(xf[i] * inv_pow);
      return;
    }
    case SfFormat::kE4M3: {  // §4.3
      const float floor_amax = std::ldexp(1.0f, -9) * 6.0f;
      const uint8_t sf = cvt_e4m3(std::min(std::max(amax, floor_amax) * kInv6, 448.0f));
      const float inv = 1.0f / e4m3_to_float(sf);
      scale[0] = sf;
      for (size_t i = 0; i < group; ++i)
        codes[i] = e4m3_data ? cvt_e4m3(xf[i] * inv) : cvt_e2m1(xf[i] * inv);
      return;
    }
    case SfFormat::kE4M3RoundUp: {  // §4.9 (vLLM nvfp4_ds_mla): floor after an IEEE division, then up
      const float t = std::max(amax / 6.0f, std::ldexp(1.0f, -9));
      uint8_t sf = cvt_e4m3(t);  // 0x01 .. 0x7E: t >= 2^-9 > 0, and t > 448 saturates
      if (e4m3_to_float(sf) < t && sf < 0x7E) ++sf;  // the next e4m3 value up: never below t
      const float inv = 1.0f / e4m3_to_float(sf);
      scale[0] = sf;
      for (size_t i = 0; i < group; ++i) codes[i] = cvt_e2m1(xf[i] * inv);
      return;
    }
    case SfFormat::kFP32: {  // §4.4
      const float sf = std::max(amax, kFp8AmaxMargin) * kInv448;
      const float inv = 1.0f / sf;
      const uint32_t bits = std::bit_cast<uint32_t>(sf);
      for (size_t b = 0; b < 4; ++b) scale[b] = static_cast<uint8_t>(bits >> (8 * b));
      for (size_t i = 0; i < group; ++i)
        codes[i] = e4m3_data ? cvt_e4m3(xf[i] * inv) : cvt_e2m1(xf[i] * inv);
      return;
    }
    case SfFormat::kFP32Pow2:              // §4.6 (fp8_ds_mla): the floor after the division
    case SfFormat::kFP32Pow2FloorFirst: {  // §4.7 (the indexer's ue8m0 option): before it
      const float t = format.sf_format == SfFormat::kFP32Pow2 ? std::max(amax / 448.0f, kFp8AmaxMargin)
                                                              : std::max(amax, kFp8AmaxMargin) / 448.0f;  // IEEE
      const int k = ceil_log2(t);  // -13 .. 120 for finite bf16 input, 128 for Inf
      const float sf = k == 128 ? std::numeric_limits<float>::infinity() : std::ldexp(1.0f, k);
      const uint32_t bits = std::bit_cast<uint32_t>(sf);
      for (size_t b = 0; b < 4; ++b) scale[b] = static_cast<uint8_t>(bits >> (8 * b));
      for (size_t i = 0; i < group; ++i) codes[i] = cvt_e4m3(xf[i] / sf);  // exact scaling
      return;
    }
    case SfFormat::kUE8M0FloorAfter: {  // §4.8 (FlashMLA MODEL1): §4.6's rule, the exponent as a byte
      const int k = ceil_log2(std::max(amax / 448.0f, kFp8AmaxMargin));  // IEEE division, then the floor
      scale[0] = static_cast<uint8_t>(k + 127);  // 114 .. 247, or 255 (an Inf amax, k = 128)
      const float sf = k == 128 ? std::numeric_limits<float>::infinity() : std::ldexp(1.0f, k);
      for (size_t i = 0; i < group; ++i) codes[i] = cvt_e4m3(xf[i] / sf);  // exact scaling
      return;
    }
    case SfFormat::kNone: break;
  }
  throw Error(ErrorCode::kInvalidFormat,
              "quantize_group: format '" + format.name + "' has no scale format");
}

float scale_value(const KVCacheFormat& format, std::span<const uint8_t> scale) {
  switch (format.sf_format) {
    case SfFormat::kUE8M0:
    case SfFormat::kUE8M0FloorAfter: return e8m0_to_float(scale[0]);
    case SfFormat::kE4M3:
    case SfFormat::kE4M3RoundUp: return e4m3_to_float(scale[0]);
    case SfFormat::kFP32:
    case SfFormat::kFP32Pow2:
    case SfFormat::kFP32Pow2FloorFirst: {
      uint32_t bits = 0;
      for (size_t b = 0; b < 4; ++b) bits |= uint32_t{scale[b]} << (8 * b);
      return bits_to_float(bits);
    }
    case SfFormat::kNone: break;
  }
  throw Error(ErrorCode::kInvalidFormat,
              "scale_value: format '" + format.name + "' has no scale format");
}

bf16_bits dequantize(const KVCacheFormat& format, uint8_t code, std::span<const uint8_t> scale) {
  const size_t scale_bytes = static_cast<size_t>(format.scale_width());
  if (scale.size() != scale_bytes)
    throw Error(ErrorCode::kInvalidArgument,
                "dequantize: need " + std::to_string(scale_bytes) + " scale bytes, got " +
                    std::to_string(scale.size()));
  const float s = scale_value(format, scale);
  const float q = format.quantized_dtype == QuantizedDtype::kE4M3 ? e4m3_to_float(code)
                                                                  : e2m1_to_float(code);
  return float_to_bf16_rn(q * s);
}

}  // namespace kvcheck::ref
