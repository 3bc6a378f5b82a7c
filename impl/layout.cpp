#include "impl/layout.h"

#include <limits>
#include <numeric>

#include "impl/error.h"

namespace kvcheck {

namespace {
/// What a packed block is rounded up to (SPEC §3): lcm(32, bytes_per_token)
/// interleaved, lcm(32, a token's [data | tail] row) block-planar do_cast (MODEL1: 576),
/// 32 otherwise.
int64_t block_alignment(const KVCacheFormat& format) {
  if (format.token_interleaved) return std::lcm<int64_t>(32, format.bytes_per_token());
  if (format.do_cast) return std::lcm<int64_t>(32, format.quantized_bytes() + format.tail_bytes());
  return 32;
}
}  // namespace

int64_t block_stride_for(const KVCacheFormat& format, int32_t block_size) {
  const int64_t bpt = format.bytes_per_token();
  const int64_t alignment = block_alignment(format);
  const int64_t bytes = int64_t{block_size} * bpt;
  return (bytes + alignment - 1) / alignment * alignment;
}

CacheLayout CacheLayout::make(const KVCacheFormat& format, int64_t num_blocks, int32_t block_size,
                              int64_t block_stride) {
  format.validate();
  if (block_size < 1)
    throw Error(ErrorCode::kInvalidArgument,
                "block_size must be >= 1, got " + std::to_string(block_size));
  if (num_blocks < 1)
    throw Error(ErrorCode::kInvalidArgument,
                "num_blocks must be >= 1, got " + std::to_string(num_blocks));
  // A block's bytes must fit in int64 before block_stride is even computed (SPEC §3).
  const int64_t bpt = format.bytes_per_token();
  if (block_size > (std::numeric_limits<int64_t>::max() - block_alignment(format)) / bpt)
    throw Error(ErrorCode::kInvalidArgument,
                "a block of " + std::to_string(block_size) + " tokens of " + std::to_string(bpt) +
                    " bytes overflows int64");
  const int64_t packed = block_stride_for(format, block_size);
  if (block_stride != 0 && (block_stride < packed || block_stride % 32 != 0))
    throw Error(ErrorCode::kInvalidArgument,
                "block_stride " + std::to_string(block_stride) + " is " +
                    (block_stride < packed ? "below the packed stride " + std::to_string(packed) + " of the format's " +
                                                 std::to_string(block_size) + "-token block"
                                           : std::string("not a multiple of 32")) +
                    " (SPEC §3)");
  CacheLayout layout{format, num_blocks, block_size, block_stride != 0 ? block_stride : packed};
  if (num_blocks > std::numeric_limits<int64_t>::max() / layout.block_stride ||
      num_blocks * block_size > std::numeric_limits<int32_t>::max())
    throw Error(ErrorCode::kInvalidArgument,
                "cache of " + std::to_string(num_blocks) + " blocks of " +
                    std::to_string(block_size) + " tokens: slots must fit in int32");
  return layout;
}

int64_t CacheLayout::data_token_stride() const {
  return format.token_interleaved ? format.bytes_per_token() : format.quantized_bytes() + format.tail_bytes();
}

int64_t CacheLayout::scale_token_stride() const {
  return format.token_interleaved ? format.bytes_per_token() : format.sf_token_bytes();
}

int64_t CacheLayout::data_offset(int64_t block, int64_t token) const {
  return paged().data_offset(block, token);
}

int64_t CacheLayout::scale_offset(int64_t block, int64_t token) const {
  return paged().scale_offset(block, token);
}

PagedLayout CacheLayout::paged() const {
  PagedLayout p;
  p.dtype = format.quantized_dtype == QuantizedDtype::kE4M3   ? PagedDtype::kE4M3
            : format.quantized_dtype == QuantizedDtype::kE2M1 ? PagedDtype::kE2M1
                                                              : PagedDtype::kBF16;
  p.sf = format.sf_format == SfFormat::kUE8M0  ? PagedSf::kUE8M0
         : format.sf_format == SfFormat::kE4M3 ? PagedSf::kE4M3
         : format.sf_format == SfFormat::kFP32 ? PagedSf::kFP32
         : format.sf_format == SfFormat::kFP32Pow2 ? PagedSf::kFP32Pow2
         : format.sf_format == SfFormat::kFP32Pow2FloorFirst ? PagedSf::kFP32Pow2FloorFirst
         : format.sf_format == SfFormat::kUE8M0FloorAfter ? PagedSf::kUE8M0FloorAfter
         : format.sf_format == SfFormat::kE4M3RoundUp ? PagedSf::kE4M3RoundUp
                                               : PagedSf::kNone;
  p.elements = format.elements;
  p.tail_elements = format.bf16_tail_elements;
  p.group = format.elements_per_sf;
  p.quantized_bytes = format.quantized_bytes();
  p.sf_bytes = format.sf_bytes();
  p.do_cast = format.do_cast;
  p.interleaved = format.token_interleaved;
  p.e4m3_tail = format.e4m3_tail;
  p.scales_last = format.scales_last;
  p.num_blocks = num_blocks;
  p.block_size = block_size;
  p.block_stride = block_stride;
  p.data_token_stride = data_token_stride();
  // Interleaved: scales follow each token's data; else they follow the block's data
  // (and tails: MODEL1's [data | tail] rows); scales_last: the token's data and tail.
  p.scale_region = format.token_interleaved ? format.scales_in_record() : int64_t{block_size} * data_token_stride();
  p.scale_token_stride = scale_token_stride();
  return p;
}

CacheLayout CacheLayout::from_paged(const PagedLayout& p) {
  KVCacheFormat f;
  f.name = "device layout";
  f.quantized_dtype = p.dtype == PagedDtype::kE4M3   ? QuantizedDtype::kE4M3
                      : p.dtype == PagedDtype::kE2M1 ? QuantizedDtype::kE2M1
                                                     : QuantizedDtype::kNone;
  f.sf_format = p.sf == PagedSf::kUE8M0  ? SfFormat::kUE8M0
                : p.sf == PagedSf::kE4M3 ? SfFormat::kE4M3
                : p.sf == PagedSf::kFP32 ? SfFormat::kFP32
                : p.sf == PagedSf::kFP32Pow2 ? SfFormat::kFP32Pow2
                : p.sf == PagedSf::kFP32Pow2FloorFirst ? SfFormat::kFP32Pow2FloorFirst
                : p.sf == PagedSf::kUE8M0FloorAfter ? SfFormat::kUE8M0FloorAfter
                : p.sf == PagedSf::kE4M3RoundUp ? SfFormat::kE4M3RoundUp
                                         : SfFormat::kNone;
  f.elements = p.elements;
  f.bf16_tail_elements = p.tail_elements;
  f.elements_per_sf = p.group;
  f.do_cast = p.do_cast;
  f.token_interleaved = p.interleaved;
  f.e4m3_tail = p.e4m3_tail;
  f.scales_last = p.scales_last;
  make(f, p.num_blocks, p.block_size);  // the format and geometry's own errors first
  if (p.block_stride <= 0)
    throw Error(ErrorCode::kInvalidArgument,
                "device cache layout block_stride " + std::to_string(p.block_stride) + " is not positive");
  const CacheLayout layout = make(f, p.num_blocks, p.block_size, p.block_stride);
  const PagedLayout e = layout.paged();
  if (e.quantized_bytes != p.quantized_bytes || e.sf_bytes != p.sf_bytes || e.block_stride != p.block_stride ||
      e.data_token_stride != p.data_token_stride || e.scale_region != p.scale_region ||
      e.scale_token_stride != p.scale_token_stride)
    throw Error(ErrorCode::kInvalidArgument,
                "device cache layout (block_stride " + std::to_string(p.block_stride) +
                    ") is not the SPEC §3 layout of its format (block_stride " + std::to_string(e.block_stride) +
                    "); build it with CacheLayout::paged()");
  return layout;
}

}  // namespace kvcheck
