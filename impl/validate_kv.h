// Checked-entry validation of store_kv / gather_kv (SPEC §7.4, §7.5), in the order
// the spec fixes. Host code shared by every backend: it reads slot_mapping,
// block_table and cu_seqlens_k (host spans) and only compares the cache and row
// pointers, so device pointers are fine.
#pragma once

#include <cstdint>
#include <span>

#include "impl/kv_format.h"

namespace kvcheck {

/// SPEC §7.4: validate_kv_cache, validate_kv_scales, the model dtype, then for n =
/// slot_mapping.size() > 0 the rows (kShapeMismatch / kInvalidArgument) and each
/// slot in index order (kSlotOutOfRange, kDuplicateSlot). O(n) expected.
void validate_store_kv(const KvTokensIn& key, const KvTokensIn& value,
                       std::span<const int32_t> slot_mapping, const ConstKvCacheView& cache);

/// The checks of validate_store_kv that read no slot (cache, scales, dtypes, rows),
/// for n = slot_mapping.size(): for backends that check the slots elsewhere.
void validate_store_kv_shape(const KvTokensIn& key, const KvTokensIn& value, int64_t n,
                             const ConstKvCacheView& cache);
/// SPEC §7.5: cache and scales as store, the output dtypes, cu_seqlens_k, the table
/// shape, the outputs (rows, null, non-overlapping), then each sequence's needed
/// table entries (kRangeOutOfTable, kBlockOutOfRange). Returns cu_seqlens_k[b], the
/// rows written.
int64_t validate_gather_kv(const ConstKvCacheView& cache, std::span<const int32_t> block_table,
                           int32_t max_blocks, std::span<const int32_t> cu_seqlens_k,
                           const KvTokensOut& out_k, const KvTokensOut& out_v);

/// kInvalidArgument unless `rows_dtype` may be stored into / gathered from a cache
/// of `cache_dtype` (SPEC §7.1). `what` names the tensor ("key", "out_v").
void validate_model_dtype(KvDtype cache_dtype, KvDtype rows_dtype, const char* what);
/// kInvalidArgument unless key and value (out_k and out_v) have one dtype (SPEC §7.1:
/// no engine takes a bf16 key with an fp16 value).
void validate_same_model_dtype(KvDtype k, KvDtype v, const char* what_k, const char* what_v);

}  // namespace kvcheck
