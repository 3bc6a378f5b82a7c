// Known answers of the K/V family (SPEC §7.2, §7.4, §7.5) by hand, on the reference
// and the cpu backend alike, and every error path with its code and message.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

#include "impl/cpu/cpu_backend.h"
#include "impl/kv_layout.h"
#include "reference/gather_kv.h"
#include "reference/kv_numerics.h"
#include "reference/kv_layout.h"
#include "reference/store_kv.h"
#include "tests/test_util.h"

namespace kvcheck {
namespace {

using V = std::vector<int32_t>;

// The CUDA launchers' dtype codes mirror KvDtype, so a backend can cast between them.
static_assert(static_cast<int>(KvDevDtype::kBF16) == static_cast<int>(KvDtype::kBF16));
static_assert(static_cast<int>(KvDevDtype::kFP16) == static_cast<int>(KvDtype::kFP16));
static_assert(static_cast<int>(KvDevDtype::kE4M3) == static_cast<int>(KvDtype::kE4M3));
static_assert(static_cast<int>(KvDevDtype::kE5M2) == static_cast<int>(KvDtype::kE5M2));

TEST(KvLayout, SpecKnownAnswers) {
  const KvCacheLayout nhd = kv_dense_layout(KvDtype::kBF16, KvHeadLayout::kNHD, 4, 16, 8, 128);
  EXPECT_EQ(nhd.stride_page, 16384);
  EXPECT_EQ(nhd.stride_token, 1024);
  EXPECT_EQ(nhd.stride_head, 128);
  const KvPagedLayout pn = kv_paged_layout(nhd);
  EXPECT_EQ(pn.offset(kKvSideK, 2, 3, 5) + 7, 36487);
  EXPECT_EQ(pn.offset(kKvSideV, 2, 3, 5) + 7, 36487);  // the v1 ABI: V has K's strides
  EXPECT_EQ(ref::kv_element_offset(nhd, 2, 3, 5, 7), 36487);
  EXPECT_EQ(pn.slot_offset(kKvSideK, 2 * 16 + 3, 5) + 7, 36487);
  const KvCacheLayout hnd = kv_dense_layout(KvDtype::kBF16, KvHeadLayout::kHND, 4, 16, 8, 128);
  EXPECT_EQ(hnd.stride_token, 128);
  EXPECT_EQ(hnd.stride_head, 2048);
  EXPECT_EQ(hnd.stride_page, 16384);
  const KvPagedLayout ph = kv_paged_layout(hnd);
  EXPECT_EQ(ph.offset(kKvSideK, 2, 3, 5) + 7, 43399);
  EXPECT_EQ(ph.slot_offset(kKvSideV, 2 * 16 + 3, 5) + 7, 43399);
  EXPECT_EQ(ref::kv_element_offset(hnd, 2, 3, 5, 7), 43399);
  const KvCacheLayout big = kv_dense_layout(KvDtype::kE4M3, KvHeadLayout::kNHD, 2, 256, 40, 128);
  EXPECT_EQ(big.stride_page, 1310720);
  EXPECT_EQ(kv_span_elements(big), 2 * 1310720);
}

// KvPagedLayout with K and V of different strides (a later ABI may give them; SPEC
// §7.2's formula per cache). By hand: K is NHD bs 16, H 8, D 128 (stride_page 16384,
// token 1024, head 128); V is HND of the same shape with padded pages (stride_page
// 20000, token 128, head 2048).
TEST(KvPagedLayout, KAndVOfDifferentStridesByHand) {
  KvPagedLayout l;
  l.dtype = KvDevDtype::kE4M3;
  l.num_blocks = 4;
  l.block_size = 16;
  l.num_kv_heads = 8;
  l.head_dim = 128;
  l.k = {16384, 1024, 128};
  l.v = {20000, 128, 2048};
  EXPECT_EQ(l.num_slots(), 64);
  EXPECT_EQ(l.element_bytes(), 1);
  // Slot 35 = block 2, token 3.
  EXPECT_EQ(l.split(35).block, 2);
  EXPECT_EQ(l.split(35).token, 3);
  EXPECT_EQ(l.slot_offset(kKvSideK, 35, 5), 2 * 16384 + 3 * 1024 + 5 * 128);  // 36480
  EXPECT_EQ(l.slot_offset(kKvSideK, 35, 5), 36480);
  EXPECT_EQ(l.slot_offset(kKvSideV, 35, 5), 2 * 20000 + 3 * 128 + 5 * 2048);  // 50624
  EXPECT_EQ(l.slot_offset(kKvSideV, 35, 5), 50624);
  EXPECT_EQ(l.offset(kKvSideV, 2, 3, 5), 50624);
  // The first and last slot of a block: slot 16 = (1, 0), slot 31 = (1, 15).
  EXPECT_EQ(l.slot_offset(kKvSideK, 16, 0), 16384);
  EXPECT_EQ(l.slot_offset(kKvSideV, 16, 0), 20000);
  EXPECT_EQ(l.slot_offset(kKvSideK, 31, 7), 16384 + 15 * 1024 + 7 * 128);  // 32640
  EXPECT_EQ(l.slot_offset(kKvSideV, 31, 7), 20000 + 15 * 128 + 7 * 2048);  // 36256
  EXPECT_EQ(l.slot_offset(kKvSideK, 31, 7), 32640);
  EXPECT_EQ(l.slot_offset(kKvSideV, 31, 7), 36256);
  // Spans: K 1 + 3*16384 + 15*1024 + 7*128 + 127 = 65536; V 1 + 3*20000 + 15*128 +
  // 7*2048 + 127 = 76384.
  EXPECT_EQ(kv_span_elements(l, kKvSideK), 65536);
  EXPECT_EQ(kv_span_elements(l, kKvSideV), 76384);
  // A gather position splits the same way: token 40 of a sequence = table column 2,
  // token 8 of that block (block_size 16).
  EXPECT_EQ(l.split(40).block, 2);
  EXPECT_EQ(l.split(40).token, 8);
  // A block_size that is not a power of two: 7, slot 23 = (3, 2).
  l.block_size = 7;
  EXPECT_EQ(l.split(23).block, 3);
  EXPECT_EQ(l.split(23).token, 2);
  EXPECT_EQ(l.slot_offset(kKvSideK, 23, 1), 3 * 16384 + 2 * 1024 + 128);
}

// kv_paged_layout copies a view's one stride set into both K and V, and the dtype code.
TEST(KvPagedLayout, FromAViewLayout) {
  const KvCacheLayout hnd = kv_dense_layout(KvDtype::kE5M2, KvHeadLayout::kHND, 3, 5, 2, 4);
  const KvPagedLayout p = kv_paged_layout(hnd);
  EXPECT_EQ(p.dtype, KvDevDtype::kE5M2);
  EXPECT_EQ(p.num_blocks, 3);
  EXPECT_EQ(p.block_size, 5);
  EXPECT_EQ(p.num_kv_heads, 2);
  EXPECT_EQ(p.head_dim, 4);
  // HND bs 5, H 2, D 4: stride_token 4, stride_head 20, stride_page 40.
  const KvStrides want{40, 4, 20};
  EXPECT_TRUE(p.k == want);
  EXPECT_TRUE(p.v == want);
  // slot 13 = block 2, token 3, head 1: 2*40 + 3*4 + 20 = 112.
  EXPECT_EQ(p.slot_offset(kKvSideV, 13, 1), 112);
}

TEST(KvLayout, NonOverlapRule) {
  KvCacheLayout l = kv_dense_layout(KvDtype::kBF16, KvHeadLayout::kNHD, 2, 4, 2, 8);
  EXPECT_NO_THROW(validate_kv_layout(l));
  l.stride_head = 4;  // heads overlap (D = 8)
  expect_error([&] { validate_kv_layout(l); }, ErrorCode::kInvalidArgument, {"overlaps itself"});
  l = kv_dense_layout(KvDtype::kBF16, KvHeadLayout::kNHD, 2, 4, 2, 8);
  l.stride_page += 24;  // padded pages are fine
  l.stride_token = 20;  // padded tokens too (16 needed)
  l.stride_page = 4 * 20 + 8;
  EXPECT_NO_THROW(validate_kv_layout(l));
  l.stride_token = 0;  // all tokens on one record
  expect_error([&] { validate_kv_layout(l); }, ErrorCode::kInvalidArgument, {"overlaps itself"});
  l = kv_dense_layout(KvDtype::kBF16, KvHeadLayout::kNHD, 1, 1, 1, 8);
  l.stride_page = l.stride_token = l.stride_head = 0;  // extent-1 axes may have any stride
  EXPECT_NO_THROW(validate_kv_layout(l));
  l = kv_dense_layout(KvDtype::kBF16, KvHeadLayout::kNHD, 1 << 20, 4096, 1, 8);
  expect_error([&] { validate_kv_layout(l); }, ErrorCode::kInvalidArgument, {"int32"});
  l = kv_dense_layout(KvDtype::kBF16, KvHeadLayout::kNHD, 0, 4, 1, 8);
  expect_error([&] { validate_kv_layout(l); }, ErrorCode::kInvalidArgument, {">= 1"});
}

// A tiny pair of caches in one buffer of uint16 (so both bf16 and fp8 fit aligned).
struct Pair {
  std::vector<uint16_t> buf;
  KvCacheView view;
  Pair(const KvCacheLayout& l, int64_t extra_elements = 0) {
    const int64_t span = kv_span_elements(l);
    const int64_t bytes = kv_dtype_bytes(l.dtype);
    buf.assign(static_cast<size_t>((2 * span * bytes + 1) / 2 + extra_elements), 0xEEEE);
    uint8_t* base = reinterpret_cast<uint8_t*>(buf.data());
    view = {base, span, base + span * bytes, span, l, {}, nullptr, 0, nullptr, 0, {}};
  }
};

using StoreFn = std::function<void(const KvTokensIn&, const KvTokensIn&, std::span<const int32_t>, const KvCacheView&)>;
using GatherFn = std::function<void(const GatherKvArgs&)>;

struct Side {
  const char* name;
  StoreFn store;
  GatherFn gather;
};

std::vector<Side> sides() {
  static const cpu::CpuBackend cpu;
  return {{"reference",
           [](const KvTokensIn& k, const KvTokensIn& v, std::span<const int32_t> slots, const KvCacheView& c) {
             ref::store_kv(k, v, slots, c);
           },
           ref::gather_kv},
          {"cpu",
           [](auto&&... a) { cpu.store_kv(a...); },
           [](const GatherKvArgs& a) { cpu.gather_kv(a); }}};
}

KvTokensIn rows_in(const std::vector<uint16_t>& v, KvDtype dtype, int64_t rows, int64_t h, int64_t d) {
  return {reinterpret_cast<const uint8_t*>(v.data()), dtype, rows, h * d, d};
}

// bs 2, 2 blocks, H 2, D 2, bf16 NHD. key row r head h element e = 0x100*r + 0x10*h + e + 1.
TEST(KvStore, Bf16KnownAnswerNhdAndHnd) {
  for (const Side& s : sides()) {
    for (KvHeadLayout order : {KvHeadLayout::kNHD, KvHeadLayout::kHND}) {
      const KvCacheLayout l = kv_dense_layout(KvDtype::kBF16, order, 2, 2, 2, 2);
      Pair p(l);
      std::vector<uint16_t> key(3 * 4), value(3 * 4);
      for (int r = 0; r < 3; ++r)
        for (int h = 0; h < 2; ++h)
          for (int e = 0; e < 2; ++e) {
            key[static_cast<size_t>(r * 4 + h * 2 + e)] = static_cast<uint16_t>(0x100 * r + 0x10 * h + e + 1);
            value[static_cast<size_t>(r * 4 + h * 2 + e)] = static_cast<uint16_t>(0x8000 | (0x100 * r + 0x10 * h + e + 1));
          }
      const V slots{3, -1};  // row 0 -> block 1 token 1; row 1 padding; row 2 beyond n
      s.store(rows_in(key, KvDtype::kBF16, 3, 2, 2), rows_in(value, KvDtype::kBF16, 3, 2, 2), slots, p.view);
      const uint16_t* k = reinterpret_cast<const uint16_t*>(p.view.k);
      const uint16_t* v = reinterpret_cast<const uint16_t*>(p.view.v);
      for (int64_t i = 0; i < 16; ++i) {
        // NHD: block 1 token 1 = elements 12..15 (h0: 12, 13; h1: 14, 15).
        // HND: block 1 = 8..15, head h token 1 at 8 + h*4 + 2.
        int64_t head = -1, e = 0;
        if (order == KvHeadLayout::kNHD && i >= 12) head = (i - 12) / 2, e = (i - 12) % 2;
        if (order == KvHeadLayout::kHND && (i == 10 || i == 11 || i == 14 || i == 15)) head = (i - 8) / 4, e = i % 2;
        const uint16_t want_k = head < 0 ? 0xEEEE : static_cast<uint16_t>(0x10 * head + e + 1);
        EXPECT_EQ(k[i], want_k) << s.name << " " << to_string(order) << " k element " << i;
        EXPECT_EQ(v[i], head < 0 ? 0xEEEE : static_cast<uint16_t>(0x8000 | want_k)) << s.name << " v " << i;
      }
    }
  }
}

// SPEC §7.3.1, worked by hand there: the sglang recipe multiplies by RN(1/s) and clamps
// with fminf/fmaxf. Per head, k_scale [2, 7], v_scale [1, 1]: key 3.0 * 0.5 -> 0x3C
// (as spec), 1.3671875 * RN(1/7) = 0.19531251 -> 0x25 (spec's tie gives 0x24); value
// NaN -> +448 = 0x7E (spec: 0x7F), -Inf -> 0xFE (as spec). vllm gives spec's bytes.
TEST(KvStore, RecipesKnownAnswer) {
  struct Want {
    KvRecipe recipe;
    uint8_t k1, v0;
  };
  for (const Want w : {Want{KvRecipe::kSglang, 0x25, 0x7E}, Want{KvRecipe::kSpec, 0x24, 0x7F},
                       Want{KvRecipe::kVllm, 0x24, 0x7F}})
    for (const Side& s : sides()) {
      const KvCacheLayout l = kv_dense_layout(KvDtype::kE4M3, KvHeadLayout::kNHD, 1, 1, 2, 1);
      Pair p(l);
      const float ks[] = {2.0f, 7.0f}, vs[] = {1.0f, 1.0f};
      p.view.scales = {KvScaleKind::kPerHead, ks, vs, w.recipe};
      const std::vector<uint16_t> key{0x4040, 0x3FAF}, value{0xFFC0, 0xFF80};
      s.store(rows_in(key, KvDtype::kBF16, 1, 2, 1), rows_in(value, KvDtype::kBF16, 1, 2, 1), V{0}, p.view);
      const std::string where = std::string(s.name) + " " + to_string(w.recipe);
      EXPECT_EQ(p.view.k[0], 0x3C) << where;
      EXPECT_EQ(p.view.k[1], w.k1) << where;
      EXPECT_EQ(p.view.v[0], w.v0) << where;
      EXPECT_EQ(p.view.v[1], 0xFE) << where;
    }
  // e5m2: NaN -> +57344 = 0x7B under sglang.
  for (const Side& s : sides()) {
    const KvCacheLayout l = kv_dense_layout(KvDtype::kE5M2, KvHeadLayout::kNHD, 1, 1, 1, 1);
    Pair p(l);
    const float one[] = {1.0f};
    p.view.scales = {KvScaleKind::kPerTensor, one, one, KvRecipe::kSglang};
    const std::vector<uint16_t> key{0x7FC0}, value{0x447A};
    s.store(rows_in(key, KvDtype::kBF16, 1, 1, 1), rows_in(value, KvDtype::kBF16, 1, 1, 1), V{0}, p.view);
    EXPECT_EQ(p.view.k[0], 0x7B) << s.name;
    EXPECT_EQ(p.view.v[0], 0x64) << s.name;  // 1000 -> 1024, as spec
  }
}

// A recipe value none of §7.3.1's (only a plugin call or a file can carry one) is
// kInvalidArgument after the scale sizes, before their values, and writes nothing; a
// bf16 cache ignores it with the scales.
TEST(KvStore, UnknownRecipeIsRefused) {
  for (const Side& s : sides()) {
    const KvCacheLayout l = kv_dense_layout(KvDtype::kE4M3, KvHeadLayout::kNHD, 1, 2, 1, 4);
    Pair p(l);
    const float bad[] = {-1.0f};  // a bad value too: the recipe is checked first
    p.view.scales = {KvScaleKind::kPerTensor, bad, bad, static_cast<KvRecipe>(3)};
    const std::vector<uint16_t> key(4, 0x3F80), value(4, 0x3F80);
    const std::vector<uint16_t> before = p.buf;
    expect_error([&] { s.store(rows_in(key, KvDtype::kBF16, 1, 1, 4), rows_in(value, KvDtype::kBF16, 1, 1, 4), V{1}, p.view); },
                 ErrorCode::kInvalidArgument, {"recipe 3"});
    EXPECT_EQ(p.buf, before) << s.name;
    const KvCacheLayout lb = kv_dense_layout(KvDtype::kBF16, KvHeadLayout::kNHD, 1, 2, 1, 4);
    Pair q(lb);
    q.view.scales.recipe = static_cast<KvRecipe>(3);
    s.store(rows_in(key, KvDtype::kBF16, 1, 1, 4), rows_in(value, KvDtype::kBF16, 1, 1, 4), V{1}, q.view);
    EXPECT_EQ(reinterpret_cast<const uint16_t*>(q.view.k)[4], 0x3F80) << s.name;
  }
}

// Every bf16 and fp16 input through the cpu kernel (all of them in one head of 65,536
// elements, so the vectorised chunks run), every recipe, both FP8 dtypes, scales that
// round differently (non-powers of two, tiny, huge; a subnormal one, whose RN(1/s) is
// Inf under sglang: 0 * Inf = NaN -> +max; one whose reciprocal is subnormal): the
// cache equals the reference's
// quantize_kv element by element.
TEST(KvStore, CpuRecipesMatchReferenceOnEveryInput) {
  const cpu::CpuBackend cpu;
  std::vector<uint16_t> all(65536);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  for (const KvDtype fp8 : {KvDtype::kE4M3, KvDtype::kE5M2})
    for (const KvDtype model : {KvDtype::kBF16, KvDtype::kFP16})
      for (const KvRecipe recipe : kv_recipes())
        for (const float scale : {1.0f, 7.0f, 3.0f, 0.1f, 1e-3f, 448.0f, 1e-30f, 3e30f, 1e-40f, 1e38f}) {
          const KvCacheLayout l = kv_dense_layout(fp8, KvHeadLayout::kNHD, 1, 1, 1, 65536);
          Pair p(l);
          const float sc[] = {scale};
          p.view.scales = {KvScaleKind::kPerTensor, sc, sc, recipe};
          cpu.store_kv(rows_in(all, model, 1, 1, 65536), rows_in(all, model, 1, 1, 65536), V{0}, p.view);
          int bad = 0;
          for (uint32_t x = 0; x < 65536 && bad < 5; ++x) {
            const uint8_t want = ref::quantize_kv(fp8, ref::model_to_float(model, static_cast<uint16_t>(x)), scale, recipe);
            if (p.view.k[x] != want || p.view.v[x] != want) {
              ++bad;
              ADD_FAILURE() << to_string(recipe) << " " << to_string(model) << "->" << to_string(fp8) << " scale "
                            << scale << " x 0x" << std::hex << x << ": cpu 0x" << int{p.view.k[x]} << " ref 0x"
                            << int{want};
            }
          }
        }
}

// e4m3 per head, k_scale [2, 3], v_scale [1, 7]: key 3.0 / 2 -> 0x3C, 1.0 / 3 -> 0x2B;
// value 1.3671875 / 7 -> 0x24 (SPEC §7.3 table), 1000 / 1 -> 0x7E.
TEST(KvStore, E4m3PerHeadKnownAnswer) {
  for (const Side& s : sides()) {
    const KvCacheLayout l = kv_dense_layout(KvDtype::kE4M3, KvHeadLayout::kNHD, 1, 1, 2, 1);
    Pair p(l);
    const float ks[] = {2.0f, 3.0f}, vs[] = {1.0f, 7.0f};
    p.view.scales = {KvScaleKind::kPerHead, ks, vs};
    const std::vector<uint16_t> key{0x4040, 0x3F80}, value{0x447A, 0x3FAF};
    s.store(rows_in(key, KvDtype::kBF16, 1, 2, 1), rows_in(value, KvDtype::kBF16, 1, 2, 1), V{0}, p.view);
    EXPECT_EQ(p.view.k[0], 0x3C) << s.name;
    EXPECT_EQ(p.view.k[1], 0x2B) << s.name;
    EXPECT_EQ(p.view.v[0], 0x7E) << s.name;
    EXPECT_EQ(p.view.v[1], 0x24) << s.name;
    // Gather back to fp16: 3.0 -> 0x4200, 1.03125 -> 0x3C20, 448 -> 0x5F00, 1.3125 -> 0x3D40.
    std::vector<uint16_t> ok(2, 0), ov(2, 0);
    KvTokensOut out_k{reinterpret_cast<uint8_t*>(ok.data()), KvDtype::kFP16, 1, 2, 1};
    KvTokensOut out_v{reinterpret_cast<uint8_t*>(ov.data()), KvDtype::kFP16, 1, 2, 1};
    s.gather({p.view, V{0}, 1, V{0, 1}, {}, SeqStartUnit::kToken, out_k, out_v});
    EXPECT_EQ(ok, (std::vector<uint16_t>{0x4200, 0x3C20})) << s.name;
    EXPECT_EQ(ov, (std::vector<uint16_t>{0x5F00, 0x3D40})) << s.name;
  }
}

// bs 2, blocks hold: block b token t head 0 element 0 = 0x10*b + t (bf16 NHD, H 1, D 1).
// seq 0: 3 tokens, table [1, 0] -> 0x10, 0x11, 0x00; seq 1: empty; seq 2: 1 token,
// table [0, -7] (entry 1 unneeded, never read) -> 0x00.
TEST(KvGather, KnownAnswerAndUntouchedRows) {
  for (const Side& s : sides()) {
    const KvCacheLayout l = kv_dense_layout(KvDtype::kBF16, KvHeadLayout::kNHD, 2, 2, 1, 1);
    Pair p(l);
    uint16_t* k = reinterpret_cast<uint16_t*>(p.view.k);
    uint16_t* v = reinterpret_cast<uint16_t*>(p.view.v);
    for (int b = 0; b < 2; ++b)
      for (int t = 0; t < 2; ++t) k[b * 2 + t] = static_cast<uint16_t>(0x10 * b + t), v[b * 2 + t] = static_cast<uint16_t>(0x100 + 0x10 * b + t);
    std::vector<uint16_t> ok(6, 0xBBBB), ov(6, 0xBBBB);
    KvTokensOut out_k{reinterpret_cast<uint8_t*>(ok.data()), KvDtype::kBF16, 6, 1, 1};
    KvTokensOut out_v{reinterpret_cast<uint8_t*>(ov.data()), KvDtype::kBF16, 6, 1, 1};
    s.gather({p.view, V{1, 0, -1, -1, 0, -7}, 2, V{0, 3, 3, 4}, {}, SeqStartUnit::kToken, out_k, out_v});
    EXPECT_EQ(ok, (std::vector<uint16_t>{0x10, 0x11, 0x00, 0x00, 0xBBBB, 0xBBBB})) << s.name;
    EXPECT_EQ(ov, (std::vector<uint16_t>{0x110, 0x111, 0x100, 0x100, 0xBBBB, 0xBBBB})) << s.name;
  }
}

// seq_starts (SPEC §7.5), worked by hand. bs 2, 3 blocks, key of block b token t =
// 0x10*b + t (value 0x100 more). seq 0: 2 tokens, row [2, 0, 1], start 3; seq 1: 1 token,
// row [-1, -1, 2] (columns 0-1 unneeded, never read), start 5.
//   token unit: seq 0 positions 3, 4 = (col 1, t 1), (col 2, t 0) -> blocks 0, 1 -> 0x01, 0x10;
//               seq 1 position 5 = (col 2, t 1) -> block 2 -> 0x21.
//   block unit: starts round down to 2 and 4: seq 0 positions 2, 3 -> block 0 t 0, 1 ->
//               0x00, 0x01; seq 1 position 4 -> block 2 t 0 -> 0x20.
TEST(KvGather, SeqStartsKnownAnswerBothUnits) {
  const V table{2, 0, 1, -1, -1, 2}, cu{0, 2, 3}, starts{3, 5};
  const struct {
    SeqStartUnit unit;
    std::vector<uint16_t> k;
  } cases[] = {{SeqStartUnit::kToken, {0x01, 0x10, 0x21, 0xBBBB}}, {SeqStartUnit::kBlock, {0x00, 0x01, 0x20, 0xBBBB}}};
  for (const Side& s : sides()) {
    for (const auto& c : cases) {
      const KvCacheLayout l = kv_dense_layout(KvDtype::kBF16, KvHeadLayout::kNHD, 3, 2, 1, 1);
      Pair p(l);
      uint16_t* k = reinterpret_cast<uint16_t*>(p.view.k);
      uint16_t* v = reinterpret_cast<uint16_t*>(p.view.v);
      for (int b = 0; b < 3; ++b)
        for (int t = 0; t < 2; ++t)
          k[b * 2 + t] = static_cast<uint16_t>(0x10 * b + t), v[b * 2 + t] = static_cast<uint16_t>(0x100 + 0x10 * b + t);
      std::vector<uint16_t> ok(4, 0xBBBB), ov(4, 0xBBBB);
      KvTokensOut out_k{reinterpret_cast<uint8_t*>(ok.data()), KvDtype::kBF16, 4, 1, 1};
      KvTokensOut out_v{reinterpret_cast<uint8_t*>(ov.data()), KvDtype::kBF16, 4, 1, 1};
      s.gather({p.view, table, 3, cu, starts, c.unit, out_k, out_v});
      EXPECT_EQ(ok, c.k) << s.name;
      std::vector<uint16_t> want_v = c.k;
      for (size_t i = 0; i < 3; ++i) want_v[i] = static_cast<uint16_t>(want_v[i] + 0x100);
      EXPECT_EQ(ov, want_v) << s.name;
    }
  }
}

// seq_starts refusals, nothing written. Row of 3 blocks of 2 = 6 positions.
TEST(KvGather, SeqStartsRefusals) {
  const struct {
    const char* what;
    V starts;
    SeqStartUnit unit;
    ErrorCode code;
    const char* needle;  // the cpu's message
  } cases[] = {
      {"past the row (token)", {3, 6}, SeqStartUnit::kToken, ErrorCode::kRangeOutOfTable,
       "sequence 1 has 1 tokens from table position 6 (seq_starts[1] = 6), reaching position 6"},
      {"past the row (block)", {3, 7}, SeqStartUnit::kBlock, ErrorCode::kRangeOutOfTable, "from table position 6 (seq_starts[1] = 7)"},
      {"far past the row", {INT32_MAX, 0}, SeqStartUnit::kToken, ErrorCode::kRangeOutOfTable, "sequence 0 has 2 tokens"},
      {"negative", {3, -1}, SeqStartUnit::kToken, ErrorCode::kInvalidArgument, "seq_starts[1] = -1 is negative"},
      {"too few", {3}, SeqStartUnit::kToken, ErrorCode::kShapeMismatch, "seq_starts has 1 entries, not num_seqs 2"},
      {"needed -1", {3, 1}, SeqStartUnit::kToken, ErrorCode::kRangeOutOfTable,
       "block_table[1][0] = -1 (needed by token 0 of sequence 1) is -1"},
      {"needed -1 mid-row", {1, 3}, SeqStartUnit::kToken, ErrorCode::kRangeOutOfTable,
       "block_table[1][1] = -1 (needed by token 0 of sequence 1)"},
  };
  const V table{2, 0, 1, -1, -1, 2}, cu{0, 2, 3};
  for (const Side& s : sides()) {
    for (const auto& c : cases) {
      const KvCacheLayout l = kv_dense_layout(KvDtype::kBF16, KvHeadLayout::kNHD, 3, 2, 1, 1);
      Pair p(l);
      std::vector<uint16_t> ok(4, 0xBBBB), ov(4, 0xBBBB);
      KvTokensOut out_k{reinterpret_cast<uint8_t*>(ok.data()), KvDtype::kBF16, 4, 1, 1};
      KvTokensOut out_v{reinterpret_cast<uint8_t*>(ov.data()), KvDtype::kBF16, 4, 1, 1};
      const auto call = [&] { s.gather({p.view, table, 3, cu, c.starts, c.unit, out_k, out_v}); };
      if (s.name == std::string("cpu"))
        expect_error(call, c.code, {c.needle});
      else
        expect_error(call, c.code);
      EXPECT_EQ(ok, std::vector<uint16_t>(4, 0xBBBB)) << s.name << ": " << c.what;
      EXPECT_EQ(ov, std::vector<uint16_t>(4, 0xBBBB)) << s.name << ": " << c.what;
    }
  }
}

// One allocation [2, L, nb, bs, H, D] (nano-vllm) and [nb, 2, bs, H, D] (FlashInfer).
TEST(KvLayout, ViewsOfOneAllocation) {
  std::vector<uint16_t> alloc(2 * 3 * 2 * 4 * 2 * 8);
  uint8_t* base = reinterpret_cast<uint8_t*>(alloc.data());
  const KvCacheLayout l = kv_dense_layout(KvDtype::kBF16, KvHeadLayout::kNHD, 2, 4, 2, 8);
  const int64_t layer = 2 * 4 * 2 * 8, total = static_cast<int64_t>(alloc.size());
  for (int64_t li = 0; li < 3; ++li) {
    const int64_t k_off = li * layer, v_off = (3 + li) * layer;
    const ConstKvCacheView c{base + 2 * k_off, total - k_off, base + 2 * v_off, total - v_off, l, {}, nullptr, 0, nullptr, 0, {}};
    EXPECT_NO_THROW(validate_kv_cache(c));
    EXPECT_NO_THROW(ref::check_kv_cache(c));
  }
  KvCacheLayout fi = l;  // FlashInfer: V at K + bs*H*D, pages twice as far apart
  fi.stride_page = 2 * 4 * 2 * 8;
  const ConstKvCacheView c{base, 2 * 64 * 2, base + 2 * 64, 2 * 64 * 2 - 64, fi, {}, nullptr, 0, nullptr, 0, {}};
  EXPECT_NO_THROW(validate_kv_cache(c));
  EXPECT_NO_THROW(ref::check_kv_cache(c));
  const ConstKvCacheView shared{base, 256, base + 2 * 8, 256, fi, {}, nullptr, 0, nullptr, 0, {}};  // V = K + one head
  expect_error([&] { validate_kv_cache(shared); }, ErrorCode::kInvalidArgument, {"share elements"});
  expect_error([&] { ref::check_kv_cache(shared); }, ErrorCode::kInvalidArgument);
  const ConstKvCacheView short_v{base, 256, base + 2 * 64, 191, fi, {}, nullptr, 0, nullptr, 0, {}};
  expect_error([&] { validate_kv_cache(short_v); }, ErrorCode::kShapeMismatch, {"v_cache view spans 192"});
  expect_error([&] { ref::check_kv_cache(short_v); }, ErrorCode::kShapeMismatch);
  const ConstKvCacheView odd{base + 1, 256, base + 2 * 64 + 1, 256, fi, {}, nullptr, 0, nullptr, 0, {}};
  expect_error([&] { validate_kv_cache(odd); }, ErrorCode::kInvalidArgument, {"aligned"});
}

// Every bad input: the same code on both sides, the message names index and value,
// and no cache byte changes.
TEST(KvStore, ErrorsWriteNothing) {
  const KvCacheLayout l = kv_dense_layout(KvDtype::kE5M2, KvHeadLayout::kHND, 2, 3, 2, 4);
  std::vector<uint16_t> key(5 * 8, 0x3F80), value(5 * 8, 0x4000);
  const float one[] = {1.0f}, two[] = {1.0f, 2.0f};
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  struct Case {
    const char* what;
    std::function<void(KvCacheView&, KvTokensIn&, KvTokensIn&, V&)> make;
    ErrorCode code;
    std::string needle;
  };
  static float bad[1];
  const std::vector<Case> cases = {
      {"duplicate", [](auto&, auto&, auto&, V& s) { s = {5, -1, 5}; }, ErrorCode::kDuplicateSlot, "slot_mapping[2] = 5 repeats slot_mapping[0]"},
      {"out of range", [](auto&, auto&, auto&, V& s) { s = {0, 6}; }, ErrorCode::kSlotOutOfRange, "slot_mapping[1] = 6"},
      {"-2", [](auto&, auto&, auto&, V& s) { s = {-2}; }, ErrorCode::kSlotOutOfRange, "slot_mapping[0] = -2"},
      {"INT32_MIN", [](auto&, auto&, auto&, V& s) { s = {1, std::numeric_limits<int32_t>::min()}; }, ErrorCode::kSlotOutOfRange, "slot_mapping[1] = -2147483648"},
      {"dup before range", [](auto&, auto&, auto&, V& s) { s = {1, 1, 99}; }, ErrorCode::kDuplicateSlot, "slot_mapping[1] = 1"},
      {"rows short", [](auto&, KvTokensIn& k, auto&, V& s) { s = {0, 1, 2}; k.rows = 2; }, ErrorCode::kShapeMismatch, "key has 2 rows"},
      {"value null", [](auto&, auto&, KvTokensIn& v, V&) { v.data = nullptr; }, ErrorCode::kShapeMismatch, "value data is null"},
      {"negative stride", [](auto&, KvTokensIn& k, auto&, V&) { k.head_stride = -1; }, ErrorCode::kInvalidArgument, "negative stride"},
      {"no scales", [](KvCacheView& c, auto&, auto&, V&) { c.scales = {}; }, ErrorCode::kInvalidArgument, "needs k_scale"},
      {"zero scale", [](KvCacheView& c, auto&, auto&, V&) { bad[0] = 0.0f; c.scales.v_scale = bad; }, ErrorCode::kInvalidArgument, "v_scale[0] = 0"},
      {"negative scale", [](KvCacheView& c, auto&, auto&, V&) { bad[0] = -1.0f; c.scales.k_scale = bad; }, ErrorCode::kInvalidArgument, "k_scale[0] = -1"},
      {"NaN scale", [nan](KvCacheView& c, auto&, auto&, V&) { bad[0] = nan; c.scales.k_scale = bad; }, ErrorCode::kInvalidArgument, "k_scale[0] = nan"},
      {"Inf scale", [inf](KvCacheView& c, auto&, auto&, V&) { bad[0] = inf; c.scales.k_scale = bad; }, ErrorCode::kInvalidArgument, "k_scale[0] = inf"},
      {"per-head size", [&two](KvCacheView& c, auto&, auto&, V&) { c.scales = {KvScaleKind::kPerHead, two, std::span<const float>(two, 1)}; }, ErrorCode::kShapeMismatch, "v_scale has 1 floats"},
      {"fp8 model dtype", [](auto&, KvTokensIn& k, auto&, V&) { k.dtype = KvDtype::kE4M3; }, ErrorCode::kInvalidArgument, "key is e4m3"},
      // SPEC §7.1: an FP8 cache takes either model dtype, but one for key and value.
      {"two model dtypes", [](auto&, auto&, KvTokensIn& v, V&) { v.dtype = KvDtype::kFP16; }, ErrorCode::kInvalidArgument,
       "key is bf16 but value is fp16: key and value share one model dtype"},
      {"cache too small", [](KvCacheView& c, auto&, auto&, V&) { c.k_capacity -= 1; }, ErrorCode::kShapeMismatch, "k_cache view spans 48"},
  };
  for (const Side& s : sides()) {
    for (const Case& c : cases) {
      Pair p(l);
      p.view.scales = {KvScaleKind::kPerTensor, one, one};
      KvTokensIn k = rows_in(key, KvDtype::kBF16, 5, 2, 4), v = rows_in(value, KvDtype::kBF16, 5, 2, 4);
      V slots{0, 1};
      c.make(p.view, k, v, slots);
      const std::vector<uint16_t> before = p.buf;
      if (s.name == std::string("cpu"))
        expect_error([&] { s.store(k, v, slots, p.view); }, c.code, {c.needle});
      else
        expect_error([&] { s.store(k, v, slots, p.view); }, c.code);
      EXPECT_EQ(p.buf, before) << s.name << ": " << c.what << " changed the cache";
    }
  }
}

TEST(KvGather, ErrorsWriteNothing) {
  const KvCacheLayout l = kv_dense_layout(KvDtype::kBF16, KvHeadLayout::kNHD, 3, 4, 1, 2);
  struct Case {
    const char* what;
    V table;
    int32_t max_blocks;
    V cu;
    ErrorCode code;
    std::string needle;
    int64_t out_rows = 16;
    KvDtype out_dtype = KvDtype::kBF16;
  };
  const std::vector<Case> cases = {
      {"-1 needed", {0, -1}, 2, {0, 5}, ErrorCode::kRangeOutOfTable, "block_table[0][1] = -1 (needed by token 4 of sequence 0)"},
      {"past num_blocks", {0, 3}, 2, {0, 5}, ErrorCode::kBlockOutOfRange, "block_table[0][1] = 3"},
      {"below -1", {-5, 0}, 2, {0, 1}, ErrorCode::kBlockOutOfRange, "block_table[0][0] = -5"},
      {"longer than table", {0, 1}, 2, {0, 9}, ErrorCode::kRangeOutOfTable, "sequence 0 has 9 tokens"},
      {"cu decreasing", {0, 1, 2, 0}, 2, {0, 3, 2}, ErrorCode::kInvalidArgument, "cu_seqlens_k[2] = 2 < cu_seqlens_k[1] = 3"},
      {"cu[0]", {0, 1}, 2, {1, 3}, ErrorCode::kInvalidArgument, "cu_seqlens_k[0] = 1"},
      {"cu empty", {}, 2, {}, ErrorCode::kShapeMismatch, "cu_seqlens_k is empty"},
      {"table shape", {0, 1, 2}, 2, {0, 3}, ErrorCode::kShapeMismatch, "block_table has 3 entries"},
      {"out rows", {0, 1}, 2, {0, 7}, ErrorCode::kShapeMismatch, "out_k has 6 rows", 6},
      {"out dtype", {0, 1}, 2, {0, 7}, ErrorCode::kInvalidArgument, "out_k is fp16", 16, KvDtype::kFP16},
  };
  for (const Side& s : sides()) {
    for (const Case& c : cases) {
      Pair p(l);
      std::vector<uint16_t> ok(32, 0xBBBB), ov(32, 0xBBBB);
      KvTokensOut out_k{reinterpret_cast<uint8_t*>(ok.data()), c.out_dtype, c.out_rows, 2, 2};
      KvTokensOut out_v{reinterpret_cast<uint8_t*>(ov.data()), KvDtype::kBF16, 16, 2, 2};
      if (s.name == std::string("cpu"))
        expect_error([&] { s.gather({p.view, c.table, c.max_blocks, c.cu, {}, SeqStartUnit::kToken, out_k, out_v}); }, c.code, {c.needle});
      else
        expect_error([&] { s.gather({p.view, c.table, c.max_blocks, c.cu, {}, SeqStartUnit::kToken, out_k, out_v}); }, c.code);
      EXPECT_EQ(ok, std::vector<uint16_t>(32, 0xBBBB)) << s.name << ": " << c.what;
      EXPECT_EQ(ov, std::vector<uint16_t>(32, 0xBBBB)) << s.name << ": " << c.what;
    }
  }
}

TEST(KvFamily, CpuCapabilityAndDefaultUnsupported) {
  std::string why;
  EXPECT_TRUE(cpu::CpuBackend().capabilities().supports_property_op("store_kv", &why)) << why;
  EXPECT_TRUE(cpu::CpuBackend().capabilities().supports_property_op("kv_step", &why)) << why;
  EXPECT_FALSE(BackendCapabilities{}.supports_property_op("store_kv", &why));
  EXPECT_EQ(why, "no store_kv");
  struct Bare final : Backend {  // a backend without the family
    std::string_view name() const override { return "bare"; }
    void store_kv_cache(const KVInput&, std::span<const int32_t>, const CacheView&) const override {}
    void load_paged_kv_cache(const ConstCacheView&, std::span<const int32_t>, int32_t, const LoadOutput&) const override {}
    void convert_kv_index(const ConvertKvIndexArgs&, std::span<int32_t>) const override {}
    void kv_index_cat(std::span<const int32_t>, int32_t, std::span<const int32_t>, int32_t, int32_t, int32_t,
                      int32_t, std::span<int32_t>) const override {}
    void expand_swa_index(std::span<const int32_t>, int32_t, int32_t, std::span<int32_t>) const override {}
    void swa_decode_index(std::span<const int32_t>, int32_t, int32_t, int32_t, std::span<int32_t>) const override {}
  } bare;
  EXPECT_FALSE(bare.capabilities().supports_property_op("gather_kv", nullptr));
  expect_error([&] { bare.store_kv({}, {}, {}, {}); }, ErrorCode::kUnsupported, {"bare has no store_kv"});
  expect_error([&] { bare.gather_kv({}); }, ErrorCode::kUnsupported, {"bare has no gather_kv"});
}

}  // namespace
}  // namespace kvcheck

