#include "impl/format.h"

#include <numeric>

#include "impl/error.h"

namespace kvcheck {
namespace {

[[noreturn]] void invalid(const KVCacheFormat& f, const std::string& why) {
  throw Error(ErrorCode::kInvalidFormat,
              "format '" + f.name + "': " + why + " (SPEC §2)");
}

KVCacheFormat quantized(std::string name, QuantizedDtype q, int32_t elements,
                        int32_t per_sf, SfFormat sf, bool do_cast) {
  KVCacheFormat f;
  f.name = std::move(name);
  f.quantized_dtype = q;
  f.elements = elements;
  f.elements_per_sf = per_sf;
  f.sf_format = sf;
  f.do_cast = do_cast;
  f.token_interleaved = do_cast;
  return f;
}

}  // namespace

void KVCacheFormat::validate() const {
  if (elements <= 0) invalid(*this, "elements must be > 0, got " + std::to_string(elements));
  if (bf16_tail_elements < 0)
    invalid(*this, "bf16_tail_elements must be >= 0");
  if (is_quantized()) {
    if (elements_per_sf <= 0 || sf_format == SfFormat::kNone)
      invalid(*this, "quantized data needs elements_per_sf > 0 and a scale format");
    if (bf16_tail_elements != 0 && !do_cast)
      invalid(*this, "a BF16 tail needs do_cast (a main/SWA record; index loads copy bytes)");
    if (bf16_tail_elements % 8 != 0 || bf16_tail_elements >= elements)
      invalid(*this, "bf16_tail_elements must be a multiple of 8 below elements, got " +
                         std::to_string(bf16_tail_elements));
    if (quantized_elements() % elements_per_sf != 0)
      invalid(*this, "elements_per_sf " + std::to_string(elements_per_sf) +
                         " does not divide the quantised elements " + std::to_string(quantized_elements()));
    if (e4m3_tail && bf16_tail_elements == 0) invalid(*this, "an e4m3 tail needs tail elements");
    if (scales_last && (!do_cast || !token_interleaved || num_scales() % 4 != 0))
      invalid(*this, "scales_last (transposed scales after the tail) needs an interleaved do_cast record with a "
                     "multiple of 4 scales, got " + std::to_string(num_scales()));
    if (sf_format == SfFormat::kE4M3RoundUp && quantized_dtype != QuantizedDtype::kE2M1)
      invalid(*this, "e4m3_round_up scales need e2m1 data (SPEC §4.9)");
    if ((is_fp32_pow2(sf_format) || sf_format == SfFormat::kUE8M0FloorAfter) &&
        quantized_dtype != QuantizedDtype::kE4M3)
      invalid(*this, to_string(sf_format) + " scales need e4m3 data (SPEC §4.6-§4.8)");
    if (quantized_dtype == QuantizedDtype::kE2M1 && elements % 2 != 0)
      invalid(*this, "e2m1 needs an even element count (two per byte)");
    if (is_index() && (sf_format == SfFormat::kUE8M0 || sf_format == SfFormat::kUE8M0FloorAfter) &&
        sf_bytes() % 4 != 0)
      invalid(*this, "index ue8m0 scales load as int32: sf_bytes must be a multiple of 4");
  } else {
    if (elements_per_sf != 0 || sf_format != SfFormat::kNone)
      invalid(*this, "BF16 format must have no group size and no scale format");
    if (elements % 8 != 0 || elements > 4096)
      invalid(*this, "BF16 elements must be a multiple of 8 and <= 4096, got " +
                         std::to_string(elements));
    if (token_interleaved) invalid(*this, "BF16 format is not token-interleaved");
    if (bf16_tail_elements != 0 || e4m3_tail || scales_last) invalid(*this, "BF16 format has no separate tail");
  }
  if (do_cast && !is_quantized()) invalid(*this, "do_cast needs quantized data");
}

int32_t KVCacheFormat::bits_per_element() const {
  switch (quantized_dtype) {
    case QuantizedDtype::kE4M3: return 8;
    case QuantizedDtype::kE2M1: return 4;
    case QuantizedDtype::kNone: return 16;
  }
  return 0;
}

int64_t KVCacheFormat::quantized_bytes() const {
  return int64_t{quantized_elements()} * bits_per_element() / 8;
}

int64_t KVCacheFormat::num_scales() const {
  if (!is_quantized()) return 0;
  return (int64_t{quantized_elements()} + elements_per_sf - 1) / elements_per_sf;
}

int64_t KVCacheFormat::scale_width() const { return sf_width(sf_format); }

int64_t KVCacheFormat::sf_bytes() const { return num_scales() * scale_width(); }

int64_t KVCacheFormat::sf_token_bytes() const {
  return do_cast && !token_interleaved ? (sf_bytes() + 7) / 8 * 8 : sf_bytes();
}

int64_t KVCacheFormat::bytes_per_token() const { return quantized_bytes() + sf_token_bytes() + tail_bytes(); }

int64_t KVCacheFormat::token_alignment() const { return std::gcd<int64_t>(32, bytes_per_token()); }

int64_t KVCacheFormat::load_row_bytes() const {
  return is_index() ? quantized_bytes() : int64_t{2} * elements;
}

int64_t KVCacheFormat::load_scale_row_bytes() const { return is_index() ? sf_bytes() : 0; }

KVCacheFormat KVCacheFormat::V41() {
  return quantized("V41", QuantizedDtype::kE4M3, 512, 32, SfFormat::kUE8M0, true);
}
KVCacheFormat KVCacheFormat::V41_FP4() {
  return quantized("V41_FP4", QuantizedDtype::kE2M1, 512, 16, SfFormat::kE4M3, true);
}
KVCacheFormat KVCacheFormat::FP4_INDEX() {
  return quantized("FP4_INDEX", QuantizedDtype::kE2M1, 128, 32, SfFormat::kUE8M0, false);
}
KVCacheFormat KVCacheFormat::FP8_FP32SF_INDEX() {
  return quantized("FP8_FP32SF_INDEX", QuantizedDtype::kE4M3, 128, 128, SfFormat::kFP32, false);
}
KVCacheFormat KVCacheFormat::MXFP8_INDEX() {
  return quantized("MXFP8_INDEX", QuantizedDtype::kE4M3, 128, 32, SfFormat::kUE8M0, false);
}
KVCacheFormat KVCacheFormat::FP8_DS_MLA() {
  KVCacheFormat f = quantized("FP8_DS_MLA", QuantizedDtype::kE4M3, 576, 128, SfFormat::kFP32Pow2, true);
  f.bf16_tail_elements = 64;
  return f;
}
KVCacheFormat KVCacheFormat::FP8_POW2SF_INDEX() {
  return quantized("FP8_POW2SF_INDEX", QuantizedDtype::kE4M3, 128, 128, SfFormat::kFP32Pow2FloorFirst, false);
}
KVCacheFormat KVCacheFormat::MODEL1() {
  KVCacheFormat f = quantized("MODEL1", QuantizedDtype::kE4M3, 512, 64, SfFormat::kUE8M0FloorAfter, true);
  f.token_interleaved = false;
  f.bf16_tail_elements = 64;
  return f;
}
KVCacheFormat KVCacheFormat::NVFP4_DS_MLA() {
  KVCacheFormat f = quantized("NVFP4_DS_MLA", QuantizedDtype::kE2M1, 576, 16, SfFormat::kE4M3RoundUp, true);
  f.bf16_tail_elements = 64;
  f.e4m3_tail = true;
  f.scales_last = true;
  return f;
}
KVCacheFormat KVCacheFormat::BF16(int32_t elements) {
  KVCacheFormat f;
  f.name = "BF16(" + std::to_string(elements) + ")";
  f.elements = elements;
  f.validate();
  return f;
}

std::vector<KVCacheFormat> supported_formats() {
  return {KVCacheFormat::V41(),         KVCacheFormat::V41_FP4(),
          KVCacheFormat::FP4_INDEX(),   KVCacheFormat::FP8_FP32SF_INDEX(),
          KVCacheFormat::MXFP8_INDEX(), KVCacheFormat::FP8_DS_MLA(),
          KVCacheFormat::FP8_POW2SF_INDEX(), KVCacheFormat::MODEL1(),
          KVCacheFormat::NVFP4_DS_MLA(),     KVCacheFormat::BF16(512)};
}

std::string quantized_format_names() {
  std::string out;
  for (const auto& f : supported_formats())
    if (f.is_quantized()) out += (out.empty() ? "" : ", ") + f.name;
  return out;
}

KVCacheFormat format_by_name(const std::string& name) {
  for (const auto& f : supported_formats())
    if (f.name == name) return f;
  if (name.rfind("BF16(", 0) == 0 && name.size() > 6 && name.back() == ')') {
    const std::string digits = name.substr(5, name.size() - 6);
    if (!digits.empty() && digits.size() <= 5 &&
        digits.find_first_not_of("0123456789") == std::string::npos)
      return KVCacheFormat::BF16(std::stoi(digits));
  }
  throw Error(ErrorCode::kUnknownFormat,
              "no format named '" + name + "'; known: " + quantized_format_names() + ", BF16(E)");
}

std::string to_string(QuantizedDtype q) {
  switch (q) {
    case QuantizedDtype::kNone: return "bf16";
    case QuantizedDtype::kE4M3: return "e4m3";
    case QuantizedDtype::kE2M1: return "e2m1";
  }
  return "?";
}

std::string to_string(SfFormat s) {
  switch (s) {
    case SfFormat::kNone: return "none";
    case SfFormat::kUE8M0: return "ue8m0";
    case SfFormat::kE4M3: return "e4m3";
    case SfFormat::kFP32: return "fp32";
    case SfFormat::kFP32Pow2: return "fp32_pow2";
    case SfFormat::kFP32Pow2FloorFirst: return "fp32_pow2_floor_first";
    case SfFormat::kUE8M0FloorAfter: return "ue8m0_floor_after";
    case SfFormat::kE4M3RoundUp: return "e4m3_round_up";
  }
  return "?";
}

KVCacheFormat resolve_format(CacheDtype dtype, std::span<const int64_t> shape,
                             std::optional<SfFormat> sf_format) {
  if (shape.empty())
    throw Error(ErrorCode::kUnknownFormat, "cannot resolve a format from an empty shape");
  const int64_t last = shape.back();
  if (dtype == CacheDtype::kBF16) {
    if (last <= 0 || last > 4096 || last % 8 != 0)
      throw Error(ErrorCode::kUnknownFormat,
                  "bf16 cache with " + std::to_string(last) +
                      " elements per token: BF16(E) needs E a multiple of 8, <= 4096");
    return KVCacheFormat::BF16(static_cast<int32_t>(last));
  }
  std::vector<KVCacheFormat> matches;
  for (const auto& f : supported_formats())
    if (f.is_quantized() && f.bytes_per_token() == last &&
        (!sf_format || f.sf_format == *sf_format))
      matches.push_back(f);
  if (matches.size() == 1) return matches.front();
  if (matches.empty())
    throw Error(ErrorCode::kUnknownFormat,
                "no supported uint8 format has " + std::to_string(last) + " bytes per token" +
                    (sf_format ? " with scale format " + to_string(*sf_format) : std::string()));
  std::string names;
  for (const auto& f : matches) names += (names.empty() ? "" : " and ") + f.name;
  throw Error(ErrorCode::kAmbiguousFormat,
              std::to_string(last) + "-byte records match " + names +
                  "; pass the scale format to choose");
}

}  // namespace kvcheck
