// libkvcheck_cuda.so: the production CUDA kernels (impl/cuda, device_api.h) as a
// CUDA_DEVICE plugin. Every entry runs the CHECKED device entry point on the harness's
// stream (validation on the device, nothing written on bad input) and waits for its
// verdict, so a refusal comes back with the cpu backend's code and message. The K/V
// family: store_kv checks its slot_mapping on the device (check_slot_mapping, the
// store_kv_cache kernels); gather_kv copies its small metadata (block_table,
// cu_seqlens_k, scales) to the host and checks it there (impl/validate_kv.h).
#include <cuda_runtime_api.h>

#include <stdexcept>
#include <vector>

#include "impl/cuda/device_api.h"
#include "impl/cuda/kv_family.h"
#include "impl/kv_layout.h"
#include "impl/plugin/device_memory.h"
#include "include/kvcheck/backend_abi.h"
#include "plugins/guard.h"
#include "impl/validate_kv.h"

namespace {

using namespace kvcheck;
using cuda::DeviceBuffer;
using cuda::DeviceStatus;
using cuda::LaunchOptions;
using plugin::from_abi;
using plugin::guarded;

LaunchOptions opts(void* stream) { return {stream, true}; }  // PDL on, as engines launch

int probe(void*, char* msg, size_t size) {
  const std::string why = cuda::probe_device();
  if (why.empty()) return KVCHECK_STATUS_OK;
  plugin::write_message(why, msg, size);
  return KVCHECK_STATUS_UNSUPPORTED;
}

int store(void*, const kvcheck_store_args* a, void* stream, char* msg, size_t size) {
  return guarded(msg, size, [&] {
    const PagedLayout layout = from_abi(a->cache).paged();
    cuda::StoreArgs s;
    s.kv = a->kv;
    s.kv_rows = a->kv_rows;
    s.kv_row_stride = a->kv_row_stride;
    s.slot_mapping = a->slot_mapping;
    s.num_tokens = a->num_tokens;
    DeviceBuffer status(sizeof(DeviceStatus)), workspace(cuda::store_workspace_bytes(layout));
    cuda::store_kv_cache_checked({a->cache.base, layout, a->cache.size_bytes}, s, status.as<DeviceStatus>(), workspace.get(),
                                 opts(stream))
        .throw_if_error(stream);
  });
}

int load(void*, const kvcheck_load_args* a, void* stream, char* msg, size_t size) {
  return guarded(msg, size, [&] {
    const PagedLayout layout = from_abi(a->cache).paged();
    cuda::LoadArgs l;
    l.load_segments = a->load_segments;
    l.num_segments = a->num_segment_ints / 4;
    l.total_k = a->total_k;
    l.out_data = a->out_data;
    l.out_data_stride = a->out_data_stride;
    l.out_scales = a->out_scales;
    l.out_scale_stride = a->out_scale_stride;
    l.out_rows = a->out_rows;
    DeviceBuffer status(sizeof(DeviceStatus)), workspace(cuda::load_workspace_bytes(a->total_k));
    cuda::load_paged_kv_cache_checked({a->cache.base, layout, a->cache.size_bytes}, l, status.as<DeviceStatus>(), workspace.get(),
                                      opts(stream))
        .throw_if_error(stream);
  });
}

int convert(void*, const kvcheck_convert_kv_index_args* a, void* stream, char* msg, size_t size) {
  return guarded(msg, size, [&] {
    cuda::ConvertArgs c;
    c.topk = a->topk;
    c.num_q = a->num_q;
    c.k = a->k;
    c.block_table = a->block_table;
    c.block_table_entries = a->block_table_entries;
    c.max_blocks = a->max_blocks;
    c.seq_ids = a->seq_ids;
    c.context_lens = a->context_lens;
    c.block_size = a->block_size;
    c.out = a->out;
    DeviceBuffer status(sizeof(DeviceStatus));
    cuda::convert_kv_index(c, true, status.as<DeviceStatus>(), opts(stream)).throw_if_error(stream);
  });
}

int cat(void*, const kvcheck_kv_index_cat_args* a, void* stream, char* msg, size_t size) {
  return guarded(msg, size, [&] {
    DeviceBuffer status(sizeof(DeviceStatus));
    cuda::kv_index_cat(a->left, a->wl, a->right, a->wr, a->num_q, a->total_k_swa_cached, a->total_k_swa_cur, a->out,
                       true, status.as<DeviceStatus>(), opts(stream))
        .throw_if_error(stream);
  });
}

int expand(void*, const kvcheck_expand_swa_index_args* a, void* stream, char* msg, size_t size) {
  return guarded(msg, size, [&] {
    DeviceBuffer status(sizeof(DeviceStatus));
    cuda::expand_swa_index(a->pivots, a->num_q, a->width, a->out, true, status.as<DeviceStatus>(), opts(stream))
        .throw_if_error(stream);
  });
}

int decode(void*, const kvcheck_swa_decode_index_args* a, void* stream, char* msg, size_t size) {
  return guarded(msg, size, [&] {
    DeviceBuffer status(sizeof(DeviceStatus));
    cuda::swa_decode_index(a->start_len, a->num_q, a->width, a->ring_size, a->out, true, status.as<DeviceStatus>(),
                           opts(stream))
        .throw_if_error(stream);
  });
}

/// `n` device values of T copied to the host (waits for the stream).
template <typename T>
std::vector<T> to_host(const T* device, int64_t n, void* stream) {
  std::vector<T> host(n > 0 ? static_cast<size_t>(n) : 0);
  if (host.empty()) return host;
  const auto s = static_cast<cudaStream_t>(stream);
  cudaError_t e = cudaMemcpyAsync(host.data(), device, host.size() * sizeof(T), cudaMemcpyDeviceToHost, s);
  if (e == cudaSuccess) e = cudaStreamSynchronize(s);
  if (e != cudaSuccess) throw std::runtime_error(std::string("cuda copy of metadata to the host: ") + cudaGetErrorString(e));
  return host;
}

/// The cache view with its scales on the host (validation reads their values).
struct HostScaledCache {
  HostScaledCache(const kvcheck_kv_cache& c, void* stream)
      : device(from_abi(c)),
        k(to_host(c.k_scale, c.k_scale ? c.num_scales : 0, stream)),
        v(to_host(c.v_scale, c.v_scale ? c.num_v_scales : 0, stream)) {
    host = device;
    host.scales.k_scale = {k.data(), device.scales.k_scale.size()};
    host.scales.v_scale = {v.data(), device.scales.v_scale.size()};
  }
  KvCacheView device, host;
  std::vector<float> k, v;
};

cuda::KvDevLayout dev_layout(const KvCacheLayout& l) {
  cuda::KvDevLayout d;
  d.dtype = static_cast<cuda::KvDevDtype>(l.dtype);
  d.block_size = l.block_size;
  d.num_kv_heads = l.num_kv_heads;
  d.head_dim = l.head_dim;
  d.stride_page = l.stride_page;
  d.stride_token = l.stride_token;
  d.stride_head = l.stride_head;
  return d;
}

/// The cache side of a store_kv / gather_kv launch.
template <typename Launch>
void set_caches(Launch& a, const KvCacheView& cache) {
  a.k_cache = cache.k;
  a.v_cache = cache.v;
  a.layout = dev_layout(cache.layout);
  a.k_scale = cache.scales.k_scale.data();
  a.v_scale = cache.scales.v_scale.data();
  a.per_head_scale = cache.scales.kind == KvScaleKind::kPerHead;
}

template <typename Rows>
Rows dev_rows(const kvcheck_kv_tokens& t) {
  return {t.data, static_cast<cuda::KvDevDtype>(t.dtype), t.token_stride, t.head_stride};
}

int store_kv(void*, const kvcheck_store_kv_args* a, void* stream, char* msg, size_t size) {
  return guarded(msg, size, [&] {
    const HostScaledCache cache(a->cache, stream);
    const KvTokensIn key(from_abi(a->key)), value(from_abi(a->value));
    const int64_t n = a->num_tokens;
    validate_store_kv_shape(key, value, n, cache.host);  // the checks that read no slot
    if (n == 0) return;
    const KvCacheLayout& l = cache.device.layout;
    DeviceBuffer status(sizeof(DeviceStatus)), workspace(static_cast<size_t>(l.num_blocks * l.block_size) * 8);
    const cuda::PendingCheck pc = cuda::check_slot_mapping(a->slot_mapping, n, l.num_blocks, l.block_size,
                                                           status.as<DeviceStatus>(), workspace.get(), opts(stream));
    cuda::StoreKvLaunch s;
    s.key = dev_rows<cuda::KvDevRows>(a->key);
    s.value = dev_rows<cuda::KvDevRows>(a->value);
    s.slot_mapping = a->slot_mapping;
    s.n = n;
    set_caches(s, cache.device);
    const std::string err = cuda::launch_store_kv(s, status.as<DeviceStatus>(), opts(stream));
    if (!err.empty()) throw std::runtime_error("cuda " + err);
    pc.throw_if_error(stream);
  });
}

int gather_kv(void*, const kvcheck_gather_kv_args* a, void* stream, char* msg, size_t size) {
  return guarded(msg, size, [&] {
    const HostScaledCache cache(a->cache, stream);
    const std::vector<int32_t> table = to_host(a->block_table, a->block_table_entries, stream);
    const std::vector<int32_t> cu = to_host(a->cu_seqlens_k, a->cu_seqlens_entries, stream);
    const KvTokensOut out_k = from_abi(a->out_k), out_v = from_abi(a->out_v);
    const int64_t total = validate_gather_kv(cache.host, table, a->max_blocks, cu, out_k, out_v);
    if (total == 0) return;
    cuda::GatherKvLaunch g;
    set_caches(g, cache.device);
    g.block_table = a->block_table;
    g.max_blocks = a->max_blocks;
    g.cu_seqlens_k = a->cu_seqlens_k;
    g.num_seqs = static_cast<int32_t>(cu.size() - 1);
    g.total_tokens = total;
    g.out_k = dev_rows<cuda::KvDevRowsOut>(a->out_k);
    g.out_v = dev_rows<cuda::KvDevRowsOut>(a->out_v);
    const std::string err = cuda::launch_gather_kv(g, nullptr, opts(stream));
    if (!err.empty()) throw std::runtime_error("cuda " + err);
  });
}

kvcheck_backend_v1_t make_table() {
  kvcheck_backend_v1_t t{};
  t.abi_version = KVCHECK_ABI_VERSION;
  t.struct_size = sizeof t;
  t.name = "cuda";
  t.memory_space = KVCHECK_MEMORY_CUDA_DEVICE;
  t.capabilities = {KVCHECK_OP_STORE_KV_CACHE | KVCHECK_OP_LOAD_PAGED_KV_CACHE | KVCHECK_OP_CONVERT_KV_INDEX |
                        KVCHECK_OP_KV_INDEX_CAT | KVCHECK_OP_EXPAND_SWA_INDEX | KVCHECK_OP_SWA_DECODE_INDEX |
                        KVCHECK_OP_STORE_KV | KVCHECK_OP_GATHER_KV,
                    ~0u, ~0u, 1, 0};
  t.probe = probe;
  t.store_kv_cache = store;
  t.load_paged_kv_cache = load;
  t.convert_kv_index = convert;
  t.kv_index_cat = cat;
  t.expand_swa_index = expand;
  t.swa_decode_index = decode;
  t.store_kv = store_kv;
  t.gather_kv = gather_kv;
  return t;
}

const kvcheck_backend_v1_t table = make_table();

}  // namespace

extern "C" KVCHECK_PLUGIN_EXPORT int kvcheck_backend_v1(uint32_t, const kvcheck_backend_v1_t** out, char*, size_t) {
  *out = &table;
  return KVCHECK_STATUS_OK;
}
