#include "impl/validate_kv.h"

#include <string>

#include "impl/error.h"
#include "impl/kv_layout.h"
#include "impl/validate_slots.h"

namespace kvcheck {
namespace {

using std::to_string;

[[noreturn]] void fail(ErrorCode code, const std::string& message) { throw Error(code, message); }

void validate_rows(const KvTokensIn& rows, int64_t n, const char* what) {
  if (rows.rows < n)
    fail(ErrorCode::kShapeMismatch, std::string(what) + " has " + to_string(rows.rows) +
                                        " rows but the operation needs " + to_string(n));
  if (rows.token_stride < 0 || rows.head_stride < 0)
    fail(ErrorCode::kInvalidArgument, std::string(what) + " has a negative stride (token " +
                                          to_string(rows.token_stride) + ", head " +
                                          to_string(rows.head_stride) + ")");
  if (rows.data == nullptr) fail(ErrorCode::kShapeMismatch, std::string(what) + " data is null");
  if (reinterpret_cast<uintptr_t>(rows.data) % 2 != 0)
    fail(ErrorCode::kInvalidArgument, std::string(what) + " data is not aligned to its 2-byte elements");
}

}  // namespace

void validate_model_dtype(KvDtype cache_dtype, KvDtype rows_dtype, const char* what) {
  if (!is_model_dtype(rows_dtype) || (!is_fp8(cache_dtype) && rows_dtype != cache_dtype))
    fail(ErrorCode::kInvalidArgument,
         std::string(what) + " is " + to_string(rows_dtype) + " but a " + to_string(cache_dtype) +
             " cache takes " +
             (is_fp8(cache_dtype) ? std::string("bf16 or fp16") : to_string(cache_dtype)) +
             " rows (SPEC §7.1)");
}

void validate_same_model_dtype(KvDtype k, KvDtype v, const char* what_k, const char* what_v) {
  if (k != v)
    fail(ErrorCode::kInvalidArgument, std::string(what_k) + " is " + to_string(k) + " but " + what_v + " is " +
                                          to_string(v) + ": key and value share one model dtype (SPEC §7.1)");
}

void validate_store_kv_shape(const KvTokensIn& key, const KvTokensIn& value, int64_t n,
                             const ConstKvCacheView& cache) {
  const KvCacheLayout& l = cache.layout;
  validate_kv_cache(cache);
  validate_kv_scales(l, cache.scales);
  validate_model_dtype(l.dtype, key.dtype, "key");
  validate_model_dtype(l.dtype, value.dtype, "value");
  validate_same_model_dtype(key.dtype, value.dtype, "key", "value");
  if (n == 0) return;
  validate_rows(key, n, "key");
  validate_rows(value, n, "value");
}

void validate_store_kv(const KvTokensIn& key, const KvTokensIn& value,
                       std::span<const int32_t> slot_mapping, const ConstKvCacheView& cache) {
  const KvCacheLayout& l = cache.layout;
  validate_store_kv_shape(key, value, static_cast<int64_t>(slot_mapping.size()), cache);

  validate_slot_mapping(slot_mapping, l.num_blocks, l.block_size);
}

int64_t validate_gather_kv(const ConstKvCacheView& cache, std::span<const int32_t> block_table,
                           int32_t max_blocks, std::span<const int32_t> cu_seqlens_k,
                           const KvTokensOut& out_k, const KvTokensOut& out_v) {
  const KvCacheLayout& l = cache.layout;
  validate_kv_cache(cache);
  validate_kv_scales(l, cache.scales);
  validate_model_dtype(l.dtype, out_k.dtype, "out_k");
  validate_model_dtype(l.dtype, out_v.dtype, "out_v");
  validate_same_model_dtype(out_k.dtype, out_v.dtype, "out_k", "out_v");
  if (cu_seqlens_k.empty())
    fail(ErrorCode::kShapeMismatch, "cu_seqlens_k is empty (it has num_seqs + 1 entries)");
  if (cu_seqlens_k[0] != 0)
    fail(ErrorCode::kInvalidArgument, "cu_seqlens_k[0] = " + to_string(cu_seqlens_k[0]) + ", not 0");
  for (size_t i = 0; i + 1 < cu_seqlens_k.size(); ++i)
    if (cu_seqlens_k[i + 1] < cu_seqlens_k[i])
      fail(ErrorCode::kInvalidArgument,
           "cu_seqlens_k decreases: cu_seqlens_k[" + to_string(i + 1) + "] = " +
               to_string(cu_seqlens_k[i + 1]) + " < cu_seqlens_k[" + to_string(i) +
               "] = " + to_string(cu_seqlens_k[i]));
  if (max_blocks < 0)
    fail(ErrorCode::kInvalidArgument, "max_blocks = " + to_string(max_blocks) + " < 0");
  const int64_t num_seqs = static_cast<int64_t>(cu_seqlens_k.size()) - 1;
  if (static_cast<int64_t>(block_table.size()) != num_seqs * max_blocks)
    fail(ErrorCode::kShapeMismatch, "block_table has " + to_string(block_table.size()) +
                                        " entries, not num_seqs " + to_string(num_seqs) +
                                        " * max_blocks " + to_string(max_blocks));
  const int64_t total = cu_seqlens_k[static_cast<size_t>(num_seqs)];
  if (total > 0) {
    const KvTokensOut* outs[] = {&out_k, &out_v};
    const char* names[] = {"out_k", "out_v"};
    for (int s = 0; s < 2; ++s) {
      const KvTokensOut& o = *outs[s];
      if (o.rows < total)
        fail(ErrorCode::kShapeMismatch, std::string(names[s]) + " has " + to_string(o.rows) +
                                            " rows but cu_seqlens_k ends at " + to_string(total));
      if (o.data == nullptr) fail(ErrorCode::kShapeMismatch, std::string(names[s]) + " data is null");
      if (reinterpret_cast<uintptr_t>(o.data) % 2 != 0)
        fail(ErrorCode::kInvalidArgument, std::string(names[s]) + " data is not aligned to its 2-byte elements");
      const KvAxis axes[] = {{o.token_stride, total}, {o.head_stride, l.num_kv_heads}, {1, l.head_dim}};
      if (o.token_stride < 0 || o.head_stride < 0 || !kv_axes_non_overlapping(axes))
        fail(ErrorCode::kInvalidArgument,
             std::string(names[s]) + " rows overlap (token_stride " + to_string(o.token_stride) +
                 ", head_stride " + to_string(o.head_stride) + ", " +
                 to_string(l.num_kv_heads) + " heads x " + to_string(l.head_dim) + ")");
    }
  }
  const int64_t bs = l.block_size;
  for (int64_t i = 0; i < num_seqs; ++i) {
    const int64_t len = int64_t{cu_seqlens_k[static_cast<size_t>(i + 1)]} - cu_seqlens_k[static_cast<size_t>(i)];
    if (len > int64_t{max_blocks} * bs)
      fail(ErrorCode::kRangeOutOfTable, "sequence " + to_string(i) + " has " + to_string(len) +
                                            " tokens but its table row holds " +
                                            to_string(max_blocks) + " blocks of " + to_string(bs));
    for (int64_t j = 0; j * bs < len; ++j) {
      const int32_t block = block_table[static_cast<size_t>(i * max_blocks + j)];
      const std::string where = "block_table[" + to_string(i) + "][" + to_string(j) + "] = " +
                                to_string(block) + " (needed by token " + to_string(j * bs) +
                                " of sequence " + to_string(i) + ")";
      if (block == -1) fail(ErrorCode::kRangeOutOfTable, where + " is -1");
      if (block < 0 || block >= l.num_blocks)
        fail(ErrorCode::kBlockOutOfRange,
             where + " is not in [0, num_blocks = " + to_string(l.num_blocks) + ")");
    }
  }
  return total;
}

}  // namespace kvcheck