namespace kvcheck {
namespace {

// The run-time ISA choice (KVCHECK_CPU_ISA=baseline) must not change a byte.
TEST(KvFamily, CpuBaselineAndAvx2Agree) {
  const cpu::CpuBackend cpu;
  for (KvDtype dtype : kv_dtypes()) {
    if (is_nvfp4(dtype)) continue;  // its scale caches: KvNvfp4.EveryBf16ValueMatchesNvidiasConversions runs both ISAs
    const KvCacheLayout l = kv_dense_layout(dtype, KvHeadLayout::kHND, 3, 5, 3, 72);
    const KvDtype model = is_fp8(dtype) ? KvDtype::kFP16 : dtype;
    std::vector<uint16_t> key(7 * 3 * 72), value(key.size());
    for (size_t i = 0; i < key.size(); ++i) {
      key[i] = static_cast<uint16_t>(i * 2654435761u >> 7);
      value[i] = static_cast<uint16_t>(i * 40503u + 17);
    }
    const float ks[] = {0.5f, 3.0f, 7.0f}, vs[] = {1.0f, 0.1f, 2.0f};
    const V slots{3, -1, 0, 14, 7, 8, -1};
    std::vector<uint16_t> out[2][2];
    for (int pass = 0; pass < 2; ++pass) {
      if (pass == 1) setenv("KVCHECK_CPU_ISA", "baseline", 1);
      Pair p(l);
      p.view.scales = {KvScaleKind::kPerHead, ks, vs};
      cpu.store_kv(rows_in(key, model, 7, 3, 72), rows_in(value, model, 7, 3, 72), slots, p.view);
      out[pass][0].assign(p.buf.begin(), p.buf.end());
      std::vector<uint16_t> ok(15 * 3 * 72), ov(ok.size());
      KvTokensOut o_k{reinterpret_cast<uint8_t*>(ok.data()), model, 15, 3 * 72, 72};
      KvTokensOut o_v{reinterpret_cast<uint8_t*>(ov.data()), model, 15, 3 * 72, 72};
      cpu.gather_kv({p.view, V{2, 0, 1}, 3, V{0, 15}, {}, SeqStartUnit::kToken, o_k, o_v});
      ok.insert(ok.end(), ov.begin(), ov.end());
      out[pass][1] = ok;
      unsetenv("KVCHECK_CPU_ISA");
    }
    EXPECT_EQ(out[0][0], out[1][0]) << to_string(dtype) << " store";
    EXPECT_EQ(out[0][1], out[1][1]) << to_string(dtype) << " gather";
  }
}

}  // namespace
}  // namespace kvcheck
