// Decoded first-difference reports (SPEC §6): which op, format, backend, and the
// first differing byte as (block, token, data element i | scale group g | padding)
// with expected and actual shown as hex and as decoded values. Shared by the
// properties, the fuzzers and `kvcheck explain`.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "impl/op_args.h"

namespace kvcheck::props {

/// Where one byte of a paged cache lives (offsets are bytes from the cache base).
struct CacheByteLocation {
  enum class Kind { kData, kScale, kTail, kPadding };
  int64_t block = 0;
  int64_t token = 0;  // -1 for padding past the records; the token of a scale record's pad byte
  Kind kind = Kind::kData;
  int64_t index = 0;  // data element (e2m1: the low element of the byte), scale group, or
                      // the row element a BF16 tail byte holds
  // Byte offsets of the token's data and of its scales in the buffer (-1 for padding):
  // every decoder of the token's bytes starts from these (a tail from data_start).
  int64_t data_start = -1;
  int64_t scale_start = -1;
};

/// Decodes a byte offset with the SPEC §3 formulas (written here, independent of impl/).
/// block_stride: the cache's, 0 = packed; every byte past a block's records is
/// kPadding (its padding, then other layers' pages; index counts from the records' end),
/// and so is a block-planar do_cast record's scale pad byte (token set, index within the pad).
CacheByteLocation locate_cache_byte(const KVCacheFormat& format, int32_t block_size, int64_t offset,
                                    int64_t block_stride = 0);

/// The first differing byte of two buffers of equal size (`first` == size() when they
/// are equal) and how many bytes differ.
struct ByteDiff {
  size_t first = 0;
  int64_t count = 0;
};
ByteDiff byte_diff(std::span<const uint8_t> expected, std::span<const uint8_t> actual);

/// "" when equal; otherwise a multi-line report of the first differing cache byte and
/// the number of differing bytes. Buffers are the whole cache (size_bytes).
std::string diff_cache(const CacheLayout& layout, std::span<const uint8_t> expected,
                       std::span<const uint8_t> actual);

/// "" when equal; otherwise the first differing load-output row/element decoded
/// (BF16 value, raw e4m3/e2m1 code, or scale) for `rows` rows. Strides as in LoadOutput.
std::string diff_load_output(const KVCacheFormat& format, int64_t rows, const LoadOutput& expected,
                             const LoadOutput& actual);

}  // namespace kvcheck::props
