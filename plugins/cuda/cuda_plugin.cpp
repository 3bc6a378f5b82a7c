// libkvcheck_cuda.so: the production CUDA kernels (impl/cuda, device_api.h) as a
// CUDA_DEVICE plugin. Every entry runs the CHECKED device entry point on the harness's
// stream (validation on the device, nothing written on bad input) and waits for its
// verdict (PendingCheck::throw_if_error: the one wait), so a refusal comes back with
// the cpu backend's code and message. The K/V family is forwarded the same way
// (store_kv_checked, gather_kv_checked): no metadata or scale leaves the device.
#include <span>

#include "impl/cuda/device_api.h"
#include "impl/plugin/device_memory.h"
#include "include/kvcheck/backend_abi.h"
#include "plugins/guard.h"

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

int store_kv_cache(void*, const kvcheck_store_args* a, void* stream, char* msg, size_t size) {
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

int load_paged_kv_cache(void*, const kvcheck_load_args* a, void* stream, char* msg, size_t size) {
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

int convert_kv_index(void*, const kvcheck_convert_kv_index_args* a, void* stream, char* msg, size_t size) {
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

int kv_index_cat(void*, const kvcheck_kv_index_cat_args* a, void* stream, char* msg, size_t size) {
  return guarded(msg, size, [&] {
    DeviceBuffer status(sizeof(DeviceStatus));
    cuda::kv_index_cat(a->left, a->wl, a->right, a->wr, a->num_q, a->total_k_swa_cached, a->total_k_swa_cur, a->out,
                       true, status.as<DeviceStatus>(), opts(stream))
        .throw_if_error(stream);
  });
}

int expand_swa_index(void*, const kvcheck_expand_swa_index_args* a, void* stream, char* msg, size_t size) {
  return guarded(msg, size, [&] {
    DeviceBuffer status(sizeof(DeviceStatus));
    cuda::expand_swa_index(a->pivots, a->num_q, a->width, a->out, true, status.as<DeviceStatus>(), opts(stream))
        .throw_if_error(stream);
  });
}

int swa_decode_index(void*, const kvcheck_swa_decode_index_args* a, void* stream, char* msg, size_t size) {
  return guarded(msg, size, [&] {
    DeviceBuffer status(sizeof(DeviceStatus));
    cuda::swa_decode_index(a->start_len, a->num_q, a->width, a->ring_size, a->out, true, status.as<DeviceStatus>(),
                           opts(stream))
        .throw_if_error(stream);
  });
}

// The K/V family: ABI -> views, then the checked device entries (device_api.h), which
// validate on the host what reads no device memory and the rest on the device.
int store_kv(void*, const kvcheck_store_kv_args* a, void* stream, char* msg, size_t size) {
  return guarded(msg, size, [&] {
    const KvCacheView cache = from_abi(a->cache);
    const std::span<const int32_t> slots(a->slot_mapping, a->num_tokens > 0 ? static_cast<size_t>(a->num_tokens) : 0);
    DeviceBuffer status(sizeof(DeviceStatus)), workspace(cuda::store_kv_workspace_bytes(cache.layout));
    cuda::store_kv_checked(from_abi(a->key), from_abi(a->value), slots, cache, status.as<DeviceStatus>(),
                           workspace.get(), opts(stream))
        .throw_if_error(stream);
  });
}

int gather_kv(void*, const kvcheck_gather_kv_args* a, void* stream, char* msg, size_t size) {
  return guarded(msg, size, [&] {
    const auto entries = [](int64_t n) { return n > 0 ? static_cast<size_t>(n) : size_t{0}; };
    DeviceBuffer status(sizeof(DeviceStatus));
    cuda::gather_kv_checked(from_abi(a->cache), {a->block_table, entries(a->block_table_entries)}, a->max_blocks,
                            {a->cu_seqlens_k, entries(a->cu_seqlens_entries)}, from_abi(a->out_k),
                            from_abi(a->out_v), status.as<DeviceStatus>(), opts(stream))
        .throw_if_error(stream);
  });
}

int copy_blocks(void*, const kvcheck_copy_blocks_args* a, void* stream, char* msg, size_t size) {
  return guarded(msg, size, [&] {
    const CopyBlocksArgs c = from_abi(*a);  // views: host memory (the ABI says so)
    DeviceBuffer status(sizeof(DeviceStatus)), workspace(cuda::copy_blocks_workspace_bytes(c.num_blocks));
    cuda::copy_blocks_checked(c, status.as<DeviceStatus>(), workspace.get(), opts(stream)).throw_if_error(stream);
  });
}

kvcheck_backend_v1_t make_table() {
  kvcheck_backend_v1_t t{};
  t.abi_version = KVCHECK_ABI_VERSION;
  t.struct_size = sizeof t;
  t.name = "cuda";
  t.memory_space = KVCHECK_MEMORY_CUDA_DEVICE;
  t.capabilities = {plugin::kAllOps, ~0u, ~0u, 1, 0};
  t.probe = probe;
  KVCHECK_PLUGIN_FILL_ENTRIES(t);  // every op of KVCHECK_OPS, by its name
  return t;
}

const kvcheck_backend_v1_t table = make_table();

}  // namespace

extern "C" KVCHECK_PLUGIN_EXPORT int kvcheck_backend_v1(uint32_t, const kvcheck_backend_v1_t** out, char*, size_t) {
  *out = &table;
  return KVCHECK_STATUS_OK;
}
