// Scalar reference store_kv_cache (SPEC §5.1), one token and one element at a time.
#pragma once

#include <cstdint>
#include <span>

#include "impl/backend.h"  // plain argument types only; no production code is called

namespace kvcheck::ref {

/// SPEC §5.1. cache points at num_blocks*block_stride bytes of `format`. Validates
/// everything first (kInvalidFormat, kInvalidArgument, kShapeMismatch,
/// kSlotOutOfRange, kDuplicateSlot) and writes nothing on error.
void store_kv_cache(const KVInput& kv, std::span<const int32_t> slot_mapping, uint8_t* cache,
                    const KVCacheFormat& format, int64_t num_blocks, int32_t block_size);

}  // namespace kvcheck::ref
