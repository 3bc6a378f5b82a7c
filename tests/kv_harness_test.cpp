// The whole-buffer invariant helpers of the K/V checks (properties/ops/kv/kv_harness.h):
// ranges merged, and the first changed byte outside them, with answers worked by hand.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "properties/ops/kv/kv_harness.h"

namespace kvcheck::props {
namespace {

/// An unpadded bf16 NHD cache shape of this geometry, filled from `seed`.
KvCacheShape small_shape(int32_t blocks, int32_t block_size, int32_t heads, int32_t head_dim, uint64_t seed) {
  KvCacheShape s;
  s.num_blocks = blocks;
  s.block_size = block_size;
  s.num_kv_heads = heads;
  s.head_dim = head_dim;
  s.fill_seed = seed;
  return s;
}

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
  const KvCacheShape shape = small_shape(3, 4, 2, 8, 1234);
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

// A changed byte of a K/V cache is decoded as an element value only where it is one: a
// head's stride padding is shown as raw bytes (it read "fp16 0x.. = ..." of no element).
// fp16 cache, 1 block x 2 tokens x 1 head of 4 elements, head stride padded by 1
// element: K element (0, 0, 0, 3) is at byte 6, its padding at bytes 8-9.
TEST(KvHarness, DiffDecodesElementsButNotPadding) {
  KvCacheShape shape = small_shape(1, 2, 1, 4, 7);
  shape.dtype = KvDtype::kFP16;
  shape.pad_head = 1;
  const KvBuffers b(shape);
  ASSERT_EQ(b.layout.stride_head, 5);
  const std::string at6 = locate_kv_byte(b, b.k_offset + 6), at8 = locate_kv_byte(b, b.k_offset + 8);
  EXPECT_EQ(at6, "K block 0 token 0 (slot 0) head 0 element 3") << at6;
  EXPECT_NE(at8.find("not an element"), std::string::npos) << at8;
  std::vector<uint8_t> expected(b.bytes.span().begin(), b.bytes.span().end()), actual = expected;
  const size_t element = static_cast<size_t>(kGuardBytes + b.k_offset + 6), padding = element + 2;
  expected[element] = 0x00, expected[element + 1] = 0x3C;  // fp16 1.0
  actual[element] = 0x00, actual[element + 1] = 0x40;       // fp16 2.0
  const std::string e = diff_kv_buffers(b, expected, actual);
  EXPECT_NE(e.find("expected: fp16 0x3C00 = 1"), std::string::npos) << e;
  EXPECT_NE(e.find("actual:   fp16 0x4000 = 2"), std::string::npos) << e;
  actual = expected;
  expected[padding] = 0x11;
  actual[padding] = 0x22;
  const std::string p = diff_kv_buffers(b, expected, actual);
  EXPECT_NE(p.find("expected: 0x11\n  actual:   0x22"), std::string::npos) << p;
  EXPECT_EQ(p.find("fp16"), std::string::npos) << p;
}

}  // namespace
}  // namespace kvcheck::props
