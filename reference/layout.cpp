// SPEC §3 offsets, spelled out again here (never via impl/layout.h).
#include "reference/layout.h"

#include <limits>
#include <numeric>
#include <string>

#include "impl/error.h"

namespace kvcheck::ref {
namespace {

int64_t round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

}  // namespace

void check_cache_geometry(const KVCacheFormat& format, int64_t num_blocks, int32_t block_size, int64_t stride) {
  format.validate();
  if (block_size < 1)
    throw Error(ErrorCode::kInvalidArgument,
                "block_size must be >= 1, got " + std::to_string(block_size));
  if (num_blocks < 1)
    throw Error(ErrorCode::kInvalidArgument,
                "num_blocks must be >= 1, got " + std::to_string(num_blocks));
  // block_size * bytes_per_token, rounded up, must itself fit in int64.
  const int64_t bpt = format.bytes_per_token();
  if (block_size > (std::numeric_limits<int64_t>::max() - 32 * bpt) / bpt)
    throw Error(ErrorCode::kInvalidArgument, "block of " + std::to_string(block_size) + " tokens of " +
                                                 std::to_string(bpt) + " bytes overflows int64");
  const int64_t packed = block_stride(format, block_size);
  if (stride != 0 && (stride < packed || stride % 32 != 0))
    throw Error(ErrorCode::kInvalidArgument, "block_stride " + std::to_string(stride) +
                                                 " is not a multiple of 32 at least the packed " +
                                                 std::to_string(packed));
  if (num_blocks > std::numeric_limits<int32_t>::max() / block_size ||
      num_blocks > std::numeric_limits<int64_t>::max() / (stride != 0 ? stride : packed))
    throw Error(ErrorCode::kInvalidArgument,
                "cache of " + std::to_string(num_blocks) + " blocks of " +
                    std::to_string(block_size) + " tokens: slots must fit in int32");
}

void check_cache_bytes(const KVCacheFormat& format, int64_t num_blocks, int32_t block_size,
                       std::span<const uint8_t> cache, int64_t stride) {
  if (cache.data() == nullptr) return;
  const int64_t packed = block_stride(format, block_size);
  const int64_t needed = (num_blocks - 1) * (stride != 0 ? stride : packed) + packed;
  if (static_cast<uint64_t>(needed) > cache.size())
    throw Error(ErrorCode::kShapeMismatch,
                "a cache of " + std::to_string(num_blocks) + " blocks of " + std::to_string(block_size) +
                    " tokens needs " + std::to_string(needed) + " bytes, the buffer has " +
                    std::to_string(cache.size()));
}

int64_t block_stride(const KVCacheFormat& format, int32_t block_size) {
  const int64_t bpt = format.bytes_per_token();
  const int64_t records = int64_t{block_size} * bpt;
  if (format.token_interleaved) return round_up(records, std::lcm(int64_t{32}, bpt));
  // Block-planar do_cast (MODEL1): blocks padded to a multiple of the token's [data |
  // tail] row too (576 bytes), as FlashMLA allocates them.
  if (format.do_cast) return round_up(records, std::lcm(int64_t{32}, format.quantized_bytes() + format.tail_bytes()));
  return round_up(records, 32);
}

int64_t data_offset(const KVCacheFormat& format, int32_t block_size, int64_t block, int64_t token,
                    int64_t stride) {
  const int64_t base = block * (stride != 0 ? stride : block_stride(format, block_size));
  if (format.token_interleaved) return base + token * format.bytes_per_token();
  // Block-planar: [data | tail] rows (index formats and BF16 have no tail; BF16:
  // quantized_bytes == 2E).
  return base + token * (format.quantized_bytes() + format.tail_bytes());
}

int64_t scale_offset(const KVCacheFormat& format, int32_t block_size, int64_t block, int64_t token,
                     int64_t stride) {
  const int64_t base = block * (stride != 0 ? stride : block_stride(format, block_size));
  // Interleaved [data | scales | tail], or [data | tail | scales] (scales_last).
  if (format.token_interleaved)
    return base + token * format.bytes_per_token() + format.quantized_bytes() +
           (format.scales_last ? format.tail_bytes() : 0);
  // Block-planar: every token's row, then every token's scales; a do_cast record's
  // scales padded to 8 bytes (MODEL1: 7 ue8m0 + 1, SPEC §2).
  const int64_t row = format.quantized_bytes() + format.tail_bytes();
  const int64_t scales = format.do_cast ? round_up(format.sf_bytes(), 8) : format.sf_bytes();
  return base + int64_t{block_size} * row + token * scales;
}

int64_t tail_offset(const KVCacheFormat& format, int32_t block_size, int64_t block, int64_t token,
                    int64_t stride) {
  // Interleaved [quantised data | scales | BF16 tail]; block-planar [quantised data |
  // BF16 tail] rows (MODEL1).
  const int64_t base = block * (stride != 0 ? stride : block_stride(format, block_size));
  if (format.token_interleaved)
    return base + token * format.bytes_per_token() + format.quantized_bytes() +
           (format.scales_last ? 0 : format.sf_bytes());
  return base + token * (format.quantized_bytes() + format.tail_bytes()) + format.quantized_bytes();
}

int64_t scale_byte(const KVCacheFormat& format, int64_t group) {
  const int64_t n = format.num_scales();
  // scales_last (vLLM nvfp4_ds_mla): group g's scale at (n/4)*(g%4) + g/4, i.e. the
  // groups as an [n/4][4] array stored transposed ([4][n/4]); 32 scales: 8*(g%4) + g/4.
  const int64_t index = format.scales_last ? (group % 4) * (n / 4) + group / 4 : group;
  return index * format.scale_width();
}

}  // namespace kvcheck::ref
