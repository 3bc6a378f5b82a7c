// KVCacheFormat: how one token's record is stored (SPEC §2). This table is the only
// code that reference/ and the backends share.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace kvcheck {

enum class QuantizedDtype : uint8_t { kNone, kE4M3, kE2M1 };
/// How a group's scale is encoded (SPEC §2): kFP32 any fp32 value; kFP32Pow2 and
/// kFP32Pow2FloorFirst an fp32 power of two, one encoding written by two rules (the
/// 1e-4 floor after the division, fp8_ds_mla, SPEC §4.6; before it, vLLM's DSA indexer
/// ue8m0 option, SPEC §4.7); kUE8M0FloorAfter §4.6's rule with the exponent stored as a
/// ue8m0 byte (FlashMLA MODEL1, SPEC §4.8). kUE8M0 and kUE8M0FloorAfter are one
/// encoding (byte b = 2^(b-127)) written by two rules (§4.1, §4.8). kE4M3RoundUp: an
/// e4m3 byte like kE4M3, written by vLLM's nvfp4_ds_mla rule (the 2^-9 floor after an
/// IEEE division by 6, then one code up when the byte decodes below it; SPEC §4.9).
enum class SfFormat : uint8_t {
  kNone,
  kUE8M0,
  kE4M3,
  kFP32,
  kFP32Pow2,
  kFP32Pow2FloorFirst,
  kUE8M0FloorAfter,
  kE4M3RoundUp
};
/// Whether scales of s are e4m3 bytes (either rule).
constexpr bool is_e4m3_sf(SfFormat s) { return s == SfFormat::kE4M3 || s == SfFormat::kE4M3RoundUp; }
/// Whether scales of s are fp32 powers of two (either rule).
constexpr bool is_fp32_pow2(SfFormat s) { return s == SfFormat::kFP32Pow2 || s == SfFormat::kFP32Pow2FloorFirst; }
/// Bytes of one scale of s: 4 for the fp32 ones, 1 for the byte encodings, 0 for none.
constexpr int64_t sf_width(SfFormat s) {
  return s == SfFormat::kNone ? 0 : s == SfFormat::kFP32 || is_fp32_pow2(s) ? 4 : 1;
}
/// Element type of a cache tensor as a framework would report it.
enum class CacheDtype : uint8_t { kUInt8, kBF16 };

/// Bit patterns of a bfloat16 value (little-endian in memory).
using bf16_bits = uint16_t;

/// One token's record layout. Construct through the named factories or fill the
/// fields and call validate(). Sizes are in bytes unless named *_elements/elements.
struct KVCacheFormat {
  std::string name;
  QuantizedDtype quantized_dtype = QuantizedDtype::kNone;
  int32_t elements = 0;            // logical elements per token (kv row, do_cast load row)
  int32_t elements_per_sf = 0;     // group size; 0 for BF16
  SfFormat sf_format = SfFormat::kNone;
  bool do_cast = false;            // load dequantises to BF16
  // record = [data | scales | tail] per token (scales_last: [data | tail | scales]); else block-planar: every token's
  // [data | tail] first, then every token's scales (do_cast: padded to 8 bytes, SPEC §3)
  bool token_interleaved = false;
  // The last bf16_tail_elements of the `elements` are kept as BF16 (or, e4m3_tail, as
  // e4m3 casts) after the scales, or after the data when block-planar or scales_last
  // (fp8_ds_mla's and nvfp4_ds_mla's 64 rope values); quantised do_cast formats only (SPEC §2).
  int32_t bf16_tail_elements = 0;
  // The tail stored as unscaled e4m3 casts (cvt_e4m3(x), one byte each), not BF16
  // (NVFP4_DS_MLA's 64 rope values; SPEC §2, §4.9). Needs a tail.
  bool e4m3_tail = false;
  // An interleaved record [data | tail | scales] (not [data | scales | tail]) whose
  // scales are stored transposed: scale s of n at byte (n/4)*(s%4) + s/4 of the scale
  // field (vLLM nvfp4_ds_mla: 8x4 -> 4x8, so a reader thread's 8 scales are one 8-byte
  // load; SPEC §2). Interleaved do_cast records whose scale count is a multiple of 4.
  bool scales_last = false;

  /// Throws Error(kInvalidFormat) naming the broken rule (SPEC §2 validation).
  void validate() const;

  bool is_quantized() const { return quantized_dtype != QuantizedDtype::kNone; }
  bool is_bf16() const { return !is_quantized(); }
  /// Index caches keep quantised bytes on load (quantized, no do_cast).
  bool is_index() const { return is_quantized() && !do_cast; }
  int32_t bits_per_element() const;
  /// Elements stored quantised: elements - bf16_tail_elements (BF16: elements).
  int32_t quantized_elements() const { return elements - bf16_tail_elements; }
  int64_t quantized_bytes() const;  // quantized_elements*bits/8 (BF16: 2*elements)
  int64_t num_scales() const;       // ceil(quantized_elements/elements_per_sf); 0 for BF16
  /// Bytes of one scale: 4 for fp32 and fp32_pow2, 1 for ue8m0 and e4m3, 0 for BF16.
  int64_t scale_width() const;
  int64_t sf_bytes() const;         // num_scales * scale_width
  /// 2 per tail element, 1 for an e4m3 tail.
  int64_t tail_bytes() const { return int64_t{e4m3_tail ? 1 : 2} * bf16_tail_elements; }

