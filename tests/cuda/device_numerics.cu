// Device-side conversions for the `cuda` label: the conversions kvcheck's kernels use
// (impl/cuda/numerics.cuh: hardware e4m3 pairs, our e2m1 ladder, NVIDIA's software
// e2m1, bf16 pairs) over every input the host gives.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

#include "impl/cuda/numerics.cuh"
#include "tests/cuda/device_numerics.h"

namespace {

namespace dev = kvcheck::cuda::dev;

// Element i is converted paired with its neighbour i^1, so each pair instruction's
// two halves are checked against the scalar reference in their own order.
__global__ void convert_kernel(const uint32_t* in, uint8_t* e4m3, uint8_t* e4m3_hi, uint8_t* e2m1,
                               uint8_t* e2m1_nv, uint16_t* bf16, int64_t n) {
  const int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float f = __uint_as_float(in[i]);
  const int64_t j = (i ^ 1) < n ? (i ^ 1) : i;
  const float g = __uint_as_float(in[j]);
  const uint32_t pair = dev::cvt_e4m3x2(f, g);
  e4m3[i] = static_cast<uint8_t>(pair);
  e4m3_hi[j] = static_cast<uint8_t>(pair >> 8);
  e2m1[i] = dev::cvt_e2m1(f);
  e2m1_nv[i] = dev::cvt_e2m1_nvidia(f);
  bf16[i] = static_cast<uint16_t>(dev::f32x2_to_bf16x2(f, g));
}

// Counts one mismatch of div_rn against __fdiv_rn; the first one found keeps its operands.
__device__ void compare_div(float x, float s, unsigned long long* counts, unsigned long long* first) {
  const float got = dev::div_rn(x, s, __frcp_rn(s), dev::fast_div_ok(s));
  const float want = __fdiv_rn(x, s);
  if (__float_as_uint(got) != __float_as_uint(want)) {
    atomicAdd(counts, 1ull);
    atomicCAS(first, 0ull, (static_cast<unsigned long long>(__float_as_uint(x)) << 32) | __float_as_uint(s));
  }
}

// Thread j: scale 1 + j * 2^-23 against x = +-(1 + m * 2^-10) for every 10-bit m.
__global__ void div_significands_kernel(unsigned long long* counts, unsigned long long* first) {
  const uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= (1u << 23)) return;
  const float s = __uint_as_float(0x3F800000u | j);
  for (uint32_t m = 0; m < 2048; ++m)
    compare_div(__uint_as_float(((m >> 10) << 31) | 0x3F800000u | ((m & 1023u) << 13)), s, counts, first);
}

// Thread i: input i of 2^17 (bf16 values, then fp16 values as floats) against every scale.
__global__ void div_values_kernel(const uint32_t* scales, int n, unsigned long long* counts, unsigned long long* first) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (1u << 17)) return;
  const float x = i < 65536 ? __uint_as_float(i << 16) : __half2float(__ushort_as_half(static_cast<uint16_t>(i)));
  for (int k = 0; k < n; ++k) compare_div(x, __uint_as_float(scales[k]), counts, first);
}

// Thread i: tile amax = bf16 bits i (0 .. +Inf). out[6i]: kvcheck's fp32_pow2 scale code
// (dev::group_scale, SPEC §4.6); out[4i+1]: exp2f(ceilf(log2f(max(amax / 448, 1e-4))))
// (vLLM fp8_ds_mla written with device log2f); out[4i+2]: exp2f(ceilf(log2f(max(amax,
// 1e-4) / 448))) (vLLM's indexer "ue8m0" option); out[5i+3]: kvcheck's §4.7 scale code;
// out[5i+4]: kvcheck's §4.8 ue8m0 byte (MODEL1); out[6i+5]: kvcheck's §4.9 e4m3 byte
// (NVFP4_DS_MLA, rounded up). Six values per input.
__global__ void pow2_scale_kernel(uint32_t* out) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i > 0x7F80u) return;
  const float amax = __uint_as_float(i << 16);
  uint32_t* o = out + 6 * i;
  o[0] = dev::group_scale<kvcheck::PagedDtype::kE4M3, kvcheck::PagedSf::kFP32Pow2>(amax).code;
  o[1] = __float_as_uint(exp2f(ceilf(log2f(fmaxf(__fdiv_rn(amax, 448.0f), 1e-4f)))));
  o[2] = __float_as_uint(exp2f(ceilf(log2f(__fdiv_rn(fmaxf(amax, 1e-4f), 448.0f)))));
  o[3] = dev::group_scale<kvcheck::PagedDtype::kE4M3, kvcheck::PagedSf::kFP32Pow2FloorFirst>(amax).code;
  o[4] = dev::group_scale<kvcheck::PagedDtype::kE4M3, kvcheck::PagedSf::kUE8M0FloorAfter>(amax).code;
  o[5] = dev::group_scale<kvcheck::PagedDtype::kE2M1, kvcheck::PagedSf::kE4M3RoundUp>(amax).code;
}

