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
  /// Rows padded by `data_pad` / `scale_pad` bytes (odd pads: odd strides), starting
  /// `offset` bytes into the buffers (a misaligned base); the bytes before stay put.
  LoadBuffers(const KVCacheFormat& format, int64_t rows, uint32_t seed, int64_t data_pad, int64_t scale_pad,
              int32_t offset);
  /// The output of s: s.out_rows rows laid out by s.out_data_pad, out_scale_pad, out_offset.
  explicit LoadBuffers(const LoadScenario& s);
  LoadBuffers(const LoadBuffers&) = delete;
  LoadBuffers& operator=(const LoadBuffers&) = delete;
};

/// A store's kv rows placed s.far_row_stride elements apart in a sparse reservation
/// (MAP_NORESERVE: only the pages of the rows exist) after 4 GiB of zero pages, so
/// row offsets pass 2^31 elements and a kernel that truncates one to 32 bits reads
/// zeros instead of the row. Throws std::runtime_error when the address space is not
/// available (vm.overcommit_memory=2).
class FarKvRows {
 public:
  explicit FarKvRows(const StoreScenario& s);
  ~FarKvRows();
  FarKvRows(const FarKvRows&) = delete;
  FarKvRows& operator=(const FarKvRows&) = delete;
  KVInput input() const { return input_; }

 private:
  void* base_ = nullptr;
  size_t size_ = 0;
  KVInput input_;
};

/// Sets backend's work split (Backend::set_test_parallelism) to `threads` threads with
/// a one-byte threshold for one call, restores its default after; notes the case
/// class "multi-thread" when the backend took it and `work_rows` >= 2. No-op for the
/// reference (nullptr) and threads <= 0.
class ScopedParallelism {
 public:
  ScopedParallelism(const Backend* backend, int32_t threads, int64_t work_rows);
  ~ScopedParallelism();
  ScopedParallelism(const ScopedParallelism&) = delete;
  ScopedParallelism& operator=(const ScopedParallelism&) = delete;

 private:
  const Backend* backend_ = nullptr;
};

/// Runs the op; returns the ErrorCode it threw (its message in *what when given), or
/// nullopt when it returned. Exceptions other than kvcheck::Error propagate. The
/// store passes slot_mapping as the head of a buffer that goes on with s.slot_tail.
std::optional<ErrorCode> run_store(const Backend* backend /*nullptr = reference*/,
                                   const StoreScenario& s, KVCache& cache, std::string* what = nullptr);
std::optional<ErrorCode> run_load(const Backend* backend /*nullptr = reference*/,
                                  const LoadScenario& s, const KVCache& cache, LoadBuffers& out,
                                  std::string* what = nullptr);

/// "op=store format=V41 backend=cpu block_size=133 num_blocks=2": the header of
/// every failure message.
std::string context(const std::string& op, const CacheShape& shape, std::string_view backend);
std::string show_error(const std::optional<ErrorCode>& e);

}  // namespace kvcheck::props
