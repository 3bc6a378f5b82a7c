// A CUDA_DEVICE plugin whose BF16 store is correct except that it also writes one
// byte past the end of the cache: the device harness's guard band must catch it
// ("wrote outside the cache ... guard byte at offset <size>"). Built with
// -DKVCHECK_WRITE_INPUT it writes into slot_mapping instead, which store_kv_cache only
// reads: the transport must say so ("wrote into slot_mapping, which it only reads").
// Runs on the GPU only.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>

#include "include/kvcheck/backend_abi.h"
#include "include/kvcheck/cuda_probe.h"

namespace {

__global__ void store_kernel(const uint16_t* kv, uint8_t* cache, const int32_t* slots, int64_t kv_stride,
                             int64_t block_stride, int64_t token_stride, int elements, int block_size,
                             int64_t cache_bytes) {
  const int64_t t = blockIdx.x;
  const int64_t s = slots[t];
#ifndef KVCHECK_WRITE_INPUT
  if (t == 0 && threadIdx.x == 0) cache[cache_bytes] = 0x5A;  // THE BUG: one byte past the end
#endif
  if (s >= 0) {
    uint16_t* dst = reinterpret_cast<uint16_t*>(cache + (s / block_size) * block_stride + (s % block_size) * token_stride);
    for (int i = threadIdx.x; i < elements; i += blockDim.x) dst[i] = kv[t * kv_stride + i];
  }
#ifdef KVCHECK_WRITE_INPUT
  (void)cache_bytes;
  __syncthreads();  // every thread of block 0 has read slots[0]
  if (t == 0 && threadIdx.x == 0) const_cast<int32_t*>(slots)[0] = static_cast<int32_t>(~s);  // THE BUG: into a read-only input
#endif
}

int store(void*, const kvcheck_store_args* a, void* stream, char* msg, size_t size) {
  const kvcheck_paged_cache& c = a->cache;
  if (c.format != KVCHECK_FORMAT_BF16) {
    std::snprintf(msg, size, "BF16 only");
    return KVCHECK_STATUS_UNSUPPORTED;
  }
  if (a->num_tokens == 0) return KVCHECK_STATUS_OK;
  store_kernel<<<static_cast<unsigned>(a->num_tokens), 128, 0, static_cast<cudaStream_t>(stream)>>>(
      a->kv, c.base, a->slot_mapping, a->kv_row_stride, c.block_stride, c.data_token_stride, c.elements,
      c.block_size, c.size_bytes);
  const cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return KVCHECK_STATUS_OK;
  std::snprintf(msg, size, "launch: %s", cudaGetErrorString(e));
  return KVCHECK_STATUS_INTERNAL;
}

int probe(void*, char* msg, size_t size) { return kvcheck_probe_cuda_device(msg, size); }

kvcheck_backend_v1_t table;

}  // namespace

extern "C" KVCHECK_PLUGIN_EXPORT int kvcheck_backend_v1(uint32_t, const kvcheck_backend_v1_t** out, char*, size_t) {
  std::memset(&table, 0, sizeof table);
  table.abi_version = KVCHECK_ABI_VERSION;
  table.struct_size = sizeof table;
#ifdef KVCHECK_WRITE_INPUT
  table.name = "input-writing-device-store";
#else
  table.name = "oob-device-store";
#endif
  table.memory_space = KVCHECK_MEMORY_CUDA_DEVICE;
  table.capabilities.ops = KVCHECK_OP_STORE_KV_CACHE;
  table.capabilities.formats = KVCHECK_FORMAT_BIT(KVCHECK_FORMAT_BF16);
  table.probe = probe;
  table.store_kv_cache = store;
  *out = &table;
  return KVCHECK_STATUS_OK;
}
