// store_kv with a fused RoPE of the key rows (docs/spec.md §8.4): the spec's known
// answers, worked by hand (bf16, fp16 and e4m3 caches; NeoX, GPT-J, a sub-range; the
// no-FMA case; the refusals in order, nothing written), on the reference and on every
// backend that declares KVCHECK_OP_STORE_KV_ROPE.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <vector>

#include "impl/backends.h"
#include "impl/kv_layout.h"
#include "reference/store_kv.h"
#include "tests/test_util.h"

namespace kvcheck {
namespace {

using Store = std::function<void(const KvTokensIn&, const KvTokensIn&, std::span<const int32_t>, const KvCacheView&,
                                 const RopeArgs*)>;
using Elems = std::vector<uint16_t>;

constexpr uint16_t kFill = 0xEEEE;

/// One call on a fresh K/V pair of one block of 2 tokens, H = 1, D = 4 (NHD), filled
/// with 0xEE: returns the K and V caches' 16-bit elements (FP8 caches: bytes).
struct Result {
  std::vector<uint8_t> k, v;
};
Result store(const Store& run, KvDtype cache, KvDtype rows, const Elems& key, const Elems& value,
             std::vector<int32_t> slots, const RopeArgs& rope, float scale = 1.0f) {
  const KvCacheLayout l = kv_dense_layout(cache, KvHeadLayout::kNHD, 1, 2, 1, 4);
  const int64_t span = kv_span_elements(l), eb = kv_dtype_bytes(cache);
  std::vector<uint8_t> k(static_cast<size_t>(span * eb), 0xEE), v(k);
  const std::vector<float> scales{scale};
  KvScales sc;
  if (cache == KvDtype::kE4M3) sc = {KvScaleKind::kPerTensor, scales, scales, KvRecipe::kSpec};
  const KvCacheView view{k.data(), span, v.data(), span, l, sc, nullptr, 0, nullptr, 0, {}};
  const int64_t n = static_cast<int64_t>(key.size()) / 4;
  run({reinterpret_cast<const uint8_t*>(key.data()), rows, n, 4, 4},
      {reinterpret_cast<const uint8_t*>(value.data()), rows, n, 4, 4}, slots, view, &rope);
  return {k, v};
}

/// 16-bit elements (little-endian) of a cache's bytes.
Elems halves(const std::vector<uint8_t>& b) {
  Elems out(b.size() / 2);
  std::memcpy(out.data(), b.data(), out.size() * 2);
  return out;
}

void expect_refused(const Store& run, KvDtype dtype, const Elems& key, std::vector<int32_t> slots, const RopeArgs& rope,
                    ErrorCode code, const std::string& needle) {
  Result r;
  expect_error(
      [&] {
        const Store keep = [&](const KvTokensIn& k, const KvTokensIn& v, std::span<const int32_t> s,
                               const KvCacheView& c, const RopeArgs* ro) {
          try {
            run(k, v, s, c, ro);
          } catch (...) {
            r.k.assign(c.k, c.k + c.k_capacity * kv_dtype_bytes(dtype));
            throw;
          }
        };
        store(keep, dtype, dtype, key, Elems(key.size(), 0x3F80), slots, rope);
      },
      code, {needle});
  EXPECT_EQ(r.k, std::vector<uint8_t>(r.k.size(), 0xEE)) << "a refused call wrote the K cache";
}

void known_answers(const Store& run) {
  // Table rows: 0 the identity (cos 1, 1 | sin 0, 0), 1 (cos 0, 0.5 | sin 1, 0.75).
  const std::vector<float> table{1, 1, 0, 0, 0, 0.5f, 1, 0.75f};
  const std::vector<int64_t> at1{1};
  const RopeArgs neox{table.data(), 2, at1.data(), 1, 4, 0, true}, gptj{table.data(), 2, at1.data(), 1, 4, 0, false};
  const Elems key_bf16{0x3F80, 0x4000, 0x4040, 0x4080}, value_bf16{0x40A0, 0x40C0, 0x40E0, 0x4100};  // 1..4, 5..8
  // NeoX pairs (0, 2), (1, 3): (1, 3) -> (1*0 - 3*1, 3*0 + 1*1) = (-3, 1); (2, 4) -> (2*0.5 -
  // 4*0.75, 4*0.5 + 2*0.75) = (-2, 3.5). Slot 1: elements 4..7 of K; V as it is.
  Result r = store(run, KvDtype::kBF16, KvDtype::kBF16, key_bf16, value_bf16, {1}, neox);
  EXPECT_EQ(halves(r.k), (Elems{kFill, kFill, kFill, kFill, 0xC040, 0xC000, 0x3F80, 0x4060}));
  EXPECT_EQ(halves(r.v), (Elems{kFill, kFill, kFill, kFill, 0x40A0, 0x40C0, 0x40E0, 0x4100}));
  // GPT-J pairs (0, 1), (2, 3): (-2, 1), (3*0.5 - 4*0.75, 4*0.5 + 3*0.75) = (-1.5, 4.25).
  r = store(run, KvDtype::kBF16, KvDtype::kBF16, key_bf16, value_bf16, {1}, gptj);
  EXPECT_EQ(halves(r.k), (Elems{kFill, kFill, kFill, kFill, 0xC000, 0x3F80, 0xBFC0, 0x4088}));
  // fp16 rows and cache: 1..4 = 0x3C00 0x4000 0x4200 0x4400; NeoX -> -3 0xC200, -2 0xC000,
  // 1 0x3C00, 3.5 0x4300.
  r = store(run, KvDtype::kFP16, KvDtype::kFP16, {0x3C00, 0x4000, 0x4200, 0x4400}, Elems(4, 0x3C00), {0}, neox);
  EXPECT_EQ(halves(r.k), (Elems{0xC200, 0xC000, 0x3C00, 0x4300, kFill, kFill, kFill, kFill}));
  // An e4m3 cache (per-tensor scale 1): the rotated bf16 values quantised, -3 0xC4, -2 0xC0,
  // 1 0x38, 3.5 0x46 (SPEC §7.3: x / 1 then RNE e4m3).
  r = store(run, KvDtype::kE4M3, KvDtype::kBF16, key_bf16, value_bf16, {1}, neox);
  EXPECT_EQ(r.k, (std::vector<uint8_t>{0xEE, 0xEE, 0xEE, 0xEE, 0xC4, 0xC0, 0x38, 0x46}));
  // A sub-range: GPT-J, rope_offset 1, rot_dim 2, table row 1 = (cos 0 | sin 1): the pair
  // (1, 2) = (2, 3) -> (-3, 2); key [1, -3, 2, 4].
  const std::vector<float> quarter{1, 0, 0, 1};
  r = store(run, KvDtype::kBF16, KvDtype::kBF16, key_bf16, value_bf16, {1},
            {quarter.data(), 2, at1.data(), 1, 2, 1, false});
  EXPECT_EQ(halves(r.k), (Elems{kFill, kFill, kFill, kFill, 0x3F80, 0xC040, 0x4000, 0x4080}));
  // No FMA: key [3, 1, 0, 0] (fp16 0x4200 0x3C00), one pair, table (fp32 1/3 | 1):
  // 3 * 0x3EAAAAAB = 1 + 2^-25 exactly = 1.0 in fp32, x' = 1 - 1 = 0; y' = fl(0x3EAAAAAB + 3)
  // = 3 + 1398101 * 2^-22 = 3.33333325..., to fp16 (step 2^-9) 1707 * 2^-9 = 0x42AB.
  const std::vector<float> third{1.0f / 3.0f, 1.0f};
  const std::vector<int64_t> at0{0};
  r = store(run, KvDtype::kFP16, KvDtype::kFP16, {0x4200, 0x3C00, 0, 0}, Elems(4, 0), {0},
            {third.data(), 1, at0.data(), 1, 2, 0, true});
  EXPECT_EQ(halves(r.k), (Elems{0x0000, 0x42AB, 0, 0, kFill, kFill, kFill, kFill}));

  // Refusals (docs/spec.md §8.4 order), nothing written.
  const std::vector<int64_t> at2{2}, at0_7{0, 7};
  expect_refused(run, KvDtype::kBF16, key_bf16, {1}, {table.data(), 2, at1.data(), 1, 3, 0, true},
                 ErrorCode::kInvalidArgument, "rot_dim");
  expect_refused(run, KvDtype::kBF16, key_bf16, {1}, {table.data(), 2, at1.data(), 1, 4, 1, true},
                 ErrorCode::kInvalidArgument, "rope_offset");
  expect_refused(run, KvDtype::kBF16, key_bf16, {1}, {table.data(), 0, at1.data(), 1, 4, 0, true},
                 ErrorCode::kInvalidArgument, "max_position");
  expect_refused(run, KvDtype::kBF16, key_bf16, {1}, {table.data(), 2, at1.data(), 0, 4, 0, true},
                 ErrorCode::kShapeMismatch, "positions");
  expect_refused(run, KvDtype::kBF16, key_bf16, {1}, {table.data(), 2, at2.data(), 1, 4, 0, true},
                 ErrorCode::kInvalidArgument, "positions[0] = 2");
  // Every position before any slot: slot 9 on row 0, position 7 on row 1.
  Elems two_rows = key_bf16;
  two_rows.insert(two_rows.end(), key_bf16.begin(), key_bf16.end());
  expect_refused(run, KvDtype::kBF16, two_rows, {9, 0}, {table.data(), 2, at0_7.data(), 2, 4, 0, true},
                 ErrorCode::kInvalidArgument, "positions[1] = 7");
}

TEST(KvRope, ReferenceKnownAnswers) {
  known_answers([](const KvTokensIn& k, const KvTokensIn& v, std::span<const int32_t> s, const KvCacheView& c,
                   const RopeArgs* r) { ref::store_kv(k, v, s, c, r); });
}

class KvRopeBackend : public testing::TestWithParam<std::shared_ptr<const Backend>> {};

TEST_P(KvRopeBackend, KnownAnswers) {
  if (!(GetParam()->capabilities().ops & KVCHECK_OP_STORE_KV_ROPE))
    GTEST_SKIP() << GetParam()->name() << " declares no KVCHECK_OP_STORE_KV_ROPE";
  known_answers([&](const KvTokensIn& k, const KvTokensIn& v, std::span<const int32_t> s, const KvCacheView& c,
                    const RopeArgs* r) { GetParam()->store_kv(k, v, s, c, r); });
}

INSTANTIATE_TEST_SUITE_P(Backends, KvRopeBackend, testing::ValuesIn(available_backends()),
                         [](const auto& info) { return std::string(info.param->name()); });

}  // namespace
}  // namespace kvcheck
