// copy_blocks data kernel (SPEC §8.1). Work item = (view, pair): one WARP copies one
// block of one view (a warp per item keeps small blocks — 4 KiB of one head — from
// idling most of a CTA), each lane 4 x 16 bytes in flight per step when both ends and
// the length are 16-byte aligned, else byte by byte. Sources are read through the
// non-coherent path: the rules guarantee no byte a copy reads is written by another. The views travel as kernel parameters (at most
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
  const int lane = static_cast<int>(threadIdx.x & 31);
  const int64_t warps = (int64_t{gridDim.x} * blockDim.x) >> 5;
  for (int64_t item = (int64_t{blockIdx.x} * blockDim.x + threadIdx.x) >> 5; item < items; item += warps) {
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
      const int64_t n16 = n / 16;
      int64_t i = lane;
      for (; i + 96 < n16; i += 128) {
        const uint4 a = __ldg(f + i), b = __ldg(f + i + 32), c = __ldg(f + i + 64), d = __ldg(f + i + 96);
        t[i] = a;
        t[i + 32] = b;
        t[i + 64] = c;
        t[i + 96] = d;
      }
      for (; i < n16; i += 32) t[i] = __ldg(f + i);
    } else {
      for (int64_t i = lane; i < n; i += 32) to[i] = from[i];
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
    const int64_t warps_per_cta = kThreads / 32;
    const std::string e = dev::launch("copy_blocks_kernel", copy_blocks_kernel,
                                      dev::grid_for((a.num_pairs * chunk.count + warps_per_cta - 1) / warps_per_cta),
                                      o, a.base, a.block_mapping, a.num_pairs, a.block_stride, chunk, st);
    if (!e.empty()) return e;
  }
  return "";
}

}  // namespace kvcheck::cuda
