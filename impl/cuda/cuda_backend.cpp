// CudaBackend store / load on host buffers (SPEC §5.1, §5.2) over the checked device
// entry points: upload everything whole, run, download everything whole, check the
// guard bands, then report the device's verdict.
#include "impl/cuda/cuda_backend.h"

#include <cuda_runtime_api.h>

#include <cstring>
#include <stdexcept>
#include <vector>

#include "impl/cpu/validate.h"
#include "impl/cuda/device_memory.h"

namespace kvcheck::cuda {
namespace {

/// Bytes spanned by `rows` rows of `row_bytes` at `stride` apart.
size_t span_bytes(int64_t rows, int64_t stride, int64_t row_bytes) {
  return rows <= 0 ? 0 : static_cast<size_t>((rows - 1) * stride + row_bytes);
}

}  // namespace

CudaBackend::CudaBackend() {
  cudaStream_t s = nullptr;
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess)
    throw std::runtime_error("cuda: cudaStreamCreateWithFlags failed");
  opts_.stream = s;
  opts_.pdl = true;
}

CudaBackend::~CudaBackend() { cudaStreamDestroy(static_cast<cudaStream_t>(opts_.stream)); }

void CudaBackend::store_kv_cache(const KVInput& kv, std::span<const int32_t> slot_mapping,
                                 const CacheView& cache) const {
  const int64_t n = static_cast<int64_t>(slot_mapping.size());
  cpu::validate_store_shape(kv, n, cache);  // before reading host buffers to upload them
  if (n == 0) return;
  const CacheLayout& layout = cache.layout;
  const int64_t row_bytes = int64_t{layout.format.elements} * 2;
  // Inputs travel without guards, so compute-sanitizer memcheck sees an overread.
  DeviceBuffer d_kv(span_bytes(kv.rows, kv.row_stride * 2, row_bytes));
  to_device(d_kv.get(), kv.data, span_bytes(kv.rows, kv.row_stride * 2, row_bytes), opts_.stream);
  DeviceBuffer d_slots(static_cast<size_t>(n) * 4);
  to_device(d_slots.get(), slot_mapping.data(), static_cast<size_t>(n) * 4, opts_.stream);
  const GuardedBuffer d_cache(cache.base, static_cast<size_t>(layout.size_bytes()), guard_for(layout.block_stride),
                              "the cache", opts_.stream);
  DeviceBuffer status(sizeof(DeviceStatus)), workspace(store_workspace_bytes(layout.paged()));
  StoreArgs a;
  a.kv = d_kv.as<uint16_t>();
  a.kv_rows = kv.rows;
  a.kv_row_stride = kv.row_stride;
  a.slot_mapping = d_slots.as<int32_t>();
  a.num_tokens = n;
  const PendingCheck pc = store_kv_cache_checked(DeviceCache{d_cache.get(), layout.paged(), layout.size_bytes()}, a,
                                                 status.as<DeviceStatus>(), workspace.get(), opts_);
  synchronize(opts_.stream, "store kernels");
  d_cache.download(cache.base);  // also on error: a write despite it must show
  pc.throw_if_error(opts_.stream);
}

void CudaBackend::load_paged_kv_cache(const ConstCacheView& cache, std::span<const int32_t> load_segments,
                                      int32_t total_k, const LoadOutput& out) const {
  cpu::validate_load_shape(cache, static_cast<int64_t>(load_segments.size()), total_k, out);
  const int64_t num_segments = static_cast<int64_t>(load_segments.size() / 4);
  if (num_segments == 0) return;
  const CacheLayout& layout = cache.layout;
  const KVCacheFormat& f = layout.format;
  const size_t cache_bytes = cache.base ? static_cast<size_t>(layout.size_bytes()) : 0;
  const GuardedBuffer d_cache(cache.base, cache_bytes, guard_for(layout.block_stride), "the cache", opts_.stream);
  DeviceBuffer d_segs(load_segments.size() * 4);
  to_device(d_segs.get(), load_segments.data(), load_segments.size() * 4, opts_.stream);
  // Output rows no segment covers keep their bytes: the whole span goes both ways.
  const GuardedBuffer d_data(out.data, span_bytes(total_k, out.data_row_stride, f.load_row_bytes()),
                             guard_for(out.data_row_stride), "out.data", opts_.stream);
  const GuardedBuffer d_scales(
      f.is_index() ? out.scales : nullptr,
      f.is_index() ? span_bytes(total_k, out.scale_row_stride, f.load_scale_row_bytes()) : 0,
      guard_for(out.scale_row_stride), "out.scales", opts_.stream);
  DeviceBuffer status(sizeof(DeviceStatus)), workspace(load_workspace_bytes(total_k));
  LoadArgs a;
  a.load_segments = d_segs.as<int32_t>();
  a.num_segments = num_segments;
  a.total_k = total_k;
  a.out_data = d_data.get();
  a.out_data_stride = out.data_row_stride;
  a.out_scales = d_scales.get();
  a.out_scale_stride = out.scale_row_stride;
  a.out_rows = out.rows;
  const PendingCheck pc = load_paged_kv_cache_checked(DeviceCache{d_cache.get(), layout.paged(), layout.size_bytes()}, a,
                                                      status.as<DeviceStatus>(), workspace.get(), opts_);
  synchronize(opts_.stream, "load kernels");
  d_data.download(out.data);
  d_scales.download(f.is_index() ? out.scales : nullptr);
  // A load reads the cache: it must come back unchanged, byte for byte.
  if (cache_bytes) {
    std::vector<uint8_t> after(cache_bytes);
    d_cache.download(after.data());
    if (std::memcmp(after.data(), cache.base, cache_bytes) != 0)
      throw std::runtime_error("cuda load kernels wrote into the cache they read");
  }
  pc.throw_if_error(opts_.stream);
}

std::shared_ptr<const Backend> make_cuda_backend(std::string* why_not) {
  const std::string why = probe_device();
  if (!why.empty()) {
    if (why_not) *why_not = why;
    return nullptr;
  }
  return std::make_shared<CudaBackend>();
}

}  // namespace kvcheck::cuda
