// FlashInfer page metadata (SPEC §7.8, impl/kv_page_table.h) by known answers worked
// by hand (FlashInfer's own examples) and every refusal (label: unit).
#include <gtest/gtest.h>

#include <climits>
#include <vector>

#include "impl/kv_page_table.h"
#include "tests/test_util.h"

namespace kvcheck {
namespace {

using V = std::vector<int32_t>;

// FlashInfer's tests/attention/test_page.py batch: kv_len [45, 8, 25, 22], page 16 ->
// 3, 1, 2, 2 pages with last_page_len [13, 8, 9, 6] (45 - 32, 8, 25 - 16, 22 - 16).
TEST(KvPageTable, FromSeqsIsFlashInfersTable) {
  const V t0{7, 3, 9}, t1{4, -1}, t2{0, 8, -1}, t3{2, 5};
  const std::vector<PagedSeq> seqs{{t0, 40, 45}, {t1, 0, 8}, {t2, 25, 25}, {t3, 21, 22}};
  const PageTable pt = page_table_from_seqs(seqs, 16);
  EXPECT_EQ(pt.indptr, (V{0, 3, 4, 6, 8}));
  EXPECT_EQ(pt.indices, (V{7, 3, 9, 4, 0, 8, 2, 5}));
  EXPECT_EQ(pt.last_page_len, (V{13, 8, 9, 6}));
  // An empty sequence has no page and last_page_len 0; a full last page is page_size.
  const V t{6};
  const std::vector<PagedSeq> edge{{{}, 0, 0}, {t, 0, 16}};
  const PageTable e = page_table_from_seqs(edge, 16);
  EXPECT_EQ(e.indptr, (V{0, 0, 1}));
  EXPECT_EQ(e.last_page_len, (V{0, 16}));
}

// get_batch_indices_positions' documented example: append_indptr [0, 1, 3, 6, 10],
// seq_lens [5, 5, 5, 5] -> the rightmost positions of each row.
TEST(KvPageTable, BatchIndicesPositionsIsFlashInfersExample) {
  const AppendPositions a = batch_indices_positions(V{0, 1, 3, 6, 10}, V{5, 5, 5, 5});
  EXPECT_EQ(a.batch_indices, (V{0, 1, 1, 2, 2, 2, 3, 3, 3, 3}));
  EXPECT_EQ(a.positions, (V{4, 3, 4, 2, 3, 4, 1, 2, 3, 4}));
}

// The slots of the first batch's new tokens: seq 0 positions 40-44 are on its third page
// (9) entries 8-12 -> 9*16 + 8 .. 12 = 152..156; seq 1 positions 0-7 on page 4 -> 64..71;
// seq 3 position 21 on page 5 entry 5 -> 85.
TEST(KvPageTable, SlotsOfTheAppendedTokens) {
  const V t0{7, 3, 9}, t1{4, -1}, t2{0, 8, -1}, t3{2, 5};
  const std::vector<PagedSeq> seqs{{t0, 40, 45}, {t1, 0, 8}, {t2, 25, 25}, {t3, 21, 22}};
  const PageTable pt = page_table_from_seqs(seqs, 16);
  const AppendPositions a = batch_indices_positions(V{0, 5, 13, 13, 14}, V{45, 8, 25, 22});
  const V slots = page_table_slot_mapping(pt, a.batch_indices, a.positions, 16, 10);
  EXPECT_EQ(slots, (V{152, 153, 154, 155, 156, 64, 65, 66, 67, 68, 69, 70, 71, 85}));
  EXPECT_EQ(slots, paged_prefill_slot_mapping(seqs, 16));  // the block tables' slots
}

TEST(KvPageTable, Refusals) {
  const PageTable ok{V{0, 2, 3}, V{1, 2, 3}, V{4, 1}};  // page 4: lengths 4 + 4 = 8 and 1
  const V bi{0, 1}, pos{7, 0};
  EXPECT_EQ(page_table_slot_mapping(ok, bi, pos, 4, 4), (V{2 * 4 + 3, 12}));
  struct Case {
    const char* what;
    PageTable t;
    V bi, pos;
    int32_t page_size;
    int64_t num_blocks;
    ErrorCode code;
    const char* needle;
  };
  const Case cases[] = {
      {"page_size 0", ok, bi, pos, 0, 4, ErrorCode::kInvalidArgument, "page_size must be >= 1"},
      {"indptr empty", {V{}, V{}, V{}}, {}, {}, 4, 4, ErrorCode::kShapeMismatch, "indptr is empty"},
      {"indptr[0]", {V{1, 2, 3}, V{1, 2, 3}, V{4, 1}}, bi, pos, 4, 4, ErrorCode::kInvalidArgument, "indptr[0] = 1"},
      {"indptr decreases", {V{0, 3, 2}, V{1, 2}, V{4, 1}}, bi, pos, 4, 4, ErrorCode::kInvalidArgument,
       "indptr[2] = 2 < indptr[1] = 3"},
      {"indices short", {V{0, 2, 4}, V{1, 2, 3}, V{4, 1}}, bi, pos, 4, 4, ErrorCode::kShapeMismatch,
       "indptr[2] = 4 but indices has 3 entries"},
      {"last_page_len short", {V{0, 2, 3}, V{1, 2, 3}, V{4}}, bi, pos, 4, 4, ErrorCode::kShapeMismatch,
       "last_page_len has 1 entries"},
      {"last_page_len 0 with pages", {V{0, 2, 3}, V{1, 2, 3}, V{0, 1}}, bi, pos, 4, 4, ErrorCode::kInvalidArgument,
       "last_page_len[0] = 0 is not in [1, page_size = 4]"},
      {"last_page_len past the page", {V{0, 2, 3}, V{1, 2, 3}, V{4, 5}}, bi, pos, 4, 4, ErrorCode::kInvalidArgument,
       "last_page_len[1] = 5"},
      {"last_page_len without a page", {V{0, 0, 3}, V{1, 2, 3}, V{1, 1}}, bi, pos, 4, 4, ErrorCode::kInvalidArgument,
       "last_page_len[0] = 1 is not in {0} (no page)"},
      {"sizes differ", ok, V{0}, pos, 4, 4, ErrorCode::kShapeMismatch, "batch_indices has 1 entries, positions 2"},
      {"batch index", ok, V{0, 2}, pos, 4, 4, ErrorCode::kInvalidArgument, "batch_indices[1] = 2"},
      {"position past the sequence", ok, bi, V{8, 0}, 4, 4, ErrorCode::kRangeOutOfTable,
       "positions[0] = 8): sequence 0 holds 8 tokens"},
      {"position past the last page's length", ok, bi, V{7, 1}, 4, 4, ErrorCode::kRangeOutOfTable,
       "sequence 1 holds 1 tokens"},
      {"negative position", ok, bi, V{-1, 0}, 4, 4, ErrorCode::kRangeOutOfTable, "positions[0] = -1"},
      {"page past num_blocks", ok, bi, pos, 4, 3, ErrorCode::kBlockOutOfRange, "indices[2] = 3 is not in [0, num_blocks = 3)"},
      {"slot past int32", {V{0, 1}, V{INT32_MAX / 2}, V{4}}, V{0}, V{3}, 4, INT64_MAX, ErrorCode::kInvalidArgument,
       "overflows int32"},
  };
  for (const Case& c : cases)
    expect_error([&] { page_table_slot_mapping(c.t, c.bi, c.pos, c.page_size, c.num_blocks); }, c.code, {c.needle});
  // The builders' refusals.
  const V t{3};
  expect_error([&] { page_table_from_seqs(std::vector<PagedSeq>{{t, 0, 5}}, 4); }, ErrorCode::kRangeOutOfTable,
               {"needs block_table[1]"});
  expect_error([&] { page_table_from_seqs(std::vector<PagedSeq>{{t, 2, 1}}, 4); }, ErrorCode::kInvalidArgument,
               {"num_cached <= num_tokens"});
  expect_error([&] { page_table_from_seqs(std::vector<PagedSeq>{{t, 0, 1}}, 0); }, ErrorCode::kInvalidArgument,
               {"block_size must be >= 1"});
  expect_error([&] { batch_indices_positions(V{0, 1}, V{1, 1}); }, ErrorCode::kShapeMismatch, {"append_indptr has 2"});
  expect_error([&] { batch_indices_positions(V{1, 1}, V{1}); }, ErrorCode::kInvalidArgument, {"append_indptr[0] = 1"});
  expect_error([&] { batch_indices_positions(V{0, 2, 1}, V{2, 2}); }, ErrorCode::kInvalidArgument,
               {"append_indptr[2] = 1 < append_indptr[1]"});
  expect_error([&] { batch_indices_positions(V{0, 3}, V{2}); }, ErrorCode::kInvalidArgument,
               {"sequence 0 appends 3 tokens but seq_lens[0] = 2"});
}

}  // namespace
}  // namespace kvcheck
