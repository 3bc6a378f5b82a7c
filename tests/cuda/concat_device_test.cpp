// concat_and_cache_mla on the device API (docs/spec.md §8.2), label cuda: the UNCHECKED
// entry (the one an engine calls; the harness's cuda backend runs the checked one) on
// device memory writes the bytes the cpu backend writes, for the fixed FP8_DS_MLA kernel
// (split 512, k_pe a view or its own tensor; split 528: its 16-byte tail chunks from
// both tensors), its run-time path (split 524: the tail mixes both tensors mid-chunk;
// split 500: a tile does, with k_pe's rows 16-byte aligned, so only the split keeps the
// kernel off the 16-byte path), the BF16 row copy by 16-byte chunks
// (split 512) and by bytes (split 3), and V41 (split 448); and into split caches (two
// one-source stores), with and without a fused RoPE of k_pe (§8.4). Skips without a GPU.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "impl/cpu/cpu_backend.h"
#include "impl/cuda/device_api.h"
#include "impl/plugin/device_memory.h"
#include "tests/cuda/device_test_util.h"

namespace kvcheck {
namespace {

using cuda::DeviceBuffer;
using cuda_test::ck;

struct Case {
  KVCacheFormat format;
  int32_t kv_lora_rank;
  bool view;  // k_pe a view of kv_c's rows (one tensor), else its own padded tensor
  std::optional<KVCacheFormat> pe_format = std::nullopt;  // split caches: k_pe's cache
  int rope = 0;  // fused RoPE (docs/spec.md §8.4): 0 none, 1 NeoX on the whole k_pe, 2 GPT-J on a sub-range at 3
};

/// Bytes of `got` that differ from `want`, and the first one.
std::string differences(const std::vector<uint8_t>& want, const std::vector<uint8_t>& got) {
  size_t bad = 0, first = got.size();
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i]) bad += 1, first = std::min(first, i);
  return bad == 0 ? "" : std::to_string(bad) + " bytes differ, the first at " + std::to_string(first);
}

