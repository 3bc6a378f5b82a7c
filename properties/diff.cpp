#include "properties/diff.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "reference/layout.h"
#include "reference/numerics.h"

namespace kvcheck::props {
namespace {

std::string hex_bytes(std::span<const uint8_t> b) {
  std::string s = "0x";
  for (size_t i = b.size(); i-- > 0;) s += fmt::format("{:02X}", b[i]);  // little-endian value
  return s;
}

std::string show_float(float v) { return fmt::format("{:g}", v); }

uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

float load_f32(const uint8_t* p) {
  float v;
  std::memcpy(&v, p, 4);
  return v;
}

// Value of the data unit starting at p (one element; e2m1: one byte = two elements).
std::string decode_data(QuantizedDtype q, const uint8_t* p) {
  switch (q) {
    case QuantizedDtype::kNone:
      return fmt::format("{} (bf16 {})", hex_bytes({p, 2}), show_float(ref::bf16_to_float(load_u16(p))));
    case QuantizedDtype::kE4M3:
      return fmt::format("{} (e4m3 {})", hex_bytes({p, 1}), show_float(ref::e4m3_to_float(*p)));
    case QuantizedDtype::kE2M1:
      return fmt::format("{} (e2m1 lo {}, hi {})", hex_bytes({p, 1}),
                         show_float(ref::e2m1_to_float(*p & 0xF)), show_float(ref::e2m1_to_float(*p >> 4)));
  }
  return "?";
}

std::string decode_scale(SfFormat sf, const uint8_t* p) {
  switch (sf) {
    case SfFormat::kUE8M0:
    case SfFormat::kUE8M0FloorAfter:  // 0xFF: an Inf tile's scale under SPEC §4.8, NaN as e8m0
      return fmt::format("{} (ue8m0 2^{} = {})", hex_bytes({p, 1}), int{*p} - 127,
                         show_float(ref::e8m0_to_float(*p)));
    case SfFormat::kE4M3:
    case SfFormat::kE4M3RoundUp:
      return fmt::format("{} (e4m3 {})", hex_bytes({p, 1}), show_float(ref::e4m3_to_float(*p)));
    case SfFormat::kFP32:
      return fmt::format("{} (fp32 {})", hex_bytes({p, 4}), show_float(load_f32(p)));
    case SfFormat::kFP32Pow2:
    case SfFormat::kFP32Pow2FloorFirst: {  // a power of two when the writer followed SPEC §4.6 / §4.7
      const float v = load_f32(p);
      int e = 0;
      const bool pow2 = std::isfinite(v) && v > 0 && std::frexp(v, &e) == 0.5f;
      const bool inf = std::isinf(v) && v > 0;  // the scale of a tile holding an Inf (SPEC §4.6)
      return fmt::format("{} (fp32 {}{})", hex_bytes({p, 4}), show_float(v),
                         pow2  ? fmt::format(" = 2^{}", e - 1)
                         : inf ? std::string(", an Inf tile's scale")
                               : std::string(", not a power of two"));
    }
    case SfFormat::kNone: break;
  }
  return "?";
}

int64_t data_unit_bytes(const KVCacheFormat& f) { return f.is_bf16() ? 2 : 1; }
int64_t scale_unit_bytes(const KVCacheFormat& f) { return f.scale_width(); }

// The group whose scale sits `pos` scales into a token's scale field (the inverse of
// ref::scale_byte: a transposed field, scales_last, holds them out of order).
int64_t group_at(const KVCacheFormat& f, int64_t pos) {
  for (int64_t g = 0; g < f.num_scales(); ++g)
    if (ref::scale_byte(f, g) == pos * f.scale_width()) return g;
  return pos;
}

}  // namespace

CacheByteLocation locate_cache_byte(const KVCacheFormat& f, int32_t block_size, int64_t offset,
                                    int64_t block_stride) {
  const int64_t bpt = f.bytes_per_token();
  const int64_t qb = f.quantized_bytes();
  const int64_t sfb = f.sf_bytes();
  const int64_t records = int64_t{block_size} * bpt;
  // Block-planar: a token's row is [data | BF16 tail] (MODEL1; index formats: data), its
  // scale record sf_bytes, padded to 8 for do_cast (SPEC §2).
  const int64_t row = qb + f.tail_bytes();
  const int64_t tb = f.tail_bytes(), tail_unit = f.e4m3_tail ? 1 : 2;
  const int64_t sf_record = f.do_cast ? (sfb + 7) / 8 * 8 : sfb;
  // SPEC §3 block_stride, written out again on purpose (no impl/ code).
  int64_t align = 32;
  if (f.token_interleaved || f.do_cast) {
    const int64_t unit = f.token_interleaved ? bpt : row;
    int64_t a = 32, b = unit;
    while (b != 0) { const int64_t t = a % b; a = b; b = t; }
    align = 32 / a * unit;
  }
  const int64_t stride = block_stride != 0 ? block_stride : (records + align - 1) / align * align;
  CacheByteLocation loc;
  loc.block = offset / stride;
  const int64_t r = offset % stride;
  if (r >= records) {
    loc.kind = CacheByteLocation::Kind::kPadding;
    loc.token = -1;
    loc.index = r - records;
    return loc;
  }
  const int64_t per_element_bits = f.bits_per_element();
  const int64_t block_base = loc.block * stride;
  if (f.token_interleaved) {
    loc.token = r / bpt;
    loc.data_start = block_base + loc.token * bpt;
    // [data | scales | tail], or [data | tail | scales] (scales_last; SPEC §2).
    const int64_t scales_at = qb + (f.scales_last ? tb : 0), tail_at = f.scales_last ? qb : qb + sfb;
    loc.scale_start = loc.data_start + scales_at;
    const int64_t o = r % bpt;
    if (o < qb) {
      loc.index = o * 8 / per_element_bits;
    } else if (o >= scales_at && o < scales_at + sfb) {
      loc.kind = CacheByteLocation::Kind::kScale;
      loc.index = group_at(f, (o - scales_at) / scale_unit_bytes(f));
    } else {  // index = the element of the row
      loc.kind = CacheByteLocation::Kind::kTail;
      loc.index = f.quantized_elements() + (o - tail_at) / tail_unit;
    }
  } else {
    if (r < int64_t{block_size} * row) {
      loc.token = r / row;
      const int64_t o = r % row;
      if (o < qb) {
        loc.index = o * 8 / per_element_bits;
      } else {
        loc.kind = CacheByteLocation::Kind::kTail;
        loc.index = f.quantized_elements() + (o - qb) / tail_unit;
      }
    } else {
      const int64_t s = r - int64_t{block_size} * row;
      loc.token = s / sf_record;
      if (s % sf_record >= sfb) {  // a scale record's pad byte (MODEL1's 8th): never written
        loc.kind = CacheByteLocation::Kind::kPadding;
        loc.index = s % sf_record - sfb;
        return loc;
      }
      loc.kind = CacheByteLocation::Kind::kScale;
      loc.index = (s % sf_record) / scale_unit_bytes(f);
    }
    loc.data_start = block_base + loc.token * row;
    loc.scale_start = block_base + int64_t{block_size} * row + loc.token * sf_record;
  }
  return loc;
}

ByteDiff byte_diff(std::span<const uint8_t> expected, std::span<const uint8_t> actual) {
  ByteDiff d{expected.size(), 0};
  if (expected.empty() || std::memcmp(expected.data(), actual.data(), expected.size()) == 0) return d;  // fast
  for (size_t i = 0; i < expected.size(); ++i)
    if (expected[i] != actual[i]) {
      if (d.count++ == 0) d.first = i;
    }
  return d;
}

std::string diff_cache(const CacheLayout& layout, std::span<const uint8_t> expected,
                       std::span<const uint8_t> actual) {
  if (expected.size() != actual.size())
    return fmt::format("cache sizes differ: expected {} bytes, actual {}", expected.size(), actual.size());
  const ByteDiff d = byte_diff(expected, actual);
  const size_t i = d.first;
  if (d.count == 0) return "";
  const KVCacheFormat& f = layout.format;
  const CacheByteLocation loc = locate_cache_byte(f, layout.block_size, static_cast<int64_t>(i), layout.block_stride);
  std::string where, exp, act;
  switch (loc.kind) {
    case CacheByteLocation::Kind::kPadding:
      if (loc.token >= 0) {  // inside the records: a scale record's pad byte
        where = fmt::format("block {}, token {} (slot {}), pad byte {} after its scales (never written)", loc.block,
                            loc.token, loc.block * layout.block_size + loc.token, loc.index);
        exp = hex_bytes({&expected[i], 1});
        act = hex_bytes({&actual[i], 1});
        break;
      }
      where = fmt::format("block {} padding byte {} (past the {} record bytes{})", loc.block, loc.index,
                          layout.record_bytes(),
                          layout.block_stride != layout.packed_stride()
                              ? fmt::format("; bytes from {} on are other layers' pages", layout.packed_stride())
                              : "");
      exp = hex_bytes({&expected[i], 1});
      act = hex_bytes({&actual[i], 1});
      break;
    case CacheByteLocation::Kind::kData: {
      const int64_t unit = data_unit_bytes(f);
      const size_t start = i - (i % static_cast<size_t>(unit));  // records are unit-aligned
      where = fmt::format("block {}, token {} (slot {}), data element {}", loc.block, loc.token,
                          loc.block * layout.block_size + loc.token, loc.index);
      exp = decode_data(f.quantized_dtype, &expected[start]);
      act = decode_data(f.quantized_dtype, &actual[start]);
      // A code follows its group's scale: when that scale differs too, show it (a writer
      // and a reader that disagree on a scale encoding differ there first in meaning).
      if (f.is_quantized()) {
        const int64_t g = loc.index / f.elements_per_sf, w = scale_unit_bytes(f);
        const auto s = static_cast<size_t>(loc.scale_start + ref::scale_byte(f, g));
        if (s + static_cast<size_t>(w) <= expected.size() && std::memcmp(&expected[s], &actual[s], static_cast<size_t>(w)) != 0) {
          exp += fmt::format("; its scale group {}: {}", g, decode_scale(f.sf_format, &expected[s]));
          act += fmt::format("; its scale group {}: {}", g, decode_scale(f.sf_format, &actual[s]));
        }
      }
      break;
    }
    case CacheByteLocation::Kind::kScale: {
      const int64_t unit = scale_unit_bytes(f);
      const size_t start = i - (i % static_cast<size_t>(unit));
      where = fmt::format("block {}, token {} (slot {}), scale group {} (elements [{}, {})){}", loc.block,
                          loc.token, loc.block * layout.block_size + loc.token, loc.index,
                          loc.index * f.elements_per_sf, (loc.index + 1) * f.elements_per_sf,
                          f.scales_last ? fmt::format(", stored transposed at scale byte {}",
                                                      ref::scale_byte(f, loc.index))
                                        : std::string());
      exp = decode_scale(f.sf_format, &expected[start]);
      act = decode_scale(f.sf_format, &actual[start]);
      break;
    }
    case CacheByteLocation::Kind::kTail: {
      const int64_t unit = f.e4m3_tail ? 1 : 2;
      const size_t start =
          static_cast<size_t>(loc.data_start + f.tail_offset() + unit * (loc.index - f.quantized_elements()));
      const QuantizedDtype q = f.e4m3_tail ? QuantizedDtype::kE4M3 : QuantizedDtype::kNone;
      where = fmt::format("block {}, token {} (slot {}), {} tail element {} (row element {})", loc.block, loc.token,
                          loc.block * layout.block_size + loc.token, f.e4m3_tail ? "e4m3" : "BF16",
                          loc.index - f.quantized_elements(), loc.index);
      exp = decode_data(q, &expected[start]);
      act = decode_data(q, &actual[start]);
      break;
    }
  }
  return fmt::format(
      "first differing cache byte at offset {} of {} ({} bytes differ)\n"
      "  at:       {} [format {}, block_size {}, block_stride {}]\n"
      "  expected: {}\n"
      "  actual:   {}",
      i, expected.size(), d.count, where, f.name, layout.block_size,
      layout.block_stride, exp, act);
}

std::string diff_load_output(const KVCacheFormat& f, int64_t rows, const LoadOutput& expected,
                             const LoadOutput& actual) {
  const int64_t row_bytes = f.load_row_bytes();
  const int64_t sf_row_bytes = f.load_scale_row_bytes();
  int64_t ndiff = 0;
  std::string first;
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* e = expected.data + r * expected.data_row_stride;
    const uint8_t* a = actual.data + r * actual.data_row_stride;
    for (int64_t b = std::memcmp(e, a, static_cast<size_t>(row_bytes)) == 0 ? row_bytes : 0; b < row_bytes; ++b) {
      if (e[b] == a[b]) continue;
      if (ndiff++ == 0) {
        const bool bf16_out = !f.is_index();
        const int64_t unit = bf16_out ? 2 : 1;
        const int64_t start = b - b % unit;
        const QuantizedDtype q = bf16_out ? QuantizedDtype::kNone : f.quantized_dtype;
        const int64_t element = start * 8 / (bf16_out ? 16 : f.bits_per_element());
        first = fmt::format("  at:       output row {}, data element {}{}\n  expected: {}\n  actual:   {}", r, element,
                            f.bf16_tail_elements > 0 && element >= f.quantized_elements()
                                ? fmt::format(" ({} tail element {})", f.e4m3_tail ? "e4m3" : "BF16",
                                              element - f.quantized_elements())
                                : std::string(),
                            decode_data(q, e + start), decode_data(q, a + start));
      }
    }
    if (sf_row_bytes == 0) continue;
    const uint8_t* es = expected.scales + r * expected.scale_row_stride;
    const uint8_t* as = actual.scales + r * actual.scale_row_stride;
    for (int64_t b = std::memcmp(es, as, static_cast<size_t>(sf_row_bytes)) == 0 ? sf_row_bytes : 0; b < sf_row_bytes;
         ++b) {
      if (es[b] == as[b]) continue;
      if (ndiff++ == 0) {
        const int64_t unit = scale_unit_bytes(f);
        const int64_t start = b - b % unit;
        first = fmt::format("  at:       output row {}, scale group {}{}\n  expected: {}\n  actual:   {}", r,
                            start / unit,
                            f.sf_format == SfFormat::kUE8M0 ? fmt::format(" (int32 word {}, byte {})", b / 4, b % 4)
                                                            : std::string(),
                            decode_scale(f.sf_format, es + start), decode_scale(f.sf_format, as + start));
      }
    }
  }
  if (ndiff == 0) return "";
  return fmt::format("first differing load output byte ({} bytes differ) [format {}, {} rows]\n{}", ndiff,
                     f.name, rows, first);
}

}  // namespace kvcheck::props