// Counts a mismatch in counts[0] and keeps the first one's operands in first[0].
__device__ void count_mismatch(uint32_t a, uint32_t b, unsigned long long* counts, unsigned long long* first) {
  atomicAdd(counts, 1ull);
  atomicCAS(first, 0ull, (static_cast<unsigned long long>(a) << 32) | b);
}

// Grid-stride over k < 2^32, three checks of the kernels' fast paths (numerics.cuh):
// (a) dev::cvt_e2m1 against NVIDIA's conversion on every float (bits k);
// (b) k < 2^16: dev::fp8x2_to_f32 (hardware pair) against dev::e4m3_to_f32 per code
//     (NaN codes: both NaN);
// (c) k < 32641 * 2^16: dev::abs_max_bf16x2 against the integer rule max(m, |w|, NaN
//     counting 0) per half, m a non-NaN amax (k / 2^16 in the high half, a permuted one
//     in the low), w every 16-bit pattern (k % 2^16 high, a permuted one low);
// (d) dev::cvt_e2m1x2 (the fixed stores' pair encoder) against dev::cvt_e2m1 of each
//     half, on every float as the low half (bits k) with every float as the high one
//     (bits k * 2654435761: odd, so a permutation of all 2^32);
// (e) the same pairs through cvt_e2m1x2<kNanZero> against cvt_e2m1 with a NaN coded 0
//     (the K/V NVFP4 store, SPEC §7.9);
// (f) k < 253 * 2^16: dev::e2m1x2_of_bf16x2(mul_bf16x2(w, 2^-s)) (FP4_INDEX's ue8m0
//     path) against cvt_e2m1(float(x) * 2^-s) per half, every bf16 x (k % 2^16 low, a
//     permuted one high) against every power-of-two multiplier the ue8m0 scale gives
//     (s = k / 2^16 - 126, s in [-126, 126]).
__global__ void exhaustive_kernel(unsigned long long* counts, unsigned long long* first) {
  const uint64_t stride = uint64_t{gridDim.x} * blockDim.x;
  for (uint64_t k = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; k < (uint64_t{1} << 32); k += stride) {
    const uint32_t u = static_cast<uint32_t>(k);
    const float f = __uint_as_float(u);
    if (dev::cvt_e2m1(f) != dev::cvt_e2m1_nvidia(f)) count_mismatch(u, 0, counts, first);
    if (k < 65536) {
      const float2 v = dev::fp8x2_to_f32<__NV_E4M3>(u);
      const float lo = dev::e4m3_to_f32(static_cast<uint8_t>(u)), hi = dev::e4m3_to_f32(static_cast<uint8_t>(u >> 8));
      const bool same_lo = isnan(lo) ? isnan(v.x) : __float_as_uint(lo) == __float_as_uint(v.x);
      const bool same_hi = isnan(hi) ? isnan(v.y) : __float_as_uint(hi) == __float_as_uint(v.y);
      if (!same_lo || !same_hi) count_mismatch(u, 0, counts + 1, first + 1);
    }
    if (k < uint64_t{32641} << 16) {
      const uint32_t mh = u >> 16, ml = (mh * 7919u) % 32641u, wh = u & 0xFFFFu, wl = (wh * 40503u + 12345u) & 0xFFFFu;
      const uint32_t m = (mh << 16) | ml, w = (wh << 16) | wl;
      const auto rule = [](uint32_t mm, uint32_t ww) {
        const uint32_t a = ww & 0x7FFFu;
        return max(mm, a > 0x7F80u ? 0u : a);
      };
      const uint32_t want = (rule(mh, wh) << 16) | rule(ml, wl);
      if (dev::abs_max_bf16x2(m, w) != want) count_mismatch(m, w, counts + 2, first + 2);
    }
    const uint32_t uh = u * 2654435761u;
    const float g = __uint_as_float(uh);
    if (dev::cvt_e2m1x2(f, g) != (uint32_t{dev::cvt_e2m1(f)} | uint32_t{dev::cvt_e2m1(g)} << 4))
      count_mismatch(u, uh, counts + 3, first + 3);
    const auto nan_zero = [](float x) { return isnan(x) ? 0u : uint32_t{dev::cvt_e2m1(x)}; };
    if (dev::cvt_e2m1x2<true>(f, g) != (nan_zero(f) | nan_zero(g) << 4)) count_mismatch(u, uh, counts + 4, first + 4);
    if (k < uint64_t{253} << 16) {
      const uint32_t xl = u & 0xFFFFu, xh = (xl * 40503u + 12345u) & 0xFFFFu;
      const float mult = dev::exp2_neg(static_cast<int32_t>(u >> 16) - 126);
      const uint32_t m2 = (__float_as_uint(mult) >> 16) * 0x10001u;
      const uint32_t want = uint32_t{dev::cvt_e2m1(__fmul_rn(dev::bf16_to_f32(xl), mult))} |
                            uint32_t{dev::cvt_e2m1(__fmul_rn(dev::bf16_to_f32(xh), mult))} << 4;
      if (dev::e2m1x2_of_bf16x2(dev::mul_bf16x2(xl | xh << 16, m2)) != want)
        count_mismatch(xl | xh << 16, __float_as_uint(mult), counts + 5, first + 5);
    }
  }
}

