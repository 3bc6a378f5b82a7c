// swap_blocks (docs/spec.md §8.3): the spec's known answers, worked out by hand, on the
// reference and on every backend in every direction (a device backend takes a pool
// flagged host in page-locked host memory); and the validator's closed-form dst rule
// against the reference's byte-by-byte one over every small geometry.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "impl/validate_swap_blocks.h"
#include "reference/swap_blocks.h"
#include "tests/test_util.h"

namespace kvcheck {
namespace {

using Bytes = std::vector<uint8_t>;
using Ints = std::vector<int64_t>;
using SwapRun = std::function<void(const SwapBlocksArgs&)>;

constexpr uint8_t kDst = 0xee;  // dst's bytes before the call

Bytes iota_bytes(size_t n) {
  Bytes b(n);
  std::iota(b.begin(), b.end(), uint8_t{0});
  return b;
}

struct Call {
  BlockPool src, dst;  // src holds 00 01 02 ..., dst kDst
  Ints views, block_mapping;
};

/// The directions every known answer runs in: (src.host, dst.host).
constexpr std::pair<bool, bool> kDirections[] = {{false, false}, {true, false}, {false, true}, {true, true}};

/// Runs `c` in every direction on fresh pools (src 00 01 ..., dst kDst); `check` gets
/// the direction and both pools after `call` (which runs it and reports how).
void each_direction(const Call& c, const std::function<void(const SwapBlocksArgs&)>& call,
                    const std::function<void(std::pair<bool, bool>, const Bytes&, const Bytes&)>& check) {
  for (const auto& where : kDirections) {
    const Bytes src = iota_bytes(static_cast<size_t>(c.src.size_bytes));
    Bytes dst(static_cast<size_t>(c.dst.size_bytes), kDst);
    SwapBlocksArgs a;
    a.src = src.data();
    a.src_pool = c.src;
    a.src_pool.host = where.first;
    a.dst = dst.data();
    a.dst_pool = c.dst;
    a.dst_pool.host = where.second;
    a.views = c.views;
    a.block_mapping = c.block_mapping;
    call(a);
    check(where, src, dst);
  }
}

/// dst after `run`, the same in every direction; src must come back unchanged.
Bytes after(const SwapRun& run, const Call& c) {
  Bytes first;
  each_direction(c, run, [&](std::pair<bool, bool> where, const Bytes& src, const Bytes& dst) {
    EXPECT_EQ(src, iota_bytes(src.size())) << "src changed";
    if (first.empty()) first = dst;
    EXPECT_EQ(dst, first) << "src.host " << where.first << " dst.host " << where.second;
  });
  return first;
}

/// Expects the error and no byte changed, in every direction.
void expect_refused(const SwapRun& run, const Call& c, ErrorCode code, const std::vector<std::string>& needles) {
  each_direction(
      c, [&](const SwapBlocksArgs& a) { expect_error([&] { run(a); }, code, needles); },
      [&](std::pair<bool, bool>, const Bytes& src, const Bytes& dst) {
        EXPECT_EQ(src, iota_bytes(src.size())) << "a refused call wrote src";
        EXPECT_EQ(dst, Bytes(dst.size(), kDst)) << "a refused call wrote dst";
      });
}

// docs/spec.md §8.3's known answers.
void known_answers(const SwapRun& run) {
  const BlockPool src4{8, 4, 2, false}, dst3{6, 3, 2, false};  // 4 src blocks of 2 bytes, 3 dst blocks
  const uint8_t e = kDst;
  // One view: src block 3 -> dst block 0, a padding pair (its 9 never read), 0 -> 2.
  EXPECT_EQ(after(run, {src4, dst3, {0, 0, 2}, {3, 0, -1, 9, 0, 2}}), (Bytes{6, 7, e, e, 0, 1}));
  // Sources repeat: one block to two.
  EXPECT_EQ(after(run, {src4, dst3, {0, 0, 2}, {2, 0, 2, 1}}), (Bytes{4, 5, 4, 5, e, e}));
  // A layer's K and V interleaved in src (page-first), separate in dst (layer-first):
  // src blocks K|V at 0, 4; dst K blocks at 0, 2, 4 and V blocks at 6, 8, 10.
  EXPECT_EQ(after(run, {{8, 2, 4, false}, {12, 3, 2, false}, {0, 0, 2, 2, 6, 2}, {1, 2, 0, 0}}),
            (Bytes{0, 1, e, e, 4, 5, 2, 3, e, e, 6, 7}));
  // Views sharing dst bytes in one block, from the same src bytes: both copies agree.
  EXPECT_EQ(after(run, {{8, 2, 4, false}, {8, 2, 4, false}, {0, 0, 3, 1, 1, 3}, {1, 0}}),
            (Bytes{4, 5, 6, 7, e, e, e, e}));
  // Nothing but padding, or no views (the mapping is then not read): nothing changes.
  EXPECT_EQ(after(run, {src4, dst3, {0, 0, 2}, {-1, 99, 7, -1}}), Bytes(6, e));
  EXPECT_EQ(after(run, {src4, dst3, Ints{}, {5, 5, -7, 0}}), Bytes(6, e));
  // A pool without blocks checks no extent, so its offsets may be anything >= 0: valid,
  // nothing copied, and nothing may sum those offsets (UBSan sees it in the ASan tree).
  const int64_t big = INT64_MAX;
  EXPECT_EQ(after(run, {src4, {6, 0, 2, false}, {0, big, 2, 0, big - 1, 2}, {-1, 5}}), Bytes(6, e));
  EXPECT_EQ(after(run, {{8, 0, 2, false}, dst3, {big, 0, 2, big, 0, 2}, {}}), Bytes(6, e));

  expect_refused(run, {src4, dst3, {0, 0, 2}, {4, 0}}, ErrorCode::kBlockOutOfRange,
                 {"block_mapping[0][0] = 4", "src.num_blocks = 4"});
  expect_refused(run, {src4, dst3, {0, 0, 2}, {0, 3}}, ErrorCode::kBlockOutOfRange,
                 {"block_mapping[0][1] = 3", "dst.num_blocks = 3"});
  expect_refused(run, {src4, dst3, {0, 0, 2}, {0, 1, 1, 1}}, ErrorCode::kBlockConflict,
                 {"block_mapping[1][1] = 1", "destination of block_mapping[0]"});
  // The smallest failing position wins: pair 0's dst before pair 1's src.
  expect_refused(run, {src4, dst3, {0, 0, 2}, {0, 5, 9, 0}}, ErrorCode::kBlockOutOfRange, {"block_mapping[0][1] = 5"});
  // dst view 1's block 0 (bytes 1, 2) holds byte 2, view 0's block 1.
  expect_refused(run, {src4, {7, 3, 2, false}, {0, 0, 2, 0, 1, 2}, {}}, ErrorCode::kInvalidArgument,
                 {"views[1] = [0, 1, 2]", "views[0] = [0, 0, 2]", "different blocks"});
  expect_refused(run, {{8, 2, 4, false}, dst3, {0, 0, 2, 1, 0, 2}, {0, 0}}, ErrorCode::kInvalidArgument,
                 {"views[1] = [1, 0, 2]", "views[0] = [0, 0, 2]", "from different bytes of src"});
  expect_refused(run, {{7, 4, 2, false}, dst3, {0, 0, 2}, {0, 0}}, ErrorCode::kShapeMismatch,
                 {"views[0] = [0, 0, 2]", "past src's allocation of 7 bytes"});
  expect_refused(run, {src4, {5, 3, 2, false}, {0, 0, 2}, {0, 0}}, ErrorCode::kShapeMismatch, {"past dst's"});
  expect_refused(run, {src4, {6, 3, 1, false}, {0, 0, 2}, {0, 0}}, ErrorCode::kInvalidArgument,
                 {"block_bytes > dst.block_stride = 1"});
  expect_refused(run, {src4, dst3, {0, -1, 2}, {0, 0}}, ErrorCode::kInvalidArgument, {"dst_offset < 0"});
  expect_refused(run, {{8, 4, 0, false}, dst3, {0, 0, 2}, {0, 0}}, ErrorCode::kInvalidArgument,
                 {"src.block_stride = 0 < 1"});
  expect_refused(run, {src4, dst3, {0, 0, 2, 1}, {0, 0}}, ErrorCode::kInvalidArgument, {"views has 4 entries"});
  expect_refused(run, {src4, dst3, {0, 0, 2}, {0, 0, 1}}, ErrorCode::kInvalidArgument,
                 {"block_mapping has 3 entries"});
}

TEST(SwapBlocks, ReferenceKnownAnswers) { known_answers([](const SwapBlocksArgs& a) { ref::swap_blocks(a); }); }

/// dst 4 bytes into src's 8 (one allocation), then src 4 bytes into dst's 8: refused by
/// the rule, nothing written (copy_blocks moves the blocks of one allocation).
void overlapping_allocations_are_refused(const SwapRun& run) {
  Bytes buf = iota_bytes(16);
  const Ints views{0, 0, 2}, mapping{0, 0};
  SwapBlocksArgs a;
  a.src = buf.data();
  a.src_pool = {8, 4, 2, false};
  a.dst = buf.data() + 4;
  a.dst_pool = {6, 3, 2, false};
  a.views = views;
  a.block_mapping = mapping;
  expect_error([&] { run(a); }, ErrorCode::kInvalidArgument, {"dst starts 4 bytes into src"});
  a.dst = buf.data();
  a.src = buf.data() + 4;
  a.src_pool = {6, 3, 2, false};
  a.dst_pool = {8, 4, 2, false};
  expect_error([&] { run(a); }, ErrorCode::kInvalidArgument, {"src starts 4 bytes into dst"});
  EXPECT_EQ(buf, iota_bytes(16));
}

TEST(SwapBlocks, OverlappingAllocationsAreRefused) {
  overlapping_allocations_are_refused([](const SwapBlocksArgs& a) { ref::swap_blocks(a); });
  overlapping_allocations_are_refused([](const SwapBlocksArgs& a) { validate_swap_blocks(a); });
}

class SwapBlocksBackend : public testing::TestWithParam<std::shared_ptr<const Backend>> {};

TEST_P(SwapBlocksBackend, KnownAnswers) {
  known_answers([&](const SwapBlocksArgs& a) { GetParam()->swap_blocks(a); });
}

TEST_P(SwapBlocksBackend, OverlappingAllocationsAreRefused) {
  overlapping_allocations_are_refused([&](const SwapBlocksArgs& a) { GetParam()->swap_blocks(a); });
}

INSTANTIATE_TEST_SUITE_P(Backends, SwapBlocksBackend, testing::ValuesIn(available_backends()),
                         [](const auto& info) { return std::string(info.param->name()); });

// The validator decides the dst rules in closed form; the reference by owning every dst
// byte. Every geometry of two views with dst stride <= 5, dst offsets <= 9, src offsets
// in {0, 1}, up to 3 dst blocks: the same verdict and message, or both valid.
TEST(SwapBlocks, ClosedFormDstRulesMatchTheReference) {
  int compared = 0, refused = 0, shifted = 0;
  for (int64_t stride = 1; stride <= 5; ++stride)
    for (int64_t n = 1; n <= 3; ++n)
      for (int64_t d1 = 0; d1 <= 9; ++d1)
        for (int64_t d2 = 0; d2 <= 9; ++d2)
          for (int64_t s2 = 0; s2 <= 1; ++s2)
            for (int64_t b1 = 1; b1 <= stride; ++b1)
              for (int64_t b2 = 1; b2 <= stride; ++b2) {
                const Ints views{0, d1, b1, s2, d2, b2};
                const int64_t dst_size = std::max(d1 + b1, d2 + b2) + (n - 1) * stride;
                Bytes src(8), dst(static_cast<size_t>(dst_size));
                SwapBlocksArgs a;
                a.src = src.data();
                a.src_pool = {8, 1, 8, false};
                a.dst = dst.data();
                a.dst_pool = {dst_size, n, stride, false};
                a.views = views;
                std::string want, got;
                try {
                  ref::swap_blocks(a);
                } catch (const Error& e) {
                  want = e.what();
                }
                try {
                  validate_swap_blocks_shape(a);
                } catch (const Error& e) {
                  got = e.what();
                }
                ASSERT_EQ(got, want) << "views " << testing::PrintToString(views) << " stride " << stride
                                     << " blocks " << n;
                ++compared;
                refused += !want.empty();
                shifted += want.find("different bytes of src") != std::string::npos;
              }
  EXPECT_GT(refused, 100);
  EXPECT_GT(shifted, 100);
  EXPECT_GT(compared - refused, 100);
}

TEST(SwapBlocks, MergedViewsCoverEachDstByteOnce) {
  // K and V halves and a second format over both (one shift), a view elsewhere.
  const Ints views{8, 0, 4, 12, 4, 4, 8, 0, 8, 0, 32, 2, 1, 33, 2};
  const auto merged = merge_swap_views(views);
  ASSERT_EQ(merged.size(), 2u);
  EXPECT_EQ(merged[0], (std::array<int64_t, 3>{8, 0, 8}));
  EXPECT_EQ(merged[1], (std::array<int64_t, 3>{0, 32, 3}));
}

}  // namespace
}  // namespace kvcheck
