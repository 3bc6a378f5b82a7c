// Known answers of seed 004's prepare_prefill / prepare_decode (SPEC §7.6), by hand.
#include <gtest/gtest.h>

#include "impl/kv_slot_mapping.h"
#include "tests/test_util.h"

namespace kvcheck {
namespace {

using V = std::vector<int32_t>;

// Exercise A: bs 4, table [7, 9], nothing cached, 6 tokens: block 7 holds tokens 0..3
// (slots 28..31), block 9 tokens 4, 5 (slots 36, 37).
TEST(KvSlotMapping, Seed004ExerciseA) {
  const V table{7, 9};
  const PagedSeq seq{table, 0, 6};
  const PrefillMetadata m = prepare_prefill({&seq, 1}, 4);
  EXPECT_EQ(m.slot_mapping, (V{28, 29, 30, 31, 36, 37}));
  EXPECT_EQ(m.cu_seqlens_q, (V{0, 6}));
  EXPECT_EQ(m.cu_seqlens_k, (V{0, 6}));
  EXPECT_EQ(m.block_tables, (V{7, 9}));
  EXPECT_FALSE(m.prefix_cache_hit);
}

// Second chunk of chunked prefill: 4 cached, start = 4, start_block = 1, 4 % 4 = 0.
TEST(KvSlotMapping, Seed004SecondChunk) {
  const V table{7, 9};
  const PagedSeq seq{table, 4, 6};
  const PrefillMetadata m = prepare_prefill({&seq, 1}, 4);
  EXPECT_EQ(m.slot_mapping, (V{36, 37}));
  EXPECT_EQ(m.cu_seqlens_q, (V{0, 2}));
  EXPECT_EQ(m.cu_seqlens_k, (V{0, 6}));
  EXPECT_TRUE(m.prefix_cache_hit);
}

// Decode: block_table[-1]*bs + last_block_num_tokens - 1.
TEST(KvSlotMapping, DecodeLastToken) {
  const V table{7, 9};
  const auto slot = [&](int32_t n) {
    const PagedSeq s{table, 0, n};
    return prepare_decode({&s, 1}, 4).slot_mapping.at(0);
  };
  EXPECT_EQ(slot(6), 37);  // 9*4 + 2 - 1
  EXPECT_EQ(slot(5), 36);  // 9*4 + 1 - 1
  EXPECT_EQ(slot(8), 39);  // last block exactly full: 9*4 + 4 - 1
  EXPECT_EQ(slot(4), 31);  // block 7 exactly full, block 9 not needed yet: 7*4 + 4 - 1
  EXPECT_EQ(slot(1), 28);
}

// Batch of two with a prefix-cache hit on the second, tables of different lengths.
// seq 0: bs 4, table [3], tokens 0..2 -> 12, 13, 14. seq 1: table [5, 1, 8], 6 cached,
// tokens 6..9 -> 1*4+2 = 6, 7, then 8*4+0 = 32, 33.
TEST(KvSlotMapping, PrefillBatchPadsTablesWithMinusOne) {
  const V t0{3}, t1{5, 1, 8};
  const std::vector<PagedSeq> seqs{{t0, 0, 3}, {t1, 6, 10}};
  const PrefillMetadata m = prepare_prefill(seqs, 4);
  EXPECT_EQ(m.slot_mapping, (V{12, 13, 14, 6, 7, 32, 33}));
  EXPECT_EQ(m.cu_seqlens_q, (V{0, 3, 7}));
  EXPECT_EQ(m.cu_seqlens_k, (V{0, 3, 13}));
  EXPECT_EQ(m.max_blocks, 3);
  EXPECT_EQ(m.block_tables, (V{3, -1, -1, 5, 1, 8}));
  EXPECT_TRUE(m.prefix_cache_hit);
}

// CUDA-graph padding: 2 sequences padded to a graph of 4 rows.
TEST(KvSlotMapping, DecodeGraphPadding) {
  const V t0{7, 9}, t1{2};
  const std::vector<PagedSeq> seqs{{t0, 0, 6}, {t1, 0, 3}};
  const DecodeMetadata m = prepare_decode(seqs, 4, 4);
  EXPECT_EQ(m.slot_mapping, (V{37, 10, -1, -1}));  // 2*4 + 3 - 1 = 10
  EXPECT_EQ(m.context_lens, (V{6, 3, 0, 0}));
  EXPECT_EQ(m.block_tables, (V{7, 9, 2, -1, -1, -1, -1, -1}));
  expect_error([&] { prepare_decode(seqs, 4, 1); }, ErrorCode::kInvalidArgument,
               {"graph_batch_size 1", "2 sequences"});
}

TEST(KvSlotMapping, BlockSizeRuleNamesTheRule) {
  const V table{7, 9};
  const PagedSeq seq{table, 0, 6};
  const BlockSizeRule fa{256, "flash-attn"};
  expect_error([&] { prepare_prefill({&seq, 1}, 16, fa); }, ErrorCode::kInvalidArgument,
               {"block_size 16 breaks flash-attn's rule: block_size must be a multiple of 256"});
  expect_error([&] { prepare_decode({&seq, 1}, 4, 0, fa); }, ErrorCode::kInvalidArgument,
               {"multiple of 256"});
  const V big{0};
  const PagedSeq ok{big, 0, 300};
  EXPECT_EQ(prepare_prefill({&ok, 1}, 512, fa).slot_mapping.size(), 300u);
  expect_error([&] { check_block_size_rule(16, {0, "x"}); }, ErrorCode::kInvalidArgument, {"x's"});
}

TEST(KvSlotMapping, Errors) {
  const V table{7, -1};
  const PagedSeq hole{table, 3, 5};  // token 4 needs table[1] = -1
  expect_error([&] { prepare_prefill({&hole, 1}, 4); }, ErrorCode::kRangeOutOfTable, {"block_table[1] = -1"});
  const PagedSeq empty{table, 0, 0};
  expect_error([&] { prepare_decode({&empty, 1}, 4); }, ErrorCode::kInvalidArgument, {"num_tokens >= 1"});
  const PagedSeq backwards{table, 3, 2};
  expect_error([&] { prepare_prefill({&backwards, 1}, 4); }, ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace kvcheck
