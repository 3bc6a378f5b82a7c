// The per-entry rules of the checked K/V entries (SPEC §7.3-§7.5) that read
// data-dependent inputs (scale values, cu_seqlens_k, block_table), as host/device
// predicates: the cpu validators (impl/kv_layout.cpp, impl/validate_kv.cpp) and the
// CUDA validation kernels (impl/cuda/validate.cu) evaluate the same rule in the same
// order, and build the same message (impl/validate_errors.h). C++17.
#pragma once

#include <cstdint>

#include "impl/host_device.h"
#include "impl/kv_paged_layout.h"

namespace kvcheck {

/// SPEC §7.3: a scale must be positive and finite (zero, negative, NaN, Inf fail).
KVCHECK_HD bool kv_scale_ok(float s) { return s > 0.0f && s <= 3.40282347e+38f; }

/// SPEC §7.5 step 4, one output (out_k, then out_v) when cu_seqlens_k ends at
/// total > 0: the first rule it breaks, in the order the spec lists them.
enum class KvOutRule : int32_t { kOk = 0, kRows, kNull, kMisaligned, kOverlap };
KVCHECK_HD KvOutRule kv_output_rule(int64_t rows, int64_t total, bool null, bool misaligned, int64_t token_stride,
                                    int64_t head_stride, int32_t num_kv_heads, int32_t head_dim) {
  if (rows < total) return KvOutRule::kRows;
  if (null) return KvOutRule::kNull;
  if (misaligned) return KvOutRule::kMisaligned;
  const KvAxis axes[] = {{token_stride, total}, {head_stride, num_kv_heads}, {1, head_dim}};
  if (token_stride < 0 || head_stride < 0 || !kv_axes_non_overlapping(axes, 3)) return KvOutRule::kOverlap;
  return KvOutRule::kOk;
}

/// SPEC §7.5: the table position of sequence i's token 0, from its seq_starts entry
/// (0 without seq_starts): the entry itself (token unit) or the entry rounded down to
/// a multiple of block_size (block unit). `start` >= 0.
KVCHECK_HD int64_t kv_seq_start(int32_t start, bool block_unit, int32_t block_size) {
  return block_unit ? int64_t{start} - start % block_size : int64_t{start};
}
/// SPEC §7.5 step 5: a sequence of `len` > 0 tokens from table position `start` needs
/// more positions than its table row holds (max_blocks * block_size).
KVCHECK_HD bool kv_sequence_too_long(int64_t start, int64_t len, int32_t max_blocks, int32_t block_size) {
  return len > 0 && start + len > int64_t{max_blocks} * block_size;
}
/// Table columns [first, end) that tokens [start, start + len) of a row need: none for
/// len 0, else [start / block_size, ceil((start + len) / block_size)).
struct KvColumns {
  int64_t first, end;
};
KVCHECK_HD KvColumns kv_needed_columns(int64_t start, int64_t len, int32_t block_size) {
  if (len <= 0) return {0, 0};
  return {start / block_size, (start + len + block_size - 1) / block_size};
}
/// The sequence token that first needs table column j (of a row from `start`).
KVCHECK_HD int64_t kv_column_token(int64_t j, int64_t start, int32_t block_size) {
  const int64_t t = j * block_size - start;
  return t > 0 ? t : 0;
}
/// SPEC §7.5 step 5, a needed table entry: -1 (kRangeOutOfTable), outside [0,
/// num_blocks) (kBlockOutOfRange), or fine.
enum class KvTableRule : int32_t { kOk = 0, kMissing, kOutOfRange };
KVCHECK_HD KvTableRule kv_table_entry_rule(int32_t block, int64_t num_blocks) {
  if (block == -1) return KvTableRule::kMissing;
  if (block < 0 || block >= num_blocks) return KvTableRule::kOutOfRange;
  return KvTableRule::kOk;
}

}  // namespace kvcheck
