// The cpu backend's throughput, every op and format, each row with two figures a
// reader can compare across machines (Google Benchmark counters):
//   memcpy_pct        100 x the time of a memcpy of the same bytes moved (read +
//                     written; timed in the same process, just before) / the op's time
//   speedup_per_core  (reference time / cpu time) / the threads the cpu backend may use
//                     (KVCHECK_THREADS, else every core): the kernels' own gain, per core
// Rows: store_kv_cache and load_paged_kv_cache for every SPEC §2 format (16k tokens,
// block_size 64, scattered slots, every block loaded in a shuffled order); store_kv
// and gather_kv for bf16, fp16, e4m3, e5m2 (H 8 x D 128, NHD, block 16). bytes/s =
// bytes moved: rows read + records written (stores), records read + rows written
// (loads and gathers).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>
#include <cstdint>
#include <functional>
#include <numeric>
#include <random>
#include <vector>

#include "impl/cpu/cpu_backend.h"
#include "impl/cpu/parallel.h"
#include "impl/kv_cache.h"
#include "impl/kv_layout.h"
#include "reference/gather_kv.h"
#include "reference/load.h"
#include "reference/store.h"
#include "reference/store_kv.h"

namespace kvcheck {
namespace {

constexpr int64_t kTokens = 16384;
constexpr int32_t kBlockSize = 64;
constexpr int64_t kNumBlocks = kTokens / kBlockSize;

double seconds_of(const std::function<void()>& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Median seconds of `reps` calls, after one warm-up call.
double median_seconds(const std::function<void()>& fn, int reps) {
  fn();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) t.push_back(seconds_of(fn));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

/// Runs the benchmark loop over `cpu` and sets bytes/s and the two counters above:
/// `bytes_moved` per call, `reference` the same call on the scalar reference.
void run_and_report(benchmark::State& state, int64_t bytes_moved, const std::function<void()>& cpu,
                    const std::function<void()>& reference) {
  std::vector<uint8_t> src(static_cast<size_t>(bytes_moved / 2), 1), dst(src.size());
  const double copy_s = median_seconds([&] {
    std::memcpy(dst.data(), src.data(), src.size());
    benchmark::ClobberMemory();
  }, 9);
  const double ref_s = median_seconds(reference, 3);
  double total = 0;
  for (auto _ : state) {
    total += seconds_of(cpu);
    benchmark::ClobberMemory();
  }
  const double cpu_s = total / static_cast<double>(state.iterations());
  const int threads = cpu::max_threads();
  state.SetBytesProcessed(state.iterations() * bytes_moved);
  state.counters["memcpy_pct"] = 100 * copy_s / cpu_s;
  state.counters["speedup_per_core"] = ref_s / cpu_s / threads;
  state.counters["threads"] = threads;
}

struct Fixture {
  explicit Fixture(const KVCacheFormat& f)
      : layout(CacheLayout::make(f, kNumBlocks, kBlockSize)), cache(layout) {
    std::mt19937_64 rng(1);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    kv.resize(static_cast<size_t>(kTokens * f.elements));
    for (auto& x : kv) x = static_cast<bf16_bits>(std::bit_cast<uint32_t>(normal(rng)) >> 16);
    slots.resize(kTokens);
    std::iota(slots.begin(), slots.end(), 0);
    std::shuffle(slots.begin(), slots.end(), rng);
    // Load plan: every block once, in shuffled block order, as a paged plan would.
    std::vector<int32_t> blocks(kNumBlocks);
    std::iota(blocks.begin(), blocks.end(), 0);
    std::shuffle(blocks.begin(), blocks.end(), rng);
    for (int64_t i = 0; i < kNumBlocks; ++i)
      segs.insert(segs.end(), {blocks[static_cast<size_t>(i)], 0, kBlockSize,
                               static_cast<int32_t>(i * kBlockSize)});
    out_data.resize(static_cast<size_t>(kTokens * f.load_row_bytes()));
    out_scales.resize(static_cast<size_t>(kTokens * f.load_scale_row_bytes()));
    cpu::CpuBackend().store_kv_cache(input(), slots, cache.view());
  }
  KVInput input() const { return {kv.data(), kTokens, layout.format.elements}; }
  LoadOutput output() {
    return {out_data.data(), layout.format.load_row_bytes(),
            layout.format.is_index() ? out_scales.data() : nullptr,
            layout.format.load_scale_row_bytes(), kTokens};
  }
  CacheLayout layout;
  KVCache cache;
  std::vector<bf16_bits> kv;
  std::vector<int32_t> slots, segs;
  std::vector<uint8_t> out_data, out_scales;
};

void BM_Store(benchmark::State& state) {
  Fixture fx(supported_formats().at(static_cast<size_t>(state.range(0))));
  const KVCacheFormat& f = fx.layout.format;
  const cpu::CpuBackend cpu;
  run_and_report(
      state, kTokens * (2 * f.elements + f.bytes_per_token()),
      [&] { cpu.store_kv_cache(fx.input(), fx.slots, fx.cache.view()); },
      [&] { ref::store_kv_cache(fx.input(), fx.slots, fx.cache.bytes(), f, kNumBlocks, kBlockSize); });
  state.SetLabel(f.name);
}

void BM_Load(benchmark::State& state) {
  Fixture fx(supported_formats().at(static_cast<size_t>(state.range(0))));
  const KVCacheFormat& f = fx.layout.format;
  const cpu::CpuBackend cpu;
  run_and_report(
      state, kTokens * (f.bytes_per_token() + f.load_row_bytes() + f.load_scale_row_bytes()),
      [&] { cpu.load_paged_kv_cache(fx.cache.const_view(), fx.segs, kTokens, fx.output()); },
      [&] { ref::load_paged_kv_cache(fx.cache.bytes(), f, kNumBlocks, kBlockSize, fx.segs, kTokens, fx.output()); });
  state.SetLabel(f.name);
}

// Arg: the format's index in supported_formats() (SPEC §2: V41, V41_FP4, FP4_INDEX,
// FP8_FP32SF_INDEX, MXFP8_INDEX, BF16(512)).
BENCHMARK(BM_Store)->DenseRange(0, static_cast<int>(supported_formats().size()) - 1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Load)->DenseRange(0, static_cast<int>(supported_formats().size()) - 1)->Unit(benchmark::kMillisecond)->UseRealTime();

// The K/V family (SPEC §7): a Llama-3-8B-like layer, H 8 x D 128, NHD, block 16,
// 16k tokens; bytes moved = K and V rows read + records written (store), records read
// + rows written (gather).
constexpr int32_t kKvHeads = 8, kKvHeadDim = 128, kKvBlock = 16;

KvDtype kv_dtype_of(int64_t id) {
  switch (id) {
    case 0: return KvDtype::kBF16;
    case 1: return KvDtype::kFP16;
    case 2: return KvDtype::kE4M3;
    case 3: return KvDtype::kE5M2;
    default: return KvDtype::kE2M1;
  }
}

struct KvFixture {
  explicit KvFixture(KvDtype dtype)
      : model(is_quantized_kv(dtype) ? KvDtype::kBF16 : dtype),
        layout(kv_dense_layout(dtype, KvHeadLayout::kNHD, kTokens / kKvBlock, kKvBlock, kKvHeads, kKvHeadDim)) {
    const int64_t row = int64_t{kKvHeads} * kKvHeadDim, span = kv_span_elements(layout);
    std::mt19937_64 rng(2);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    key.resize(static_cast<size_t>(kTokens * row));
    value.resize(key.size());
    for (auto* v : {&key, &value})
      for (auto& x : *v) x = static_cast<uint16_t>(std::bit_cast<uint32_t>(normal(rng)) >> 16);
    k.resize(static_cast<size_t>(kv_bytes(dtype, span)));
    v.resize(k.size());
    // e2m1 (docs/spec.md §7.9): linear e4m3 scale caches, [blocks][tokens][H][D / 16].
    if (is_nvfp4(dtype)) k_sf.resize(static_cast<size_t>(span / 16)), v_sf.resize(k_sf.size());
    slots.resize(kTokens);
    std::iota(slots.begin(), slots.end(), 0);
    std::shuffle(slots.begin(), slots.end(), rng);
    // Gather: 16 sequences of 1024 tokens over shuffled blocks.
    std::vector<int32_t> blocks(static_cast<size_t>(kTokens / kKvBlock));
    std::iota(blocks.begin(), blocks.end(), 0);
    std::shuffle(blocks.begin(), blocks.end(), rng);
    table = blocks;
    for (int i = 0; i <= 16; ++i) cu.push_back(i * 1024);
    out_k.resize(key.size());
    out_v.resize(key.size());
    cpu::CpuBackend().store_kv(in(key), in(value), slots, view());
  }
  KvTokensIn in(const std::vector<uint16_t>& x) const {
    return {reinterpret_cast<const uint8_t*>(x.data()), model, kTokens, kKvHeads * kKvHeadDim, kKvHeadDim};
  }
  KvTokensOut out(std::vector<uint16_t>& x) {
    return {reinterpret_cast<uint8_t*>(x.data()), model, kTokens, kKvHeads * kKvHeadDim, kKvHeadDim};
  }
  KvCacheView view() {
    const int64_t span = kv_span_elements(layout);
    if (is_nvfp4(layout.dtype)) {  // one global scale a side
      const int64_t g = kKvHeadDim / 16;
      return {k.data(), span, v.data(), span, layout, {KvScaleKind::kPerTensor, {scales.data(), 1}, {scales.data() + 1, 1}},
              k_sf.data(), static_cast<int64_t>(k_sf.size()), v_sf.data(), static_cast<int64_t>(v_sf.size()),
              {KvSfLayout::kLinear, kKvBlock * kKvHeads * g, kKvHeads * g, g}};
    }
    return {k.data(), span, v.data(), span, layout, {KvScaleKind::kPerHead, scales, scales}, nullptr, 0, nullptr, 0, {}};
  }
  int64_t bytes_moved() const {  // rows, records and (e2m1) the scale bytes, K and V
    const int64_t elements = 2 * kTokens * int64_t{kKvHeads} * kKvHeadDim;
    return elements * 2 + kv_bytes(layout.dtype, elements) + (is_nvfp4(layout.dtype) ? elements / 16 : 0);
  }
  KvDtype model;
  KvCacheLayout layout;
  std::vector<uint16_t> key, value, out_k, out_v;
  std::vector<uint8_t> k, v, k_sf, v_sf;
  std::vector<int32_t> slots, table, cu;
  std::vector<float> scales = {0.5f, 1.0f, 2.0f, 3.0f, 0.25f, 1.5f, 7.0f, 0.125f};
};

void BM_StoreKv(benchmark::State& state) {
  KvFixture fx(kv_dtype_of(state.range(0)));
  const cpu::CpuBackend cpu;
  run_and_report(
      state, fx.bytes_moved(), [&] { cpu.store_kv(fx.in(fx.key), fx.in(fx.value), fx.slots, fx.view()); },
      [&] { ref::store_kv(fx.in(fx.key), fx.in(fx.value), fx.slots, fx.view()); });
  state.SetLabel(to_string(fx.layout.dtype) + " H8xD128");
}

void BM_GatherKv(benchmark::State& state) {
  KvFixture fx(kv_dtype_of(state.range(0)));
  const cpu::CpuBackend cpu;
  const int32_t max_blocks = 1024 / kKvBlock;
  const GatherKvArgs a{fx.view(), fx.table, max_blocks, fx.cu, {}, SeqStartUnit::kToken, fx.out(fx.out_k),
                       fx.out(fx.out_v)};
  run_and_report(state, fx.bytes_moved(), [&] { cpu.gather_kv(a); }, [&] { ref::gather_kv(a); });
  state.SetLabel(to_string(fx.layout.dtype) + " H8xD128");
}

// Arg: {0 bf16, 1 fp16, 2 e4m3 per-head, 3 e5m2 per-head}.
BENCHMARK(BM_StoreKv)->DenseRange(0, 4)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_GatherKv)->DenseRange(0, 4)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace kvcheck

BENCHMARK_MAIN();
