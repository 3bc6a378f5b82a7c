// The whole-buffer invariant helpers of the K/V checks (properties/kv_harness.h):
// ranges merged, and the first changed byte outside them, with answers worked by hand.
#include <gtest/gtest.h>

#include <vector>

#include "properties/kv_harness.h"

namespace kvcheck::props {
namespace {

TEST(KvHarness, RangesAreClampedSortedAndMerged) {
  const std::vector<ByteRange> m = merge_ranges({{8, 12}, {-4, 2}, {10, 16}, {30, 40}, {16, 18}, {5, 5}}, 32);
  ASSERT_EQ(m.size(), 4u);  // [0,2) [5,5) [8,18) [30,32)
  EXPECT_EQ(m[0].begin, 0);
  EXPECT_EQ(m[0].end, 2);
  EXPECT_EQ(m[1].begin, 5);
  EXPECT_EQ(m[1].end, 5);
  EXPECT_EQ(m[2].begin, 8);
  EXPECT_EQ(m[2].end, 18);  // [8,12) [10,16) [16,18): touching ranges merge
  EXPECT_EQ(m[3].begin, 30);
  EXPECT_EQ(m[3].end, 32);
}

TEST(KvHarness, FirstChangeOutsideTheRanges) {
  std::vector<uint8_t> before(32, 7), after = before, other = before;
  const std::vector<ByteRange> m = merge_ranges({{4, 8}, {12, 20}}, 32);
  after[5] = after[13] = 1;  // inside: allowed
  EXPECT_EQ(first_change_outside(m, 32, {{before.data(), after.data()}}), -1);
  after[20] = 1;  // the first byte past a range
  EXPECT_EQ(first_change_outside(m, 32, {{before.data(), after.data()}}), 20);
  after[3] = 1;  // the last byte before one
  EXPECT_EQ(first_change_outside(m, 32, {{before.data(), after.data()}}), 3);
  other[0] = 9;  // the smallest index over every pair
  EXPECT_EQ(first_change_outside(m, 32, {{before.data(), after.data()}, {before.data(), other.data()}}), 0);
  std::vector<uint8_t> tail = before;
  tail[31] = 0;  // the last byte of the buffer, after every range
  EXPECT_EQ(first_change_outside(m, 32, {{before.data(), tail.data()}}), 31);
  EXPECT_EQ(first_change_outside({}, 32, {{before.data(), tail.data()}}), 31);
}

}  // namespace
}  // namespace kvcheck::props
