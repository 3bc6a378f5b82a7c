// Known answers for slot mappings (SPEC §5.4, §5.6), computed by hand in the comments.
#include <gtest/gtest.h>

#include <climits>

#include "impl/error.h"
#include "tests/test_util.h"
#include "impl/slot_mapping.h"

namespace kvcheck {
namespace {

using V = std::vector<int32_t>;


// SPEC §5.4: bs 4, table [7, 9]: tokens 0..3 -> 28..31, tokens 4, 5 -> 36, 37.
TEST(PagedSlotMapping, SpecKnownAnswer) {
  const V table{7, 9};
  const PagedSeq all{table, 0, 6};
  EXPECT_EQ(paged_prefill_slot_mapping({&all, 1}, 4), (V{28, 29, 30, 31, 36, 37}));
  const PagedSeq cached{table, 4, 6};  // prefix-cached tokens 0..3
  EXPECT_EQ(paged_prefill_slot_mapping({&cached, 1}, 4), (V{36, 37}));
  EXPECT_EQ(paged_decode_slot_mapping({&all, 1}, 4), (V{37}));
}

TEST(PagedSlotMapping, ChunkedBatchConcatenatesSequences) {
  const V t0{7, 9}, t1{2, 0, 5};
  // seq 0: chunk [2, 5) -> 30, 31, 36; seq 1 (bs 4, table [2, 0, 5]): chunk [7, 9)
  // -> token 7: 0*4 + 3 = 3, token 8: 5*4 + 0 = 20; seq 2 (same table): nothing new.
  const std::vector<PagedSeq> seqs{{t0, 2, 5}, {t1, 7, 9}, {t1, 3, 3}};
  EXPECT_EQ(paged_prefill_slot_mapping(seqs, 4), (V{30, 31, 36, 3, 20}));
  EXPECT_EQ(paged_decode_slot_mapping(std::vector<PagedSeq>{{t0, 0, 5}, {t1, 0, 9}}, 4),
            (V{36, 20}));
}

TEST(PagedSlotMapping, Errors) {
  const V table{7, -1};
  const PagedSeq past{table, 0, 9};
  EXPECT_EQ(code_of([&] { paged_prefill_slot_mapping({&past, 1}, 4); }), ErrorCode::kRangeOutOfTable);
  const PagedSeq hole{table, 3, 5};  // token 4 needs table[1] = -1
  EXPECT_EQ(code_of([&] { paged_prefill_slot_mapping({&hole, 1}, 4); }), ErrorCode::kRangeOutOfTable);
  const PagedSeq reversed{table, 3, 2};
  EXPECT_EQ(code_of([&] { paged_prefill_slot_mapping({&reversed, 1}, 4); }), ErrorCode::kInvalidArgument);
  const PagedSeq empty{table, 0, 0};
  EXPECT_EQ(code_of([&] { paged_decode_slot_mapping({&empty, 1}, 4); }), ErrorCode::kInvalidArgument);
  const V huge{INT32_MAX / 4};  // (INT32_MAX/4)*8 overflows int32
  EXPECT_EQ(code_of([&] { paged_slot(huge, 8, 0); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { paged_slot(table, 0, 0); }), ErrorCode::kInvalidArgument);
}

// SPEC §5.6: history_end 8976 = 2*4096 + 784, so chunk row j goes to ring position
// 784 + j: [784, 1808) for j < 1024.
TEST(SwaStoreSlots, WorkedPrefillStoresRingPositions784To1808) {
  V slots{-5};
  append_swa_store_slots(slots, 0, 4096, 10000, 1024);
  ASSERT_EQ(slots.size(), 1025u);
  EXPECT_EQ(slots[0], -5);  // appended after what was there
  for (int32_t j = 0; j < 1024; ++j) ASSERT_EQ(slots[j + 1], 784 + j) << j;
  V state2;
  append_swa_store_slots(state2, 2, 4096, 10000, 1024);
  EXPECT_EQ(state2.front(), 2 * 4096 + 784);
  EXPECT_EQ(state2.back(), 2 * 4096 + 1807);
}

// ring 4, chunk of 7 after 3 history tokens: rows 0..2 leave the window before the
// chunk ends (j < 7-4) -> -1; rows 3..6 are positions 6..9 -> 4 + (2, 3, 0, 1).
TEST(SwaStoreSlots, ChunkLongerThanRing) {
  V slots;
  append_swa_store_slots(slots, 1, 4, 10, 7);
  EXPECT_EQ(slots, (V{-1, -1, -1, 6, 7, 4, 5}));
}

TEST(SwaStoreSlots, ErrorsAppendNothing) {
  V slots{1};
  EXPECT_EQ(code_of([&] { append_swa_store_slots(slots, 0, 4, 3, 5); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { append_swa_store_slots(slots, -1, 4, 5, 3); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { append_swa_store_slots(slots, 0, 0, 5, 3); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { append_swa_store_slots(slots, INT32_MAX / 4, 8, 5, 3); }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(slots, (V{1}));
}

TEST(SwaDecodeWindow, KnownAnswers) {
  // state 1, ring 8, window 6, seqlen_k 20: p 19 sees [14, 19]; 14%8 = 6 -> slot 14.
  auto w = swa_decode_window(1, 8, 6, 20, 0);
  EXPECT_EQ(w.start_slot, 14);
  EXPECT_EQ(w.valid_len, 6);
  w = swa_decode_window(1, 8, 6, 3, 0);  // short history: [0, 2] -> slot 8, 3 tokens
  EXPECT_EQ(w.start_slot, 8);
  EXPECT_EQ(w.valid_len, 3);
  w = swa_decode_window(1, 8, 6, 20, 18);  // valid from 18: slot 8 + 2, 2 tokens
  EXPECT_EQ(w.start_slot, 10);
  EXPECT_EQ(w.valid_len, 2);
  EXPECT_EQ(code_of([] { swa_decode_window(0, 4, 6, 20, 0); }), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace kvcheck
