// The kernel, written the way engines write them (cf. vLLM csrc/cache_kernels.cu):
// one CTA per token, threads striding over the entry. Replace this file with yours.
#include "reshape_and_cache.h"

#ifdef EXAMPLE_HOST_ONLY
#define EXAMPLE_GLOBAL
struct Dim { unsigned x = 0; };
#else
#include <cuda_runtime_api.h>
#define EXAMPLE_GLOBAL __global__
#endif

namespace {

#ifdef EXAMPLE_HOST_ONLY
// The host-only build runs the kernel body for every (block, thread) in a loop.
thread_local Dim blockIdx, threadIdx, blockDim;
#endif

template <typename scalar_t>
EXAMPLE_GLOBAL void reshape_and_cache_kernel(const scalar_t* __restrict__ kv, scalar_t* __restrict__ cache,
                                             const int32_t* __restrict__ slot_mapping, int64_t kv_stride,
                                             int64_t block_stride, int64_t entry_stride, int entry_size,
                                             int block_size) {
  const int64_t token_idx = blockIdx.x;
  const int64_t slot_idx = slot_mapping[token_idx];
  if (slot_idx < 0) return;  // padding token
  const int64_t block_idx = slot_idx / block_size;
  const int64_t block_offset = slot_idx % block_size;
  for (int i = threadIdx.x; i < entry_size; i += blockDim.x) {
    cache[block_idx * block_stride + block_offset * entry_stride + i] = kv[token_idx * kv_stride + i];
  }
}

}  // namespace

void reshape_and_cache_bf16(const uint16_t* kv, uint16_t* cache, const int32_t* slot_mapping, int64_t num_tokens,
                            int64_t kv_stride, int64_t block_stride, int64_t entry_stride, int32_t entry_size,
                            int32_t block_size, void* stream) {
  if (num_tokens == 0) return;
  const unsigned threads = entry_size < 512 ? static_cast<unsigned>(entry_size) : 512u;
#ifdef EXAMPLE_HOST_ONLY
  (void)stream;
  blockDim.x = threads;
  for (blockIdx.x = 0; blockIdx.x < num_tokens; ++blockIdx.x)
    for (threadIdx.x = 0; threadIdx.x < threads; ++threadIdx.x)
      reshape_and_cache_kernel<uint16_t>(kv, cache, slot_mapping, kv_stride, block_stride, entry_stride, entry_size,
                                         block_size);
#else
  reshape_and_cache_kernel<uint16_t><<<static_cast<unsigned>(num_tokens), threads, 0, static_cast<cudaStream_t>(stream)>>>(
      kv, cache, slot_mapping, kv_stride, block_stride, entry_stride, entry_size, block_size);
#endif
}
