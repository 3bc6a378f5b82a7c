// The production CPU backend: vectorised (instruction set picked at run time) and
// multi-threaded. Shares no numerics code with reference/.
#pragma once

#include "impl/backend.h"
#include "impl/cpu/parallel.h"

namespace kvcheck::cpu {

class CpuBackend final : public Backend {
 public:
  std::string_view name() const override { return "cpu"; }
  BackendCapabilities capabilities() const override {
    BackendCapabilities c;
    c.ops = ~0u;  // every operation, the K/V family included
    return c;
  }
  // impl/cpu/parallel.h: a thread-local override of the work split. Inline, so the
  // vtable lives with the kernels (store.cpp), in the kvcheck_cpu library.
  bool set_test_parallelism(int32_t max_threads, int64_t min_bytes_per_thread) const override {
    return set_thread_parallelism(max_threads, min_bytes_per_thread);
  }
  // impl/cpu/store.cpp
  void store_kv_cache(const KVInput& kv, std::span<const int32_t> slot_mapping,
                      const CacheView& cache) const override;
  void concat_and_cache_mla(const ConcatMlaArgs& args) const override;
  // impl/cpu/load.cpp
  void load_paged_kv_cache(const ConstCacheView& cache, std::span<const int32_t> load_segments,
                           int32_t total_k, const LoadOutput& out) const override;
  // impl/cpu/index_transforms.cpp
  void convert_kv_index(const ConvertKvIndexArgs& args, std::span<int32_t> out) const override;
  void kv_index_cat(std::span<const int32_t> left, int32_t wl, std::span<const int32_t> right,
                    int32_t wr, int32_t num_q, int32_t total_k_swa_cached,
                    int32_t total_k_swa_cur, std::span<int32_t> out) const override;
  void expand_swa_index(std::span<const int32_t> pivots, int32_t num_q, int32_t width,
                        std::span<int32_t> out) const override;
  void swa_decode_index(std::span<const int32_t> start_len, int32_t num_q, int32_t width,
                        int32_t ring_size, std::span<int32_t> out) const override;
  // impl/cpu/store_kv.cpp
  void store_kv(const KvTokensIn& key, const KvTokensIn& value, std::span<const int32_t> slot_mapping,
                const KvCacheView& cache, const RopeArgs* rope = nullptr) const override;
  // impl/cpu/gather_kv.cpp
  void gather_kv(const GatherKvArgs& args) const override;
  // impl/cpu/copy_blocks.cpp
  void copy_blocks(const CopyBlocksArgs& args) const override;
  // impl/cpu/swap_blocks.cpp
  void swap_blocks(const SwapBlocksArgs& args) const override;
};

}  // namespace kvcheck::cpu
