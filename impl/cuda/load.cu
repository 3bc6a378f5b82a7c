// load_paged_kv_cache kernels (SPEC §4, §5.2). Grid = (segments, token tiles): CTA
// (s, y) handles tokens [y*kTile, y*kTile + kTile) of segment s (tile loop when the
// tiles exceed gridDim.y). Zero fill, copy (BF16 / index formats) and dequantise
// (do_cast) kernels; templated only on data dtype and scale format.
#include <algorithm>

#include "impl/cuda/common.cuh"
#include "impl/cuda/numerics.cuh"

namespace kvcheck::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kTile = 8;             // tokens per CTA
constexpr int64_t kMaxGridY = 65535;

struct Segment {
  int32_t block, begin, len;
  int64_t dst;
};

__device__ __forceinline__ Segment segment(const LoadLaunch& a, int64_t s) {
  const int32_t* p = a.segments + 4 * s;
  return {p[0], p[1], p[2] - p[1], p[3]};
}

enum class Kind { kCopy, kDequant };

template <Kind K, DevDtype D, DevSf S>
__global__ void __launch_bounds__(kThreads) load_kernel(LoadLaunch a) {
  const DevLayout& L = a.layout;
  const Segment seg = segment(a, blockIdx.x);
  constexpr int64_t kScaleBytes = S == DevSf::kFP32 ? 4 : 1;
  // do_cast rows are BF16; copies move the stored data bytes (BF16: 2*E as well).
  const int64_t row_bytes = a.do_cast ? int64_t{L.elements} * 2 : L.quantized_bytes;
  for (int64_t t0 = int64_t{blockIdx.y} * kTile; t0 < seg.len; t0 += int64_t{gridDim.y} * kTile) {
    const int64_t t1 = min(int64_t{seg.len}, t0 + kTile);
    for (int64_t t = t0; t < t1; ++t) {
      uint8_t* o = a.out_data + (seg.dst + t) * a.out_data_stride;
      uint8_t* os = a.index ? a.out_scales + (seg.dst + t) * a.out_scale_stride : nullptr;
      if (seg.block < 0) {  // -1: zero rows (SPEC §5.2), scales too
        dev::zero_bytes(o, row_bytes, threadIdx.x, blockDim.x);
        if (a.index) dev::zero_bytes(os, L.sf_bytes, threadIdx.x, blockDim.x);
        continue;
      }
      const int64_t token = seg.begin + t;
      const uint8_t* data = a.cache + seg.block * L.block_stride + token * L.data_token_stride;
      if constexpr (K == Kind::kCopy) {
        dev::copy_bytes(o, data, row_bytes, threadIdx.x, blockDim.x);
        if (a.index) {
          const uint8_t* sc = a.cache + seg.block * L.block_stride + L.scale_base + token * L.scale_token_stride;
          dev::copy_bytes(os, sc, L.sf_bytes, threadIdx.x, blockDim.x);
        }
      } else {  // dequant[i] = bf16_rn(float(q[i]) * scale) (SPEC §4)
        const uint8_t* sc = a.cache + seg.block * L.block_stride + L.scale_base + token * L.scale_token_stride;
        // An odd out.data_row_stride leaves rows at odd addresses: store bytes then.
        const bool even = (reinterpret_cast<uintptr_t>(o) & 1) == 0;
        const auto put = [&](int32_t i, uint16_t v) {
          if (even) {
            reinterpret_cast<uint16_t*>(o)[i] = v;
          } else {
            o[2 * i] = static_cast<uint8_t>(v);
            o[2 * i + 1] = static_cast<uint8_t>(v >> 8);
          }
        };
        if constexpr (D == DevDtype::kE4M3) {
          for (int32_t i = threadIdx.x; i < L.elements; i += blockDim.x) {
            const float s = dev::scale_value<S>(sc + (i / L.group) * kScaleBytes);
            put(i, dev::f32_to_bf16(__fmul_rn(dev::e4m3_to_f32(data[i]), s)));
          }
        } else {
          for (int32_t b = threadIdx.x; b < L.elements / 2; b += blockDim.x) {
            const uint8_t q = data[b];
            const float s0 = dev::scale_value<S>(sc + (2 * b / L.group) * kScaleBytes);
            const float s1 = dev::scale_value<S>(sc + ((2 * b + 1) / L.group) * kScaleBytes);
            put(2 * b, dev::f32_to_bf16(__fmul_rn(dev::e2m1_to_f32(q & 0xF), s0)));
            put(2 * b + 1, dev::f32_to_bf16(__fmul_rn(dev::e2m1_to_f32(q >> 4), s1)));
          }
        }
      }
    }
  }
}

template <DevDtype D>
std::string launch_dequant(const LoadLaunch& a, dim3 grid, cudaStream_t s) {
  constexpr Kind K = Kind::kDequant;
  switch (a.layout.sf) {
    case DevSf::kUE8M0: load_kernel<K, D, DevSf::kUE8M0><<<grid, kThreads, 0, s>>>(a); break;
    case DevSf::kE4M3: load_kernel<K, D, DevSf::kE4M3><<<grid, kThreads, 0, s>>>(a); break;
    case DevSf::kFP32: load_kernel<K, D, DevSf::kFP32><<<grid, kThreads, 0, s>>>(a); break;
    default: return "cuda load: no kernel for scale format " + std::to_string(int(a.layout.sf));
  }
  return dev::launch_error("load_kernel<dequant>");
}

}  // namespace

std::string launch_load(const LoadLaunch& a, void* stream) {
  if (a.num_segments == 0 || a.max_len == 0) return "";
  const auto s = static_cast<cudaStream_t>(stream);
  const int64_t tiles = (int64_t{a.max_len} + kTile - 1) / kTile;
  // Segments go on x (up to 2^31-1); a longer list runs in several launches.
  constexpr int64_t kMaxGridX = (int64_t{1} << 31) - 1;
  for (int64_t first = 0; first < a.num_segments; first += kMaxGridX) {
    LoadLaunch part = a;
    part.segments = a.segments + 4 * first;
    part.num_segments = std::min(a.num_segments - first, kMaxGridX);
    const dim3 grid(static_cast<unsigned>(part.num_segments),
                    static_cast<unsigned>(std::min(tiles, kMaxGridY)));
    std::string err;
    if (!a.do_cast) {
      load_kernel<Kind::kCopy, DevDtype::kBF16, DevSf::kNone><<<grid, kThreads, 0, s>>>(part);
      err = dev::launch_error("load_kernel<copy>");
    } else if (a.layout.dtype == DevDtype::kE4M3) {
      err = launch_dequant<DevDtype::kE4M3>(part, grid, s);
    } else if (a.layout.dtype == DevDtype::kE2M1) {
      err = launch_dequant<DevDtype::kE2M1>(part, grid, s);
    } else {
      err = "cuda load: do_cast without quantised data";
    }
    if (!err.empty()) return err;
  }
  return "";
}

}  // namespace kvcheck::cuda