  /// Bytes between one token's scales and the next token's in a block-planar record's
  /// scale region: sf_bytes, rounded up to 8 for do_cast formats (MODEL1's 7 + 1, SPEC §2).
  int64_t sf_token_bytes() const;
  /// Byte offset of the tail from the token's data: quantized_bytes + sf_bytes
  /// (interleaved), quantized_bytes (block-planar, or scales_last: the tail follows the data).
  int64_t tail_offset() const { return quantized_bytes() + (token_interleaved && !scales_last ? sf_bytes() : 0); }
  /// Byte offset of the scales from an interleaved token's data: quantized_bytes, or
  /// quantized_bytes + tail_bytes when scales_last.
  int64_t scales_in_record() const { return quantized_bytes() + (scales_last ? tail_bytes() : 0); }
  int64_t bytes_per_token() const;  // quantized_bytes + sf_token_bytes + tail_bytes
  /// gcd(32, bytes_per_token): the widest alignment a kernel may assume per token.
  int64_t token_alignment() const;
  /// Bytes per output row of load_paged_kv_cache's data buffer (SPEC §5.2):
  /// do_cast/BF16 -> 2*elements (BF16), index -> quantized_bytes.
  int64_t load_row_bytes() const;
  /// Bytes per output row of the scale buffer: index formats sf_bytes, else 0.
  int64_t load_scale_row_bytes() const;

  bool operator==(const KVCacheFormat&) const = default;

  // The supported formats (SPEC §2 table).
  static KVCacheFormat V41();
  static KVCacheFormat V41_FP4();
  static KVCacheFormat FP4_INDEX();
  static KVCacheFormat FP8_FP32SF_INDEX();
  static KVCacheFormat MXFP8_INDEX();
  /// vLLM fp8_ds_mla / FlashMLA V32: 512 e4m3, 4 fp32 power-of-two tile scales, 64
  /// BF16 rope values; 656 bytes (SPEC §2, §4.6).
  static KVCacheFormat FP8_DS_MLA();
  /// vLLM's DSA indexer K cache with its ue8m0 option: MXFP8_INDEX's layout with one
  /// fp32 power-of-two scale per 128 (floor first); 132 bytes (SPEC §2, §4.7).
  static KVCacheFormat FP8_POW2SF_INDEX();
  /// FlashMLA MODEL1 (d = 512): block-planar, every token's 448 e4m3 + 64 BF16 rope
  /// values, then every token's 7 ue8m0 tile scales (one per 64) + 1 pad byte; 584
  /// bytes, blocks padded to a multiple of 576 (SPEC §2, §3, §4.8).
  static KVCacheFormat MODEL1();
  /// vLLM nvfp4_ds_mla / FlashMLA V32_NVFP4_FP8ROPE (SM100): 512 e2m1, then 64 rope
  /// values as unscaled e4m3, then 32 e4m3 scales (one per 16, transposed, written by
  /// §4.9's rule); 352 bytes (SPEC §2, §4.9).
  static KVCacheFormat NVFP4_DS_MLA();
  /// BF16(E): E a multiple of 8, 8 <= E <= 4096; throws kInvalidFormat otherwise.
  static KVCacheFormat BF16(int32_t elements);
};

/// The nine quantised formats plus BF16(512), in SPEC order.
std::vector<KVCacheFormat> supported_formats();
/// The quantised formats' names in SPEC order, ", "-separated ("V41, V41_FP4, ...,
/// NVFP4_DS_MLA"): the one list the messages and help texts print.
std::string quantized_format_names();
/// "V41", "V41_FP4", "FP4_INDEX", "FP8_FP32SF_INDEX", "MXFP8_INDEX", "FP8_DS_MLA",
/// "FP8_POW2SF_INDEX", "MODEL1", "NVFP4_DS_MLA", "BF16(E)".
/// Throws Error(kUnknownFormat) listing the valid names.
KVCacheFormat format_by_name(const std::string& name);

std::string to_string(QuantizedDtype);
std::string to_string(SfFormat);

/// Resolves a cache's format from its dtype and shape [..., 1, bytes_per_token]
/// (uint8) or [..., E] (bf16). Throws kUnknownFormat when nothing matches and
/// kAmbiguousFormat naming both candidates for 132-byte records unless sf_format
/// picks one (SPEC §2).
KVCacheFormat resolve_format(CacheDtype dtype, std::span<const int64_t> shape,
                             std::optional<SfFormat> sf_format = std::nullopt);

}  // namespace kvcheck
