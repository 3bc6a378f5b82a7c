// store_kv_cache / load_paged_kv_cache throughput: cpu backend vs the scalar
// reference, 16k tokens, block_size 64, bytes/s = cache record bytes written (store)
// or output bytes written (load). KVCHECK_THREADS limits the cpu backend's threads.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "impl/cpu/cpu_backend.h"
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
  Fixture fx(format_of(state.range(0)));
  const bool ref = state.range(1) != 0;
  const cpu::CpuBackend cpu;
  for (auto _ : state) {
    if (ref)
      ref::store_kv_cache(fx.input(), fx.slots, fx.cache.bytes(), fx.layout.format, kNumBlocks,
                          kBlockSize);
    else
      cpu.store_kv_cache(fx.input(), fx.slots, fx.cache.view());
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
      ref::load_paged_kv_cache(fx.cache.bytes(), fx.layout.format, kNumBlocks, kBlockSize, fx.segs,
                               kTokens, fx.output());
    else
      cpu.load_paged_kv_cache(fx.cache.const_view(), fx.segs, kTokens, fx.output());
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

// The K/V family (SPEC §7): a Llama-3-8B-like layer, H 8 x D 128, NHD, block 16,
// 16k tokens. bytes/s = bytes MOVED (K and V rows read + records written), so the
// row is comparable with BM_KvCopy, a plain memcpy of the same bytes.
constexpr int32_t kKvHeads = 8, kKvHeadDim = 128, kKvBlock = 16;

KvDtype kv_dtype_of(int64_t id) {
  switch (id) {
    case 0: return KvDtype::kBF16;
    case 1: return KvDtype::kFP16;
    case 2: return KvDtype::kE4M3;
    default: return KvDtype::kE5M2;
  }
}

struct KvFixture {
  explicit KvFixture(KvDtype dtype)
      : model(is_fp8(dtype) ? KvDtype::kBF16 : dtype),
        layout(kv_dense_layout(dtype, KvHeadLayout::kNHD, kTokens / kKvBlock, kKvBlock, kKvHeads, kKvHeadDim)) {
    const int64_t row = int64_t{kKvHeads} * kKvHeadDim, span = kv_span_elements(layout);
    std::mt19937_64 rng(2);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    key.resize(static_cast<size_t>(kTokens * row));
    value.resize(key.size());
    for (auto* v : {&key, &value})
      for (auto& x : *v) x = static_cast<uint16_t>(std::bit_cast<uint32_t>(normal(rng)) >> 16);
    k.resize(static_cast<size_t>(span * kv_dtype_bytes(dtype)));
    v.resize(k.size());
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
    return {k.data(), span, v.data(), span, layout, {KvScaleKind::kPerHead, scales, scales}};
  }
  int64_t bytes_moved() const {
    return 2 * kTokens * int64_t{kKvHeads} * kKvHeadDim * (2 + kv_dtype_bytes(layout.dtype));
  }
  KvDtype model;
  KvCacheLayout layout;
  std::vector<uint16_t> key, value, out_k, out_v;
  std::vector<uint8_t> k, v;
  std::vector<int32_t> slots, table, cu;
  std::vector<float> scales = {0.5f, 1.0f, 2.0f, 3.0f, 0.25f, 1.5f, 7.0f, 0.125f};
};

void BM_StoreKv(benchmark::State& state) {
  KvFixture fx(kv_dtype_of(state.range(0)));
  const bool ref = state.range(1) != 0;
  const cpu::CpuBackend cpu;
  for (auto _ : state) {
    if (ref) ref::store_kv(fx.in(fx.key), fx.in(fx.value), fx.slots, fx.view());
    else cpu.store_kv(fx.in(fx.key), fx.in(fx.value), fx.slots, fx.view());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * fx.bytes_moved());
  state.SetLabel(to_string(fx.layout.dtype) + " H8xD128 " + (ref ? "reference" : "cpu"));
}

void BM_GatherKv(benchmark::State& state) {
  KvFixture fx(kv_dtype_of(state.range(0)));
  const bool ref = state.range(1) != 0;
  const cpu::CpuBackend cpu;
  const int32_t max_blocks = 1024 / kKvBlock;
  for (auto _ : state) {
    const GatherKvArgs a{fx.view(), fx.table, max_blocks, fx.cu, {}, SeqStartUnit::kToken, fx.out(fx.out_k),
                         fx.out(fx.out_v)};
    if (ref) ref::gather_kv(a);
    else cpu.gather_kv(a);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * fx.bytes_moved());
  state.SetLabel(to_string(fx.layout.dtype) + " H8xD128 " + (ref ? "reference" : "cpu"));
}

// The copy the K/V rows are measured against: memcpy of the bf16 K and V rows
// (bytes moved = read + written, as above).
void BM_KvCopy(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(kTokens) * kKvHeads * kKvHeadDim * 2 * 2;
  std::vector<uint8_t> src(bytes, 1), dst(bytes);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(2 * bytes));
  state.SetLabel("memcpy of the bf16 K+V rows");
}

// Args: {dtype: 0 bf16, 1 fp16, 2 e4m3 per-head, 3 e5m2 per-head}, {0 cpu, 1 reference}.
BENCHMARK(BM_StoreKv)->ArgsProduct({{0, 1, 2, 3}, {0, 1}})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_GatherKv)->ArgsProduct({{0, 1, 2, 3}, {0, 1}})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_KvCopy)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace kvcheck

BENCHMARK_MAIN();