/// One case through the unchecked device entry and the cpu backend: both caches equal.
void expect_cpu_bytes(const Case& c, std::mt19937_64& rng) {
  const cpu::CpuBackend cpu;
  const KVCacheFormat& f = c.format;
  const int32_t bs = 64, num_blocks = 40;
  const int32_t rope = c.pe_format ? c.pe_format->elements : f.elements - c.kv_lora_rank;
  const int64_t n = 2000, row = 640;  // kv_c rows of 640 elements (a padded tensor)
  const int64_t pe_stride = c.view ? row : (rope + 7) / 8 * 8 + 8;  // own rows 16-byte aligned, padded
  const CacheLayout layout = CacheLayout::make(f, num_blocks, bs);
  const CacheLayout pe_layout = CacheLayout::make(c.pe_format.value_or(KVCacheFormat::BF16(8)), num_blocks, bs);
  std::vector<uint16_t> kv_c(static_cast<size_t>(n * row)), k_pe(static_cast<size_t>(n * pe_stride));
  for (auto& x : kv_c) x = static_cast<uint16_t>(rng() % 0x7F00 | (rng() % 2) << 15);  // finite, both signs
  for (auto& x : k_pe) x = static_cast<uint16_t>(rng() % 0x7F00 | (rng() % 2) << 15);
  // The RoPE: a 4096-row table of real angles, random positions (its first and last rows included).
  const int32_t rot = c.rope == 1 ? rope / 2 * 2 : std::max(2, (rope - 3) / 2 * 2);
  const int32_t off = c.rope == 1 ? 0 : std::min(3, rope - rot);
  const int64_t max_pos = 4096;
  std::vector<float> table(static_cast<size_t>(max_pos * rot));
  for (int64_t p = 0; p < max_pos; ++p)
    for (int32_t j = 0; j < rot / 2; ++j) {
      const double angle = static_cast<double>(p) * std::pow(10000.0, -2.0 * j / rot);
      table[static_cast<size_t>(p * rot + j)] = static_cast<float>(std::cos(angle));
      table[static_cast<size_t>(p * rot + rot / 2 + j)] = static_cast<float>(std::sin(angle));
    }
  std::vector<int64_t> positions(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) positions[static_cast<size_t>(i)] = i == 0 ? 0 : i == 1 ? max_pos - 1 : static_cast<int64_t>(rng() % max_pos);
  std::vector<int32_t> slots(static_cast<size_t>(n));
  std::vector<int32_t> all(static_cast<size_t>(num_blocks * bs));
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int32_t>(i);
  std::shuffle(all.begin(), all.end(), rng);
  for (int64_t i = 0; i < n; ++i) slots[static_cast<size_t>(i)] = i % 7 == 3 ? -1 : all[static_cast<size_t>(i)];
  std::vector<uint8_t> want(static_cast<size_t>(layout.size_bytes()), 0xA5), got(want.size());
  std::vector<uint8_t> pe_want(c.pe_format ? static_cast<size_t>(pe_layout.size_bytes()) : 0, 0x5A),
      pe_got(pe_want.size());
  const KVInput pe_in = c.view ? KVInput{kv_c.data() + c.kv_lora_rank, n, row} : KVInput{k_pe.data(), n, pe_stride};
  ConcatMlaArgs a{{kv_c.data(), n, row}, pe_in, c.kv_lora_rank, rope, slots, {want.data(), layout, layout.size_bytes()},
                  std::nullopt, std::nullopt};
  if (c.pe_format) a.pe_cache = CacheView{pe_want.data(), pe_layout, pe_layout.size_bytes()};
  if (c.rope) a.rope = RopeArgs{table.data(), max_pos, positions.data(), n, rot, off, c.rope == 1};
  cpu.concat_and_cache_mla(a);
  DeviceBuffer d_table(table.size() * 4), d_pos(positions.size() * 8);
  ck(cudaMemcpy(d_table.get(), table.data(), table.size() * 4, cudaMemcpyHostToDevice));
  ck(cudaMemcpy(d_pos.get(), positions.data(), positions.size() * 8, cudaMemcpyHostToDevice));
  const RopeArgs d_rope{d_table.as<float>(), max_pos, d_pos.as<int64_t>(), n, rot, off, c.rope == 1};
  DeviceBuffer d_kv_c(kv_c.size() * 2), d_k_pe(k_pe.size() * 2), d_slots(slots.size() * 4), d_cache(got.size()),
      d_pe(std::max<size_t>(pe_got.size(), 1));
  ck(cudaMemcpy(d_kv_c.get(), kv_c.data(), kv_c.size() * 2, cudaMemcpyHostToDevice));
  ck(cudaMemcpy(d_k_pe.get(), k_pe.data(), k_pe.size() * 2, cudaMemcpyHostToDevice));
  ck(cudaMemcpy(d_slots.get(), slots.data(), slots.size() * 4, cudaMemcpyHostToDevice));
  ck(cudaMemset(d_cache.get(), 0xA5, got.size()));
  ck(cudaMemset(d_pe.get(), 0x5A, pe_got.size()));
  const uint16_t* dpe = c.view ? d_kv_c.as<uint16_t>() + c.kv_lora_rank : d_k_pe.as<uint16_t>();
  const cuda::DeviceCache pe_cache{d_pe.get(), pe_layout.paged(), pe_layout.size_bytes()};
  cuda::concat_and_cache_mla({d_cache.get(), layout.paged(), layout.size_bytes()},
                             {d_kv_c.as<uint16_t>(), n, row, dpe, n, c.view ? row : pe_stride, c.kv_lora_rank, rope,
                              d_slots.as<int32_t>(), n, c.pe_format ? &pe_cache : nullptr, c.rope ? &d_rope : nullptr},
                             {});
  ck(cudaDeviceSynchronize());
  ck(cudaMemcpy(got.data(), d_cache.get(), got.size(), cudaMemcpyDeviceToHost));
  ck(cudaMemcpy(pe_got.data(), d_pe.get(), pe_got.size(), cudaMemcpyDeviceToHost));
  const std::string what = f.name + " split " + std::to_string(c.kv_lora_rank) + (c.view ? " (view)" : " (own k_pe)") +
                           (c.pe_format ? " pe_cache " + c.pe_format->name : "") +
                           (c.rope == 1 ? " rope neox" : c.rope == 2 ? " rope gpt-j at 3" : "");
  EXPECT_EQ(differences(want, got), "") << what << ": the cache";
  EXPECT_EQ(differences(pe_want, pe_got), "") << what << ": pe_cache";
}

