// store_kv_cache / load_paged_kv_cache throughput: cpu backend vs the scalar
// reference, 16k tokens, block_size 64, bytes/s = cache record bytes written (store)
// or output bytes written (load). KVCHECK_THREADS limits the cpu backend's threads.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "impl/cpu/cpu_backend.h"
#include "impl/kv_cache.h"
#include "reference/load.h"
#include "reference/store.h"

namespace kvcheck {
namespace {

constexpr int64_t kTokens = 16384;
constexpr int32_t kBlockSize = 64;
constexpr int64_t kNumBlocks = kTokens / kBlockSize;

KVCacheFormat format_of(int64_t id) {
  switch (id) {
    case 0: return KVCacheFormat::V41();
    case 1: return KVCacheFormat::V41_FP4();
    case 2: return KVCacheFormat::MXFP8_INDEX();
    default: return KVCacheFormat::BF16(512);
  }
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
    cpu::CpuBackend().store_kv_cache(input(), slots, {cache.data(), layout});
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
  Fixture fx(format_of(state.range(0)));
  const bool ref = state.range(1) != 0;
  const cpu::CpuBackend cpu;
  for (auto _ : state) {
    if (ref)
      ref::store_kv_cache(fx.input(), fx.slots, fx.cache.data(), fx.layout.format, kNumBlocks,
                          kBlockSize);
    else
      cpu.store_kv_cache(fx.input(), fx.slots, {fx.cache.data(), fx.layout});
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * kTokens * fx.layout.format.bytes_per_token());
  state.SetLabel(fx.layout.format.name + (ref ? " reference" : " cpu"));
}

void BM_Load(benchmark::State& state) {
  Fixture fx(format_of(state.range(0)));
  const bool ref = state.range(1) != 0;
  const cpu::CpuBackend cpu;
  for (auto _ : state) {
    if (ref)
      ref::load_paged_kv_cache(fx.cache.data(), fx.layout.format, kNumBlocks, kBlockSize, fx.segs,
                               kTokens, fx.output());
    else
      cpu.load_paged_kv_cache({fx.cache.data(), fx.layout}, fx.segs, kTokens, fx.output());
    benchmark::ClobberMemory();
  }
  const KVCacheFormat& f = fx.layout.format;
  state.SetBytesProcessed(state.iterations() * kTokens *
                          (f.load_row_bytes() + f.load_scale_row_bytes()));
  state.SetLabel(f.name + (ref ? " reference" : " cpu"));
}

// Args: {format: 0 V41, 1 V41_FP4, 2 MXFP8_INDEX, 3 BF16(512)}, {0 cpu, 1 reference}.
BENCHMARK(BM_Store)->ArgsProduct({{0, 1, 2, 3}, {0, 1}})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Load)->ArgsProduct({{0, 1, 2, 3}, {0, 1}})->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace kvcheck

BENCHMARK_MAIN();
