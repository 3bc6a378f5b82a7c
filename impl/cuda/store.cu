// store_kv_cache kernels (SPEC §4, §5.1). One CTA per token row (grid-stride): a
// warp per scale group reduces amax and writes the scale, then all threads encode
// the row's elements with the group multipliers kept in shared memory. Templated
// only on data dtype and scale format; layout and group size are runtime values.
#include "impl/cuda/common.cuh"
#include "impl/cuda/numerics.cuh"

namespace kvcheck::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kChunkGroups = 512;  // groups per shared-memory pass; even, so e2m1
                                   // bytes never straddle two passes

template <DevDtype D, DevSf S>
__global__ void __launch_bounds__(kThreads) store_quant_kernel(StoreLaunch a) {
  __shared__ float mult[kChunkGroups];
  const DevLayout& L = a.layout;
  const int32_t G = L.group;
  const int32_t num_groups = L.elements / G;
  constexpr int64_t kScaleBytes = S == DevSf::kFP32 ? 4 : 1;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, num_warps = blockDim.x / 32;
  for (int64_t r = blockIdx.x; r < a.n; r += gridDim.x) {
    const int32_t slot = a.slots[r];
    if (slot < 0) continue;  // -1 padding: nothing written (uniform across the CTA)
    const int64_t block = slot / L.block_size, token = slot % L.block_size;
    uint8_t* data = a.cache + block * L.block_stride + token * L.data_token_stride;
    uint8_t* scales = a.cache + block * L.block_stride + L.scale_base + token * L.scale_token_stride;
    const uint16_t* x = a.kv + r * a.kv_row_stride;
    for (int32_t g0 = 0; g0 < num_groups; g0 += kChunkGroups) {
      const int32_t g1 = min(num_groups, g0 + kChunkGroups);
      for (int32_t g = g0 + warp; g < g1; g += num_warps) {
        uint32_t m = 0;  // NaN-ignoring max |x| on the bf16 bits (|x| orders like its bits)
        for (int32_t j = lane; j < G; j += 32) {
          const uint32_t v = x[int64_t{g} * G + j] & 0x7FFFu;
          m = max(m, v > 0x7F80u ? 0u : v);
        }
        m = __reduce_max_sync(0xFFFFFFFFu, m);
        if (lane == 0)
          mult[g - g0] = dev::group_scale<D, S>(__uint_as_float(m << 16), scales + g * kScaleBytes);
      }
      __syncthreads();
      const int32_t e0 = g0 * G, e1 = g1 * G;
      if constexpr (D == DevDtype::kE4M3) {
        for (int32_t i = e0 + threadIdx.x; i < e1; i += blockDim.x)
          data[i] = dev::cvt_e4m3(__fmul_rn(dev::bf16_to_f32(x[i]), mult[i / G - g0]));
      } else {  // element 2i in the low nibble of byte i, 2i+1 in the high (SPEC §2)
        for (int32_t b = e0 / 2 + threadIdx.x; b < e1 / 2; b += blockDim.x) {
          const uint8_t lo = dev::cvt_e2m1(__fmul_rn(dev::bf16_to_f32(x[2 * b]), mult[2 * b / G - g0]));
          const uint8_t hi =
              dev::cvt_e2m1(__fmul_rn(dev::bf16_to_f32(x[2 * b + 1]), mult[(2 * b + 1) / G - g0]));
          data[b] = static_cast<uint8_t>(lo | (hi << 4));
        }
      }
      __syncthreads();  // mult is rewritten by the next pass / row
    }
  }
}

__global__ void __launch_bounds__(kThreads) store_bf16_kernel(StoreLaunch a) {
  const DevLayout& L = a.layout;
  for (int64_t r = blockIdx.x; r < a.n; r += gridDim.x) {
    const int32_t slot = a.slots[r];
    if (slot < 0) continue;
    const int64_t block = slot / L.block_size, token = slot % L.block_size;
    dev::copy_bytes(a.cache + block * L.block_stride + token * L.data_token_stride,
                    reinterpret_cast<const uint8_t*>(a.kv + r * a.kv_row_stride),
                    int64_t{L.elements} * 2, threadIdx.x, blockDim.x);
  }
}

template <DevDtype D>
std::string launch_quant(const StoreLaunch& a, cudaStream_t s) {
  const unsigned grid = dev::grid_for(a.n, 1);
  switch (a.layout.sf) {
    case DevSf::kUE8M0: store_quant_kernel<D, DevSf::kUE8M0><<<grid, kThreads, 0, s>>>(a); break;
    case DevSf::kE4M3: store_quant_kernel<D, DevSf::kE4M3><<<grid, kThreads, 0, s>>>(a); break;
    case DevSf::kFP32: store_quant_kernel<D, DevSf::kFP32><<<grid, kThreads, 0, s>>>(a); break;
    default: return "cuda store: no kernel for scale format " + std::to_string(int(a.layout.sf));
  }
  return dev::launch_error("store_quant_kernel");
}

}  // namespace

std::string launch_store(const StoreLaunch& a, void* stream) {
  if (a.n == 0) return "";
  const auto s = static_cast<cudaStream_t>(stream);
  switch (a.layout.dtype) {
    case DevDtype::kBF16:
      store_bf16_kernel<<<dev::grid_for(a.n, 1), kThreads, 0, s>>>(a);
      return dev::launch_error("store_bf16_kernel");
    case DevDtype::kE4M3: return launch_quant<DevDtype::kE4M3>(a, s);
    case DevDtype::kE2M1: return launch_quant<DevDtype::kE2M1>(a, s);
  }
  return "cuda store: no kernel for data dtype " + std::to_string(int(a.layout.dtype));
}

}  // namespace kvcheck::cuda
