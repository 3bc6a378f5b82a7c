// Producer / checker kernels of the PDL tests (tests/cuda/device_api_test.cpp). The
// producer calls griddepcontrol.launch_dependents first, so the kvcheck kernel
// launched behind it with PDL starts while the producer is still spinning: only that
// kernel's griddepcontrol.wait keeps it from reading the previous round's metadata.
#include <cuda_runtime.h>

#include "tests/cuda/pdl_kernels.h"

namespace kvcheck::cuda_test {
namespace {

__host__ __device__ uint16_t value(int32_t round, int64_t r, int64_t e) {
  uint32_t h = static_cast<uint32_t>(r * 0x9E3779B1u) ^ static_cast<uint32_t>(e * 0x85EBCA6Bu) ^
               static_cast<uint32_t>(round * 0xC2B2AE35u);
  h ^= h >> 15;
  h *= 0x2C1B3C6Du;
  h ^= h >> 12;
  return static_cast<uint16_t>((h & 0x3FFF) | 0x3800);  // finite, normal bf16
}

__host__ __device__ int32_t slot(int32_t round, int64_t r, int64_t num_slots) {
  // An odd multiplier and an offset modulo a power of two: a permutation per round.
  const uint64_t a = 2 * static_cast<uint64_t>(round) + 1;
  return static_cast<int32_t>((static_cast<uint64_t>(r) * a + 977u * static_cast<uint64_t>(round)) &
                              static_cast<uint64_t>(num_slots - 1));
}

__global__ void producer(int32_t round, uint16_t* kv, int64_t elements, int32_t* slots, int64_t n, int32_t* segs,
                         int64_t num_blocks, int32_t block_size, int64_t spin_ns) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
  // Spin on the SM clock (about 2 cycles per ns on an H200): %globaltimer may tick
  // coarsely or not at all inside a VM.
  const long long t0 = clock64();
  while (clock64() - t0 < 2 * spin_ns) {
  }
  const int64_t tid = int64_t{blockIdx.x} * blockDim.x + threadIdx.x, nt = int64_t{gridDim.x} * blockDim.x;
  if (kv != nullptr)
    for (int64_t i = tid; i < n * elements; i += nt) kv[i] = value(round, i / elements, i % elements);
  if (slots != nullptr)
    for (int64_t r = tid; r < n; r += nt) slots[r] = slot(round, r, n);
  if (segs != nullptr)
    for (int64_t b = tid; b < num_blocks; b += nt) {
      segs[4 * b] = slot(round, b, num_blocks);
      segs[4 * b + 1] = 0;
      segs[4 * b + 2] = block_size;
      segs[4 * b + 3] = static_cast<int32_t>(b * block_size);
    }
}

__global__ void check_store(int32_t round, const uint8_t* cache, PagedLayout L, int64_t n, unsigned long long* bad) {
  const int64_t tid = int64_t{blockIdx.x} * blockDim.x + threadIdx.x, nt = int64_t{gridDim.x} * blockDim.x;
  for (int64_t i = tid; i < n * L.elements; i += nt) {
    const int64_t r = i / L.elements, e = i % L.elements;
    const uint16_t* row = reinterpret_cast<const uint16_t*>(cache + L.slot_data_offset(slot(round, r, n)));
    if (row[e] != value(round, r, e)) atomicAdd(bad, 1ull);
  }
}

__global__ void check_load(int32_t round, const uint8_t* cache, PagedLayout L, const uint16_t* out, int64_t total_k,
                           unsigned long long* bad) {
  const int64_t tid = int64_t{blockIdx.x} * blockDim.x + threadIdx.x, nt = int64_t{gridDim.x} * blockDim.x;
  for (int64_t i = tid; i < total_k * L.elements; i += nt) {
    const int64_t row = i / L.elements, e = i % L.elements;
    const int64_t block = slot(round, row / L.block_size, L.num_blocks), token = row % L.block_size;
    const uint16_t* src = reinterpret_cast<const uint16_t*>(cache + L.data_offset(block, token));
    if (out[i] != src[e]) atomicAdd(bad, 1ull);
  }
}

std::string err(const char* what) {
  const cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? std::string() : std::string(what) + ": " + cudaGetErrorString(e);
}

}  // namespace

uint16_t pdl_value(int32_t round, int64_t r, int64_t e) { return value(round, r, e); }
int32_t pdl_slot(int32_t round, int64_t r, int64_t num_slots) { return slot(round, r, num_slots); }

std::string launch_producer(int32_t round, uint16_t* kv, int64_t elements, int32_t* slot_mapping, int64_t n,
                            int32_t* segments, int64_t num_blocks, int32_t block_size, int64_t spin_ns,
                            void* stream) {
  producer<<<8, 256, 0, static_cast<cudaStream_t>(stream)>>>(round, kv, elements, slot_mapping, n, segments,
                                                             num_blocks, block_size, spin_ns);
  return err("producer");
}

std::string launch_check_store(int32_t round, const uint8_t* cache, PagedLayout layout, int64_t n,
                               unsigned long long* mismatches, void* stream) {
  check_store<<<64, 256, 0, static_cast<cudaStream_t>(stream)>>>(round, cache, layout, n, mismatches);
  return err("check_store");
}

std::string launch_check_load(int32_t round, const uint8_t* cache, PagedLayout layout, const uint16_t* out,
                              int64_t total_k, unsigned long long* mismatches, void* stream) {
  check_load<<<64, 256, 0, static_cast<cudaStream_t>(stream)>>>(round, cache, layout, out, total_k, mismatches);
  return err("check_load");
}

}  // namespace kvcheck::cuda_test
