// format target (SPEC §2, §3): validation of arbitrary format fields, the derived
// sizes recomputed here from the SPEC formulas, impl/layout offsets against
// reference/layout, and resolve_format against an oracle written from the table.
#include <fuzzer/FuzzedDataProvider.h>

#include <numeric>

#include "fuzzers/checks.h"
#include "fuzzers/decoders.h"
#include "impl/layout.h"
#include "reference/layout.h"

namespace kvcheck::fuzz {
namespace {

std::string check_sizes(const KVCacheFormat& f) {
  const int64_t bits = f.quantized_dtype == QuantizedDtype::kE4M3 ? 8
                       : f.quantized_dtype == QuantizedDtype::kE2M1 ? 4 : 16;
  const int64_t q = f.elements * bits / 8;
  const int64_t scales = f.is_quantized() ? (f.elements + f.elements_per_sf - 1) / f.elements_per_sf : 0;
  const int64_t sf = scales * (f.sf_format == SfFormat::kFP32 ? 4 : 1);
  std::string out;
  auto expect = [&](const char* what, int64_t got, int64_t want) {
    if (got != want)
      out += std::string(what) + ": got " + std::to_string(got) + ", SPEC §2 gives " +
             std::to_string(want) + "\n";
  };
  expect("quantized_bytes", f.quantized_bytes(), q);
  expect("num_scales", f.num_scales(), scales);
  expect("sf_bytes", f.sf_bytes(), sf);
  expect("bytes_per_token", f.bytes_per_token(), q + sf);
  expect("token_alignment", f.token_alignment(), std::gcd<int64_t>(32, q + sf));
  return out;
}

std::string check_layout(const FormatScenario& s) {
  const KVCacheFormat& f = s.format;
  const int64_t stride = block_stride_for(f, s.block_size);
  std::string out;
  auto expect = [&](const std::string& what, int64_t got, int64_t want) {
    if (got != want)
      out += what + ": impl " + std::to_string(got) + ", reference " + std::to_string(want) + "\n";
  };
  expect("block_stride", stride, ref::block_stride(f, s.block_size));
  if (stride % 32 != 0 || stride < int64_t{s.block_size} * f.bytes_per_token())
    out += "block_stride " + std::to_string(stride) + " not a multiple of 32 holding the records\n";
  if (f.name == "V41" && s.block_size == 64) expect("V41 block 64 stride (SPEC §3)", stride, 33792);
  if (f.name == "V41" && s.block_size == 133) expect("V41 block 133 stride (SPEC §3)", stride, 70752);
  const CacheLayout l{f, s.block + 1, s.block_size, stride};
  const std::string at = " at block " + std::to_string(s.block) + " token " + std::to_string(s.token);
  expect("data_offset" + at, l.data_offset(s.block, s.token),
         ref::data_offset(f, s.block_size, s.block, s.token));
  if (f.is_quantized())
    expect("scale_offset" + at, l.scale_offset(s.block, s.token),
           ref::scale_offset(f, s.block_size, s.block, s.token));
  return out;
}

// resolve_format oracle from the SPEC §2 table.
Outcome expected_resolve(const FormatScenario& s) {
  if (s.shape.empty()) return {ErrorCode::kUnknownFormat, "empty shape"};
  const int64_t last = s.shape.back();
  if (s.dtype == CacheDtype::kBF16) {
    if (last > 0 && last <= 4096 && last % 8 == 0) return {};
    return {ErrorCode::kUnknownFormat, ""};
  }
  int matches = 0;
  for (const auto& f : supported_formats())
    if (f.is_quantized() && f.bytes_per_token() == last &&
        (s.sf_choice == 0 || f.sf_format == static_cast<SfFormat>(s.sf_choice)))
      ++matches;
  if (matches == 1) return {};
  return {matches == 0 ? ErrorCode::kUnknownFormat : ErrorCode::kAmbiguousFormat, ""};
}

std::string check_resolve(const FormatScenario& s) {
  std::optional<SfFormat> sf;
  if (s.sf_choice) sf = static_cast<SfFormat>(s.sf_choice);
  KVCacheFormat got;
  const Outcome o = capture([&] { got = resolve_format(s.dtype, s.shape, sf); });
  const Outcome want = expected_resolve(s);
  if (o.code != want.code)
    return "resolve_format: " + show(o) + "; the SPEC §2 table says " +
           (want.code ? std::string(to_string(*want.code)) : std::string("a unique format")) + "\n";
  if (o.code == ErrorCode::kAmbiguousFormat &&
      (o.message.find("FP8_FP32SF_INDEX") == std::string::npos ||
       o.message.find("MXFP8_INDEX") == std::string::npos))
    return "resolve_format: ambiguity error does not name both candidates: " + o.message + "\n";
  if (o.code) return "";
  const int64_t last = s.shape.back();
  const int64_t per_token = s.dtype == CacheDtype::kBF16 ? got.elements : got.bytes_per_token();
  if (per_token != last || (s.dtype == CacheDtype::kUInt8 && sf && got.sf_format != *sf))
    return "resolve_format returned " + got.name + ", which does not match the shape\n";
  return "";
}

}  // namespace

CheckResult check_format(const uint8_t* data, size_t size, const Backend&) {
  FuzzedDataProvider fdp(data, size);
  const FormatScenario s = decode_format(fdp);
  CheckResult result{describe(s), "", ""};
  std::string& fail = result.failure;
  const Outcome valid = capture([&] { s.format.validate(); });
  if (valid.code && valid.code != ErrorCode::kInvalidFormat)
    fail += "validate threw " + valid.message + " (want invalid-format)\n";
  if (!valid.code) {
    fail += check_sizes(s.format);
    if (fail.empty()) fail += check_layout(s);
    for (const auto& f : supported_formats())
      if (f.name == s.format.name && !(f == s.format))
        fail += "format named " + f.name + " differs from the SPEC table entry\n";
  }
  fail += check_resolve(s);
  if (!fail.empty()) fail = "op=format (host)\n" + fail;
  return result;
}

}  // namespace kvcheck::fuzz
