#include "fuzzers/decoders.h"

#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <bit>
#include <climits>
#include <numeric>

#include "properties/gen/splitmix.h"

namespace kvcheck::fuzz {
namespace {

using props::KvAlloc;
using props::KvCacheShape;
using props::SplitMix64;

// A props::Source over the FuzzedDataProvider, for the shared choosers.
class FdpSource final : public props::Source {
 public:
  explicit FdpSource(FuzzedDataProvider& fdp) : fdp_(fdp) {}
  int64_t range(int64_t lo, int64_t hi) override { return fdp_.ConsumeIntegralInRange<int64_t>(lo, hi); }
  uint32_t seed() override { return fdp_.ConsumeIntegral<uint32_t>(); }

 private:
  FuzzedDataProvider& fdp_;
};

template <typename T>
T pick(FuzzedDataProvider& fdp, std::initializer_list<T> values) {
  const size_t i = fdp.ConsumeIntegralInRange<size_t>(0, values.size() - 1);
  return *(values.begin() + i);
}

KvDtype any_dtype(FuzzedDataProvider& fdp) {
  return pick(fdp, {KvDtype::kBF16, KvDtype::kFP16, KvDtype::kE4M3, KvDtype::kE5M2});
}

// A model dtype the cache accepts, or (rarely) any dtype: an error path.
KvDtype model_dtype(FuzzedDataProvider& fdp, KvDtype cache) {
  if (fdp.ConsumeIntegralInRange<int>(0, 15) == 0) return any_dtype(fdp);
  if (!is_fp8(cache)) return cache;
  return fdp.ConsumeBool() ? KvDtype::kBF16 : KvDtype::kFP16;
}

std::vector<float> scales(FuzzedDataProvider& fdp, KvScaleKind kind, int32_t heads) {
  const size_t n = kind == KvScaleKind::kPerHead ? static_cast<size_t>(heads) : 1;
  const int mode = fdp.ConsumeIntegralInRange<int>(0, 7);
  std::vector<float> v = props::kv_scales(kind, heads, fdp.ConsumeIntegral<uint64_t>());
  if (kind == KvScaleKind::kNone) v.clear();
  if (mode == 6 && !v.empty())  // raw bits: zero, negative, NaN, Inf, subnormal
    v[fdp.ConsumeIntegralInRange<size_t>(0, v.size() - 1)] = std::bit_cast<float>(fdp.ConsumeIntegral<uint32_t>());
  if (mode == 7) v.resize(n + 1, 1.0f);  // wrong count
  return v;
}

}  // namespace

KvCacheShape decode_kv_cache_shape(FuzzedDataProvider& fdp) {
  KvCacheShape s;
  s.dtype = any_dtype(fdp);
  s.order = fdp.ConsumeBool() ? KvHeadLayout::kHND : KvHeadLayout::kNHD;
  s.head_dim = fdp.ConsumeBool() ? pick(fdp, {64, 80, 96, 128, 256, 576}) : fdp.ConsumeIntegralInRange<int32_t>(1, 16);
  s.num_kv_heads = fdp.ConsumeBool() ? pick(fdp, {1, 8, 40, 128}) : fdp.ConsumeIntegralInRange<int32_t>(1, 4);
  s.block_size = fdp.ConsumeBool() ? pick(fdp, {1, 2, 16, 53, 133, 256}) : fdp.ConsumeIntegralInRange<int32_t>(1, 40);
  s.pad_head = pick(fdp, {0, 0, 1, 3, 8, -1});  // -1: heads overlap when D small (error path)
  s.pad_token = pick(fdp, {0, 0, 1, 3, 8});
  s.pad_page = pick(fdp, {0, 0, 1, 5});
  // Keep one view under kMaxKvCacheElements: shrink head_dim, then heads, then block_size.
  auto per_block = [&] {
    return int64_t{s.block_size} * s.num_kv_heads * (s.head_dim + std::max(s.pad_head, 0) + s.pad_token) + s.pad_page;
  };
  while (per_block() > kMaxKvCacheElements && s.head_dim > 8) s.head_dim /= 2;
  while (per_block() > kMaxKvCacheElements && s.num_kv_heads > 1) s.num_kv_heads /= 2;
  while (per_block() > kMaxKvCacheElements && s.block_size > 1) s.block_size /= 2;
  s.num_blocks = static_cast<int32_t>(std::clamp<int64_t>(kMaxKvCacheElements / per_block(), 1,
                                                          fdp.ConsumeIntegralInRange<int32_t>(1, 8)));
  s.alloc = pick(fdp, {KvAlloc::kSeparate, KvAlloc::kNanoVllm, KvAlloc::kFlashInfer});
  if (s.alloc == KvAlloc::kNanoVllm) {
    s.num_layers = fdp.ConsumeIntegralInRange<int32_t>(1, 3);
    s.layer = fdp.ConsumeIntegralInRange<int32_t>(0, s.num_layers - 1);
  }
  s.scale_kind = is_fp8(s.dtype) ? pick(fdp, {KvScaleKind::kPerTensor, KvScaleKind::kPerHead, KvScaleKind::kPerTensor,
                                              KvScaleKind::kPerHead, KvScaleKind::kNone})
                                 : KvScaleKind::kNone;
  s.k_scale = scales(fdp, s.scale_kind, s.num_kv_heads);
  s.v_scale = scales(fdp, s.scale_kind, s.num_kv_heads);
  s.fill_seed = fdp.ConsumeIntegral<uint64_t>();
  if (fdp.ConsumeIntegralInRange<int>(0, 31) == 0) s.capacity_cut = 1;
  return s;
}

props::StoreKvScenario decode_store_kv(FuzzedDataProvider& fdp) {
  props::StoreKvScenario s;
  s.cache = decode_kv_cache_shape(fdp);
  const int64_t row = int64_t{s.cache.num_kv_heads} * s.cache.head_dim;
  const int64_t max_rows = std::clamp<int64_t>(kMaxKvRowElements / row, 1, kMaxKvRows);
  const size_t n = fdp.ConsumeIntegralInRange<size_t>(0, static_cast<size_t>(max_rows));
  // The shared slot-mapping choosers (props::choose_slot_mapping; one input in five raw).
  FdpSource src(fdp);
  s.slot_mapping = fdp.ConsumeIntegralInRange<int>(0, 4) == 3
                       ? props::raw_slot_mapping(src, s.cache.num_slots(), static_cast<int64_t>(n))
                       : props::choose_slot_mapping(src, s.cache.num_blocks, s.cache.block_size, static_cast<int64_t>(n), 2);
  for (int side = 0; side < 2; ++side) {
    const KvDtype dtype = model_dtype(fdp, s.cache.dtype);
    const int64_t pad_h = pick<int64_t>(fdp, {0, 0, 2, 5}), pad_t = pick<int64_t>(fdp, {0, 0, 3, 8});
    int64_t hs = s.cache.head_dim + pad_h, ts = s.cache.num_kv_heads * hs + pad_t;
    int64_t rows = static_cast<int64_t>(n) + pick<int64_t>(fdp, {0, 0, 1, 4, -1});
    rows = std::max<int64_t>(rows, 0);
    if (fdp.ConsumeIntegralInRange<int>(0, 15) == 0) hs = -1;  // error path
    auto r = props::make_kv_rows(dtype, rows, ts, std::max<int64_t>(hs, 0), s.cache.num_kv_heads, s.cache.head_dim,
                                 fdp.ConsumeIntegral<uint64_t>());
    r.head_stride = hs;
    (side ? s.value : s.key) = std::move(r);
  }
  return s;
}

props::GatherKvScenario decode_gather_kv(FuzzedDataProvider& fdp) {
  props::GatherKvScenario s;
  s.cache = decode_kv_cache_shape(fdp);
  const int64_t row = int64_t{s.cache.num_kv_heads} * s.cache.head_dim;
  const int64_t max_total = std::clamp<int64_t>(kMaxKvRowElements / row, 1, 256);
  const int num_seqs = fdp.ConsumeIntegralInRange<int>(0, 5);
  s.max_blocks = fdp.ConsumeIntegralInRange<int32_t>(0, 6);
  const bool raw = fdp.ConsumeIntegralInRange<int>(0, 7) == 0;  // error paths
  s.cu_seqlens_k.push_back(0);
  for (int i = 0; i < num_seqs; ++i) {
    const int64_t cap = std::min<int64_t>(int64_t{s.max_blocks} * s.cache.block_size, max_total - s.cu_seqlens_k.back());
    int64_t len = cap <= 0 ? 0 : fdp.ConsumeIntegralInRange<int64_t>(0, cap);
    if (raw && fdp.ConsumeBool()) len = fdp.ConsumeIntegralInRange<int64_t>(-2, cap + 2);
    s.cu_seqlens_k.push_back(static_cast<int32_t>(s.cu_seqlens_k.back() + len));
    for (int64_t j = 0; j < s.max_blocks; ++j) {
      const bool needed = j * s.cache.block_size < len;
      int32_t e = fdp.ConsumeIntegralInRange<int32_t>(0, s.cache.num_blocks - 1);
      if (!needed) e = pick(fdp, {-1, -1, -7, INT32_MAX, e});
      if (raw && fdp.ConsumeIntegralInRange<int>(0, 7) == 0) e = pick(fdp, {-1, -2, s.cache.num_blocks, INT32_MIN});
      s.block_table.push_back(e);
    }
  }
  if (raw && fdp.ConsumeBool()) s.block_table.push_back(0);
  if (raw && fdp.ConsumeIntegralInRange<int>(0, 3) == 0) s.cu_seqlens_k[0] = 1;
  s.out_k_dtype = model_dtype(fdp, s.cache.dtype);
  s.out_v_dtype = model_dtype(fdp, s.cache.dtype);
  s.out_rows = std::max<int64_t>(0, s.cu_seqlens_k.back() + pick<int64_t>(fdp, {0, 0, 1, 3, -1}));
  s.out_pad_head = pick(fdp, {0, 0, 1, 4});
  s.out_pad_token = pick(fdp, {0, 0, 2, 8});
  s.out_seed = fdp.ConsumeIntegral<uint64_t>();
  return s;
}

}  // namespace kvcheck::fuzz
