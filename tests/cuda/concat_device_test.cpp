// concat_and_cache_mla on the device API (docs/spec.md §8.2), label cuda: the UNCHECKED
// entry (the one an engine calls; the harness's cuda backend runs the checked one) on
// device memory writes the bytes the cpu backend writes, for the fixed FP8_DS_MLA kernel
// (split 512, k_pe a view or its own tensor; split 528: its 16-byte tail chunks from
// both tensors), its run-time path (split 524: the tail mixes both tensors mid-chunk;
// split 500: a tile does, with k_pe's rows 16-byte aligned, so only the split keeps the
// kernel off the 16-byte path), the BF16 row copy by 16-byte chunks
// (split 512) and by bytes (split 3), and V41 (split 448). Skips without a GPU.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
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
};

TEST(ConcatDevice, UncheckedEntryWritesTheCpuBytes) {
  KVCHECK_NEED_GPU();
  const Case cases[] = {{KVCacheFormat::FP8_DS_MLA(), 512, true},  {KVCacheFormat::FP8_DS_MLA(), 512, false},
                        {KVCacheFormat::FP8_DS_MLA(), 528, false}, {KVCacheFormat::FP8_DS_MLA(), 524, false},
                        {KVCacheFormat::FP8_DS_MLA(), 500, true},
                        {KVCacheFormat::FP8_DS_MLA(), 500, false},
                        {KVCacheFormat::BF16(576), 512, true},     {KVCacheFormat::BF16(576), 3, false},
                        {KVCacheFormat::V41(), 448, false}};
  const cpu::CpuBackend cpu;
  std::mt19937_64 rng(7);
  for (const Case& c : cases) {
    const KVCacheFormat& f = c.format;
    const int32_t bs = 64, num_blocks = 40, rope = f.elements - c.kv_lora_rank;
    const int64_t n = 2000, row = 640;  // kv_c rows of 640 elements (a padded tensor)
    const int64_t pe_stride = c.view ? row : (rope + 7) / 8 * 8 + 8;  // own rows 16-byte aligned, padded
    const CacheLayout layout = CacheLayout::make(f, num_blocks, bs);
    std::vector<uint16_t> kv_c(static_cast<size_t>(n * row)), k_pe(static_cast<size_t>(n * pe_stride));
    for (auto& x : kv_c) x = static_cast<uint16_t>(rng() % 0x7F00 | (rng() % 2) << 15);  // finite, both signs
    for (auto& x : k_pe) x = static_cast<uint16_t>(rng() % 0x7F00 | (rng() % 2) << 15);
    std::vector<int32_t> slots(static_cast<size_t>(n));
    std::vector<int32_t> all(static_cast<size_t>(num_blocks * bs));
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int32_t>(i);
    std::shuffle(all.begin(), all.end(), rng);
    for (int64_t i = 0; i < n; ++i) slots[static_cast<size_t>(i)] = i % 7 == 3 ? -1 : all[static_cast<size_t>(i)];
    std::vector<uint8_t> want(static_cast<size_t>(layout.size_bytes()), 0xA5), got(want.size());
    const KVInput pe_in = c.view ? KVInput{kv_c.data() + c.kv_lora_rank, n, row} : KVInput{k_pe.data(), n, pe_stride};
    cpu.concat_and_cache_mla({{kv_c.data(), n, row}, pe_in, c.kv_lora_rank, rope, slots,
                              {want.data(), layout, layout.size_bytes()}});
    DeviceBuffer d_kv_c(kv_c.size() * 2), d_k_pe(k_pe.size() * 2), d_slots(slots.size() * 4), d_cache(got.size());
    ck(cudaMemcpy(d_kv_c.get(), kv_c.data(), kv_c.size() * 2, cudaMemcpyHostToDevice));
    ck(cudaMemcpy(d_k_pe.get(), k_pe.data(), k_pe.size() * 2, cudaMemcpyHostToDevice));
    ck(cudaMemcpy(d_slots.get(), slots.data(), slots.size() * 4, cudaMemcpyHostToDevice));
    ck(cudaMemset(d_cache.get(), 0xA5, got.size()));
    const uint16_t* dpe = c.view ? d_kv_c.as<uint16_t>() + c.kv_lora_rank : d_k_pe.as<uint16_t>();
    cuda::concat_and_cache_mla({d_cache.get(), layout.paged(), layout.size_bytes()},
                               {d_kv_c.as<uint16_t>(), n, row, dpe, n, c.view ? row : pe_stride, c.kv_lora_rank, rope,
                                d_slots.as<int32_t>(), n},
                               {});
    ck(cudaDeviceSynchronize());
    ck(cudaMemcpy(got.data(), d_cache.get(), got.size(), cudaMemcpyDeviceToHost));
    size_t bad = 0, first = got.size();
    for (size_t i = 0; i < got.size(); ++i)
      if (got[i] != want[i]) bad += 1, first = std::min(first, i);
    EXPECT_EQ(bad, 0u) << f.name << " split " << c.kv_lora_rank << (c.view ? " (view)" : " (own k_pe)")
                       << ": first differing byte " << first;
  }
}

}  // namespace
}  // namespace kvcheck
