// The whole-buffer invariant helpers of the K/V checks (properties/ops/kv/kv_harness.h):
// ranges merged, and the first changed byte outside them, with answers worked by hand.
#include <gtest/gtest.h>

#include <vector>

#include "properties/ops/kv/kv_harness.h"

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

// KvBuffers and KvOutBuffers copies (what the checks make instead of filling the pattern
// again): the same bytes in buffers of their own, views pointing into them.
TEST(KvHarness, BufferCopiesHoldTheSameBytes) {
  KvCacheShape shape;
  shape.num_blocks = 3;
  shape.block_size = 4;
  shape.num_kv_heads = 2;
  shape.head_dim = 8;
  shape.fill_seed = 1234;
  const KvBuffers a(shape);
  KvBuffers b(a);
  EXPECT_TRUE(b.bytes == a.bytes);
  EXPECT_TRUE(b.bytes == KvBuffers(shape).bytes);  // = a fresh fill
  EXPECT_NE(b.bytes.data(), a.bytes.data());
  EXPECT_EQ(b.view().k, b.body() + b.k_offset);
  EXPECT_TRUE(b.guards_intact());
  b.body()[0] ^= 1;
  EXPECT_FALSE(b.bytes == a.bytes);

  GatherKvScenario g;
  g.cache = shape;
  g.cu_seqlens_k = {0, 5};
  g.out_rows = 6;
  g.out_pad_token = 3;
  g.out_offset = 3;
  g.out_seed = 99;
  const KvOutBuffers o(g);
  KvOutBuffers p(o);
  EXPECT_TRUE(p.k == o.k && p.v == o.v);
  EXPECT_TRUE(p.k == KvOutBuffers(g).k);
  EXPECT_EQ(p.out_k.data, p.k.data() + p.offset_bytes);
  EXPECT_EQ(p.out_v.data, p.v.data() + p.offset_bytes);
  EXPECT_EQ(p.offset_bytes, 6);
  EXPECT_EQ(p.out_k.token_stride, o.out_k.token_stride);
}

}  // namespace
}  // namespace kvcheck::props
