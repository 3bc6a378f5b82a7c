// Known answers for the index transforms (SPEC §5.5, §5.6) on every available backend.
#include <gtest/gtest.h>

#include <climits>

#include "impl/backends.h"
#include "impl/error.h"
#include "tests/test_util.h"

namespace kvcheck {
namespace {

using V = std::vector<int32_t>;


class IndexTransforms : public testing::TestWithParam<std::shared_ptr<const Backend>> {};

// bs 4; seq 0 table [7, 9], seq 1 table [3, -1].
// q0 (seq 0, ctx 8): 0 -> 28, 5 -> 9*4+1 = 37, -1 -> -1, 8 (>= ctx) -> -1.
// q1 (seq 1, ctx 3): 2 -> 14, 3 (>= ctx) -> -1, 100 -> -1, -1 -> -1.
// q2 (seq 0 again, ctx 6): 7 (>= ctx) -> -1, 4 -> 36, 3 -> 31, 0 -> 28.
TEST_P(IndexTransforms, ConvertKvIndexKnownAnswer) {
  const V topk{0, 5, -1, 8, 2, 3, 100, -1, 7, 4, 3, 0};
  const V table{7, 9, 3, -1};
  const V seq_ids{0, 1, 0}, ctx{8, 3, 6};
  V out(12, 99);
  GetParam()->convert_kv_index({topk, 3, 4, table, 2, seq_ids, ctx, 4}, out);
  EXPECT_EQ(out, (V{28, 37, -1, -1, 14, -1, -1, -1, -1, 36, 31, 28}));
  V in_place = topk;  // the seed's kernel rewrites topk in place
  GetParam()->convert_kv_index({in_place, 3, 4, table, 2, seq_ids, ctx, 4}, in_place);
  EXPECT_EQ(in_place, out);
}

TEST_P(IndexTransforms, ConvertKvIndexErrorsWriteNothing) {
  const V table{7, 9, 3, -1};
  V out(1, 99);
  auto run = [&](int32_t x, int32_t seq, int32_t ctx) {
    const V topk{x}, seq_ids{seq}, ctx_v{ctx};
    GetParam()->convert_kv_index({topk, 1, 1, table, 2, seq_ids, ctx_v, 4}, out);
  };
  EXPECT_EQ(code_of([&] { run(8, 0, 9); }), ErrorCode::kRangeOutOfTable);  // block 2 of 2
  EXPECT_EQ(code_of([&] { run(5, 1, 6); }), ErrorCode::kRangeOutOfTable);  // table[1][1] = -1
  EXPECT_EQ(code_of([&] { run(-2, 0, 9); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { run(0, 2, 9); }), ErrorCode::kInvalidArgument);  // no seq 2
  EXPECT_EQ(code_of([&] { run(0, 0, -1); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(out, (V{99}));
}

// SPEC §5.6: compressed indices shift by 4096 + 1024 = 5120; 2499 -> 7619.
TEST_P(IndexTransforms, KvIndexCatShiftsCompressedBy5120) {
  const V left{1, 2, 3, -1}, right{0, -1, 2499, 7, 8, -1};
  V out(10, 99);
  GetParam()->kv_index_cat(left, 2, right, 3, 2, 4096, 1024, out);
  EXPECT_EQ(out, (V{1, 2, 5120, -1, 7619, 3, -1, 5127, 5128, -1}));
  EXPECT_EQ(code_of([&] { GetParam()->kv_index_cat(left, 2, V{-2, 0, 0, 0, 0, 0}, 3, 2, 1, 1, out); }),
            ErrorCode::kInvalidArgument);
  // A shift that alone passes INT32_MAX: every entry >= 0 overflows, -1 entries do not
  // (found by the CUDA validation kernels disagreeing with a cpu validator regression).
  EXPECT_EQ(code_of([&] { GetParam()->kv_index_cat(left, 2, V{-1, 16, -1, -1, -1, -1}, 3, 2, INT32_MAX - 50, 500, out); }),
            ErrorCode::kInvalidArgument);
  GetParam()->kv_index_cat(left, 2, V{-1, -1, -1, -1, -1, -1}, 3, 2, INT32_MAX - 50, 500, out);  // no throw
  EXPECT_EQ(out, (V{1, 2, -1, -1, -1, 3, -1, -1, -1, -1}));
  EXPECT_EQ(code_of([&] { GetParam()->kv_index_cat(left, 2, V{INT32_MAX, 0, 0, 0, 0, 0}, 3, 2, 1, 0, out); }),
            ErrorCode::kInvalidArgument);
  V short_out(9);
  EXPECT_EQ(code_of([&] { GetParam()->kv_index_cat(left, 2, right, 3, 2, 1, 1, short_out); }),
            ErrorCode::kShapeMismatch);
}

TEST_P(IndexTransforms, ExpandSwaIndexKnownAnswers) {
  V out(10, 99);  // {10, 2, 50, 1}: 10, 11, then 50, then -1; {0, 0, 7, 5}: 7..11
  GetParam()->expand_swa_index(V{10, 2, 50, 1, 0, 0, 7, 5}, 2, 5, out);
  EXPECT_EQ(out, (V{10, 11, 50, -1, -1, 7, 8, 9, 10, 11}));
  // The seed's two-piece ring window: [784, 4096) then [0, 784).
  V wide(4096);
  GetParam()->expand_swa_index(V{784, 3312, 0, 784}, 1, 4096, wide);
  EXPECT_EQ(wide[0], 784);
  EXPECT_EQ(wide[3311], 4095);
  EXPECT_EQ(wide[3312], 0);
  EXPECT_EQ(wide[4095], 783);
  V kept(5, 99);
  EXPECT_EQ(code_of([&] { GetParam()->expand_swa_index(V{0, 3, 0, 3}, 1, 5, kept); }),
            ErrorCode::kInvalidArgument);  // 3 + 3 > width 5
  EXPECT_EQ(code_of([&] { GetParam()->expand_swa_index(V{0, -1, 0, 3}, 1, 5, kept); }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(kept, V(5, 99));
}

// ring 8; start slot 13 = ring 1, offset 5: 13, 14, 15, then wrap to 8, 9; -1 after 5.
TEST_P(IndexTransforms, SwaDecodeIndexWrapsTheRing) {
  V out(12, 99);
  GetParam()->swa_decode_index(V{13, 5, 3, 0}, 2, 6, 8, out);
  EXPECT_EQ(out, (V{13, 14, 15, 8, 9, -1, -1, -1, -1, -1, -1, -1}));
  V kept(6, 99);
  EXPECT_EQ(code_of([&] { GetParam()->swa_decode_index(V{0, 9}, 1, 6, 8, kept); }),
            ErrorCode::kInvalidArgument);  // valid_len > width
  EXPECT_EQ(code_of([&] { GetParam()->swa_decode_index(V{-3, 2}, 1, 6, 8, kept); }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(kept, V(6, 99));
}

INSTANTIATE_TEST_SUITE_P(Backends, IndexTransforms, testing::ValuesIn(available_backends()),
                         [](const auto& info) { return std::string(info.param->name()); });

}  // namespace
}  // namespace kvcheck
