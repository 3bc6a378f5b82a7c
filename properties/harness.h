// Buffers and runners shared by properties, fuzzers and explain: build a cache with
// known prior contents, run one operation on a backend or the reference, and catch
// its kvcheck::Error as a value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "impl/backend.h"
#include "impl/error.h"
#include "impl/kv_cache.h"
#include "properties/gen/store_load_gen.h"

namespace kvcheck::props {

/// Canary bytes on each side of every K/V family buffer (SPEC §6 "canary bands",
/// §7.7): wider than any one head's record (head_dim <= 576 elements of <= 2 bytes).
/// Paged MLA/indexer caches use KVCache::canary_bytes_for (at least a block stride).
inline constexpr int64_t kGuardBytes = 4096;

/// A cache of `shape` holding fill_pattern(fill_seed), framed by canary bands of
/// KVCache::canary_bytes_for (at least one block stride).
KVCache make_cache(const CacheShape& shape);
CacheView view(KVCache& cache);
ConstCacheView const_view(const KVCache& cache);
KVInput kv_input(const StoreScenario& s);

/// Load output buffers of `rows` rows (row strides padded by 16 bytes so a kernel
/// writing past its row is seen), holding fill_pattern(seed).
struct LoadBuffers {
  std::vector<uint8_t> data, scales;
  LoadOutput out;
  LoadBuffers(const KVCacheFormat& format, int64_t rows, uint32_t seed);
  LoadBuffers(const LoadBuffers&) = delete;
  LoadBuffers& operator=(const LoadBuffers&) = delete;
};

/// Runs the op; returns the ErrorCode it threw, or nullopt when it returned.
/// Exceptions other than kvcheck::Error propagate.
std::optional<ErrorCode> run_store(const Backend* backend /*nullptr = reference*/,
                                   const StoreScenario& s, KVCache& cache);
std::optional<ErrorCode> run_load(const Backend* backend /*nullptr = reference*/,
                                  const LoadScenario& s, const KVCache& cache, LoadBuffers& out);

/// "op=store format=V41 backend=cpu block_size=133 num_blocks=2": the header of
/// every failure message.
std::string context(const std::string& op, const CacheShape& shape, std::string_view backend);
std::string show_error(const std::optional<ErrorCode>& e);

}  // namespace kvcheck::props
