// The adapter: kvcheck's plugin ABI (include/kvcheck/backend_abi.h) -> the engine's
// reshape_and_cache_bf16. It declares what the kernel supports (store only, the BF16
// format), refuses invalid metadata with the reference's codes (engine kernels assume
// valid metadata, so the adapter checks it first and writes nothing when it refuses),
// converts byte strides to the kernel's element strides and launches on kvcheck's stream.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "include/kvcheck/backend_abi.h"
#include "reshape_and_cache.h"

#ifndef EXAMPLE_HOST_ONLY
#include <cuda_runtime_api.h>

#include "include/kvcheck/cuda_probe.h"
#endif

namespace {

int refuse(int status, char* msg, size_t size, const std::string& text) {
  std::snprintf(msg, size, "%s", text.c_str());
  return status;
}

// The slot_mapping on the host (device plugins: a copy; a test adapter may be slow).
bool host_slots(const kvcheck_store_args& a, std::vector<int32_t>& out, void* stream) {
  out.resize(static_cast<size_t>(a.num_tokens));
#ifdef EXAMPLE_HOST_ONLY
  (void)stream;
  std::memcpy(out.data(), a.slot_mapping, out.size() * 4);
  return true;
#else
  return cudaMemcpyAsync(out.data(), a.slot_mapping, out.size() * 4, cudaMemcpyDeviceToHost,
                         static_cast<cudaStream_t>(stream)) == cudaSuccess &&
         cudaStreamSynchronize(static_cast<cudaStream_t>(stream)) == cudaSuccess;
#endif
}

// SPEC §5.1 store_kv_cache for the BF16 format, validated in the reference's order.
int store(void*, const kvcheck_store_args* a, void* stream, char* msg, size_t size) {
  const kvcheck_paged_cache& c = a->cache;
  if (c.format == KVCHECK_FORMAT_OTHER) return refuse(KVCHECK_STATUS_INVALID_FORMAT, msg, size, "not a SPEC §2 format");
  if (c.format != KVCHECK_FORMAT_BF16) return refuse(KVCHECK_STATUS_UNSUPPORTED, msg, size, "BF16 caches only");
  if (c.num_blocks < 1 || c.block_size < 1)
    return refuse(KVCHECK_STATUS_INVALID_ARGUMENT, msg, size, "num_blocks and block_size must be >= 1");
  const int64_t entry_bytes = 2 * int64_t{c.elements};
  if (c.block_stride != (c.block_size * entry_bytes + 31) / 32 * 32)
    return refuse(KVCHECK_STATUS_INVALID_ARGUMENT, msg, size, "block_stride is not SPEC §3's");
  if (c.base && c.size_bytes < c.num_blocks * c.block_stride)
    return refuse(KVCHECK_STATUS_SHAPE_MISMATCH, msg, size, "the cache buffer is smaller than num_blocks * block_stride");
  if (a->num_tokens == 0) return KVCHECK_STATUS_OK;
  if (a->kv_rows < a->num_tokens) return refuse(KVCHECK_STATUS_SHAPE_MISMATCH, msg, size, "kv has too few rows");
  if (a->kv_row_stride < c.elements)
    return refuse(KVCHECK_STATUS_INVALID_ARGUMENT, msg, size, "kv_row_stride < elements");
  if (!a->kv || !c.base) return refuse(KVCHECK_STATUS_SHAPE_MISMATCH, msg, size, "null kv or cache");
  std::vector<int32_t> slots;
  if (!host_slots(*a, slots, stream)) return refuse(KVCHECK_STATUS_INTERNAL, msg, size, "cannot read slot_mapping");
  const int64_t num_slots = c.num_blocks * c.block_size;
  std::vector<bool> seen(static_cast<size_t>(num_slots));
  for (size_t i = 0; i < slots.size(); ++i) {
    const int64_t s = slots[i];
    if (s == -1) continue;
    if (s < 0 || s >= num_slots)
      return refuse(KVCHECK_STATUS_SLOT_OUT_OF_RANGE, msg, size,
                    "slot_mapping[" + std::to_string(i) + "] = " + std::to_string(s));
    if (seen[static_cast<size_t>(s)])
      return refuse(KVCHECK_STATUS_DUPLICATE_SLOT, msg, size,
                    "slot_mapping[" + std::to_string(i) + "] = " + std::to_string(s) + " again");
    seen[static_cast<size_t>(s)] = true;
  }
  // The ABI's strides are bytes; the kernel's are elements (BF16: 2 bytes).
  reshape_and_cache_bf16(a->kv, reinterpret_cast<uint16_t*>(c.base), a->slot_mapping, a->num_tokens,
                         a->kv_row_stride, c.block_stride / 2, c.data_token_stride / 2, c.elements, c.block_size,
                         stream);
#ifndef EXAMPLE_HOST_ONLY
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess)
    return refuse(KVCHECK_STATUS_INTERNAL, msg, size, std::string("launch: ") + cudaGetErrorString(e));
#endif
  return KVCHECK_STATUS_OK;
}

#ifndef EXAMPLE_HOST_ONLY
// kvcheck's ready-made probe (include/kvcheck/cuda_probe.h): OK, or why not ("no usable
// CUDA device: no CUDA driver on this machine ...").
int probe(void*, char* msg, size_t size) { return kvcheck_probe_cuda_device(msg, size); }
#endif

kvcheck_backend_v1_t make_table() {
  kvcheck_backend_v1_t t{};
  t.abi_version = KVCHECK_ABI_VERSION;
  t.struct_size = sizeof t;
#ifdef EXAMPLE_HOST_ONLY
  t.name = "reshape-and-cache-host";
  t.memory_space = KVCHECK_MEMORY_HOST;
#else
  t.name = "reshape-and-cache";
  t.memory_space = KVCHECK_MEMORY_CUDA_DEVICE;
  t.probe = probe;
#endif
  t.capabilities.ops = KVCHECK_OP_STORE_KV_CACHE;
  t.capabilities.formats = KVCHECK_FORMAT_BIT(KVCHECK_FORMAT_BF16);
  t.store_kv_cache = store;
  return t;
}

const kvcheck_backend_v1_t table = make_table();

}  // namespace

extern "C" KVCHECK_PLUGIN_EXPORT int kvcheck_backend_v1(uint32_t, const kvcheck_backend_v1_t** out, char*, size_t) {
  *out = &table;
  return KVCHECK_STATUS_OK;
}
