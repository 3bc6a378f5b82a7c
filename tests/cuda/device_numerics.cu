// Device-side conversions for the `cuda` label: the GPU's own e4m3/e2m1/bf16
// conversions (hardware cvt on sm_90 for e4m3) over every input the host gives.
#include <cuda_bf16.h>
#include <cuda_fp4.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tests/cuda/device_numerics.h"

namespace {

__global__ void convert_kernel(const uint32_t* in, uint8_t* e4m3, uint8_t* e2m1, uint16_t* bf16, int64_t n) {
  const int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float f = __uint_as_float(in[i]);
  e4m3[i] = __nv_cvt_float_to_fp8(f, __NV_SATFINITE, __NV_E4M3);
  e2m1[i] = __nv_cvt_float_to_fp4(f, __NV_E2M1, cudaRoundNearest);
  bf16[i] = __bfloat16_as_ushort(__float2bfloat16_rn(f));
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

std::string convert_on_device(const std::vector<uint32_t>& in, DeviceConversions& out) {
  const int64_t n = static_cast<int64_t>(in.size());
  out.e4m3.assign(in.size(), 0);
  out.e2m1.assign(in.size(), 0);
  out.bf16.assign(in.size(), 0);
  uint32_t* d_in = nullptr;
  uint8_t *d_e4m3 = nullptr, *d_e2m1 = nullptr;
  uint16_t* d_bf16 = nullptr;
  std::string err = check(cudaMalloc(&d_in, in.size() * 4), "cudaMalloc");
  if (err.empty()) err = check(cudaMalloc(&d_e4m3, in.size()), "cudaMalloc");
  if (err.empty()) err = check(cudaMalloc(&d_e2m1, in.size()), "cudaMalloc");
  if (err.empty()) err = check(cudaMalloc(&d_bf16, in.size() * 2), "cudaMalloc");
  if (err.empty()) err = check(cudaMemcpy(d_in, in.data(), in.size() * 4, cudaMemcpyHostToDevice), "H2D");
  if (err.empty()) {
    convert_kernel<<<static_cast<unsigned>((n + 255) / 256), 256>>>(d_in, d_e4m3, d_e2m1, d_bf16, n);
    err = check(cudaGetLastError(), "launch");
  }
  if (err.empty()) err = check(cudaDeviceSynchronize(), "kernel");
  if (err.empty()) err = check(cudaMemcpy(out.e4m3.data(), d_e4m3, in.size(), cudaMemcpyDeviceToHost), "D2H");
  if (err.empty()) err = check(cudaMemcpy(out.e2m1.data(), d_e2m1, in.size(), cudaMemcpyDeviceToHost), "D2H");
  if (err.empty()) err = check(cudaMemcpy(out.bf16.data(), d_bf16, in.size() * 2, cudaMemcpyDeviceToHost), "D2H");
  cudaFree(d_in);
  cudaFree(d_e4m3);
  cudaFree(d_e2m1);
  cudaFree(d_bf16);
  return err;
}

}  // namespace kvcheck::cuda_test