std::string check(cudaError_t e, const char* what) {
  return e == cudaSuccess ? std::string() : std::string(what) + ": " + cudaGetErrorString(e);
}

}  // namespace

namespace kvcheck::cuda_test {

std::string device_count(int* count) {
  *count = 0;
  const cudaError_t e = cudaGetDeviceCount(count);
  if (e != cudaSuccess) *count = 0;
  return e == cudaSuccess ? std::string() : cudaGetErrorString(e);
}

std::string check_div_rn(const std::vector<uint32_t>& scales, DivisionCheck& significands, DivisionCheck& values) {
  unsigned long long* d_out = nullptr;  // {count, first} for (a), then for (b)
  uint32_t* d_scales = nullptr;
  std::string err = check(cudaMalloc(&d_out, 4 * sizeof(unsigned long long)), "cudaMalloc");
  if (err.empty()) err = check(cudaMalloc(&d_scales, scales.size() * 4 + 4), "cudaMalloc");
  if (err.empty()) err = check(cudaMemset(d_out, 0, 4 * sizeof(unsigned long long)), "cudaMemset");
  if (err.empty())
    err = check(cudaMemcpy(d_scales, scales.data(), scales.size() * 4, cudaMemcpyHostToDevice), "H2D");
  if (err.empty()) {
    div_significands_kernel<<<(1u << 23) / 256, 256>>>(d_out, d_out + 1);
    err = check(cudaGetLastError(), "launch");
  }
  if (err.empty()) {
    div_values_kernel<<<(1u << 17) / 256, 256>>>(d_scales, static_cast<int>(scales.size()), d_out + 2, d_out + 3);
    err = check(cudaGetLastError(), "launch");
  }
  if (err.empty()) err = check(cudaDeviceSynchronize(), "kernel");
  unsigned long long out[4] = {};
  if (err.empty()) err = check(cudaMemcpy(out, d_out, sizeof out, cudaMemcpyDeviceToHost), "D2H");
  significands = {uint64_t{1} << 34, out[0], static_cast<uint32_t>(out[1] >> 32), static_cast<uint32_t>(out[1])};
  values = {(uint64_t{1} << 17) * scales.size(), out[2], static_cast<uint32_t>(out[3] >> 32),
            static_cast<uint32_t>(out[3])};
  cudaFree(d_out);
  cudaFree(d_scales);
  return err;
}

std::string check_exhaustive(ExhaustiveChecks& out) {
  constexpr int kChecks = 6;
  unsigned long long* d_out = nullptr;  // counts[kChecks], then first[kChecks]
  std::string err = check(cudaMalloc(&d_out, 2 * kChecks * sizeof(unsigned long long)), "cudaMalloc");
  if (err.empty()) err = check(cudaMemset(d_out, 0, 2 * kChecks * sizeof(unsigned long long)), "cudaMemset");
  if (err.empty()) {
    exhaustive_kernel<<<132 * 16, 256>>>(d_out, d_out + kChecks);
    err = check(cudaGetLastError(), "launch");
  }
  if (err.empty()) err = check(cudaDeviceSynchronize(), "kernel");
  unsigned long long r[2 * kChecks] = {};
  if (err.empty()) err = check(cudaMemcpy(r, d_out, sizeof r, cudaMemcpyDeviceToHost), "D2H");
  const auto unpack = [&](int i, uint64_t n) {
    return DivisionCheck{n, r[i], static_cast<uint32_t>(r[kChecks + i] >> 32), static_cast<uint32_t>(r[kChecks + i])};
  };
  out.e2m1 = unpack(0, uint64_t{1} << 32);
  out.fp8_decode = unpack(1, 65536);
  out.abs_max = unpack(2, uint64_t{32641} << 16);
  out.e2m1_pair = unpack(3, uint64_t{1} << 32);
  out.e2m1_pair_nan_zero = unpack(4, uint64_t{1} << 32);
  out.e2m1_pair_bf16_pow2 = unpack(5, uint64_t{253} << 16);
  cudaFree(d_out);
  return err;
}

std::string pow2_scales_on_device(std::vector<uint32_t>& out) {
  constexpr uint32_t kInputs = 0x7F81;
  out.assign(6 * kInputs, 0);
  uint32_t* d_out = nullptr;
  std::string err = check(cudaMalloc(&d_out, out.size() * 4), "cudaMalloc");
  if (err.empty()) {
    pow2_scale_kernel<<<(kInputs + 255) / 256, 256>>>(d_out);
    err = check(cudaGetLastError(), "launch");
  }
  if (err.empty()) err = check(cudaDeviceSynchronize(), "kernel");
  if (err.empty()) err = check(cudaMemcpy(out.data(), d_out, out.size() * 4, cudaMemcpyDeviceToHost), "D2H");
  cudaFree(d_out);
  return err;
}

std::string convert_on_device(const std::vector<uint32_t>& in, DeviceConversions& out) {
  const size_t n = in.size();
  for (auto* v : {&out.e4m3, &out.e4m3_hi, &out.e2m1, &out.e2m1_nvidia}) v->assign(n, 0);
  out.bf16.assign(n, 0);
  uint32_t* d_in = nullptr;
  uint8_t* d_bytes = nullptr;  // 4 arrays of n bytes
  uint16_t* d_bf16 = nullptr;
  std::string err = check(cudaMalloc(&d_in, n * 4), "cudaMalloc");
  if (err.empty()) err = check(cudaMalloc(&d_bytes, n * 4), "cudaMalloc");
  if (err.empty()) err = check(cudaMalloc(&d_bf16, n * 2), "cudaMalloc");
  if (err.empty()) err = check(cudaMemcpy(d_in, in.data(), n * 4, cudaMemcpyHostToDevice), "H2D");
  if (err.empty()) {
    convert_kernel<<<static_cast<unsigned>((n + 255) / 256), 256>>>(d_in, d_bytes, d_bytes + n, d_bytes + 2 * n,
                                                                     d_bytes + 3 * n, d_bf16, static_cast<int64_t>(n));
    err = check(cudaGetLastError(), "launch");
  }
  if (err.empty()) err = check(cudaDeviceSynchronize(), "kernel");
  std::vector<uint8_t>* arrays[] = {&out.e4m3, &out.e4m3_hi, &out.e2m1, &out.e2m1_nvidia};
  for (size_t k = 0; k < 4 && err.empty(); ++k)
    err = check(cudaMemcpy(arrays[k]->data(), d_bytes + k * n, n, cudaMemcpyDeviceToHost), "D2H");
  if (err.empty()) err = check(cudaMemcpy(out.bf16.data(), d_bf16, n * 2, cudaMemcpyDeviceToHost), "D2H");
  cudaFree(d_in);
  cudaFree(d_bytes);
  cudaFree(d_bf16);
  return err;
}

}  // namespace kvcheck::cuda_test
