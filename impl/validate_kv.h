// Checked-entry validation of store_kv / gather_kv (SPEC §7.4, §7.5), in the order
// the spec fixes. Host code shared by every backend: it reads slot_mapping,
// block_table and cu_seqlens_k (host spans) and only compares the cache and row
// pointers, so device pointers are fine.
#pragma once

#include <cstdint>
#include <span>

#include "impl/kv_format.h"
#include "impl/rope_args.h"

namespace kvcheck {

/// SPEC §7.4: validate_kv_cache, validate_kv_scales, the model dtype, then for n =
/// slot_mapping.size() > 0 the rows (kShapeMismatch / kInvalidArgument) and each
/// slot in index order (kSlotOutOfRange, kDuplicateSlot). O(n) expected.
/// With a fused RoPE of the key rows (docs/spec.md §8.4): its shape after the dtypes, its
/// positions' rows and pointers after the rows, then its positions' values before the
/// slots (host memory).
void validate_store_kv(const KvTokensIn& key, const KvTokensIn& value,
                       std::span<const int32_t> slot_mapping, const ConstKvCacheView& cache,
                       const RopeArgs* rope = nullptr);

/// The checks of validate_store_kv that read no slot (cache, scales, dtypes, rows, and a
/// RoPE's shape and pointers, not its positions), for n = slot_mapping.size(): for
/// backends that check the slots elsewhere. Reads the scale values (host memory).
void validate_store_kv_shape(const KvTokensIn& key, const KvTokensIn& value, int64_t n,
                             const ConstKvCacheView& cache, const RopeArgs* rope = nullptr);
/// SPEC §7.4 steps 3-4 alone: the model dtypes (key, value, one dtype), a RoPE's shape
/// against head_dim (validate_rope_shape), then for n > 0 key's and value's rows and the
/// RoPE's positions rows and pointers (validate_rope_inputs). Reads no memory.
void validate_store_kv_rows(const KvTokensIn& key, const KvTokensIn& value, int64_t n, KvDtype cache_dtype,
                            const RopeArgs* rope = nullptr, int32_t head_dim = 0);

/// SPEC §7.5: cache and scales as store, the output dtypes, cu_seqlens_k, the table
/// and seq_starts shapes, the outputs (rows, null, non-overlapping), then per sequence
/// its start (kInvalidArgument), its positions against the row (kRangeOutOfTable) and
/// its needed table entries (kRangeOutOfTable, kBlockOutOfRange). Returns
/// cu_seqlens_k[b], the rows written. The per-entry rules are impl/kv_rules.h's, the
/// messages impl/validate_errors.h's (the CUDA validation kernels use both).
int64_t validate_gather_kv(const GatherKvArgs& a);
/// The steps of validate_gather_kv that read no memory, for backends that check the
/// rest on the device. After the scales: the outputs' model dtypes, then
/// cu_seqlens_k not empty (kShapeMismatch).
void validate_gather_kv_dtypes(KvDtype cache_dtype, const KvTokensOut& out_k, const KvTokensOut& out_v,
                               size_t cu_seqlens_entries);
/// After cu_seqlens_k's values: max_blocks >= 0 (kInvalidArgument), block_table_entries
/// == num_seqs * max_blocks, then seq_starts_entries 0 or num_seqs (kShapeMismatch).
void validate_gather_kv_table_shape(int32_t max_blocks, int64_t block_table_entries, int64_t num_seqs,
                                    int64_t seq_starts_entries);
/// True when token rows at `data` are not 2-byte aligned (SPEC §7.4 / §7.5).
bool kv_rows_misaligned(const void* data);

/// kInvalidArgument unless `rows_dtype` may be stored into / gathered from a cache
/// of `cache_dtype` (SPEC §7.1). `what` names the tensor ("key", "out_v").
void validate_model_dtype(KvDtype cache_dtype, KvDtype rows_dtype, const char* what);
/// kInvalidArgument unless key and value (out_k and out_v) have one dtype (SPEC §7.1:
/// no engine takes a bf16 key with an fp16 value).
void validate_same_model_dtype(KvDtype k, KvDtype v, const char* what_k, const char* what_v);

}  // namespace kvcheck
