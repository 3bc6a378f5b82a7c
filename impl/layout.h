// CacheLayout: the one owner of a paged cache's strides and byte offsets (SPEC §3).
// Production code computes every address through it; reference/ writes the formulas
// out on its own and a property checks the two agree.
#pragma once

#include <cstdint>

#include "impl/format.h"
#include "impl/paged_layout.h"

namespace kvcheck {

/// The packed block_stride of SPEC §3: interleaved round_up(bs*bpt, lcm(32, bpt)), else
/// round_up(bs*bpt, 32). Bytes.
int64_t block_stride_for(const KVCacheFormat& format, int32_t block_size);

struct CacheLayout {
  KVCacheFormat format;
  int64_t num_blocks = 0;    // blocks in the cache
  int32_t block_size = 0;    // tokens per block, any value >= 1
  int64_t block_stride = 0;  // bytes from block b to block b+1 (>= packed_stride())

  /// Validates format, num_blocks >= 1, block_size >= 1, that the cache size fits in
  /// int64, and block_stride (SPEC §3): 0 = the packed stride block_stride_for(format,
  /// block_size); else a multiple of 32 at least that (the bytes between one block's
  /// packed end and the next block are not the cache's: other layers' pages, padding).
  /// Throws Error(kInvalidFormat | kInvalidArgument).
  static CacheLayout make(const KVCacheFormat& format, int64_t num_blocks, int32_t block_size,
                          int64_t block_stride = 0);

  /// SPEC §3's packed stride of this format and block_size: a block's own bytes.
  int64_t packed_stride() const { return block_stride_for(format, block_size); }
  /// Bytes a buffer must hold from the cache's base: (num_blocks - 1) * block_stride +
  /// packed_stride() (num_blocks * block_stride when packed).
  int64_t size_bytes() const { return (num_blocks - 1) * block_stride + packed_stride(); }
  int64_t num_slots() const { return num_blocks * block_size; }
  /// Bytes of a block holding records; [record_bytes, block_stride) is padding.
  int64_t record_bytes() const { return int64_t{block_size} * format.bytes_per_token(); }
  /// Byte offset of token t's quantised data (or BF16 elements) in block b.
  int64_t data_offset(int64_t block, int64_t token) const;
  /// Byte offset of token t's scales in block b (undefined for BF16).
  int64_t scale_offset(int64_t block, int64_t token) const;
  /// Distance between consecutive tokens' data / scales within a block, in bytes.
  int64_t data_token_stride() const;
  int64_t scale_token_stride() const;
  /// The same geometry as plain values for kernels (impl/paged_layout.h owns the
  /// address formula; data_offset/scale_offset above go through it).
  PagedLayout paged() const;
  /// The CacheLayout a PagedLayout claims to be. Throws what make() throws, and
  /// kInvalidArgument when its derived fields are not what make(...).paged() gives
  /// (a hand-built layout with a wrong stride would send kernels outside the cache).
  static CacheLayout from_paged(const PagedLayout& p);
};

}  // namespace kvcheck
