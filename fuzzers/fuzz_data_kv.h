// The fuzz decoder of the K/V family (SPEC §7): libFuzzer bytes -> the scenario types
// of properties/gen/kv_gen.h (the ones the properties generate), via
// FuzzedDataProvider. Never throws, accepts any byte string; unlike the generators
// it also produces invalid inputs (raw slots, table entries, scales, strides, dtypes)
// so the error paths are fuzzed too.
#pragma once

#include "properties/gen/kv_gen.h"

class FuzzedDataProvider;

namespace kvcheck::fuzz {

/// Caps that keep one input small and fast.
inline constexpr int64_t kMaxKvCacheElements = 1 << 17;  // per cache view
inline constexpr int32_t kMaxKvRows = 64;
inline constexpr int64_t kMaxKvRowElements = 1 << 16;   // rows * H * D

props::KvCacheShape decode_kv_cache_shape(FuzzedDataProvider& fdp);
props::StoreKvScenario decode_store_kv(FuzzedDataProvider& fdp);
props::GatherKvScenario decode_gather_kv(FuzzedDataProvider& fdp);

}  // namespace kvcheck::fuzz