TEST(ConcatDevice, UncheckedEntryWritesTheCpuBytes) {
  KVCHECK_NEED_GPU();
  const Case cases[] = {{KVCacheFormat::FP8_DS_MLA(), 512, true},  {KVCacheFormat::FP8_DS_MLA(), 512, false},
                        {KVCacheFormat::FP8_DS_MLA(), 528, false}, {KVCacheFormat::FP8_DS_MLA(), 524, false},
                        {KVCacheFormat::FP8_DS_MLA(), 500, true},
                        {KVCacheFormat::FP8_DS_MLA(), 500, false},
                        {KVCacheFormat::BF16(576), 512, true},     {KVCacheFormat::BF16(576), 3, false},
                        {KVCacheFormat::V41(), 448, false}};
  std::mt19937_64 rng(7);
  for (const Case& c : cases) expect_cpu_bytes(c, rng);
}

// Split caches (docs/spec.md §8.2): FlashInfer's BF16(512) ckv and BF16(64) kpe caches
// (k_pe a view of the rows, or its own tensor), a quantised kv_c cache with a narrow
// pe_cache, and a quantised pe_cache.
TEST(ConcatDevice, UncheckedSplitCachesWriteTheCpuBytes) {
  KVCHECK_NEED_GPU();
  const Case cases[] = {{KVCacheFormat::BF16(512), 512, true, KVCacheFormat::BF16(64)},
                        {KVCacheFormat::BF16(512), 512, false, KVCacheFormat::BF16(64)},
                        {KVCacheFormat::FP8_DS_MLA(), 576, false, KVCacheFormat::BF16(8)},
                        {KVCacheFormat::BF16(64), 64, false, KVCacheFormat::V41()}};
  std::mt19937_64 rng(11);
  for (const Case& c : cases) expect_cpu_bytes(c, rng);
}

// Fused RoPE (docs/spec.md §8.4): k_pe rotated as each kernel reads it — the fixed
// FP8_DS_MLA kernel (the rotated values its BF16 tail), its run-time path (split 524),
// V41 (rotated values quantised), the BF16 copy by 16-byte chunks and by bytes, and
// split caches; NeoX on the whole k_pe and GPT-J on a sub-range.
TEST(ConcatDevice, UncheckedRopeWritesTheCpuBytes) {
  KVCHECK_NEED_GPU();
  const Case cases[] = {{KVCacheFormat::FP8_DS_MLA(), 512, true, std::nullopt, 1},
                        {KVCacheFormat::FP8_DS_MLA(), 512, false, std::nullopt, 2},
                        {KVCacheFormat::FP8_DS_MLA(), 524, false, std::nullopt, 1},
                        {KVCacheFormat::BF16(576), 512, true, std::nullopt, 1},
                        {KVCacheFormat::BF16(576), 512, false, std::nullopt, 2},
                        {KVCacheFormat::BF16(576), 3, false, std::nullopt, 2},
                        {KVCacheFormat::V41(), 448, false, std::nullopt, 1},
                        {KVCacheFormat::BF16(512), 512, true, KVCacheFormat::BF16(64), 1},
                        {KVCacheFormat::BF16(512), 512, false, KVCacheFormat::BF16(64), 2},
                        {KVCacheFormat::FP8_DS_MLA(), 576, false, KVCacheFormat::BF16(8), 2}};
  std::mt19937_64 rng(13);
  for (const Case& c : cases) expect_cpu_bytes(c, rng);
}

}  // namespace
}  // namespace kvcheck
