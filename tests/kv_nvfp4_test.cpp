// NVFP4 K/V caches (docs/spec.md §7.9): known answers worked by hand from the spec's
// rule, for the reference and the cpu backend alike; the scale-cache layouts and their
// validation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#include "impl/contract_backend.h"
#include "impl/cpu/cpu_backend.h"
#include "impl/error.h"
#include "impl/kv_layout.h"
#include "reference/gather_kv.h"
#include "reference/numerics.h"
#include "reference/kv_numerics.h"
#include "reference/store_kv.h"

#ifdef KVCHECK_HAVE_CUDA_HEADERS
#include <cuda_fp4.h>
#include <cuda_fp8.h>
#endif

namespace kvcheck {
namespace {

uint16_t bf16(float x) { return ref::float_to_bf16_rn(x); }

// One e2m1 cache pair of nb blocks x bs tokens x 1 head x D, NHD, dense, and its two
// scale caches (linear [nb][bs][D/16] or interleave4 tiles), each in a buffer of its own
// filled with 0xEE so an unwritten byte shows.
struct Nvfp4Pair {
  KvCacheLayout layout;
  std::vector<uint8_t> k, v, k_sf, v_sf;
  std::vector<float> k_scale, v_scale;
  KvCacheView view;
  Nvfp4Pair(int nb, int bs, int d, float g_k, float g_v, KvSfLayout sf = KvSfLayout::kLinear)
      : layout(kv_dense_layout(KvDtype::kE2M1, KvHeadLayout::kNHD, nb, bs, 1, d)),
        k(static_cast<size_t>(nb * bs * d / 2), 0xEE), v(k), k_sf(static_cast<size_t>(nb * bs * d / 16), 0xEE),
        v_sf(k_sf), k_scale{g_k}, v_scale{g_v} {
    view = {k.data(), int64_t{nb} * bs * d, v.data(), int64_t{nb} * bs * d, layout,
            {KvScaleKind::kPerTensor, k_scale, v_scale, KvRecipe::kSpec},
            k_sf.data(), static_cast<int64_t>(k_sf.size()), v_sf.data(), static_cast<int64_t>(v_sf.size()),
            {sf, int64_t{bs} * d / 16, d / 16, int64_t{bs} * d / 16}};
  }
};

using Store = std::function<void(const KvTokensIn&, const KvTokensIn&, std::span<const int32_t>, const KvCacheView&)>;
using Gather = std::function<void(const GatherKvArgs&)>;

struct Impl {
  const char* name;
  Store store;
  Gather gather;
};

std::vector<Impl> impls() {
  static const cpu::CpuBackend cpu;
  return {{"reference", [](auto&&... a) { ref::store_kv(a...); }, [](const GatherKvArgs& a) { ref::gather_kv(a); }},
          {"cpu", [](auto&&... a) { cpu.store_kv(a...); }, [](const GatherKvArgs& a) { cpu.gather_kv(a); }}};
}

// Rows [1][1][16] of bf16 values (key) and zeros (value) stored into slot 0.
void store_one(const Impl& impl, Nvfp4Pair& p, const std::vector<uint16_t>& key) {
  const std::vector<uint16_t> zeros(16, 0);
  const int32_t slot = 0;
  impl.store({reinterpret_cast<const uint8_t*>(key.data()), KvDtype::kBF16, 1, 16, 16},
             {reinterpret_cast<const uint8_t*>(zeros.data()), KvDtype::kBF16, 1, 16, 16}, {&slot, 1}, p.view);
}

// §7.9 worked answer 1: g = 1, x = [0.5, -1, 3, 6, 0 ...]: amax 6, sf = e4m3(6 / 6) =
// 0x38 (1.0), inv = 1; codes 1, 0xA (-1), 5 (3), 7 (6), 0 ...: bytes 0xA1 0x75 0 ...
TEST(KvNvfp4, KnownAnswerUnitScale) {
  for (const Impl& impl : impls()) {
    Nvfp4Pair p(1, 1, 16, 1.0f, 1.0f);
    std::vector<uint16_t> key(16, 0);
    key[0] = bf16(0.5f), key[1] = bf16(-1.0f), key[2] = bf16(3.0f), key[3] = bf16(6.0f);
    store_one(impl, p, key);
    const std::vector<uint8_t> want = {0xA1, 0x75, 0, 0, 0, 0, 0, 0};
    EXPECT_EQ(p.k, want) << impl.name;
    EXPECT_EQ(p.k_sf[0], 0x38) << impl.name;
    EXPECT_EQ(p.v_sf[0], 0x00) << impl.name << ": a zero group's scale is 0";
    EXPECT_EQ(p.v, std::vector<uint8_t>(8, 0)) << impl.name;
  }
}

// §7.9 worked answer 2: g = 0.5, x = [1, 0.75, 0.25, 0 ...]: RN(6 g) = 3, 1/3 ->
// 0.33333334, between e4m3 0.3125 (0x2A) and 0.34375 (0x2B), past their midpoint
// 0.328125: sf 0x2B. inv = 1 / RN(0.34375 * 0.5) = 1 / 0.171875 = 5.818182 (rounded).
// v = 5.818 (> 5: code 7), 4.364 (<= 5: 6), 1.4545 ([1.25, 1.75): 3). Bytes 0x67 0x03.
// Gathered: 6 * 0.34375 * 0.5 = 1.03125, 4 * ... = 0.6875, 1.5 * ... = 0.2578125.
TEST(KvNvfp4, KnownAnswerScaleRoundsUpAndSaturates) {
  for (const Impl& impl : impls()) {
    Nvfp4Pair p(1, 1, 16, 0.5f, 1.0f);
    std::vector<uint16_t> key(16, 0);
    key[0] = bf16(1.0f), key[1] = bf16(0.75f), key[2] = bf16(0.25f);
    store_one(impl, p, key);
    EXPECT_EQ(p.k_sf[0], 0x2B) << impl.name;
    EXPECT_EQ(p.k[0], 0x67) << impl.name;
    EXPECT_EQ(p.k[1], 0x03) << impl.name;
    std::vector<uint16_t> out_k(16, 0xDEAD), out_v(16, 0xDEAD);
    const std::vector<int32_t> table = {0}, cu = {0, 1};
    impl.gather({p.view, table, 1, cu, {}, SeqStartUnit::kToken,
                 {reinterpret_cast<uint8_t*>(out_k.data()), KvDtype::kBF16, 1, 16, 16},
                 {reinterpret_cast<uint8_t*>(out_v.data()), KvDtype::kBF16, 1, 16, 16}});
    EXPECT_EQ(out_k[0], bf16(1.03125f)) << impl.name;
    EXPECT_EQ(out_k[1], bf16(0.6875f)) << impl.name;
    EXPECT_EQ(out_k[2], bf16(0.2578125f)) << impl.name;
    EXPECT_EQ(out_k[3], 0x0000) << impl.name;
  }
}

// §7.9 worked answer 3, the specials: g = 1, x = [-0, -NaN, -Inf, 1, 0 ...]: amax skips
// the NaN and is Inf; Inf / 6 saturates e4m3 to 448 (0x7E); inv = 1/448; -0 -> 0x8,
// the NaN -> 0 (whatever its sign), -Inf -> 0xF (-6), 1/448 -> 0. Bytes 0x08 0x0F.
// A group of zeros stores 0x00 (+0) / 0x8 (-0) codes under a 0x00 scale; with g = 1000
// a group of ones underflows: 1 / 6000 is below half of e4m3's smallest 2^-9, sf 0x00.
TEST(KvNvfp4, KnownAnswerSpecials) {
  for (const Impl& impl : impls()) {
    Nvfp4Pair p(1, 1, 16, 1.0f, 1000.0f);
    std::vector<uint16_t> key(16, 0), value(16, bf16(1.0f));
    key[0] = 0x8000, key[1] = 0xFFC0, key[2] = 0xFF80, key[3] = bf16(1.0f);
    const int32_t slot = 0;
    impl.store({reinterpret_cast<const uint8_t*>(key.data()), KvDtype::kBF16, 1, 16, 16},
               {reinterpret_cast<const uint8_t*>(value.data()), KvDtype::kBF16, 1, 16, 16}, {&slot, 1}, p.view);
    EXPECT_EQ(p.k_sf[0], 0x7E) << impl.name;
    EXPECT_EQ(p.k[0], 0x08) << impl.name;
    EXPECT_EQ(p.k[1], 0x0F) << impl.name;
    EXPECT_EQ(p.v_sf[0], 0x00) << impl.name << ": 1 / 6000 underflows e4m3";
    EXPECT_EQ(p.v, std::vector<uint8_t>(8, 0)) << impl.name;
  }
}

// §7.9: interleave4 puts token t's group g at (t/4)*4S + 4g + t%4 of its (block, head)
// tile; with D 64 (S 4) and block_size 8, token 5 group 2 is byte 25 (linear: 22). The
// store writes exactly that byte; every other scale byte keeps 0xEE.
TEST(KvNvfp4, Interleave4ScaleOffsets) {
  for (const Impl& impl : impls()) {
    for (const KvSfLayout sf : {KvSfLayout::kLinear, KvSfLayout::kInterleave4}) {
      Nvfp4Pair p(2, 8, 64, 1.0f, 1.0f, sf);
      std::vector<uint16_t> key(64, 0), value(64, 0);
      key[32] = bf16(6.0f);  // group 2: sf e4m3(1.0) = 0x38; groups 0, 1, 3 are zero (0x00)
      const int32_t slot = 8 + 5;  // block 1 token 5
      impl.store({reinterpret_cast<const uint8_t*>(key.data()), KvDtype::kBF16, 1, 64, 64},
                 {reinterpret_cast<const uint8_t*>(value.data()), KvDtype::kBF16, 1, 64, 64}, {&slot, 1}, p.view);
      const size_t tile = 32;  // block 1's tile (8 tokens x 4 groups)
      const size_t at = tile + (sf == KvSfLayout::kInterleave4 ? 25 : 22);
      for (size_t i = 0; i < p.k_sf.size(); ++i) {
        const bool mine = sf == KvSfLayout::kInterleave4 ? (i >= tile && (i - tile) % 4 == 1 && (i - tile) / 16 == 1)
                                                         : (i >= tile + 20 && i < tile + 24);
        const uint8_t want = i == at ? 0x38 : mine ? 0x00 : 0xEE;
        EXPECT_EQ(p.k_sf[i], want) << impl.name << " " << to_string(sf) << " scale byte " << i;
      }
      // The data: block 1 token 5 at element 13*64, byte 416; element 32 is byte 432's low nibble.
      EXPECT_EQ(p.k[432], 0x07) << impl.name;
      EXPECT_EQ(p.k[415], 0xEE) << impl.name;
      EXPECT_EQ(p.k[448], 0xEE) << impl.name;
    }
  }
}

// The validation of §7.9, in its order, with the cpu's messages; the reference agrees on
// every code.
TEST(KvNvfp4, ValidationRules) {
  const auto code_of = [](const std::function<void()>& f) -> int {
    try {
      f();
    } catch (const Error& e) {
      return static_cast<int>(e.code());
    }
    return -1;
  };
  const auto both = [&](const KvCacheView& v, ErrorCode want, const char* what) {
    EXPECT_EQ(code_of([&] { validate_kv_cache(v); validate_kv_scales(v.layout, v.scales); }), static_cast<int>(want))
        << what;
    EXPECT_EQ(code_of([&] { ref::store_kv({}, {}, {}, v); }), static_cast<int>(want)) << "reference: " << what;
  };
  {
    Nvfp4Pair p(1, 4, 32, 1.0f, 1.0f);
    EXPECT_NO_THROW(validate_kv_cache(p.view));
    p.view.layout.head_dim = 24;  // not a multiple of 16
    both(p.view, ErrorCode::kInvalidArgument, "head_dim 24");
  }
  {
    Nvfp4Pair p(1, 4, 32, 1.0f, 1.0f);
    p.view.layout.stride_token = 33, p.view.layout.stride_page = 4 * 33;  // odd
    both(p.view, ErrorCode::kInvalidArgument, "odd strides");
  }
  {
    Nvfp4Pair p(1, 6, 32, 1.0f, 1.0f, KvSfLayout::kInterleave4);
    both(p.view, ErrorCode::kInvalidArgument, "interleave4 with block_size 6");
  }
  {
    Nvfp4Pair p(1, 4, 32, 1.0f, 1.0f);
    p.view.k_sf_capacity -= 1;
    both(p.view, ErrorCode::kShapeMismatch, "k_sf one byte short");
  }
  {
    Nvfp4Pair p(1, 4, 32, 1.0f, 1.0f);
    p.view.v_sf = nullptr;
    both(p.view, ErrorCode::kShapeMismatch, "v_sf null");
  }
  {
    Nvfp4Pair p(1, 4, 32, 1.0f, 1.0f);
    p.view.v_sf = p.view.k_sf + 1;  // overlaps k_sf (validation compares pointers only)
    both(p.view, ErrorCode::kInvalidArgument, "v_sf overlapping k_sf");
  }
  {
    Nvfp4Pair p(1, 4, 32, 1.0f, 1.0f);
    p.view.scales.kind = KvScaleKind::kPerHead;  // 1 head: the sizes agree, the kind does not
    both(p.view, ErrorCode::kInvalidArgument, "per-head scales");
  }
  {
    Nvfp4Pair p(1, 4, 32, 0.0f, 1.0f);
    both(p.view, ErrorCode::kInvalidArgument, "k_scale 0");
  }
  {
    // A helper's finding: with one block any page stride is valid, and near INT64_MAX the
    // page rule's d + window wrapped in int64, accepting v_sf one byte before k_sf (V's
    // group 1 on K's group 0: a store then corrupts K).
    Nvfp4Pair p(1, 1, 32, 1.0f, 1.0f);
    p.view.sf = {KvSfLayout::kLinear, INT64_MAX, 2, 2};
    p.view.v_sf = p.k_sf.data();
    p.view.k_sf = p.k_sf.data() + 1;
    p.view.k_sf_capacity = p.view.v_sf_capacity = 2;
    both(p.view, ErrorCode::kInvalidArgument, "v_sf's window over k_sf's first byte, page stride INT64_MAX");
  }
}

// vLLM's page [K data | K scales | V data | V scales] (one allocation, page stride P):
// the four views share no byte by §7.9's page rule, and a scale cache one byte into the
// data's window does.
TEST(KvNvfp4, VllmPagesShareNoByte) {
  const int nb = 3, bs = 4, d = 32;
  const int64_t data = bs * d / 2, scales = bs * d / 16, page = 2 * (data + scales);
  std::vector<uint8_t> buf(static_cast<size_t>(nb * page), 0);
  KvCacheLayout l = kv_dense_layout(KvDtype::kE2M1, KvHeadLayout::kNHD, nb, bs, 1, d);
  l.stride_page = 2 * page;  // elements
  const std::vector<float> g{1.0f};
  KvCacheView v{buf.data(), 2 * nb * page, buf.data() + data + scales, 2 * (nb * page - data - scales), l,
                {KvScaleKind::kPerTensor, g, g, KvRecipe::kSpec},
                buf.data() + data, nb * page - data, buf.data() + 2 * data + scales, nb * page - 2 * data - scales,
                {KvSfLayout::kLinear, page, d / 16, d / 16}};
  EXPECT_NO_THROW(validate_kv_cache(v));
  EXPECT_NO_THROW(ref::store_kv({}, {}, {}, v));
  v.k_sf -= 1;  // into K's data window
  v.k_sf_capacity += 1;
  EXPECT_THROW(validate_kv_cache(v), Error);
  EXPECT_THROW(ref::store_kv({}, {}, {}, v), Error);
}

#ifdef KVCHECK_HAVE_CUDA_HEADERS
// §7.9 on every bf16 value, against NVIDIA's host conversions: each of the 65,536 bit
// patterns once in a group of 16 consecutive patterns and once alone among zeros, under
// global scales that keep codes inside the grid, saturate them, round 6 g and sf g, and
// underflow the scale. The expected bytes come from cuda_fp8.h / cuda_fp4.h (scale:
// __nv_cvt_float_to_fp8 SATFINITE of amax / RN(6 g); codes: __nv_cvt_float_to_fp4 RNE of
// RN(x * inv), a NaN product -> 0); the reference's functions and the cpu backend's
// store must give them byte for byte.
TEST(KvNvfp4, EveryBf16ValueMatchesNvidiasConversions) {
  const cpu::CpuBackend cpu;
  for (const bool alone : {false, true}) {
    const int64_t rows = alone ? 65536 : 4096, d = alone ? 16 : 256;
    std::vector<uint16_t> key(static_cast<size_t>(rows * d), 0);
    for (uint32_t x = 0; x < 65536; ++x) key[alone ? x * 16 + x % 16 : x] = static_cast<uint16_t>(x);
    for (const float g : {1.0f, 1.0f / 448, 0.37f, 7.0f, 1000.0f}) {
      std::vector<uint8_t> want_q(static_cast<size_t>(rows * d / 2)), want_sf(static_cast<size_t>(rows * d / 16));
      int64_t ref_diffs = 0;
      for (int64_t grp = 0; grp < rows * d / 16; ++grp) {
        float x[16];
        float amax = 0.0f;
        for (int e = 0; e < 16; ++e) {
          x[e] = ref::bf16_to_float(key[static_cast<size_t>(16 * grp + e)]);
          if (!std::isnan(x[e])) amax = std::max(amax, std::fabs(x[e]));
        }
        const float six_g = 6.0f * g;
        const uint8_t sf = amax == 0.0f ? 0 : static_cast<uint8_t>(__nv_cvt_float_to_fp8(amax / six_g, __NV_SATFINITE, __NV_E4M3));
        const float sv = ref::e4m3_to_float(sf);
        const float sg = sv * g;
        const float inv = amax > 0.0f && sv > 0.0f ? 1.0f / sg : 0.0f;
        want_sf[static_cast<size_t>(grp)] = sf;
        ref_diffs += ref::nvfp4_group_scale(x, g) != sf;
        ref_diffs += ref::nvfp4_group_inv(x, sf, g) != inv;
        for (int e = 0; e < 16; ++e) {
          const float v = x[e] * inv;
          const uint8_t q = std::isnan(v) ? 0 : static_cast<uint8_t>(__nv_cvt_float_to_fp4(v, __NV_E2M1, cudaRoundNearest));
          ref_diffs += ref::nvfp4_code(x[e], inv) != q;
          uint8_t& byte = want_q[static_cast<size_t>((16 * grp + e) / 2)];
          byte = e % 2 == 0 ? q : static_cast<uint8_t>(byte | (q << 4));
        }
      }
      EXPECT_EQ(ref_diffs, 0) << "g " << g << (alone ? " alone" : " consecutive");
      // The cpu backend's store of the same rows (K; V gets them too).
      KvCacheLayout l = kv_dense_layout(KvDtype::kE2M1, KvHeadLayout::kNHD, rows, 1, 1, static_cast<int32_t>(d));
      std::vector<uint8_t> k(want_q.size()), v(want_q.size()), ksf(want_sf.size()), vsf(want_sf.size());
      const std::vector<float> gs{g};
      const KvCacheView view{k.data(), rows * d, v.data(), rows * d, l, {KvScaleKind::kPerTensor, gs, gs, KvRecipe::kSpec},
                             ksf.data(), static_cast<int64_t>(ksf.size()), vsf.data(), static_cast<int64_t>(vsf.size()),
                             {KvSfLayout::kLinear, d / 16, d / 16, d / 16}};
      std::vector<int32_t> slots(static_cast<size_t>(rows));
      for (int64_t i = 0; i < rows; ++i) slots[static_cast<size_t>(i)] = static_cast<int32_t>(i);
      const KvTokensIn in{reinterpret_cast<const uint8_t*>(key.data()), KvDtype::kBF16, rows, d, d};
      for (const bool baseline : {false, true}) {  // the AVX2 build and the baseline one (run-time ISA choice)
        if (baseline) setenv("KVCHECK_CPU_ISA", "baseline", 1);
        std::fill(k.begin(), k.end(), 0xEE), std::fill(ksf.begin(), ksf.end(), 0xEE);
        cpu.store_kv(in, in, slots, view);
        unsetenv("KVCHECK_CPU_ISA");
        EXPECT_EQ(ksf, want_sf) << "g " << g << (baseline ? " baseline" : "");
        EXPECT_EQ(k, want_q) << "g " << g << (baseline ? " baseline" : "");
        EXPECT_EQ(vsf, want_sf) << "g " << g;
      }
    }
  }
}
#endif

}  // namespace
}  // namespace kvcheck

