// The block copy kernel of copy_blocks (SPEC §8.1) and swap_blocks (docs/spec.md
// §8.3): copy_blocks is the case src = dst, one stride, one offset per view; swap_blocks
// reads one allocation and writes another (either may be page-locked host memory,
// reached through its mapped address: host->device and device->host moves). Work unit
// = (view, pair, 2 KiB piece of the block): one WARP copies one piece, each lane 4 x 16
// bytes in flight when both ends and the length are 16-byte aligned, else byte by
// byte. The grid has a CTA per 8 units (not one persistent wave): with 4 KiB records a
// wave's warps made 3 or 4 trips each and a quarter of them idled through the last.
// H200, 262,144 tokens, % of the d2d copy (bench_cuda): one wave with 2 KiB pieces
// 84.7 (64 x 4 KiB interleaved) / 88.0 (swap d2d), one wave with 4 KiB pieces 85.9 /
// 89.4, a CTA per 8 units with 4 KiB pieces 87.3 / 91.4, with 2 KiB pieces 87.9 / 92.3;
// 32 KiB blocks 89.8-90.2 throughout. Sources are read through the non-coherent path:
// the rules guarantee no byte a copy reads is written by another. The views travel as kernel
// parameters (at most kViewsPerLaunch per launch; more views: more launches on the
// stream), so no view table is uploaded and the call stays capturable into a graph.
#include "impl/cuda/kernels.h"
#include "impl/cuda/launch.cuh"

namespace kvcheck::cuda {
namespace {

using dev::kThreads;
constexpr int kViewsPerLaunch = 64;

constexpr int64_t kPiece = 2048;  // bytes per warp unit: 32 lanes x 4 x 16 B

struct ViewChunk {
  int64_t src_offset[kViewsPerLaunch];
  int64_t dst_offset[kViewsPerLaunch];
  int64_t bytes[kViewsPerLaunch];
  int32_t count;
  int64_t pieces;  // per block: ceil(largest bytes / kPiece)
};

__global__ void __launch_bounds__(kThreads)
    block_copy_kernel(const uint8_t* src_base, uint8_t* dst_base, const int64_t* m, int64_t pairs,
                      int64_t src_stride, int64_t dst_stride, ViewChunk views, const DeviceStatus* st) {
  dev::pdl_wait();
  if (dev::failed(st)) return;
  const int64_t units = pairs * views.count * views.pieces;
  const int lane = static_cast<int>(threadIdx.x & 31);
  const int64_t warps = (int64_t{gridDim.x} * blockDim.x) >> 5;
  for (int64_t u = (int64_t{blockIdx.x} * blockDim.x + threadIdx.x) >> 5; u < units; u += warps) {
    const int64_t piece = u % views.pieces, item = u / views.pieces;
    const int64_t p = item % pairs;
    const int v = static_cast<int>(item / pairs);
    const int64_t n = views.bytes[v], lo = piece * kPiece, hi = lo + kPiece < n ? lo + kPiece : n;
    if (lo >= n) continue;  // a smaller view of the launch
    const int64_t src = m[2 * p], dst = m[2 * p + 1];
    if (src == -1 || dst == -1) continue;
    const uint8_t* from = src_base + views.src_offset[v] + src * src_stride;
    uint8_t* to = dst_base + views.dst_offset[v] + dst * dst_stride;
    if (((reinterpret_cast<uintptr_t>(from) | reinterpret_cast<uintptr_t>(to) | static_cast<uintptr_t>(n)) & 15) == 0) {
      const auto* f = reinterpret_cast<const uint4*>(from);
      auto* t = reinterpret_cast<uint4*>(to);
      const int64_t lo16 = lo / 16, hi16 = hi / 16;
      uint4 r[4];
#pragma unroll
      for (int k = 0; k < 4; ++k)
        if (lo16 + lane + 32 * k < hi16) r[k] = __ldg(f + lo16 + lane + 32 * k);
#pragma unroll
      for (int k = 0; k < 4; ++k)
        if (lo16 + lane + 32 * k < hi16) t[lo16 + lane + 32 * k] = r[k];
    } else {
      for (int64_t i = lo + lane; i < hi; i += 32) to[i] = from[i];
    }
  }
  dev::pdl_trigger();
}

}  // namespace

std::string launch_block_copy(const BlockCopyLaunch& a, const DeviceStatus* st, const LaunchOptions& o) {
  if (a.num_pairs == 0) return "";
  for (int64_t first = 0; first < a.num_views; first += kViewsPerLaunch) {
    ViewChunk chunk{};
    chunk.count = static_cast<int32_t>(a.num_views - first < kViewsPerLaunch ? a.num_views - first : kViewsPerLaunch);
    int64_t largest = 0;
    for (int32_t i = 0; i < chunk.count; ++i) {
      chunk.src_offset[i] = a.views[3 * (first + i)];
      chunk.dst_offset[i] = a.views[3 * (first + i) + 1];
      chunk.bytes[i] = a.views[3 * (first + i) + 2];
      largest = chunk.bytes[i] > largest ? chunk.bytes[i] : largest;
    }
    chunk.pieces = (largest + kPiece - 1) / kPiece;
    const int64_t warps_per_cta = kThreads / 32, units = a.num_pairs * chunk.count * chunk.pieces;
    // A CTA per warps_per_cta units, not one persistent wave: the block scheduler
    // then balances the last trips (see the top of this file).
    const std::string e = dev::launch_grid("block_copy_kernel", block_copy_kernel,
                                           dev::grid_for((units + warps_per_cta - 1) / warps_per_cta), false, o, a.src,
                                           a.dst, a.block_mapping, a.num_pairs, a.src_stride, a.dst_stride, chunk,
                                           st);
    if (!e.empty()) return e;
  }
  return "";
}

}  // namespace kvcheck::cuda
