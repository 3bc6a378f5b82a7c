// Scalar reference store_kv_cache (SPEC §5.1), one token and one element at a time.
#pragma once

#include <cstdint>
#include <span>

#include "impl/op_args.h"  // plain argument types only; no production code is called

namespace kvcheck::ref {

/// SPEC §5.1. `cache` is the whole buffer (at least (num_blocks - 1)*block_stride +
/// the packed stride bytes of `format`; an empty span with a null pointer is a null
/// cache); block_stride 0 = packed (SPEC §3). Validates everything first
/// (kInvalidFormat, kInvalidArgument, kShapeMismatch, kSlotOutOfRange, kDuplicateSlot)
/// and writes nothing on error.
void store_kv_cache(const KVInput& kv, std::span<const int32_t> slot_mapping, std::span<uint8_t> cache,
                    const KVCacheFormat& format, int64_t num_blocks, int32_t block_size, int64_t block_stride = 0);

/// docs/spec.md §8.2 concat_and_cache_mla: the store of SPEC §5.1 on the rows
/// kv_c[i] (kv_lora_rank elements) ++ k_pe[i] (rope_dim elements), cache as for
/// store_kv_cache. Validates everything first (§8.2 order: the cache, kv_lora_rank and
/// rope_dim, each source's rows and stride, null pointers, then the slots) and writes
/// nothing on error.
/// With rope (docs/spec.md §8.4), k_pe's rows are rotated (rope_rows) before the store;
/// its checks follow §8.4's order.
void concat_and_cache_mla(const KVInput& kv_c, const KVInput& k_pe, int32_t kv_lora_rank, int32_t rope_dim,
                          std::span<const int32_t> slot_mapping, std::span<uint8_t> cache,
                          const KVCacheFormat& format, int64_t num_blocks, int32_t block_size,
                          int64_t block_stride = 0, const RopeArgs* rope = nullptr);



/// One paged cache as store_kv_cache takes it (its last five arguments).
struct PagedBuffer {
  std::span<uint8_t> bytes;
  KVCacheFormat format;
  int64_t num_blocks = 0;
  int32_t block_size = 0;
  int64_t block_stride = 0;  // 0 = packed
};

/// docs/spec.md §8.2 "Split caches": kv_c[i] (kv_lora_rank elements) stored into
/// `cache` and k_pe[i] (rope_dim elements) into `pe_cache`, each as SPEC §5.1 stores a
/// row, both at slot_mapping[i]. Validates everything first (the cache, pe_cache and
/// its geometry against the cache's, kv_lora_rank and rope_dim against the two row
/// widths, each source's rows and stride, null pointers, the caches sharing a byte,
/// then the slots) and writes nothing on error.
void concat_and_cache_mla_split(const KVInput& kv_c, const KVInput& k_pe, int32_t kv_lora_rank, int32_t rope_dim,
                                std::span<const int32_t> slot_mapping, const PagedBuffer& cache,
                                const PagedBuffer& pe_cache, const RopeArgs* rope = nullptr);

}  // namespace kvcheck::ref
