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

}  // namespace kvcheck::ref
