// Known answers for load plans (SPEC §5.3, §5.6), computed by hand in the comments.
#include <gtest/gtest.h>

#include <climits>

#include "impl/error.h"
#include "tests/test_util.h"
#include "impl/load_plan.h"

namespace kvcheck {
namespace {

using Segs = std::vector<LoadSegment>;


TEST(BlockLoadPlanBuilder, ZeroFillSplitsIntoBlockSizedPieces) {
  BlockLoadPlanBuilder b(4);
  b.append_zero_fill(10);  // 4 + 4 + 2
  EXPECT_EQ(b.segments(), (Segs{{-1, 0, 4, 0}, {-1, 0, 4, 4}, {-1, 0, 2, 8}}));
  EXPECT_EQ(b.total_k(), 10);
}

TEST(BlockLoadPlanBuilder, PagedRangeCutsAtEveryBlock) {
  BlockLoadPlanBuilder b(4);
  b.append_segment(5, 1, 3);  // 2 rows first: dst of the range starts at 2
  const std::vector<int32_t> table{7, 9, 2};
  b.append_paged_range(table, 3, 9);  // token 3 in block 7, 4..7 in 9, 8 in 2
  EXPECT_EQ(b.segments(), (Segs{{5, 1, 3, 0}, {7, 3, 4, 2}, {9, 0, 4, 3}, {2, 0, 1, 7}}));
  EXPECT_EQ(b.total_k(), 8);
}

TEST(BlockLoadPlanBuilder, RingRangeWrapsIntoTwoSegments) {
  BlockLoadPlanBuilder b(8);
  b.append_ring_range(3, 13, 19);  // 13%8 = 5: [5, 8) then [0, 3)
  EXPECT_EQ(b.segments(), (Segs{{3, 5, 8, 0}, {3, 0, 3, 3}}));
  BlockLoadPlanBuilder exact(8);
  exact.append_ring_range(1, 8, 16);  // a whole lap starting at offset 0: one segment
  EXPECT_EQ(exact.segments(), (Segs{{1, 0, 8, 0}}));
}

TEST(BlockLoadPlanBuilder, ErrorsLeaveTheBuilderUnchanged) {
  BlockLoadPlanBuilder b(4);
  b.append_zero_fill(3);
  const Segs before = b.segments();
  const std::vector<int32_t> table{7, -1};
  EXPECT_EQ(code_of([&] { b.append_paged_range(table, 0, 9); }), ErrorCode::kRangeOutOfTable);
  // Tokens 0..3 are fine but token 4 needs table[1] = -1: nothing of the range is kept.
  EXPECT_EQ(code_of([&] { b.append_paged_range(table, 0, 6); }), ErrorCode::kRangeOutOfTable);
  EXPECT_EQ(code_of([&] { b.append_paged_range(table, 2, 1); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { b.append_paged_range(table, -1, 1); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { b.append_ring_range(0, 0, 5); }), ErrorCode::kRangeOutOfTable);
  EXPECT_EQ(code_of([&] { b.append_ring_range(-1, 0, 1); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { b.append_ring_range(0, -2, 1); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { b.append_zero_fill(-1); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { b.append_segment(0, 0, 5); }), ErrorCode::kSegmentRangeInvalid);
  EXPECT_EQ(code_of([&] { b.append_segment(0, 3, 2); }), ErrorCode::kSegmentRangeInvalid);
  EXPECT_EQ(code_of([&] { b.append_segment(-2, 0, 1); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(b.segments(), before);
  EXPECT_EQ(b.total_k(), 3);
  EXPECT_EQ(code_of([] { BlockLoadPlanBuilder(0); }), ErrorCode::kInvalidArgument);
}

TEST(BlockLoadPlanBuilder, TotalKPastInt32IsAnErrorAndChangesNothing) {
  BlockLoadPlanBuilder b(INT32_MAX);
  b.append_zero_fill(INT32_MAX);  // one piece of INT32_MAX rows
  EXPECT_EQ(code_of([&] { b.append_zero_fill(1); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(b.segments(), (Segs{{-1, 0, INT32_MAX, 0}}));
  EXPECT_EQ(b.total_k(), INT32_MAX);
}

// SPEC §5.6: seqlen_k 10000, block 64, ratio 4 -> n = 2500 compressed tokens in blocks
// of 64/4 = 16: 2500 = 156*16 + 4 -> 157 segments.
TEST(CompressedPlan, WorkedPrefillHas157Segments) {
  SeqMeta s;
  s.seqlen_k = 10000;
  s.seqlen_q = 1024;
  for (int32_t i = 0; i < 157; ++i) s.block_table.push_back((i * 37) % 157 + 3);  // shuffled
  const LoadPlan plan = build_compressed_plan({&s, 1}, 64, 4);
  ASSERT_EQ(plan.segments.size(), 157u);
  EXPECT_EQ(plan.total_k, 2500);
  for (int32_t i = 0; i < 156; ++i)
    EXPECT_EQ(plan.segments[i], (LoadSegment{(i * 37) % 157 + 3, 0, 16, 16 * i}));
  EXPECT_EQ(plan.segments[156], (LoadSegment{(156 * 37) % 157 + 3, 0, 4, 2496}));
  EXPECT_EQ(plan.row_starts, (std::vector<int32_t>{0, 2500}));
}

TEST(CompressedPlan, SeqlenKBelowRatioGivesOneZeroRow) {
  std::vector<SeqMeta> seqs(3);
  seqs[0].seqlen_k = 3;  // 3/4 = 0 -> one zero row
  seqs[1].seqlen_k = 9;  // 9/4 = 2 tokens in block 5 (2 tokens per block)
  seqs[1].block_table = {5};
  seqs[2].seqlen_k = 0;
  const LoadPlan plan = build_compressed_plan(seqs, 8, 4);
  EXPECT_EQ(plan.segments, (Segs{{-1, 0, 1, 0}, {5, 0, 2, 1}, {-1, 0, 1, 3}}));
  EXPECT_EQ(plan.row_starts, (std::vector<int32_t>{0, 1, 3, 4}));
}

TEST(CompressedPlan, Errors) {
  SeqMeta s;
  s.seqlen_k = 40;  // 10 compressed tokens, 2 per block: needs 5 blocks
  s.block_table = {1, 2, 3, 4};
  EXPECT_EQ(code_of([&] { build_compressed_plan({&s, 1}, 8, 4); }), ErrorCode::kRangeOutOfTable);
  EXPECT_EQ(code_of([&] { build_compressed_plan({&s, 1}, 6, 4); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { build_compressed_plan({&s, 1}, 8, 0); }), ErrorCode::kInvalidArgument);
}

// SPEC §5.6: history [4880, 8976) on a ring of 4096: 4880%4096 = 784 -> [784, 4096)
// (3312 rows) then [0, 784).
TEST(SwaPlan, WorkedPrefillWrapsTheRing) {
  SeqMeta s;
  s.seqlen_k = 10000;
  s.seqlen_q = 1024;
  s.state_id = 2;
  const LoadPlan plan = build_swa_plan({&s, 1}, 4096, 4096);
  EXPECT_EQ(plan.segments, (Segs{{2, 784, 4096, 0}, {2, 0, 784, 3312}}));
  EXPECT_EQ(plan.total_k, 4096);
}

TEST(SwaPlan, HistoryShorterThanWindow) {
  SeqMeta s;
  s.seqlen_k = 5;  // history_end 3, history_begin 3-8 = -5: pad 5, ring [0, 3)
  s.seqlen_q = 2;
  s.state_id = 1;
  const LoadPlan plan = build_swa_plan({&s, 1}, 8, 8);
  EXPECT_EQ(plan.segments, (Segs{{-1, 0, 5, 0}, {1, 0, 3, 5}}));
  EXPECT_EQ(plan.total_k, 8);
}

TEST(SwaPlan, ValidStartPadsThenWrapsInThreeSegments) {
  std::vector<SeqMeta> seqs(2);
  // history [2, 10) on ring 8, valid from 4: pad 2, ring [4, 10) = [4, 8) + [0, 2).
  seqs[0].seqlen_k = 12;
  seqs[0].seqlen_q = 2;
  seqs[0].swa_valid_start = 4;
  // history [8, 16) valid from 11 on ring state 3: pad 3, ring [11, 16) = offsets [3, 8).
  seqs[1].seqlen_k = 16;
  seqs[1].swa_valid_start = 11;
  seqs[1].state_id = 3;
  const LoadPlan plan = build_swa_plan(seqs, 8, 8);
  EXPECT_EQ(plan.segments, (Segs{{-1, 0, 2, 0}, {0, 4, 8, 2}, {0, 0, 2, 6},
                                 {-1, 0, 3, 8}, {3, 3, 8, 11}}));
  EXPECT_EQ(plan.row_starts, (std::vector<int32_t>{0, 8, 16}));
}

TEST(SwaPlan, Errors) {
  SeqMeta s;
  s.seqlen_k = 4;
  s.seqlen_q = 2;
  EXPECT_EQ(code_of([&] { build_swa_plan({&s, 1}, 9, 8); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { build_swa_plan({&s, 1}, 0, 8); }), ErrorCode::kInvalidArgument);
  s.seqlen_q = 5;
  EXPECT_EQ(code_of([&] { build_swa_plan({&s, 1}, 4, 8); }), ErrorCode::kInvalidArgument);
  s.seqlen_q = 2;
  s.swa_valid_start = -1;
  EXPECT_EQ(code_of([&] { build_swa_plan({&s, 1}, 4, 8); }), ErrorCode::kInvalidArgument);
}

// Window 4: buffer rows [0, 4) hold positions -1..2 (history_end 3), the chunk's
// positions 3, 4, 5 are rows 4, 5, 6. Row j sees [p-3, p].
TEST(SwaPivots, ShortHistory) {
  SeqMeta s;
  s.seqlen_k = 6;
  s.seqlen_q = 3;
  EXPECT_EQ(build_swa_prefill_pivots({&s, 1}, 4, 4),
            (std::vector<int32_t>{1, 3, 4, 1,    // p=3: positions 0..2 (rows 1..3), row 4
                                  2, 2, 4, 2,    // p=4: positions 1..2, rows 4..5
                                  3, 1, 4, 3}));  // p=5: position 2, rows 4..6
}

// SPEC §5.6: row j at p = 8976 + j sees [p-4095, p]; history row of position x is
// x - 4880. j=0: off1 4881-4880 = 1, len1 4095, chunk row 4096 len 1.
// j=1023: first 5904 -> off1 1024, len1 8976-5904 = 3072; chunk 4096 len 1024.
TEST(SwaPivots, WorkedPrefill) {
  SeqMeta s;
  s.seqlen_k = 10000;
  s.seqlen_q = 1024;
  const auto p = build_swa_prefill_pivots({&s, 1}, 4096, 4096);
  ASSERT_EQ(p.size(), 4096u);
  EXPECT_EQ(std::vector<int32_t>(p.begin(), p.begin() + 4), (std::vector<int32_t>{1, 4095, 4096, 1}));
  EXPECT_EQ(std::vector<int32_t>(p.end() - 4, p.end()), (std::vector<int32_t>{1024, 3072, 4096, 1024}));
}

}  // namespace
}  // namespace kvcheck
