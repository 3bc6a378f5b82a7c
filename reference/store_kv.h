// Scalar reference store_kv (SPEC §7.4), one element at a time.
#pragma once

#include <cstdint>
#include <span>

#include "impl/kv_format.h"
#include "impl/rope_args.h"

namespace kvcheck::ref {

/// SPEC §7.4: key/value rows [>= n][H][D] of the model dtype into the K/V caches at
/// slot_mapping[i] (-1 skipped), FP8 quantised per SPEC §7.3. Validates everything
/// first in the spec's order and writes nothing on error.
/// With rope (docs/spec.md §8.4): every head of key row i rotated at positions[i] first
/// (rounded to the key's dtype), its checks after the dtypes (shape) and the rows (the
/// positions).
void store_kv(const KvTokensIn& key, const KvTokensIn& value, std::span<const int32_t> slot_mapping,
              const KvCacheView& cache, const RopeArgs* rope = nullptr);

}  // namespace kvcheck::ref
