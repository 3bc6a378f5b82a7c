// PagedLayout: a paged MLA/indexer cache's geometry and record format as plain
// values, the ONE place that turns (block, token) into a byte offset (SPEC §3). It is
// C++17 and trivially copyable so host code (CacheLayout::paged()) and CUDA kernels
// (passed by value) share the same address formula. reference/ writes the formulas
// out on its own; a property checks the two agree.
#pragma once

#include <cstdint>

#include "impl/host_device.h"

namespace kvcheck {

/// Data dtype / scale format codes as plain integers (mirror QuantizedDtype /
/// SfFormat of impl/format.h, which device code cannot include).
enum class PagedDtype : int32_t { kBF16 = 0, kE4M3 = 1, kE2M1 = 2 };
enum class PagedSf : int32_t {
  kNone = 0,
  kUE8M0 = 1,
  kE4M3 = 2,
  kFP32 = 3,
  kFP32Pow2 = 4,
  kFP32Pow2FloorFirst = 5,
  kUE8M0FloorAfter = 6,
  kE4M3RoundUp = 7
};

/// Bytes of one scale of encoding s (KVCacheFormat::scale_width for kernels).
KVCHECK_HD constexpr int64_t paged_scale_width(PagedSf s) {
  return s == PagedSf::kFP32 || s == PagedSf::kFP32Pow2 || s == PagedSf::kFP32Pow2FloorFirst ? 4
         : s == PagedSf::kNone                                                                   ? 0
                                                                                                 : 1;
}

/// slot -> block without a division, for the device kernels' per-token address math
/// (PagedLayout::slot_block's `slot / block_size`, SPEC §5.1, as a multiply and a
/// shift). For 0 <= slot < 2^31 and 1 <= block_size < 2^31: with l = ceil(log2
/// block_size), magic = floor(2^(31+l) / block_size) + 1 (below 2^32) and shift = 31 + l,
/// (slot * magic) >> shift is the quotient (Granlund and Montgomery 1994, Thm. 4.2, for
/// 31-bit dividends). tests/format_test.cpp checks it against the division.
struct SlotDivider {
  uint32_t magic = 0;
  uint32_t shift = 0;
  int32_t block_size = 0;

  /// Host only (one 64-bit division). A block_size below 1 (a layout no checked entry
  /// lets through) gives a divider whose blocks are all 0, not a division by zero.
  static SlotDivider of(int32_t block_size) {
    if (block_size < 1) return {0, 0, block_size};
    uint32_t l = 0;
    while ((int64_t{1} << l) < block_size) ++l;
    return {static_cast<uint32_t>((uint64_t{1} << (31 + l)) / static_cast<uint64_t>(block_size) + 1), 31 + l,
            block_size};
  }
  KVCHECK_HD int32_t block(int32_t slot) const {
    return static_cast<int32_t>((static_cast<uint64_t>(static_cast<uint32_t>(slot)) * magic) >> shift);
  }
  KVCHECK_HD int32_t token(int32_t slot, int32_t block) const { return slot - block * block_size; }
};

/// Where group g's scale sits among n transposed ones (scales_last, SPEC §2: vLLM
/// nvfp4_ds_mla's 8x4 -> 4x8, so a reader thread's 8 scales are one 8-byte load).
KVCHECK_HD constexpr int64_t transposed_scale(int64_t g, int64_t n) { return n / 4 * (g % 4) + g / 4; }

struct PagedLayout {
  // Record format (SPEC §2).
  PagedDtype dtype = PagedDtype::kBF16;
  PagedSf sf = PagedSf::kNone;
  int32_t elements = 0;         // logical elements per token (kv row, do_cast load row)
  int32_t tail_elements = 0;    // the last ones, kept as BF16 (or e4m3 casts) after the scales or the data (SPEC §2)
  int32_t group = 0;            // elements_per_sf (0 for BF16)
  int64_t quantized_bytes = 0;  // data bytes per token (BF16: 2*elements)
  int64_t sf_bytes = 0;         // scale bytes per token
  bool do_cast = false;         // load dequantises to BF16
  bool interleaved = false;     // record = [data | scales | tail] (or scales_last) per token; else [data | tail] rows, then scales
  bool e4m3_tail = false;       // the tail as unscaled e4m3 bytes, not BF16 (NVFP4_DS_MLA)
  bool scales_last = false;     // interleaved [data | tail | scales], scales transposed (scale_byte)
  // Geometry (SPEC §3), bytes unless named otherwise.
  int64_t num_blocks = 0;
  int32_t block_size = 0;  // tokens per block
  int64_t block_stride = 0;
  int64_t data_token_stride = 0;   // token t's data at t*data_token_stride in its block
  int64_t scale_region = 0;        // first scale byte of a block (interleaved: data bytes)
  int64_t scale_token_stride = 0;  // token t's scales at scale_region + t*stride

