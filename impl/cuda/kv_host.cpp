// CudaBackend store_kv / gather_kv (SPEC §7.4, §7.5) on host views, over the K/V
// kernels of kv_family.h. store_kv: the checks that read no slot on the host
// (impl/validate_kv.h), the slot_mapping on the device (validate.cu, the same kernels
// and messages as store_kv_cache), then the kernel, which skips on error. gather_kv:
// the block table and cu_seqlens_k are checked on the host (they are host spans
// here). Caches and outputs travel whole inside guard bands, views of one buffer as
// one copy (DeviceViews).
#include <cuda_runtime_api.h>

#include <cstring>
#include <vector>

#include "impl/cuda/cuda_backend.h"
#include "impl/cuda/device_memory.h"
#include "impl/cuda/kernels.h"
#include "impl/cuda/kv_family.h"
#include "impl/kv_layout.h"
#include "impl/validate_kv.h"

namespace kvcheck::cuda {
namespace {

/// Bytes a [rows][H][D] view spans from its base.
size_t rows_bytes(const KvTokensIn& t, const KvCacheLayout& l) {
  if (t.rows <= 0) return 0;
  const int64_t elements = (t.rows - 1) * t.token_stride + int64_t{l.num_kv_heads - 1} * t.head_stride + l.head_dim;
  return static_cast<size_t>(elements * kv_dtype_bytes(t.dtype));
}

KvDevLayout dev_layout(const KvCacheLayout& l) {
  KvDevLayout d;
  d.dtype = static_cast<KvDevDtype>(l.dtype);
  d.block_size = l.block_size;
  d.num_kv_heads = l.num_kv_heads;
  d.head_dim = l.head_dim;
  d.stride_page = l.stride_page;
  d.stride_token = l.stride_token;
  d.stride_head = l.stride_head;
  return d;
}

/// The caches' two views (K, V), whole capacities.
std::vector<std::pair<const void*, size_t>> cache_views(const ConstKvCacheView& c) {
  const auto es = static_cast<size_t>(kv_dtype_bytes(c.layout.dtype));
  return {{c.k, static_cast<size_t>(c.k_capacity) * es}, {c.v, static_cast<size_t>(c.v_capacity) * es}};
}

size_t cache_guard(const KvCacheLayout& l) {
  return guard_for(l.stride_page * kv_dtype_bytes(l.dtype));
}

/// k_scale / v_scale on the device (FP8 caches); nullptr otherwise.
struct DeviceScales {
  DeviceScales(const KvScales& s, void* stream) : k(s.k_scale.size() * 4), v(s.v_scale.size() * 4) {
    to_device(k.get(), s.k_scale.data(), s.k_scale.size() * 4, stream);
    to_device(v.get(), s.v_scale.data(), s.v_scale.size() * 4, stream);
  }
  DeviceBuffer k, v;
};

/// The cache side of a store or gather launch: device caches, geometry, scales.
template <typename Launch>
void set_caches(Launch& a, const ConstKvCacheView& cache, const DeviceViews& caches, const DeviceScales& scales) {
  a.k_cache = caches.map(cache.k);
  a.v_cache = caches.map(cache.v);
  a.layout = dev_layout(cache.layout);
  a.k_scale = scales.k.as<float>();
  a.v_scale = scales.v.as<float>();
  a.per_head_scale = cache.scales.kind == KvScaleKind::kPerHead;
}

}  // namespace

void CudaBackend::store_kv(const KvTokensIn& key, const KvTokensIn& value, std::span<const int32_t> slot_mapping,
                           const KvCacheView& cache) const {
  const int64_t n = static_cast<int64_t>(slot_mapping.size());
  validate_store_kv_shape(key, value, n, cache);
  if (n == 0) return;
  const KvCacheLayout& l = cache.layout;
  const DeviceViews rows({{key.data, rows_bytes(key, l)}, {value.data, rows_bytes(value, l)}}, guard_for(0),
                         "the key/value rows", opts_.stream);
  const DeviceViews caches(cache_views(cache), cache_guard(l), "the K/V caches", opts_.stream);
  const DeviceScales scales(cache.scales, opts_.stream);
  DeviceBuffer d_slots(static_cast<size_t>(n) * 4);
  to_device(d_slots.get(), slot_mapping.data(), static_cast<size_t>(n) * 4, opts_.stream);
  DeviceBuffer status(sizeof(DeviceStatus)), workspace(static_cast<size_t>(l.num_blocks * l.block_size) * 8);
  const PendingCheck pc = check_slot_mapping(d_slots.as<int32_t>(), n, l.num_blocks, l.block_size,
                                             status.as<DeviceStatus>(), workspace.get(), opts_);
  StoreKvLaunch a;
  a.key = {rows.map(key.data), static_cast<KvDevDtype>(key.dtype), key.token_stride, key.head_stride};
  a.value = {rows.map(value.data), static_cast<KvDevDtype>(value.dtype), value.token_stride, value.head_stride};
  a.slot_mapping = d_slots.as<int32_t>();
  a.n = n;
  set_caches(a, cache, caches, scales);
  const std::string err = launch_store_kv(a, status.as<DeviceStatus>(), opts_);
  if (!err.empty()) throw std::runtime_error("cuda " + err);
  synchronize(opts_.stream, "store_kv kernels");
  caches.download();  // also on error: a write despite it must show
  pc.throw_if_error(opts_.stream);
}

void CudaBackend::gather_kv(const ConstKvCacheView& cache, std::span<const int32_t> block_table, int32_t max_blocks,
                            std::span<const int32_t> cu_seqlens_k, const KvTokensOut& out_k,
                            const KvTokensOut& out_v) const {
  const int64_t total = validate_gather_kv(cache, block_table, max_blocks, cu_seqlens_k, out_k, out_v);
  if (total == 0) return;
  const KvCacheLayout& l = cache.layout;
  const DeviceViews caches(cache_views(cache), cache_guard(l), "the K/V caches", opts_.stream);
  const DeviceScales scales(cache.scales, opts_.stream);
  DeviceBuffer d_table(block_table.size() * 4), d_cu(cu_seqlens_k.size() * 4);
  to_device(d_table.get(), block_table.data(), block_table.size() * 4, opts_.stream);
  to_device(d_cu.get(), cu_seqlens_k.data(), cu_seqlens_k.size() * 4, opts_.stream);
  const KvTokensOut with_rows[] = {{out_k.data, out_k.dtype, total, out_k.token_stride, out_k.head_stride},
                                   {out_v.data, out_v.dtype, total, out_v.token_stride, out_v.head_stride}};
  const DeviceViews outs({{out_k.data, rows_bytes(with_rows[0], l)}, {out_v.data, rows_bytes(with_rows[1], l)}},
                         guard_for(int64_t{l.num_kv_heads} * l.head_dim * 2), "out_k/out_v", opts_.stream);
  GatherKvLaunch a;
  set_caches(a, cache, caches, scales);
  a.block_table = d_table.as<int32_t>();
  a.max_blocks = max_blocks;
  a.cu_seqlens_k = d_cu.as<int32_t>();
  a.num_seqs = static_cast<int32_t>(cu_seqlens_k.size() - 1);
  a.total_tokens = total;
  a.out_k = {outs.map(out_k.data), static_cast<KvDevDtype>(out_k.dtype), out_k.token_stride, out_k.head_stride};
  a.out_v = {outs.map(out_v.data), static_cast<KvDevDtype>(out_v.dtype), out_v.token_stride, out_v.head_stride};
  const std::string err = launch_gather_kv(a, nullptr, opts_);
  if (!err.empty()) throw std::runtime_error("cuda " + err);
  synchronize(opts_.stream, "gather_kv kernels");
  outs.download();
  caches.expect_unchanged("gather_kv");
}

}  // namespace kvcheck::cuda
