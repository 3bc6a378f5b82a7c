// CUDA backend kernel throughput (not a test): store and load of V41 at 16k-128k
// tokens, device-resident buffers, timed with CUDA events (no host copies).
// Prints one line per case with GB/s = (bytes read + bytes written) / time.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <numeric>
#include <random>
#include <vector>

#include "impl/cuda/cuda_backend.h"
#include "impl/cuda/kernels.h"

namespace {

using namespace kvcheck;

#define CK(x)                                                                  \
  do {                                                                         \
    const cudaError_t e_ = (x);                                                \
    if (e_ != cudaSuccess) {                                                   \
      std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));            \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

template <typename F>
float time_ms(F&& launch, int iters) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  for (int i = 0; i < 3; ++i) launch();  // warm up
  CK(cudaEventRecord(a));
  for (int i = 0; i < iters; ++i) launch();
  CK(cudaEventRecord(b));
  CK(cudaEventSynchronize(b));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, a, b));
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  return ms / iters;
}

void check(const std::string& err) {
  if (!err.empty()) {
    std::fprintf(stderr, "%s\n", err.c_str());
    std::exit(1);
  }
}

}  // namespace

int main() {
  const std::string why = cuda::probe_device();
  if (!why.empty()) {
    std::printf("bench_cuda: skipped (%s)\n", why.c_str());
    return 0;
  }
  const KVCacheFormat f = KVCacheFormat::V41();
  const int32_t bs = 64;
  std::mt19937_64 rng(1);
  for (const int64_t tokens : {16384, 65536, 131072}) {
    const CacheLayout layout = CacheLayout::make(f, tokens / bs, bs);
    std::vector<uint16_t> kv(static_cast<size_t>(tokens * f.elements));
    for (auto& x : kv) x = static_cast<uint16_t>(((rng() & 1) << 15) | ((120 + rng() % 14) << 7) | (rng() & 0x7F));
    std::vector<int32_t> slots(static_cast<size_t>(tokens));
    std::iota(slots.begin(), slots.end(), 0);
    std::vector<int32_t> segs;
    std::vector<int64_t> order(static_cast<size_t>(tokens / bs));
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);  // blocks scattered, as in a paged cache
    for (int64_t i = 0; i < tokens / bs; ++i)
      segs.insert(segs.end(), {static_cast<int32_t>(order[i]), 0, bs, static_cast<int32_t>(i * bs)});
    void *d_kv, *d_slots, *d_cache, *d_segs, *d_out;
    CK(cudaMalloc(&d_kv, kv.size() * 2));
    CK(cudaMalloc(&d_slots, slots.size() * 4));
    CK(cudaMalloc(&d_cache, static_cast<size_t>(layout.size_bytes())));
    CK(cudaMalloc(&d_segs, segs.size() * 4));
    CK(cudaMalloc(&d_out, static_cast<size_t>(tokens * f.load_row_bytes())));
    CK(cudaMemcpy(d_kv, kv.data(), kv.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_slots, slots.data(), slots.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_segs, segs.data(), segs.size() * 4, cudaMemcpyHostToDevice));

    cuda::StoreLaunch st;
    st.kv = static_cast<const uint16_t*>(d_kv);
    st.kv_row_stride = f.elements;
    st.slots = static_cast<const int32_t*>(d_slots);
    st.n = tokens;
    st.cache = static_cast<uint8_t*>(d_cache);
    st.layout = cuda::dev_layout(layout);
    const float store_ms = time_ms([&] { check(cuda::launch_store(st, nullptr)); }, 20);

    cuda::LoadLaunch ld;
    ld.cache = static_cast<const uint8_t*>(d_cache);
    ld.layout = st.layout;
    ld.do_cast = true;
    ld.segments = static_cast<const int32_t*>(d_segs);
    ld.num_segments = tokens / bs;
    ld.max_len = bs;
    ld.out_data = static_cast<uint8_t*>(d_out);
    ld.out_data_stride = f.load_row_bytes();
    const float load_ms = time_ms([&] { check(cuda::launch_load(ld, nullptr)); }, 20);

    const double record = static_cast<double>(f.bytes_per_token()), bf16 = 2.0 * f.elements;
    const double bytes = static_cast<double>(tokens) * (record + bf16);  // both ways
    std::printf("V41 bs64 tokens %6lld: store %.4f ms %.1f GB/s | load(dequant) %.4f ms %.1f GB/s\n",
                static_cast<long long>(tokens), store_ms, bytes / store_ms / 1e6, load_ms,
                bytes / load_ms / 1e6);
    CK(cudaFree(d_kv));
    CK(cudaFree(d_slots));
    CK(cudaFree(d_cache));
    CK(cudaFree(d_segs));
    CK(cudaFree(d_out));
  }
  return 0;
}
