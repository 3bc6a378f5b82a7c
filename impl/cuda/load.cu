// load_paged_kv_cache kernels (SPEC §4, §5.2). Work is (segment, tile) pairs handed
// to WARPS in a grid-stride loop; a tile is the tokens one warp handles at a time (a
// token is kLanes lanes), so a 133-token block wastes at most one partial warp tile.
// Segment lengths are at most block_size (validated, or assumed by the unchecked
// entry), so a segment has ceil(block_size / tile) tiles.
//
// Fixed dequantising path (V41, V41_FP4, FP8_DS_MLA, MODEL1, NVFP4_DS_MLA): each lane turns 8 codes into 8 BF16 (one
// 16-byte store) per step, a BF16 tail a 16-byte copy per lane (NVFP4_DS_MLA's e4m3 rope an
// 8-byte load decoded); run-time path for custom do_cast formats and unaligned
// outputs; a copy path (BF16 and index formats: data bytes, then scale bytes).
#include "impl/cuda/common.cuh"
#include "impl/cuda/kernels.h"
#include "impl/cuda/launch.cuh"
#include "impl/cuda/numerics.cuh"

namespace kvcheck::cuda {
namespace {

using dev::kThreads;
constexpr int kWarps = kThreads / 32;

/// The work item a warp holds: segment s's tokens [t0, t0 + tile).
struct Task {
  int32_t block, begin, len;
  int64_t dst, t0;
};

__device__ __forceinline__ Task task_of(const LoadArgs& a, int64_t task, int64_t tiles, int64_t tile) {
  const int64_t s = task / tiles;  // one division per warp tile, not per element
  const int32_t* p = a.load_segments + 4 * s;
  return {__ldg(p), __ldg(p + 1), __ldg(p + 2) - __ldg(p + 1), __ldg(p + 3), (task - s * tiles) * tile};
}

__device__ __forceinline__ int64_t tiles_per_segment(const PagedLayout& L, int64_t tile) {
  return (L.block_size + tile - 1) / tile;
}

__device__ __forceinline__ int64_t warp_id() { return (int64_t{blockIdx.x} * kThreads + threadIdx.x) >> 5; }
__device__ __forceinline__ int64_t num_warps() { return (int64_t{gridDim.x} * kThreads) >> 5; }

// Tokens per warp tile (dequant) / token groups per warp tile (copy): kDeep for
// bandwidth (loads of several tokens in flight per warp), 1 for decode-size loads
// (more warps, so the few tokens spread over more SMs).
constexpr int kDeep = 4;
constexpr int64_t kDeepFrom = 8192;  // tokens a load may cover before tiles go deep

/// E quantised elements, then T BF16 tail elements (T/8 <= 32 16-byte chunks).
template <int E, int G, PagedDtype D, PagedSf S, int T, int kDequantTile>
__global__ void __launch_bounds__(kThreads)
    load_dequant_fixed_kernel(DeviceCache cache, LoadArgs a, const DeviceStatus* status) {
  constexpr int kChunks = E / 8;                 // 8 elements per lane per step, a token per warp
  constexpr int kSteps = (kChunks + 31) / 32;     // MODEL1's 56 chunks: the second step's last 8 lanes idle
  constexpr int kGroupLanes = G / 8;
  constexpr int kTailChunks = T / 8;
  static_assert(E % 8 == 0 && G % 8 == 0 && T % 8 == 0 && kTailChunks <= 32, "fixed load layout");
  // §4.9's scales belong to NVFP4_DS_MLA only: its tail is e4m3 (8 bytes a lane) and its
  // scales transposed (launch_load sends no other record here with them).
  constexpr bool kNvfp4 = S == PagedSf::kE4M3RoundUp;
  constexpr int kGroups = E / G;
  dev::pdl_wait();
  if (dev::failed(status)) return;
  const PagedLayout& L = cache.layout;
  const int lane = threadIdx.x & 31;
  const int64_t tiles = tiles_per_segment(L, kDequantTile);
  for (int64_t task = warp_id(); task < a.num_segments * tiles; task += num_warps()) {
    const Task t = task_of(a, task, tiles, kDequantTile);
    uint32_t q[kDequantTile][kSteps][2];
    float scale[kDequantTile][kSteps];
    uint4 tail[kDequantTile];
#pragma unroll
    for (int u = 0; u < kDequantTile; ++u) {  // all loads of the tile first
      const int64_t i = t.t0 + u;
      if constexpr (kTailChunks > 0) tail[u] = make_uint4(0, 0, 0, 0);  // zero rows keep 0
      if (i >= t.len || t.block < 0) continue;
      if constexpr (kTailChunks > 0 && kNvfp4) {
        if (lane < kTailChunks) {
          const uint2 v = __ldcs(reinterpret_cast<const uint2*>(cache.base + L.tail_offset(t.block, t.begin + i)) + lane);
          const uint32_t h[4] = {v.x, v.x >> 16, v.y, v.y >> 16};
          uint32_t w[4];
#pragma unroll
          for (int j = 0; j < 4; ++j) {  // two e4m3 codes -> two bf16, exact
            const float2 f = dev::fp8x2_to_f32<__NV_E4M3>(h[j]);
            w[j] = dev::f32x2_to_bf16x2(f.x, f.y);
          }
          tail[u] = make_uint4(w[0], w[1], w[2], w[3]);
        }
      } else if constexpr (kTailChunks > 0) {
        if (lane < kTailChunks)
          tail[u] = __ldcs(reinterpret_cast<const uint4*>(cache.base + L.tail_offset(t.block, t.begin + i)) + lane);
      }
      const uint8_t* __restrict__ data = cache.base + L.data_offset(t.block, t.begin + i);
      const uint8_t* __restrict__ sc = cache.base + L.scale_offset(t.block, t.begin + i);
#pragma unroll
      for (int s = 0; s < kSteps; ++s) {
        const int chunk = s * 32 + lane;
        if (kChunks % 32 != 0 && chunk >= kChunks) continue;
        if constexpr (D == PagedDtype::kE4M3) {
          const uint2 v = __ldcs(reinterpret_cast<const uint2*>(data) + chunk);
          q[u][s][0] = v.x;
          q[u][s][1] = v.y;
        } else {
          q[u][s][0] = __ldcs(reinterpret_cast<const unsigned int*>(data) + chunk);
          q[u][s][1] = 0;
        }
        const int g = chunk / kGroupLanes;
        scale[u][s] = dev::scale_value<S>(sc + (kNvfp4 ? transposed_scale(g, kGroups) : g) * paged_scale_width(S));
      }
    }
#pragma unroll
    for (int u = 0; u < kDequantTile; ++u) {
      const int64_t i = t.t0 + u;
      if (i >= t.len) continue;
      uint4* __restrict__ o = reinterpret_cast<uint4*>(a.out_data + (t.dst + i) * a.out_data_stride);
      if constexpr (kTailChunks > 0)  // the tail after the E dequantised elements, as stored
        if (lane < kTailChunks) __stcs(o + E / 8 + lane, tail[u]);
#pragma unroll
      for (int s = 0; s < kSteps; ++s) {
        if (kChunks % 32 != 0 && s * 32 + lane >= kChunks) continue;
        if (t.block < 0) {  // -1: zero rows (SPEC §5.2)
          __stcs(o + s * 32 + lane, make_uint4(0, 0, 0, 0));
          continue;
        }
        float f[8];  // dequant = bf16_rn(float(q) * scale) (SPEC §4)
        if constexpr (D == PagedDtype::kE4M3) {  // two codes per hardware cvt
#pragma unroll
          for (int h = 0; h < 4; ++h) {
            const float2 v = dev::fp8x2_to_f32<__NV_E4M3>(q[u][s][h / 2] >> (16 * (h % 2)));
            f[2 * h] = __fmul_rn(v.x, scale[u][s]);
            f[2 * h + 1] = __fmul_rn(v.y, scale[u][s]);
          }
        } else {
#pragma unroll
          for (int j = 0; j < 8; ++j) f[j] = __fmul_rn(dev::e2m1_to_f32((q[u][s][0] >> (4 * j)) & 0xF), scale[u][s]);
        }
        __stcs(o + s * 32 + lane,
               make_uint4(dev::f32x2_to_bf16x2(f[0], f[1]), dev::f32x2_to_bf16x2(f[2], f[3]),
                          dev::f32x2_to_bf16x2(f[4], f[5]), dev::f32x2_to_bf16x2(f[6], f[7])));
      }
    }
  }
  dev::pdl_trigger();
}

template <PagedDtype D, PagedSf S>
__global__ void __launch_bounds__(kThreads)
    load_dequant_runtime_kernel(DeviceCache cache, LoadArgs a, const DeviceStatus* status) {
  dev::pdl_wait();
  if (dev::failed(status)) return;
  const PagedLayout& L = cache.layout;
  constexpr int64_t kScaleBytes = paged_scale_width(S);
  const int64_t row_bytes = int64_t{L.elements} * 2;  // the tail's bytes included
  const int lane = threadIdx.x & 31;
  const int64_t tiles = L.block_size;  // a token per warp tile
  for (int64_t task = warp_id(); task < a.num_segments * tiles; task += num_warps()) {
    const Task t = task_of(a, task, tiles, 1);
    const int64_t i = t.t0;
    if (i >= t.len) continue;
    uint8_t* o = a.out_data + (t.dst + i) * a.out_data_stride;
    if (t.block < 0) {
      dev::zero_bytes(o, row_bytes, lane, 32);
      continue;
    }
    const uint8_t* data = cache.base + L.data_offset(t.block, t.begin + i);
    const uint8_t* sc = cache.base + L.scale_offset(t.block, t.begin + i);
    const bool even = (reinterpret_cast<uintptr_t>(o) & 1) == 0;  // odd strides: bytes
    const auto put = [&](int64_t e, uint16_t v) {
      if (even) {
        reinterpret_cast<uint16_t*>(o)[e] = v;
      } else {
        o[2 * e] = static_cast<uint8_t>(v);
        o[2 * e + 1] = static_cast<uint8_t>(v >> 8);
      }
    };
    const int32_t G = L.group;
    if (L.tail_elements > 0 && !L.e4m3_tail) {  // the BF16 tail after the dequantised elements, as stored
      const uint8_t* tail = cache.base + L.tail_offset(t.block, t.begin + i);
      // Bytes as stored, by the widest access both ends allow (copy_bytes checks both).
      dev::copy_bytes(o + int64_t{L.quantized_elements()} * 2, tail, L.tail_bytes(), lane, 32);
    }
    if (L.e4m3_tail) {  // e4m3 casts decoded, exact in BF16 (SPEC §4.9)
      const uint8_t* tail = cache.base + L.tail_offset(t.block, t.begin + i);
      for (int32_t e = lane; e < L.tail_elements; e += 32)
        put(L.quantized_elements() + e, dev::f32_to_bf16(dev::e4m3_to_f32(tail[e])));
    }
    const auto scale_at = [&](int64_t g) { return sc + (L.scales_last ? L.scale_byte(g) : g * kScaleBytes); };
    if constexpr (D == PagedDtype::kE4M3) {
      for (int32_t g = 0; g < L.quantized_elements() / G; ++g) {  // group by group: no division per element
        const float s = dev::scale_value<S>(scale_at(g));
        for (int32_t j = lane; j < G; j += 32) {
          const int64_t e = int64_t{g} * G + j;
          put(e, dev::f32_to_bf16(__fmul_rn(dev::e4m3_to_f32(data[e]), s)));
        }
      }
    } else {  // an odd G splits a byte across groups: one division per byte
      for (int32_t b = lane; b < L.quantized_elements() / 2; b += 32) {
        const uint8_t q = data[b];
        const float s0 = dev::scale_value<S>(scale_at(2 * b / G));
        const float s1 = dev::scale_value<S>(scale_at((2 * b + 1) / G));
        put(2 * b, dev::f32_to_bf16(__fmul_rn(dev::e2m1_to_f32(q & 0xF), s0)));
        put(2 * b + 1, dev::f32_to_bf16(__fmul_rn(dev::e2m1_to_f32(q >> 4), s1)));
      }
    }
  }
  dev::pdl_trigger();
}

/// BF16 and index formats: the data bytes (and scale bytes) of each token, kLanes
/// lanes per token, kCopyUnroll tokens per lane group per warp tile; 16-byte
/// accesses for the data when kVec, all of a tile's loads in flight first when a
/// row has at most 2*kLanes chunks (every SPEC §2 format).
template <int kLanes, bool kVec, int kCopyUnroll>
__global__ void __launch_bounds__(kThreads)
    load_copy_kernel(DeviceCache cache, LoadArgs a, const DeviceStatus* status) {
  dev::pdl_wait();
  if (dev::failed(status)) return;
  const PagedLayout& L = cache.layout;
  constexpr int kTokensPerWarp = 32 / kLanes, kTile = kTokensPerWarp * kCopyUnroll;
  const int lane = threadIdx.x & 31, sl = lane % kLanes, sub = lane / kLanes;
  const bool index = L.dtype != PagedDtype::kBF16;
  const int64_t chunks = L.quantized_bytes / 16;
  const int64_t tiles = tiles_per_segment(L, kTile);
  // The index formats' 4 scale bytes per token (every SPEC §2 one) as one word loaded
  // with the data, when every token's scale word and output row are 4-byte aligned
  // (the byte copy after the data stores waited a whole load latency per tile).
  const bool scale_word = index && L.sf_bytes == 4 && (L.block_stride | L.scale_region | L.scale_token_stride) % 4 == 0 &&
                          reinterpret_cast<uintptr_t>(cache.base) % 4 == 0 &&
                          reinterpret_cast<uintptr_t>(a.out_scales) % 4 == 0 && a.out_scale_stride % 4 == 0;
  for (int64_t task = warp_id(); task < a.num_segments * tiles; task += num_warps()) {
    const Task t = task_of(a, task, tiles, kTile);
    if constexpr (kVec) {
      if (chunks <= 2 * kLanes) {
        uint4 v[kCopyUnroll][2];
        uint32_t sw[kCopyUnroll];
#pragma unroll
        for (int u = 0; u < kCopyUnroll; ++u) {  // zero rows (block -1) keep v = 0
          const int64_t i = t.t0 + u * kTokensPerWarp + sub;
          const bool live = i < t.len && t.block >= 0;
          const uint4* __restrict__ src =
              reinterpret_cast<const uint4*>(cache.base + (live ? L.data_offset(t.block, t.begin + i) : 0));
#pragma unroll
          for (int k = 0; k < 2; ++k)
            v[u][k] = live && sl + k * kLanes < chunks ? __ldcs(src + sl + k * kLanes) : make_uint4(0, 0, 0, 0);
          sw[u] = scale_word && live && sl == 0
                      ? __ldcs(reinterpret_cast<const unsigned int*>(cache.base + L.scale_offset(t.block, t.begin + i)))
                      : 0u;
        }
#pragma unroll
        for (int u = 0; u < kCopyUnroll; ++u) {
          const int64_t i = t.t0 + u * kTokensPerWarp + sub;
          if (i >= t.len) continue;
          uint4* __restrict__ o = reinterpret_cast<uint4*>(a.out_data + (t.dst + i) * a.out_data_stride);
#pragma unroll
          for (int k = 0; k < 2; ++k)
            if (sl + k * kLanes < chunks) __stcs(o + sl + k * kLanes, v[u][k]);
          if (!index) continue;
          uint8_t* os = a.out_scales + (t.dst + i) * a.out_scale_stride;
          if (scale_word) {  // zero rows: sw = 0
            if (sl == 0) __stcs(reinterpret_cast<unsigned int*>(os), sw[u]);
          } else if (t.block < 0)
            dev::zero_bytes(os, L.sf_bytes, sl, kLanes);
          else
            dev::copy_bytes(os, cache.base + L.scale_offset(t.block, t.begin + i), L.sf_bytes, sl, kLanes);
        }
        continue;
      }
    }
    for (int u = 0; u < kCopyUnroll; ++u) {
      const int64_t i = t.t0 + u * kTokensPerWarp + sub;
      if (i >= t.len) continue;
      uint8_t* __restrict__ o = a.out_data + (t.dst + i) * a.out_data_stride;
      uint8_t* __restrict__ os = index ? a.out_scales + (t.dst + i) * a.out_scale_stride : nullptr;
      if (t.block < 0) {  // -1: zero rows, scales too (SPEC §5.2)
        dev::zero_bytes(o, L.quantized_bytes, sl, kLanes);
        if (index) dev::zero_bytes(os, L.sf_bytes, sl, kLanes);
        continue;
      }
      const uint8_t* __restrict__ src = cache.base + L.data_offset(t.block, t.begin + i);
      if constexpr (kVec) {
        for (int64_t c = sl; c < chunks; c += kLanes)
          reinterpret_cast<uint4*>(o)[c] = __ldcs(reinterpret_cast<const uint4*>(src) + c);
      } else {
        dev::copy_bytes(o, src, L.quantized_bytes, sl, kLanes);
      }
      if (index) dev::copy_bytes(os, cache.base + L.scale_offset(t.block, t.begin + i), L.sf_bytes, sl, kLanes);
    }
  }
  dev::pdl_trigger();
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

/// CTAs for warp tiles of `tile` tokens over every segment.
int64_t grid(const LoadArgs& a, const PagedLayout& L, int64_t tile) {
  const int64_t warp_tasks = a.num_segments * ((L.block_size + tile - 1) / tile);
  return dev::grid_for((warp_tasks + kWarps - 1) / kWarps);
}

/// Whether a load's tiles go deep (kDeep) or stay one token (group) per warp.
bool deep(const LoadArgs& a, const PagedLayout& L) { return a.num_segments * L.block_size >= kDeepFrom; }

template <int kLanes, int kUnroll>
std::string copy_with(const DeviceCache& c, const LoadArgs& a, const DeviceStatus* st, const LaunchOptions& o,
                      bool vec) {
  const int64_t g = grid(a, c.layout, (32 / kLanes) * kUnroll);
  return vec ? dev::launch("load_copy_kernel", load_copy_kernel<kLanes, true, kUnroll>, g, o, c, a, st)
             : dev::launch("load_copy_kernel", load_copy_kernel<kLanes, false, kUnroll>, g, o, c, a, st);
}

template <int kLanes>
std::string copy(const DeviceCache& c, const LoadArgs& a, const DeviceStatus* st, const LaunchOptions& o, bool vec) {
  return deep(a, c.layout) ? copy_with<kLanes, kDeep>(c, a, st, o, vec) : copy_with<kLanes, 1>(c, a, st, o, vec);
}

template <int E, int G, PagedDtype D, PagedSf S, int T = 0>
std::string dequant_fixed(const DeviceCache& c, const LoadArgs& a, const DeviceStatus* st, const LaunchOptions& o) {
  if (deep(a, c.layout))
    return dev::launch("load_dequant_fixed_kernel", load_dequant_fixed_kernel<E, G, D, S, T, kDeep>,
                       grid(a, c.layout, kDeep), o, c, a, st);
  return dev::launch("load_dequant_fixed_kernel", load_dequant_fixed_kernel<E, G, D, S, T, 1>, grid(a, c.layout, 1),
                     o, c, a, st);
}

template <PagedDtype D>
std::string runtime(const DeviceCache& c, const LoadArgs& a, const DeviceStatus* st, const LaunchOptions& o) {
  const int64_t g = grid(a, c.layout, 1);
  switch (c.layout.sf) {
    case PagedSf::kUE8M0: return dev::launch("load_dequant_runtime_kernel", load_dequant_runtime_kernel<D, PagedSf::kUE8M0>, g, o, c, a, st);
    case PagedSf::kE4M3:
    case PagedSf::kE4M3RoundUp:  // one encoding: the rules differ in the writer only
      return dev::launch("load_dequant_runtime_kernel", load_dequant_runtime_kernel<D, PagedSf::kE4M3>, g, o, c, a, st);
    case PagedSf::kFP32: return dev::launch("load_dequant_runtime_kernel", load_dequant_runtime_kernel<D, PagedSf::kFP32>, g, o, c, a, st);
    case PagedSf::kFP32Pow2:
    case PagedSf::kFP32Pow2FloorFirst:  // one encoding: the rules differ in the writer only
      return dev::launch("load_dequant_runtime_kernel", load_dequant_runtime_kernel<D, PagedSf::kFP32Pow2>, g, o, c, a, st);
    case PagedSf::kUE8M0FloorAfter:  // ue8m0's encoding (SPEC §4.8)
      return dev::launch("load_dequant_runtime_kernel", load_dequant_runtime_kernel<D, PagedSf::kUE8M0>, g, o, c, a, st);
    default: return "cuda load: no kernel for scale format " + std::to_string(int(c.layout.sf));
  }
}

}  // namespace

std::string launch_load(const DeviceCache& c, const LoadArgs& a, const DeviceStatus* st,
                        const LaunchOptions& o) {
  if (a.num_segments == 0) return "";
  const PagedLayout& L = c.layout;
  using Dt = PagedDtype;
  using Sf = PagedSf;
  if (!L.do_cast) {
    const bool vec = aligned16(c.base) && aligned16(a.out_data) && a.out_data_stride % 16 == 0 &&
                     L.quantized_bytes % 16 == 0 && L.data_token_stride % 16 == 0 && L.block_stride % 16 == 0;
    const int64_t chunks = L.quantized_bytes / 16;
    if (chunks <= 4) return copy<4>(c, a, st, o, vec);
    if (chunks <= 8) return copy<8>(c, a, st, o, vec);
    if (chunks <= 16) return copy<16>(c, a, st, o, vec);
    return copy<32>(c, a, st, o, vec);
  }
  // The fixed kernels read 8-byte (e4m3) / 4-byte (e2m1) data words: a custom format's
  // strides must keep them aligned (see launch_store).
  const int64_t word = L.dtype == Dt::kE4M3 ? 8 : 4;
  const bool vec = aligned16(c.base) && aligned16(a.out_data) && a.out_data_stride % 16 == 0 &&
                   L.data_token_stride % word == 0 && L.block_stride % word == 0 && !L.scales_last && !L.e4m3_tail;
  const bool untailed = L.tail_elements == 0;
  if (vec && untailed && L.dtype == Dt::kE4M3 && L.sf == Sf::kUE8M0 && L.elements == 512 && L.group == 32)  // V41
    return dequant_fixed<512, 32, Dt::kE4M3, Sf::kUE8M0>(c, a, st, o);
  if (vec && untailed && L.dtype == Dt::kE2M1 && L.sf == Sf::kE4M3 && L.elements == 512 && L.group == 16)  // V41_FP4
    return dequant_fixed<512, 16, Dt::kE2M1, Sf::kE4M3>(c, a, st, o);
  // FP8_DS_MLA and MODEL1: their 16-byte tail loads need the tail (at data + 528 / + 448)
  // 16-byte aligned too.
  const bool tail16 = L.tail_elements == 64 && L.data_token_stride % 16 == 0 && L.block_stride % 16 == 0 &&
                      L.tail_in_record() % 16 == 0;
  if (vec && tail16 && L.dtype == Dt::kE4M3 && L.sf == Sf::kFP32Pow2 && L.quantized_elements() == 512 && L.group == 128)
    return dequant_fixed<512, 128, Dt::kE4M3, Sf::kFP32Pow2, 64>(c, a, st, o);  // FP8_DS_MLA
  if (vec && tail16 && L.dtype == Dt::kE4M3 && L.sf == Sf::kUE8M0FloorAfter && L.quantized_elements() == 448 &&
      L.group == 64)
    return dequant_fixed<448, 64, Dt::kE4M3, Sf::kUE8M0FloorAfter, 64>(c, a, st, o);  // MODEL1
  // NVFP4_DS_MLA: 8-byte e4m3 rope loads at data + 256 (vec's checks exclude its flags).
  const bool nv_vec = aligned16(c.base) && aligned16(a.out_data) && a.out_data_stride % 16 == 0 &&
                      L.data_token_stride % 8 == 0 && L.block_stride % 8 == 0;
  if (nv_vec && L.scales_last && L.e4m3_tail && L.dtype == Dt::kE2M1 && L.sf == Sf::kE4M3RoundUp &&
      L.quantized_elements() == 512 && L.tail_elements == 64 && L.group == 16 && L.tail_in_record() % 8 == 0)
    return dequant_fixed<512, 16, Dt::kE2M1, Sf::kE4M3RoundUp, 64>(c, a, st, o);
  switch (L.dtype) {
    case Dt::kE4M3: return runtime<Dt::kE4M3>(c, a, st, o);
    case Dt::kE2M1: return runtime<Dt::kE2M1>(c, a, st, o);
    default: return "cuda load: do_cast without quantised data";
  }
}

}  // namespace kvcheck::cuda