namespace kvcheck {
namespace {

// A backend declaring the given capabilities; only capabilities() is asked here, every
// operation refuses.
struct CapsOnly final : Backend {
  BackendCapabilities caps;
  explicit CapsOnly(BackendCapabilities c) : caps(std::move(c)) {}
  std::string_view name() const override { return "caps"; }
  BackendCapabilities capabilities() const override { return caps; }
  [[noreturn]] static void no() { throw Error(ErrorCode::kUnsupported, "capabilities only"); }
  void store_kv_cache(const KVInput&, std::span<const int32_t>, const CacheView&) const override { no(); }
  void load_paged_kv_cache(const ConstCacheView&, std::span<const int32_t>, int32_t, const LoadOutput&) const override {
    no();
  }
  void convert_kv_index(const ConvertKvIndexArgs&, std::span<int32_t>) const override { no(); }
  void kv_index_cat(std::span<const int32_t>, int32_t, std::span<const int32_t>, int32_t, int32_t, int32_t, int32_t,
                    std::span<int32_t>) const override {
    no();
  }
  void expand_swa_index(std::span<const int32_t>, int32_t, int32_t, std::span<int32_t>) const override { no(); }
  void swa_decode_index(std::span<const int32_t>, int32_t, int32_t, int32_t, std::span<int32_t>) const override { no(); }
};

// A writer x reader contract takes e2m1 caches only when both sides read the scale caches
// (KVCHECK_OP_KV_NVFP4); it keeps the record-flags bit the same way. Without the bit on
// both sides, e2m1 leaves its dtypes (a generator must never draw it for the pair).
TEST(KvNvfp4, ContractsKeepTheFeatureBitOnlyWhenBothSidesHaveIt) {
  BackendCapabilities with = cpu::CpuBackend().capabilities(), without = with;
  without.ops &= ~KVCHECK_OP_KV_NVFP4;
  const auto pair = [](const BackendCapabilities& w, const BackendCapabilities& r) {
    return ContractBackend(std::make_shared<CapsOnly>(w), std::make_shared<CapsOnly>(r), {}).capabilities();
  };
  EXPECT_TRUE(pair(with, with).supports_kv_dtype(KvDtype::kE2M1));
  EXPECT_TRUE(pair(with, with).ops & KVCHECK_OP_RECORD_FLAGS);
  for (const auto& c : {pair(with, without), pair(without, with)}) {
    EXPECT_FALSE(c.supports_kv_dtype(KvDtype::kE2M1));
    EXPECT_FALSE(c.kv_dtypes & (1u << static_cast<int>(KvDtype::kE2M1)));
    EXPECT_TRUE(c.supports_kv_dtype(KvDtype::kE4M3));
  }
}

// Each side's contract is consistent alone (its loader checks that a declared head_dim
// meets its row limits), but the pair's head_dims under the pair's limits may hold no
// whole number of heads: a writer built for head_dim 128 and a reader of at most 100
// elements a row share no K/V shape. The pair then has no K/V family (its rows are not
// exercised); it kept it, and the K/V-step generator drew 0 heads and divided by zero
// (SIGFPE in kvcheck, reported as a crash of the pair) after handing the reader 1 x 128.
TEST(KvContracts, DropTheKvFamilyWhenNoHeadDimMeetsBothRowLimits) {
  BackendCapabilities w = cpu::CpuBackend().capabilities(), r = w;
  w.head_dims = {128};
  r.max_heads_x_head_dim = 100;
  for (const auto& [a, b] : {std::pair{w, r}, std::pair{r, w}}) {
    const ContractBackend pair(std::make_shared<CapsOnly>(a), std::make_shared<CapsOnly>(b), {});
    EXPECT_FALSE(pair.capabilities().ops & KVCHECK_OP_STORE_KV);
    EXPECT_FALSE(pair.capabilities().ops & KVCHECK_OP_GATHER_KV);
    EXPECT_NE(pair.gaps().find("the K/V family: no head_dim or row shape both declare"), std::string::npos)
        << pair.gaps();
  }
  // A head_dim of 64 fits one head under 100: the family stays.
  w.head_dims = {128, 64};
  const ContractBackend pair(std::make_shared<CapsOnly>(w), std::make_shared<CapsOnly>(r), {});
  EXPECT_TRUE(pair.capabilities().ops & KVCHECK_OP_STORE_KV);
}

// Each side alone has a head_dim for its e2m1 caches, the pair none: writer {72, 128},
// reader {72, 96} share only 72, not a multiple of 16. e2m1 leaves the pair's dtypes
// (the K/V generator drew bf16 cases for it, and `kvcheck contract --kv-dtype e2m1`
// passed them); scoped to e2m1 alone, the K/V family goes with the reason said.
TEST(KvContracts, DropE2m1WhenNoSharedHeadDimIsAMultipleOf16) {
  BackendCapabilities w = cpu::CpuBackend().capabilities(), r = w;
  w.head_dims = {72, 128};
  r.head_dims = {72, 96};
  EXPECT_TRUE(w.e2m1_head_dim_fits());
  EXPECT_TRUE(r.e2m1_head_dim_fits());
  const ContractBackend pair(std::make_shared<CapsOnly>(w), std::make_shared<CapsOnly>(r), {});
  EXPECT_FALSE(pair.capabilities().supports_kv_dtype(KvDtype::kE2M1));
  EXPECT_TRUE(pair.capabilities().supports_kv_dtype(KvDtype::kE4M3));
  EXPECT_TRUE(pair.capabilities().ops & KVCHECK_OP_STORE_KV);
  ContractScope e2m1_only;
  e2m1_only.kv_dtypes = 1u << static_cast<int>(KvDtype::kE2M1);
  const ContractBackend scoped(std::make_shared<CapsOnly>(w), std::make_shared<CapsOnly>(r), e2m1_only);
  EXPECT_FALSE(scoped.capabilities().ops & KVCHECK_OP_STORE_KV);
  EXPECT_NE(scoped.gaps().find("no head_dim that is a multiple of 16 for the e2m1 caches"), std::string::npos)
      << scoped.gaps();
  // No head_dims declared: 16 fits unless the row limits exclude every multiple of 16.
  BackendCapabilities rows = cpu::CpuBackend().capabilities();
  rows.min_heads_x_head_dim = 17;
  rows.max_heads_x_head_dim = 31;
  EXPECT_FALSE(rows.e2m1_head_dim_fits());
  rows.max_heads_x_head_dim = 32;
  EXPECT_TRUE(rows.e2m1_head_dim_fits());
}

}  // namespace
}  // namespace kvcheck
