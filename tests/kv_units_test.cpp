// The K/V family's unit orders (impl/kv_units.h), which the CUDA kernels use: known
// answers worked by hand, and the invariants the e2m1 store's NeoX-pairs shuffle needs
// (tested here on the host: the CUDA tests see the orders only through a kernel's bytes).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "impl/kv_units.h"

namespace kvcheck {
namespace {

using Cu = std::tuple<int64_t, int, int, int>;  // (row, side, head, chunk)
Cu as_tuple(const ChunkUnit& c) { return {c.row, c.side, c.head, c.chunk}; }

TEST(KvUnits, QuotRemOnBothSidesOf32Bits) {
  EXPECT_EQ(quot_rem(7, 3).q, 2);
  EXPECT_EQ(quot_rem(7, 3).r, 1);
  EXPECT_EQ(quot_rem(0, 5).q, 0);
  EXPECT_EQ(quot_rem(0x7FFFFFFF, 2).q, 0x3FFFFFFF);  // the last u on the 32-bit path
  EXPECT_EQ(quot_rem(0x7FFFFFFF, 2).r, 1);
  EXPECT_EQ(quot_rem(0x80000000LL, 3).q, 715827882);  // 2^31 = 3 * 715827882 + 2
  EXPECT_EQ(quot_rem(0x80000000LL, 3).r, 2);
  EXPECT_EQ(quot_rem((int64_t{1} << 40) + 5, 1000).q, 1099511627);  // 1099511627781
  EXPECT_EQ(quot_rem((int64_t{1} << 40) + 5, 1000).r, 781);
}

// 3 heads: units 0-2 row 0's K heads, 3-5 its V heads, 6.. row 1.
TEST(KvUnits, UnitOfIsKeyHeadsThenValueHeads) {
  const auto t = [](int64_t u) {
    const Unit w = unit_of(u, 3);
    return std::tuple<int64_t, int, int>{w.row, w.side, w.head};
  };
  EXPECT_EQ(t(0), (std::tuple<int64_t, int, int>{0, 0, 0}));
  EXPECT_EQ(t(2), (std::tuple<int64_t, int, int>{0, 0, 2}));
  EXPECT_EQ(t(3), (std::tuple<int64_t, int, int>{0, 1, 0}));
  EXPECT_EQ(t(5), (std::tuple<int64_t, int, int>{0, 1, 2}));
  EXPECT_EQ(t(6), (std::tuple<int64_t, int, int>{1, 0, 0}));
  EXPECT_EQ(t(11), (std::tuple<int64_t, int, int>{1, 1, 2}));
}

// 2 heads of 3 chunks: u = ((row * 2 + side) * 2 + head) * 3 + chunk.
TEST(KvUnits, ChunkUnitOfIsChunkFastest) {
  EXPECT_EQ(as_tuple(chunk_unit_of(0, 2, 3)), (Cu{0, 0, 0, 0}));
  EXPECT_EQ(as_tuple(chunk_unit_of(5, 2, 3)), (Cu{0, 0, 1, 2}));
  EXPECT_EQ(as_tuple(chunk_unit_of(7, 2, 3)), (Cu{0, 1, 0, 1}));
  EXPECT_EQ(as_tuple(chunk_unit_of(13, 2, 3)), (Cu{1, 0, 0, 1}));
}

// 8 heads x 2 chunks: U = 16 units a side, tiles of t = 2 rows (64 units: rows' K
// units 0-31, their V units 32-63). By hand.
TEST(KvUnits, SidesOrderKnownAnswers) {
  EXPECT_EQ(as_tuple(chunk_unit_of_sides(0, 8, 2, 4)), (Cu{0, 0, 0, 0}));
  EXPECT_EQ(as_tuple(chunk_unit_of_sides(15, 8, 2, 4)), (Cu{0, 0, 7, 1}));
  EXPECT_EQ(as_tuple(chunk_unit_of_sides(16, 8, 2, 4)), (Cu{1, 0, 0, 0}));
  EXPECT_EQ(as_tuple(chunk_unit_of_sides(32, 8, 2, 4)), (Cu{0, 1, 0, 0}));
  EXPECT_EQ(as_tuple(chunk_unit_of_sides(35, 8, 2, 4)), (Cu{0, 1, 1, 1}));
  EXPECT_EQ(as_tuple(chunk_unit_of_sides(48, 8, 2, 4)), (Cu{1, 1, 0, 0}));
  EXPECT_EQ(as_tuple(chunk_unit_of_sides(63, 8, 2, 4)), (Cu{1, 1, 7, 1}));
  EXPECT_EQ(as_tuple(chunk_unit_of_sides(64, 8, 2, 4)), (Cu{2, 0, 0, 0}));
  // n = 3: the last tile is row 2 alone, K units 64-79 then V units 80-95.
  EXPECT_EQ(as_tuple(chunk_unit_of_sides(64, 8, 2, 3)), (Cu{2, 0, 0, 0}));
  EXPECT_EQ(as_tuple(chunk_unit_of_sides(79, 8, 2, 3)), (Cu{2, 0, 7, 1}));
  EXPECT_EQ(as_tuple(chunk_unit_of_sides(80, 8, 2, 3)), (Cu{2, 1, 0, 0}));
  EXPECT_EQ(as_tuple(chunk_unit_of_sides(95, 8, 2, 3)), (Cu{2, 1, 7, 1}));
  // 1 head x 4 chunks: t = 8 rows a tile; unit 40 is row 2's V chunk 0 (32 + 2 * 4).
  EXPECT_EQ(as_tuple(chunk_unit_of_sides(40, 1, 4, 8)), (Cu{2, 1, 0, 0}));
  // ... and with n = 5 (one partial tile): V units start at 5 * 4 = 20.
  EXPECT_EQ(as_tuple(chunk_unit_of_sides(19, 1, 4, 5)), (Cu{4, 0, 0, 3}));
  EXPECT_EQ(as_tuple(chunk_unit_of_sides(20, 1, 4, 5)), (Cu{0, 1, 0, 0}));
}

// Where U does not divide 32 (40 heads x 2, 3 x 2) or is 32 or more, a tile is one row:
// chunk_unit_of's order exactly.
TEST(KvUnits, SidesOrderIsChunkUnitOfWhereUDoesNotDivide32) {
  for (const auto& [heads, chunks] : {std::pair{40, 2}, std::pair{3, 2}, std::pair{16, 2}, std::pair{32, 4}})
    for (int64_t u = 0; u < 2 * 5 * heads * chunks; ++u)
      ASSERT_EQ(as_tuple(chunk_unit_of_sides(u, heads, chunks, 5)), as_tuple(chunk_unit_of(u, heads, chunks)))
          << heads << "x" << chunks << " u " << u;
}

// Over every unit of n rows: each (row, side, head, chunk) exactly once; a warp inside a
// whole tile is one side; and the NeoX-pairs partner lane (u ^ chunks / 2, warps at
// multiples of 32) holds the same row, side and head at chunk ^ chunks / 2, in the last
// partial tile too.
TEST(KvUnits, SidesOrderIsABijectionWithOneSideWarpsAndPartnerLanes) {
  for (const int32_t heads : {1, 2, 3, 4, 8, 16, 40})
    for (const int32_t chunks : {2, 4, 8, 16, 32})
      for (const int64_t n : {1, 2, 3, 5, 7, 8, 9, 33}) {
        const int32_t per_side = heads * chunks;
        const int64_t units = 2 * n * per_side;
        const int64_t t = 32 % per_side == 0 ? 32 / per_side : 1;
        std::set<Cu> seen;
        for (int64_t u = 0; u < units; ++u) {
          const ChunkUnit c = chunk_unit_of_sides(u, heads, chunks, n);
          ASSERT_TRUE(c.row >= 0 && c.row < n && c.head >= 0 && c.head < heads && c.chunk >= 0 && c.chunk < chunks)
              << heads << "x" << chunks << " n " << n << " u " << u;
          ASSERT_TRUE(seen.insert(as_tuple(c)).second) << "u " << u << " twice";
          const ChunkUnit p = chunk_unit_of_sides(u ^ (chunks / 2), heads, chunks, n);
          ASSERT_EQ(as_tuple(p), (Cu{c.row, c.side, c.head, c.chunk ^ (chunks / 2)}))
              << heads << "x" << chunks << " n " << n << " u " << u;
          if (t > 1 && u / (2 * t * per_side) < n / t) {  // a whole tile: the warp's first unit's side
            ASSERT_EQ(c.side, chunk_unit_of_sides(u - u % 32, heads, chunks, n).side) << "u " << u;
          }
        }
        EXPECT_EQ(static_cast<int64_t>(seen.size()), units);
      }
}

// Past 2^31 units quot_rem takes its 64-bit path: spot checks against the same order in
// plain int64 arithmetic, at n = 2^31 + 7 rows (2 heads x 4 chunks: tiles of 4 rows).
TEST(KvUnits, SidesOrderPast32BitUnits) {
  const int64_t n = (int64_t{1} << 31) + 7;
  const int64_t per_side = 8, t = 4, tile = 2 * t * per_side;
  for (const int64_t u : {int64_t{0x7FFFFFFF}, int64_t{0x80000000}, int64_t{0x80000000} + 45,
                          (int64_t{1} << 34) + 3, 2 * n * per_side - 1, 2 * n * per_side - 40}) {
    const int64_t first = u / tile * t, rows = std::min(t, n - first), r0 = u % tile;
    const int side = r0 >= rows * per_side ? 1 : 0;
    const int64_t r = r0 - side * rows * per_side;
    EXPECT_EQ(as_tuple(chunk_unit_of_sides(u, 2, 4, n)),
              (Cu{first + r / per_side, side, static_cast<int>(r % per_side / 4), static_cast<int>(r % 4)}))
        << "u " << u;
  }
}

}  // namespace
}  // namespace kvcheck
