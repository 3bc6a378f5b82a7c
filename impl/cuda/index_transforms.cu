// SPEC §5.5 index transforms: one thread per output entry (grid-stride); a checked
// call's validation kernels (validate.cu) run first and these return when its status
// holds an error. Also the device probe and the grid cap.
#include <cstdlib>
#include <mutex>
#include <map>
#include <utility>

#include "impl/cuda/common.cuh"
#include "include/kvcheck/cuda_probe.h"
#include "impl/cuda/kernels.h"
#include "impl/cuda/launch.cuh"

namespace kvcheck::cuda {
namespace {

using dev::kThreads;

__global__ void convert_kernel(ConvertArgs a, const DeviceStatus* status) {
  dev::pdl_wait();
  if (dev::failed(status)) return;
  const int32_t k = a.k, max_blocks = a.max_blocks, bs = a.block_size;
  const int32_t *topk = a.topk, *table = a.block_table, *seq_ids = a.seq_ids, *ctx_lens = a.context_lens;
  int32_t* out = a.out;
  const int64_t n = int64_t{a.num_q} * k;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t q = i / k;
    const int32_t x = topk[i];
    const int64_t seq = seq_ids ? seq_ids[q] : q;
    out[i] = x >= 0 && x < ctx_lens[q]
                 ? static_cast<int32_t>(int64_t{table[seq * max_blocks + x / bs]} * bs + x % bs)
                 : -1;
  }
  dev::pdl_trigger();
}

__global__ void cat_kernel(const int32_t* left, int32_t wl, const int32_t* right, int32_t wr,
                           int32_t num_q, int32_t shift, int32_t* out, const DeviceStatus* status) {
  dev::pdl_wait();
  if (dev::failed(status)) return;
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
  dev::pdl_trigger();
}

__global__ void expand_kernel(const int32_t* pivots, int32_t num_q, int32_t width, int32_t* out,
                              const DeviceStatus* status) {
  dev::pdl_wait();
  if (dev::failed(status)) return;
  const int64_t n = int64_t{num_q} * width;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int32_t* p = pivots + 4 * (i / width);
    const int32_t c = static_cast<int32_t>(i % width);
    const int32_t len1 = p[1], len2 = p[3];
    out[i] = c < len1 ? p[0] + c : (c - len1 < len2 ? p[2] + (c - len1) : -1);
  }
  dev::pdl_trigger();
}

__global__ void swa_decode_kernel(const int32_t* start_len, int32_t num_q, int32_t width,
                                  int32_t ring, int32_t* out, const DeviceStatus* status) {
  dev::pdl_wait();
  if (dev::failed(status)) return;
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
  dev::pdl_trigger();
}

int64_t grid(int64_t n) { return dev::grid_for((n + kThreads - 1) / kThreads); }

}  // namespace

std::string launch_convert_kv_index(const ConvertArgs& a, const DeviceStatus* st, const LaunchOptions& o) {
  const int64_t n = int64_t{a.num_q} * a.k;
  if (n == 0) return "";
  return dev::launch("convert_kernel", convert_kernel, grid(n), o, a, st);
}

std::string launch_kv_index_cat(const int32_t* left, int32_t wl, const int32_t* right, int32_t wr,
                                int32_t num_q, int32_t shift, int32_t* out, const DeviceStatus* st,
                                const LaunchOptions& o) {
  const int64_t n = int64_t{num_q} * (int64_t{wl} + wr);
  if (n == 0) return "";
  return dev::launch("cat_kernel", cat_kernel, grid(n), o, left, wl, right, wr, num_q, shift, out, st);
}

std::string launch_expand_swa_index(const int32_t* pivots, int32_t num_q, int32_t width, int32_t* out,
                                    const DeviceStatus* st, const LaunchOptions& o) {
  const int64_t n = int64_t{num_q} * width;
  if (n == 0) return "";
  return dev::launch("expand_kernel", expand_kernel, grid(n), o, pivots, num_q, width, out, st);
}

std::string launch_swa_decode_index(const int32_t* start_len, int32_t num_q, int32_t width,
                                    int32_t ring_size, int32_t* out, const DeviceStatus* st,
                                    const LaunchOptions& o) {
  const int64_t n = int64_t{num_q} * width;
  if (n == 0) return "";
  return dev::launch("swa_decode_kernel", swa_decode_kernel, grid(n), o, start_len, num_q, width, ring_size,
                     out, st);
}

int64_t grid_cap_override() {
  static const int64_t cap = [] {
    const char* v = std::getenv("KVCHECK_CUDA_MAX_GRID");
    const long long n = v ? std::atoll(v) : 0;
    return n > 0 ? static_cast<int64_t>(n) : int64_t{0};
  }();
  return cap;
}

namespace dev {
int64_t grid_for(int64_t ctas_wanted) {
  // The test-only cap turns every grid-stride loop into many rows per CTA.
  constexpr int64_t kMaxGrid = (int64_t{1} << 31) - 1;
  const int64_t cap = grid_cap_override() > 0 ? grid_cap_override() : kMaxGrid;
  return ctas_wanted < 1 ? 1 : (ctas_wanted > cap ? cap : ctas_wanted);
}

int64_t resident_ctas(const void* kernel) {
  // Per (current device, kernel): a process may drive GPUs of different SM counts.
  // A failed query clears only the error it set itself (an error the caller left
  // pending was overwritten by it already); a successful one touches nothing.
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    (void)cudaGetLastError();
    device = 0;
  }
  static std::mutex mu;
  static std::map<std::pair<int, const void*>, int64_t> known;
  const std::lock_guard<std::mutex> lock(mu);
  auto it = known.find({device, kernel});
  if (it == known.end()) {
    int sms = 0, per_sm = 0;
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
      (void)cudaGetLastError();
      sms = 0;
    }
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, 0) != cudaSuccess) {
      (void)cudaGetLastError();
      per_sm = 0;
    }
    const int64_t wave = int64_t{sms} * per_sm;
    it = known.emplace(std::make_pair(device, kernel), wave > 0 ? wave : int64_t{1} << 12).first;
  }
  return it->second;
}
}  // namespace dev

std::string probe_device() {
  char why[512];
  if (kvcheck_probe_cuda_device(why, sizeof why) != KVCHECK_STATUS_OK) return why;
  cudaFuncAttributes attr;  // fails when this build has no image for the device
  const cudaError_t e = cudaFuncGetAttributes(&attr, expand_kernel);
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
