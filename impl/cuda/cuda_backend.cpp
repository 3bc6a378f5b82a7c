// CudaBackend store / load on host buffers (SPEC §5.1, §5.2): validate with the
// production checks (impl/cpu/validate.h, the docs/spec.md §5.2 order), then copy
// in, launch, copy out. Only the cache blocks a call touches travel when that is
// cheap (a few runs of blocks); otherwise the whole cache does.
#include "impl/cuda/cuda_backend.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "impl/cpu/validate.h"
#include "impl/cuda/device_memory.h"
#include "impl/cuda/kernels.h"

namespace kvcheck::cuda {

DevLayout dev_layout(const CacheLayout& l) {
  const KVCacheFormat& f = l.format;
  DevLayout d;
  d.dtype = f.quantized_dtype == QuantizedDtype::kE4M3   ? DevDtype::kE4M3
            : f.quantized_dtype == QuantizedDtype::kE2M1 ? DevDtype::kE2M1
                                                         : DevDtype::kBF16;
  d.sf = f.sf_format == SfFormat::kUE8M0  ? DevSf::kUE8M0
         : f.sf_format == SfFormat::kE4M3 ? DevSf::kE4M3
         : f.sf_format == SfFormat::kFP32 ? DevSf::kFP32
                                          : DevSf::kNone;
  d.elements = f.elements;
  d.group = f.elements_per_sf;
  d.block_size = l.block_size;
  d.block_stride = l.block_stride;
  d.data_token_stride = l.data_token_stride();
  d.scale_base = f.is_quantized() ? l.scale_offset(0, 0) : 0;
  d.scale_token_stride = l.scale_token_stride();
  d.quantized_bytes = f.quantized_bytes();
  d.sf_bytes = f.sf_bytes();
  return d;
}

namespace {

/// A device copy of a host cache holding (at least) the given blocks' bytes. The
/// device allocation has the cache's full size so kernels address it with the
/// real 64-bit offsets.
class DeviceCache {
 public:
  DeviceCache(const uint8_t* host, const CacheLayout& layout, std::vector<int64_t> blocks)
      : buf_(blocks.empty() ? 0 : static_cast<size_t>(layout.size_bytes())) {
    if (blocks.empty()) return;
    std::sort(blocks.begin(), blocks.end());
    blocks.erase(std::unique(blocks.begin(), blocks.end()), blocks.end());
    constexpr size_t kMaxRuns = 64;  // more runs: one big copy beats many small ones
    for (size_t i = 0; i < blocks.size() && runs_.size() <= kMaxRuns; ++i) {
      if (!runs_.empty() && runs_.back().second == blocks[i]) {
        ++runs_.back().second;
      } else {
        runs_.emplace_back(blocks[i], blocks[i] + 1);
      }
    }
    if (runs_.size() > kMaxRuns || static_cast<int64_t>(blocks.size()) * 2 > layout.num_blocks)
      runs_.assign(1, {0, layout.num_blocks});
    for (auto& run : runs_) {
      run.first *= layout.block_stride;
      run.second *= layout.block_stride;
      to_device(buf_.get() + run.first, host + run.first, static_cast<size_t>(run.second - run.first));
    }
  }
  uint8_t* get() const { return buf_.get(); }
  /// Copies the same byte ranges back: the kernel's writes and unchanged bytes.
  void copy_back(uint8_t* host) const {
    for (const auto& run : runs_)
      to_host(host + run.first, buf_.get() + run.first, static_cast<size_t>(run.second - run.first));
  }

 private:
  DeviceBuffer buf_;
  std::vector<std::pair<int64_t, int64_t>> runs_;  // blocks, then bytes [begin, end)
};

/// Bytes spanned by `rows` rows of `row_bytes` at `stride` apart.
size_t span_bytes(int64_t rows, int64_t stride, int64_t row_bytes) {
  return rows == 0 ? 0 : static_cast<size_t>((rows - 1) * stride + row_bytes);
}

}  // namespace

void CudaBackend::store_kv_cache(const KVInput& kv, std::span<const int32_t> slot_mapping,
                                 const CacheView& cache) const {
  cpu::validate_store(kv, slot_mapping, cache);
  const CacheLayout& layout = cache.layout;
  const int64_t n = static_cast<int64_t>(slot_mapping.size());
  std::vector<int64_t> blocks;
  for (const int32_t slot : slot_mapping)
    if (slot >= 0) blocks.push_back(slot / layout.block_size);
  if (blocks.empty()) return;  // all padding: nothing to write
  const size_t kv_bytes = span_bytes(n, kv.row_stride * 2, int64_t{layout.format.elements} * 2);
  DeviceBuffer d_kv(kv_bytes), d_slots(static_cast<size_t>(n) * 4);
  to_device(d_kv.get(), kv.data, kv_bytes);
  to_device(d_slots.get(), slot_mapping.data(), static_cast<size_t>(n) * 4);
  const DeviceCache d_cache(cache.base, layout, std::move(blocks));
  StoreLaunch a;
  a.kv = d_kv.as<uint16_t>();
  a.kv_row_stride = kv.row_stride;
  a.slots = d_slots.as<int32_t>();
  a.n = n;
  a.cache = d_cache.get();
  a.layout = dev_layout(layout);
  check(launch_store(a, nullptr), "store launch");
  synchronize("store kernel");
  d_cache.copy_back(cache.base);
}

void CudaBackend::load_paged_kv_cache(const ConstCacheView& cache,
                                      std::span<const int32_t> load_segments, int32_t total_k,
                                      const LoadOutput& out) const {
  const int64_t covered = cpu::validate_load(cache, load_segments, total_k, out);
  if (covered == 0) return;
  const CacheLayout& layout = cache.layout;
  const KVCacheFormat& f = layout.format;
  const int64_t num_segments = static_cast<int64_t>(load_segments.size() / 4);
  std::vector<int64_t> blocks;
  int32_t max_len = 0;
  for (int64_t s = 0; s < num_segments; ++s) {
    const int32_t len = load_segments[4 * s + 2] - load_segments[4 * s + 1];
    max_len = std::max(max_len, len);
    if (load_segments[4 * s] >= 0 && len > 0) blocks.push_back(load_segments[4 * s]);
  }
  DeviceBuffer d_segs(load_segments.size() * 4);
  to_device(d_segs.get(), load_segments.data(), load_segments.size() * 4);
  const DeviceCache d_cache(cache.base, layout, std::move(blocks));
  // Output rows no segment covers keep their bytes: the whole span goes both ways.
  const size_t data_bytes = span_bytes(total_k, out.data_row_stride, f.load_row_bytes());
  const size_t scale_bytes =
      f.is_index() ? span_bytes(total_k, out.scale_row_stride, f.load_scale_row_bytes()) : 0;
  DeviceBuffer d_data(data_bytes), d_scales(scale_bytes);
  to_device(d_data.get(), out.data, data_bytes);
  to_device(d_scales.get(), out.scales, scale_bytes);
  LoadLaunch a;
  a.cache = d_cache.get();
  a.layout = dev_layout(layout);
  a.do_cast = f.do_cast;
  a.index = f.is_index();
  a.segments = d_segs.as<int32_t>();
  a.num_segments = num_segments;
  a.max_len = max_len;
  a.out_data = d_data.get();
  a.out_data_stride = out.data_row_stride;
  a.out_scales = d_scales.get();
  a.out_scale_stride = out.scale_row_stride;
  check(launch_load(a, nullptr), "load launch");
  synchronize("load kernel");
  to_host(out.data, d_data.get(), data_bytes);
  to_host(out.scales, d_scales.get(), scale_bytes);
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
