// The format/layout operation's one check (SPEC §2, §3): validation of arbitrary format
// fields, the derived sizes recomputed from the SPEC formulas, impl/layout against
// reference/layout, and resolve_format against an oracle written from the table. See
// format_check.h for the invariants.
#include "properties/ops/format/format_check.h"

#include <algorithm>
#include <numeric>
#include <optional>

#include "impl/layout.h"
#include "reference/layout.h"

namespace kvcheck::props {
namespace {

std::string check_sizes(const KVCacheFormat& f) {
  const int64_t bits = f.quantized_dtype == QuantizedDtype::kE4M3 ? 8
                       : f.quantized_dtype == QuantizedDtype::kE2M1 ? 4 : 16;
  // SPEC §2: the last bf16_tail_elements are BF16 after the scales, the rest quantised.
  // An e4m3 tail is one byte an element (SPEC §2, NVFP4_DS_MLA).
  const int64_t quantised = f.elements - f.bf16_tail_elements,
                tail = (f.e4m3_tail ? 1 : 2) * int64_t{f.bf16_tail_elements};
  const int64_t q = quantised * bits / 8;
  const int64_t scales = f.is_quantized() ? (quantised + f.elements_per_sf - 1) / f.elements_per_sf : 0;
  const int64_t sf = scales * (f.sf_format == SfFormat::kFP32 || is_fp32_pow2(f.sf_format) ? 4
                               : f.is_quantized()                                                  ? 1
                                                                                                   : 0);
  // A block-planar do_cast record pads its scales to 8 bytes; its tail follows the data.
  const bool planar_cast = f.do_cast && !f.token_interleaved;
  const int64_t sf_record = planar_cast ? (sf + 7) / 8 * 8 : sf;
  std::string out;
  auto expect = [&](const char* what, int64_t got, int64_t want) {
    if (got != want)
      out += std::string(what) + ": got " + std::to_string(got) + ", SPEC §2 gives " + std::to_string(want) + "\n";
  };
  expect("quantized_bytes", f.quantized_bytes(), q);
  expect("num_scales", f.num_scales(), scales);
  expect("sf_bytes", f.sf_bytes(), sf);
  expect("sf_token_bytes", f.sf_token_bytes(), sf_record);
  expect("bytes_per_token", f.bytes_per_token(), q + sf_record + tail);
  // [data | scales | tail], or [data | tail | scales] when scales_last.
  expect("tail_offset", f.tail_offset(), f.token_interleaved && !f.scales_last ? q + sf : q);
  expect("token_alignment", f.token_alignment(), std::gcd<int64_t>(32, q + sf_record + tail));
  return out;
}

std::string check_offsets(const FormatScenario& s, const CacheLayout& l) {
  const KVCacheFormat& f = s.format;
  std::string out;
  auto expect = [&](const std::string& what, int64_t got, int64_t want) {
    if (got != want) out += what + ": impl " + std::to_string(got) + ", reference " + std::to_string(want) + "\n";
  };
  expect("block_stride", l.block_stride, ref::block_stride(f, s.block_size));
  expect("block_stride_for", block_stride_for(f, s.block_size), ref::block_stride(f, s.block_size));
  if (f.name == "V41" && s.block_size == 64) expect("V41 block 64 stride (SPEC §3)", l.block_stride, 33792);
  if (f.name == "V41" && s.block_size == 133) expect("V41 block 133 stride (SPEC §3)", l.block_stride, 70752);
  // FlashMLA's allocation: round_up(block_size * 584, 576) (SPEC §3).
  if (f.name == "MODEL1" && s.block_size == 64) expect("MODEL1 block 64 stride (SPEC §3)", l.block_stride, 37440);
  if (f.name == "MODEL1" && s.block_size == 133) expect("MODEL1 block 133 stride (SPEC §3)", l.block_stride, 77760);
  // 352-byte records: lcm(32, 352) = 352, so packed blocks (SPEC §3).
  if (f.name == "NVFP4_DS_MLA" && s.block_size == 64) expect("NVFP4_DS_MLA block 64 stride (SPEC §3)", l.block_stride, 22528);
  const std::string at = " at block " + std::to_string(s.block) + " token " + std::to_string(s.token);
  expect("data_offset" + at, l.data_offset(s.block, s.token), ref::data_offset(f, s.block_size, s.block, s.token));
  if (f.is_quantized())
    expect("scale_offset" + at, l.scale_offset(s.block, s.token),
           ref::scale_offset(f, s.block_size, s.block, s.token));
  if (f.bf16_tail_elements > 0)
    expect("tail_offset" + at, l.paged().tail_offset(s.block, s.token),
           ref::tail_offset(f, s.block_size, s.block, s.token));
  if (f.is_quantized())  // every scale's byte, transposed or not
    for (int64_t g = 0; g < f.num_scales(); ++g)
      if (l.paged().scale_byte(g) != ref::scale_byte(f, g)) {
        expect("scale_byte of group " + std::to_string(g), l.paged().scale_byte(g), ref::scale_byte(f, g));
        break;
      }
  return out;
}

std::string check_records(const CacheLayout& l) {
  const KVCacheFormat& f = l.format;
  std::string out;
  auto expect = [&](bool ok, const std::string& what) {
    if (!ok) out += what + " (block_stride " + std::to_string(l.block_stride) + ")\n";
  };
  expect(l.block_stride % 32 == 0, "block_stride is not a multiple of 32");
  expect(l.record_bytes() <= l.block_stride, "the block's records do not fit in block_stride");
  if (f.token_interleaved) expect(l.block_stride % f.bytes_per_token() == 0, "interleaved block_stride is not a multiple of bytes_per_token");
  const int64_t last = l.block_size - 1;
  expect(l.data_offset(0, last) + l.data_token_stride() <= l.block_stride, "the last token's data ends past the block");
  if (f.is_quantized())
    expect(l.scale_offset(0, last) + f.sf_bytes() <= l.record_bytes(), "the last token's scales end past the records");
  expect(l.data_offset(0, 0) % f.token_alignment() == 0, "data does not start token_alignment-aligned");
  expect(l.data_token_stride() % (f.token_interleaved ? f.token_alignment() : 1) == 0,
         "interleaved data_token_stride is not a multiple of token_alignment");
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
      std::ranges::any_of(supported_formats(), [&](const KVCacheFormat& f) {
        return f.is_quantized() && f.bytes_per_token() == s.shape.back() && o.message.find(f.name) == std::string::npos;
      }))
    return "resolve_format: ambiguity error does not name every candidate: " + o.message + "\n";
  if (o.code) return "";
  const int64_t last = s.shape.back();
  const int64_t per_token = s.dtype == CacheDtype::kBF16 ? got.elements : got.bytes_per_token();
  if (per_token != last || (s.dtype == CacheDtype::kUInt8 && sf && got.sf_format != *sf))
    return "resolve_format returned " + got.name + ", which does not match the shape\n";
  return "";
}

}  // namespace

