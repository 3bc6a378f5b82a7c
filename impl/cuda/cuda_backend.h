// The `cuda` backend of the harness: the Backend interface on HOST buffers as a thin
// layer over the device API (device_api.h). Each call uploads its inputs and the
// WHOLE cache and output buffers into guarded device allocations (GuardedBuffer:
// sentinel bands on both sides), runs the checked device entry point on its own
// stream with programmatic dependent launch, downloads the whole buffers, checks the
// guards, and only then throws the device status's kvcheck::Error (so a kernel that
// writes despite an error is seen). A CUDA failure or a guard hit throws
// std::runtime_error (never a kvcheck::Error: harnesses treat kUnsupported as skip).
#pragma once

#include <memory>
#include <string>

#include "impl/backend.h"
#include "impl/cuda/device_api.h"

namespace kvcheck::cuda {

class CudaBackend final : public Backend {
 public:
  CudaBackend();
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;
  std::string_view name() const override { return "cuda"; }
  BackendCapabilities capabilities() const override {
    BackendCapabilities c;
    c.kv_family = true;
    return c;
  }
  // cuda_backend.cpp
  void store_kv_cache(const KVInput& kv, std::span<const int32_t> slot_mapping,
                      const CacheView& cache) const override;
  void load_paged_kv_cache(const ConstCacheView& cache, std::span<const int32_t> load_segments,
                           int32_t total_k, const LoadOutput& out) const override;
  // index_host.cpp
  void convert_kv_index(const ConvertKvIndexArgs& args, std::span<int32_t> out) const override;
  void kv_index_cat(std::span<const int32_t> left, int32_t wl, std::span<const int32_t> right,
                    int32_t wr, int32_t num_q, int32_t total_k_swa_cached,
                    int32_t total_k_swa_cur, std::span<int32_t> out) const override;
  void expand_swa_index(std::span<const int32_t> pivots, int32_t num_q, int32_t width,
                        std::span<int32_t> out) const override;
  void swa_decode_index(std::span<const int32_t> start_len, int32_t num_q, int32_t width,
                        int32_t ring_size, std::span<int32_t> out) const override;
  // kv_host.cpp
  void store_kv(const KvTokensIn& key, const KvTokensIn& value, std::span<const int32_t> slot_mapping,
                const KvCacheView& cache) const override;
  void gather_kv(const ConstKvCacheView& cache, std::span<const int32_t> block_table, int32_t max_blocks,
                 std::span<const int32_t> cu_seqlens_k, const KvTokensOut& out_k,
                 const KvTokensOut& out_v) const override;

 private:
  LaunchOptions opts_;  // this backend's stream, PDL on
};

/// The backend when a CUDA device that runs this build's kernels is present, else
/// nullptr and (when why_not is given) the reason, e.g. "no CUDA device".
std::shared_ptr<const Backend> make_cuda_backend(std::string* why_not);

}  // namespace kvcheck::cuda
