#include "impl/cuda/device_memory.h"

#include <cuda_runtime_api.h>

#include <stdexcept>

namespace kvcheck::cuda {
namespace {

void check_rt(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("cuda ") + what + ": " + cudaGetErrorString(e));
}

}  // namespace

void check(const std::string& err, const char* what) {
  if (!err.empty()) throw std::runtime_error(std::string("cuda ") + what + ": " + err);
}

DeviceBuffer::DeviceBuffer(size_t bytes) {
  if (bytes == 0) return;
  void* p = nullptr;
  check_rt(cudaMalloc(&p, bytes), ("cudaMalloc(" + std::to_string(bytes) + ")").c_str());
  ptr_ = static_cast<uint8_t*>(p);
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) cudaFree(ptr_);
}

void to_device(void* dst, const void* src, size_t bytes) {
  if (bytes) check_rt(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy host->device");
}

void to_host(void* dst, const void* src, size_t bytes) {
  if (bytes) check_rt(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy device->host");
}

void synchronize(const char* what) { check_rt(cudaDeviceSynchronize(), what); }

}  // namespace kvcheck::cuda