Verdict check_format(const FormatScenario& s, unsigned invariants) {
  std::string fail;
  const Outcome valid = capture([&] { s.format.validate(); });
  if ((invariants & kFormatValidation) != 0) {
    if (valid.code && valid.code != ErrorCode::kInvalidFormat)
      fail += "validate threw " + valid.message + " (want invalid-format)\n";
    if (!valid.code)
      for (const auto& f : supported_formats())
        if (f.name == s.format.name && !(f == s.format))
          fail += "format named " + f.name + " differs from the SPEC table entry\n";
  }
  if (!valid.code) {
    if ((invariants & kFormatSizesMatchSpec) != 0) fail += check_sizes(s.format);
    if ((invariants & (kLayoutMatchesReference | kLayoutRecordsInsideBlock)) != 0 && fail.empty()) {
      CacheLayout l;
      const Outcome made = capture([&] { l = CacheLayout::make(s.format, s.num_blocks, s.block_size); });
      if (made.code) fail += "CacheLayout::make of a valid format threw " + show(made) + "\n";
      else {
        if ((invariants & kLayoutMatchesReference) != 0) fail += check_offsets(s, l);
        if ((invariants & kLayoutRecordsInsideBlock) != 0) fail += check_records(l);
      }
    }
  }
  if ((invariants & kResolveMatchesTable) != 0) fail += check_resolve(s);
  if (!fail.empty()) fail = "op=format (host)\n" + fail;
  return {fail, ""};
}

}  // namespace kvcheck::props