  KVCHECK_HD int64_t num_slots() const { return num_blocks * block_size; }
  /// Byte offset of (block, token)'s data / scales from the cache base.
  KVCHECK_HD int64_t data_offset(int64_t block, int64_t token) const {
    return block * block_stride + token * data_token_stride;
  }
  KVCHECK_HD int64_t scale_offset(int64_t block, int64_t token) const {
    return block * block_stride + scale_region + token * scale_token_stride;
  }
  /// The slot formula of SPEC §5.1 and its inverse: slot = block*block_size + token.
  KVCHECK_HD int64_t slot_block(int64_t slot) const { return slot / block_size; }
  KVCHECK_HD int64_t slot_token(int64_t slot) const { return slot % block_size; }
  KVCHECK_HD int64_t slot_data_offset(int64_t slot) const {
    return data_offset(slot_block(slot), slot_token(slot));
  }
  KVCHECK_HD int64_t slot_scale_offset(int64_t slot) const {
    return scale_offset(slot_block(slot), slot_token(slot));
  }
  /// Elements stored quantised (elements - tail_elements).
  KVCHECK_HD int32_t quantized_elements() const { return elements - tail_elements; }
  /// Byte offset of (block, token)'s tail (do_cast records with a tail only, SPEC §2):
  /// after the token's data and scales (interleaved), after its data (block-planar,
  /// scales_last).
  KVCHECK_HD int64_t tail_offset(int64_t block, int64_t token) const { return data_offset(block, token) + tail_in_record(); }
  /// The tail's offset from the token's data (what a vector path's alignment depends on).
  KVCHECK_HD int64_t tail_in_record() const { return quantized_bytes + (interleaved && !scales_last ? sf_bytes : 0); }
  KVCHECK_HD int64_t slot_tail_offset(int64_t slot) const { return tail_offset(slot_block(slot), slot_token(slot)); }
  KVCHECK_HD int64_t tail_bytes() const { return int64_t{tail_elements} * (e4m3_tail ? 1 : 2); }
  /// Byte of group g's scale within the token's scales (KVCacheFormat::scale_byte):
  /// g * width, or transposed when scales_last (scale g of n at (n/4)*(g%4) + g/4).
  KVCHECK_HD int64_t scale_byte(int64_t g) const {
    const int64_t w = paged_scale_width(sf);
    return (scales_last ? transposed_scale(g, sf_bytes / w) : g) * w;
  }
  /// Bytes per load output row and per scale output row (SPEC §5.2): do_cast rows
  /// are BF16 [elements]; BF16 and index formats copy their data bytes; only index
  /// formats (quantised, no do_cast) have scale rows.
  KVCHECK_HD int64_t load_row_bytes() const { return do_cast ? int64_t{elements} * 2 : quantized_bytes; }
  KVCHECK_HD int64_t load_scale_row_bytes() const {
    return dtype != PagedDtype::kBF16 && !do_cast ? sf_bytes : 0;
  }
};

}  // namespace kvcheck
