// Reference load_paged_kv_cache (SPEC §5.2): validate everything, then copy or
// dequantise one output row at a time.
#include "reference/load.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <iterator>
#include <map>
#include <utility>
#include <vector>

#include "impl/error.h"
#include "reference/layout.h"
#include "reference/numerics.h"

namespace kvcheck::ref {
namespace {

std::string seg_name(size_t s, const LoadSegment& g) {
  return "load_segments[" + std::to_string(s) + "] = [" + std::to_string(g.src_block_id) + ", " +
         std::to_string(g.src_begin) + ", " + std::to_string(g.src_end) + ", " +
         std::to_string(g.dst_offset) + "]";
}

std::vector<LoadSegment> parse_segments(std::span<const int32_t> raw) {
  std::vector<LoadSegment> segs(raw.size() / 4);
  for (size_t s = 0; s < segs.size(); ++s)
    segs[s] = {raw[4 * s], raw[4 * s + 1], raw[4 * s + 2], raw[4 * s + 3]};
  return segs;
}

// Throws for every rule of SPEC §5.2 in the order docs/spec.md §5.2 [decided] fixes:
// format and geometry, the buffer's size, argument sizes, output shape and pointers, then segments in
// index order (block, range, destination, null cache, overlap with an earlier
// segment); the smallest failing segment wins.
std::vector<LoadSegment> validate_load(std::span<const uint8_t> cache, const KVCacheFormat& format,
                                       int64_t num_blocks, int32_t block_size, int64_t stride,
                                       std::span<const int32_t> load_segments, int32_t total_k,
                                       const LoadOutput& out) {
  check_cache_geometry(format, num_blocks, block_size, stride);
  check_cache_bytes(format, num_blocks, block_size, cache, stride);
  if (load_segments.size() % 4 != 0)
    throw Error(ErrorCode::kInvalidArgument,
                "load_segments has " + std::to_string(load_segments.size()) +
                    " int32, not a multiple of 4");
  if (total_k < 0)
    throw Error(ErrorCode::kInvalidArgument, "total_k = " + std::to_string(total_k) + " < 0");
  if (out.rows < total_k)
    throw Error(ErrorCode::kShapeMismatch, "output has " + std::to_string(out.rows) +
                                               " rows < total_k = " + std::to_string(total_k));
  if (total_k > 0) {
    if (out.data == nullptr || out.data_row_stride < format.load_row_bytes())
      throw Error(ErrorCode::kShapeMismatch,
                  "output data needs rows of >= " + std::to_string(format.load_row_bytes()) +
                      " bytes, got stride " + std::to_string(out.data_row_stride) +
                      (out.data == nullptr ? " and a null pointer" : ""));
    if (format.is_index() &&
        (out.scales == nullptr || out.scale_row_stride < format.load_scale_row_bytes()))
      throw Error(ErrorCode::kShapeMismatch,
                  "output scales need rows of >= " +
                      std::to_string(format.load_scale_row_bytes()) + " bytes, got stride " +
                      std::to_string(out.scale_row_stride) +
                      (out.scales == nullptr ? " and a null pointer" : ""));
  }
  std::vector<LoadSegment> segs = parse_segments(load_segments);
  std::map<int64_t, std::pair<int64_t, size_t>> taken;  // begin -> (end, segment); disjoint
  for (size_t s = 0; s < segs.size(); ++s) {
    const LoadSegment& g = segs[s];
    if (g.src_block_id < -1 || g.src_block_id >= num_blocks)
      throw Error(ErrorCode::kSegmentBlockOutOfRange,
                  seg_name(s, g) + ": src_block_id " + std::to_string(g.src_block_id) +
                      " not -1 and not in [0, " + std::to_string(num_blocks) + ")");
    if (!(0 <= g.src_begin && g.src_begin <= g.src_end && g.src_end <= block_size))
      throw Error(ErrorCode::kSegmentRangeInvalid,
                  seg_name(s, g) + ": need 0 <= src_begin <= src_end <= block_size = " +
                      std::to_string(block_size));
    const int64_t begin = g.dst_offset;
    const int64_t end = begin + (g.src_end - g.src_begin);
    if (begin < 0 || end > total_k)
      throw Error(ErrorCode::kSegmentDestinationOutOfRange,
                  seg_name(s, g) + ": destination rows [" + std::to_string(begin) + ", " +
                      std::to_string(end) + ") not inside [0, total_k = " +
                      std::to_string(total_k) + ")");
    if (begin == end) continue;  // empty: reads nothing, overlaps nothing
    if (g.src_block_id >= 0 && cache.data() == nullptr)
      throw Error(ErrorCode::kShapeMismatch, seg_name(s, g) + " reads a null cache");
    // Earlier intervals are disjoint: only the last one starting before `end` can
    // intersect [begin, end).
    auto next = taken.lower_bound(end);
    if (next != taken.begin()) {
      const auto& [t_begin, t_end_seg] = *std::prev(next);
      const auto [t_end, t] = t_end_seg;
      if (t_end > begin)
        throw Error(ErrorCode::kSegmentOverlap,
                    seg_name(s, g) + " writes output row " +
                        std::to_string(std::max(begin, t_begin)) + " that " +
                        seg_name(t, segs[t]) + " also writes");
    }
    taken.emplace(begin, std::make_pair(end, s));
  }
  return segs;
}

// One output row from token `token` of block `block` (SPEC §5.2 output kinds).
void load_row(const uint8_t* cache, const KVCacheFormat& format, int32_t block_size, int64_t stride,
              int64_t block, int64_t token, uint8_t* data_row, uint8_t* scale_row) {
  const uint8_t* data = cache + data_offset(format, block_size, block, token, stride);
  if (format.is_bf16()) {
    std::memcpy(data_row, data, static_cast<size_t>(format.load_row_bytes()));
    return;
  }
  const uint8_t* scales = cache + scale_offset(format, block_size, block, token, stride);
  if (format.is_index()) {
    std::memcpy(data_row, data, static_cast<size_t>(format.quantized_bytes()));
    // ue8m0: int32 word w = bytes 4w..4w+3 little-endian; fp32: the float's own
    // little-endian bytes. On a little-endian host both are the record's bytes.
    std::memcpy(scale_row, scales, static_cast<size_t>(format.sf_bytes()));
    return;
  }
  const int64_t scale_bytes = format.scale_width();
  const bool fp4 = format.quantized_dtype == QuantizedDtype::kE2M1;
  for (int64_t e = 0; e < format.quantized_elements(); ++e) {
    const uint8_t code = fp4 ? static_cast<uint8_t>((data[e / 2] >> (e % 2 == 0 ? 0 : 4)) & 0xF)
                             : data[e];
    const int64_t g = e / format.elements_per_sf;
    const bf16_bits v = dequantize(
        format, code,
        std::span<const uint8_t>(scales + scale_byte(format, g), static_cast<size_t>(scale_bytes)));
    data_row[2 * e] = static_cast<uint8_t>(v & 0xFF);
    data_row[2 * e + 1] = static_cast<uint8_t>(v >> 8);
  }
  // The tail follows the dequantised elements in the output row: BF16 as stored, an
  // e4m3 tail decoded (exact in BF16; 0x7F/0xFF -> NaN -> 0x7FFF, SPEC §4.9).
  const uint8_t* tail = cache + tail_offset(format, block_size, block, token, stride);
  uint8_t* tail_row = data_row + 2 * int64_t{format.quantized_elements()};
  if (!format.e4m3_tail) {
    std::memcpy(tail_row, tail, static_cast<size_t>(format.tail_bytes()));
    return;
  }
  for (int32_t e = 0; e < format.bf16_tail_elements; ++e) {
    const bf16_bits v = float_to_bf16_rn(e4m3_to_float(tail[e]));
    tail_row[2 * e] = static_cast<uint8_t>(v & 0xFF);
    tail_row[2 * e + 1] = static_cast<uint8_t>(v >> 8);
  }
}

}  // namespace

void load_paged_kv_cache(std::span<const uint8_t> buffer, const KVCacheFormat& format, int64_t num_blocks,
                         int32_t block_size, std::span<const int32_t> load_segments,
                         int32_t total_k, const LoadOutput& out, int64_t block_stride) {
  const std::vector<LoadSegment> segs =
      validate_load(buffer, format, num_blocks, block_size, block_stride, load_segments, total_k, out);
  const uint8_t* cache = buffer.data();
  for (const LoadSegment& g : segs) {
    for (int32_t t = g.src_begin; t < g.src_end; ++t) {
      const int64_t row = int64_t{g.dst_offset} + (t - g.src_begin);
      uint8_t* data_row = out.data + row * out.data_row_stride;
      uint8_t* scale_row = format.is_index() ? out.scales + row * out.scale_row_stride : nullptr;
      if (g.src_block_id == -1) {  // zero fill: data and scales
        std::memset(data_row, 0, static_cast<size_t>(format.load_row_bytes()));
        if (scale_row) std::memset(scale_row, 0, static_cast<size_t>(format.sf_bytes()));
      } else {
        load_row(cache, format, block_size, block_stride, g.src_block_id, t, data_row, scale_row);
      }
    }
  }
}

}  // namespace kvcheck::ref
