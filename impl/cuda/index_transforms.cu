// SPEC §5.5 index transforms: one thread per output entry (grid-stride), inputs
// validated on the host. Also the device probe used by make_cuda_backend.
#include "impl/cuda/common.cuh"
#include "impl/cuda/kernels.h"

namespace kvcheck::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void convert_kernel(const int32_t* topk, int32_t num_q, int32_t k, const int32_t* table,
                               int32_t max_blocks, const int32_t* seq_ids, const int32_t* ctx_lens,
                               int32_t bs, int32_t* out) {
  const int64_t n = int64_t{num_q} * k;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t q = i / k;
    const int32_t x = topk[i];
    const int64_t seq = seq_ids ? seq_ids[q] : q;
    out[i] = x >= 0 && x < ctx_lens[q]
                 ? static_cast<int32_t>(int64_t{table[seq * max_blocks + x / bs]} * bs + x % bs)
                 : -1;
  }
}

__global__ void cat_kernel(const int32_t* left, int32_t wl, const int32_t* right, int32_t wr,
                           int32_t num_q, int32_t shift, int32_t* out) {
  const int64_t w = int64_t{wl} + wr, n = int64_t{num_q} * w;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t q = i / w, c = i % w;
    if (c < wl) {
      out[i] = left[q * wl + c];
    } else {
      const int32_t r = right[q * wr + c - wl];
      out[i] = r == -1 ? -1 : r + shift;
    }
  }
}

__global__ void expand_kernel(const int32_t* pivots, int32_t num_q, int32_t width, int32_t* out) {
  const int64_t n = int64_t{num_q} * width;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int32_t* p = pivots + 4 * (i / width);
    const int32_t c = static_cast<int32_t>(i % width);
    const int32_t len1 = p[1], len2 = p[3];
    out[i] = c < len1 ? p[0] + c : (c - len1 < len2 ? p[2] + (c - len1) : -1);
  }
}

__global__ void swa_decode_kernel(const int32_t* start_len, int32_t num_q, int32_t width,
                                  int32_t ring, int32_t* out) {
  const int64_t n = int64_t{num_q} * width;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t q = i / width;
    const int32_t c = static_cast<int32_t>(i % width);
    const int32_t start = start_len[2 * q], len = start_len[2 * q + 1];
    if (c >= len) {
      out[i] = -1;
    } else {  // the start slot's ring, oldest first; c < len <= ring: one wrap at most
      int32_t r = start % ring + c;
      if (r >= ring) r -= ring;
      out[i] = start - start % ring + r;
    }
  }
}

unsigned grid(int64_t n) { return dev::grid_for(n, kThreads); }

}  // namespace

std::string launch_convert_kv_index(const int32_t* topk, int32_t num_q, int32_t k,
                                    const int32_t* block_table, int32_t max_blocks,
                                    const int32_t* seq_ids, const int32_t* context_lens,
                                    int32_t block_size, int32_t* out, void* stream) {
  const int64_t n = int64_t{num_q} * k;
  if (n == 0) return "";
  convert_kernel<<<grid(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      topk, num_q, k, block_table, max_blocks, seq_ids, context_lens, block_size, out);
  return dev::launch_error("convert_kernel");
}

std::string launch_kv_index_cat(const int32_t* left, int32_t wl, const int32_t* right, int32_t wr,
                                int32_t num_q, int32_t shift, int32_t* out, void* stream) {
  const int64_t n = int64_t{num_q} * (int64_t{wl} + wr);
  if (n == 0) return "";
  cat_kernel<<<grid(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(left, wl, right, wr, num_q,
                                                                          shift, out);
  return dev::launch_error("cat_kernel");
}

std::string launch_expand_swa_index(const int32_t* pivots, int32_t num_q, int32_t width,
                                    int32_t* out, void* stream) {
  const int64_t n = int64_t{num_q} * width;
  if (n == 0) return "";
  expand_kernel<<<grid(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(pivots, num_q, width, out);
  return dev::launch_error("expand_kernel");
}

std::string launch_swa_decode_index(const int32_t* start_len, int32_t num_q, int32_t width,
                                    int32_t ring_size, int32_t* out, void* stream) {
  const int64_t n = int64_t{num_q} * width;
  if (n == 0) return "";
  swa_decode_kernel<<<grid(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(start_len, num_q,
                                                                                width, ring_size, out);
  return dev::launch_error("swa_decode_kernel");
}

std::string probe_device() {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) return std::string("no usable CUDA driver/device: ") + cudaGetErrorString(e);
  if (count == 0) return "no CUDA device";
  cudaFuncAttributes attr;  // fails when this build has no image for the device
  e = cudaFuncGetAttributes(&attr, expand_kernel);
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear it: later launches report their own errors
    return std::string("this build's kernels cannot run on device 0: ") + cudaGetErrorString(e);
  }
  return "";
}

int64_t device_free_bytes() {
  size_t free_bytes = 0, total = 0;
  if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) return 0;
  return static_cast<int64_t>(free_bytes);
}

}  // namespace kvcheck::cuda
