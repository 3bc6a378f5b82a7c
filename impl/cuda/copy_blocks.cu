// copy_blocks data kernel (SPEC §8.1). Work item = (view, pair): one CTA copies one
// block of one view, 16 bytes per thread per step when both ends and the length are
// 16-byte aligned, else byte by byte. The views travel as kernel parameters (at most
// kViewsPerLaunch per launch; more views: more launches on the stream), so no view
// table is uploaded and the call stays capturable into a CUDA graph.
#include "impl/cuda/kernels.h"
#include "impl/cuda/launch.cuh"

namespace kvcheck::cuda {
namespace {

using dev::kThreads;
constexpr int kViewsPerLaunch = 64;

struct ViewChunk {
  int64_t offset[kViewsPerLaunch];
  int64_t bytes[kViewsPerLaunch];
  int32_t count;
};

__global__ void __launch_bounds__(kThreads)
    copy_blocks_kernel(uint8_t* base, const int64_t* m, int64_t pairs, int64_t stride, ViewChunk views,
                       const DeviceStatus* st) {
  dev::pdl_wait();
  if (dev::failed(st)) return;
  const int64_t items = pairs * views.count;
  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const int64_t p = item % pairs;
    const int v = static_cast<int>(item / pairs);
    const int64_t src = m[2 * p], dst = m[2 * p + 1];
    if (src == -1 || dst == -1) continue;
    const uint8_t* from = base + views.offset[v] + src * stride;
    uint8_t* to = base + views.offset[v] + dst * stride;
    const int64_t n = views.bytes[v];
    if (((reinterpret_cast<uintptr_t>(from) | reinterpret_cast<uintptr_t>(to) | static_cast<uintptr_t>(n)) & 15) == 0) {
      const auto* f = reinterpret_cast<const uint4*>(from);
      auto* t = reinterpret_cast<uint4*>(to);
      for (int64_t i = threadIdx.x; i < n / 16; i += blockDim.x) t[i] = f[i];
    } else {
      for (int64_t i = threadIdx.x; i < n; i += blockDim.x) to[i] = from[i];
    }
  }
  dev::pdl_trigger();
}

}  // namespace

std::string launch_copy_blocks(const CopyBlocksLaunch& a, const DeviceStatus* st, const LaunchOptions& o) {
  if (a.num_pairs == 0) return "";
  for (int64_t first = 0; first < a.num_views; first += kViewsPerLaunch) {
    ViewChunk chunk{};
    chunk.count = static_cast<int32_t>(a.num_views - first < kViewsPerLaunch ? a.num_views - first : kViewsPerLaunch);
    for (int32_t i = 0; i < chunk.count; ++i) {
      chunk.offset[i] = a.views[2 * (first + i)];
      chunk.bytes[i] = a.views[2 * (first + i) + 1];
    }
    const std::string e = dev::launch("copy_blocks_kernel", copy_blocks_kernel, dev::grid_for(a.num_pairs * chunk.count),
                                      o, a.base, a.block_mapping, a.num_pairs, a.block_stride, chunk, st);
    if (!e.empty()) return e;
  }
  return "";
}

}  // namespace kvcheck::cuda
