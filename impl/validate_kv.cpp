#include "impl/validate_kv.h"

#include <string>

#include "impl/error.h"
#include "impl/kv_layout.h"
#include "impl/kv_rules.h"
#include "impl/validate_errors.h"
#include "impl/validate_rope.h"
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
  if (kv_rows_misaligned(rows.data))
    fail(ErrorCode::kInvalidArgument, std::string(what) + " data is not aligned to its 2-byte elements");
}

}  // namespace

void validate_model_dtype(KvDtype cache_dtype, KvDtype rows_dtype, const char* what) {
  if (!is_model_dtype(rows_dtype) || (!is_quantized_kv(cache_dtype) && rows_dtype != cache_dtype))
    fail(ErrorCode::kInvalidArgument,
         std::string(what) + " is " + to_string(rows_dtype) + " but a " + to_string(cache_dtype) +
             " cache takes " +
             (is_quantized_kv(cache_dtype) ? std::string("bf16 or fp16") : to_string(cache_dtype)) +
             " rows (SPEC §7.1)");
}

void validate_same_model_dtype(KvDtype k, KvDtype v, const char* what_k, const char* what_v) {
  if (k != v)
    fail(ErrorCode::kInvalidArgument, std::string(what_k) + " is " + to_string(k) + " but " + what_v + " is " +
                                          to_string(v) + ": key and value share one model dtype (SPEC §7.1)");
}

void validate_store_kv_rows(const KvTokensIn& key, const KvTokensIn& value, int64_t n, KvDtype cache_dtype,
                            const RopeArgs* rope, int32_t head_dim) {
  validate_model_dtype(cache_dtype, key.dtype, "key");
  validate_model_dtype(cache_dtype, value.dtype, "value");
  validate_same_model_dtype(key.dtype, value.dtype, "key", "value");
  if (rope) validate_rope_shape(*rope, head_dim, "head_dim");
  if (n == 0) return;
  validate_rows(key, n, "key");
  validate_rows(value, n, "value");
  if (rope) validate_rope_inputs(*rope, n);
}

void validate_store_kv_shape(const KvTokensIn& key, const KvTokensIn& value, int64_t n,
                             const ConstKvCacheView& cache, const RopeArgs* rope) {
  validate_kv_cache(cache);
  validate_kv_scales(cache.layout, cache.scales);
  validate_store_kv_rows(key, value, n, cache.layout.dtype, rope, cache.layout.head_dim);
}

void validate_store_kv(const KvTokensIn& key, const KvTokensIn& value,
                       std::span<const int32_t> slot_mapping, const ConstKvCacheView& cache, const RopeArgs* rope) {
  const KvCacheLayout& l = cache.layout;
  const int64_t n = static_cast<int64_t>(slot_mapping.size());
  validate_store_kv_shape(key, value, n, cache, rope);
  if (rope) validate_rope_positions(*rope, n);
  validate_slot_mapping(slot_mapping, l.num_blocks, l.block_size);
}

void validate_gather_kv_dtypes(KvDtype cache_dtype, const KvTokensOut& out_k, const KvTokensOut& out_v,
                               size_t cu_seqlens_entries) {
  validate_model_dtype(cache_dtype, out_k.dtype, "out_k");
  validate_model_dtype(cache_dtype, out_v.dtype, "out_v");
  validate_same_model_dtype(out_k.dtype, out_v.dtype, "out_k", "out_v");
  if (cu_seqlens_entries == 0)
    fail(ErrorCode::kShapeMismatch, "cu_seqlens_k is empty (it has num_seqs + 1 entries)");
}

void validate_gather_kv_table_shape(int32_t max_blocks, int64_t block_table_entries, int64_t num_seqs,
                                    int64_t seq_starts_entries) {
  if (max_blocks < 0)
    fail(ErrorCode::kInvalidArgument, "max_blocks = " + to_string(max_blocks) + " < 0");
  if (block_table_entries != num_seqs * max_blocks)
    fail(ErrorCode::kShapeMismatch, "block_table has " + to_string(block_table_entries) +
                                        " entries, not num_seqs " + to_string(num_seqs) +
                                        " * max_blocks " + to_string(max_blocks));
  if (seq_starts_entries != 0 && seq_starts_entries != num_seqs)
    fail(ErrorCode::kShapeMismatch, "seq_starts has " + to_string(seq_starts_entries) + " entries, not num_seqs " +
                                        to_string(num_seqs) + " (or none)");
}

bool kv_rows_misaligned(const void* data) { return reinterpret_cast<uintptr_t>(data) % 2 != 0; }

int64_t validate_gather_kv(const GatherKvArgs& a) {
  const KvCacheLayout& l = a.cache.layout;
  const std::span<const int32_t> cu = a.cu_seqlens_k;
  validate_kv_cache(a.cache);
  validate_kv_scales(l, a.cache.scales);
  validate_gather_kv_dtypes(l.dtype, a.out_k, a.out_v, cu.size());
  if (cu[0] != 0) throw cu_seqlens_first_error(cu[0]);
  for (size_t i = 0; i + 1 < cu.size(); ++i)
    if (cu[i + 1] < cu[i]) throw cu_seqlens_decrease_error(static_cast<int64_t>(i), cu[i + 1], cu[i]);
  const int64_t num_seqs = static_cast<int64_t>(cu.size()) - 1;
  validate_gather_kv_table_shape(a.max_blocks, static_cast<int64_t>(a.block_table.size()), num_seqs,
                                 static_cast<int64_t>(a.seq_starts.size()));
  const int64_t total = cu[static_cast<size_t>(num_seqs)];
  if (total > 0) {
    const KvTokensOut* outs[] = {&a.out_k, &a.out_v};
    for (const int side : {kKvSideK, kKvSideV}) {
      const KvTokensOut& o = *outs[side];
      const KvOutRule rule = kv_output_rule(o.rows, total, o.data == nullptr, kv_rows_misaligned(o.data),
                                            o.token_stride, o.head_stride, l.num_kv_heads, l.head_dim);
      if (rule != KvOutRule::kOk)
        throw gather_output_error(rule, side, o.rows, total, o.token_stride, o.head_stride, l.num_kv_heads,
                                  l.head_dim);
    }
  }
  const bool block_unit = a.seq_start_unit == SeqStartUnit::kBlock;
  for (int64_t i = 0; i < num_seqs; ++i) {
    const auto u = static_cast<size_t>(i);
    const int64_t len = int64_t{cu[u + 1]} - cu[u];
    int64_t start = 0;
    if (!a.seq_starts.empty()) {
      if (a.seq_starts[u] < 0) throw gather_seq_start_error(i, a.seq_starts[u]);
      start = kv_seq_start(a.seq_starts[u], block_unit, l.block_size);
    }
    if (kv_sequence_too_long(start, len, a.max_blocks, l.block_size))
      throw gather_sequence_too_long_error(i, start, len, a.max_blocks, l.block_size,
                                           a.seq_starts.empty() ? std::nullopt : std::optional(a.seq_starts[u]));
    const KvColumns cols = kv_needed_columns(start, len, l.block_size);
    for (int64_t j = cols.first; j < cols.end; ++j) {
      const int32_t block = a.block_table[static_cast<size_t>(i * a.max_blocks + j)];
      const KvTableRule rule = kv_table_entry_rule(block, l.num_blocks);
      if (rule != KvTableRule::kOk)
        throw gather_table_entry_error(rule, i, j, block, l.block_size, l.num_blocks, start);
    }
  }
  return total;
}

}  // namespace kvcheck
