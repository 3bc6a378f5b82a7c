// copy_blocks (SPEC §8.1): the spec's known answers, worked out by hand, on the
// reference and on every backend; and the validator's closed-form view rule against
// the reference's byte-by-byte one over every small geometry.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "impl/validate_copy_blocks.h"
#include "reference/copy_blocks.h"
#include "tests/test_util.h"

namespace kvcheck {
namespace {

using Bytes = std::vector<uint8_t>;
using Ints = std::vector<int64_t>;
using Run = std::function<void(const CopyBlocksArgs&)>;

Bytes iota_bytes(size_t n) {
  Bytes b(n);
  std::iota(b.begin(), b.end(), uint8_t{0});
  return b;
}

struct Call {
  int64_t size_bytes;
  Ints views;
  int64_t num_blocks, block_stride;
  Ints block_mapping;
};

/// The allocation after `run` on bytes 00 01 02 ...
Bytes after(const Run& run, const Call& c) {
  Bytes b = iota_bytes(static_cast<size_t>(c.size_bytes));
  run({b.data(), c.size_bytes, c.views, c.num_blocks, c.block_stride, c.block_mapping});
  return b;
}

/// Expects the error and no byte changed.
void expect_refused(const Run& run, const Call& c, ErrorCode code, const std::vector<std::string>& needles) {
  Bytes b = iota_bytes(static_cast<size_t>(c.size_bytes));
  expect_error([&] { run({b.data(), c.size_bytes, c.views, c.num_blocks, c.block_stride, c.block_mapping}); }, code,
               needles);
  EXPECT_EQ(b, iota_bytes(b.size())) << "a refused call wrote";
}

// SPEC §8.1's known answers.
void known_answers(const Run& run) {
  // A layer's K and V halves (K blocks at 0, 4; V at 8, 12): block 0 -> 1 in both.
  EXPECT_EQ(after(run, {16, {0, 4, 8, 4}, 2, 4, {0, 1}}),
            (Bytes{0, 1, 2, 3, 0, 1, 2, 3, 8, 9, 10, 11, 8, 9, 10, 11}));
  // A padding pair (its 5 never read), then block 1 -> 0.
  EXPECT_EQ(after(run, {16, {0, 4, 8, 4}, 2, 4, {-1, 5, 1, 0}}),
            (Bytes{4, 5, 6, 7, 4, 5, 6, 7, 12, 13, 14, 15, 12, 13, 14, 15}));
  // Views sharing bytes 2, 3 (and 10, 11) in the same block: both copies agree.
  EXPECT_EQ(after(run, {16, {0, 4, 2, 4}, 2, 8, {0, 1}}),
            (Bytes{0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 14, 15}));
  // The same pages read by a second format as one 8-byte record.
  EXPECT_EQ(after(run, {16, {0, 4, 4, 4, 0, 8}, 2, 8, {1, 0}}),
            (Bytes{8, 9, 10, 11, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15}));
  // Nothing but padding: nothing changes.
  EXPECT_EQ(after(run, {12, {0, 4}, 3, 4, {-1, 99, 7, -1}}), iota_bytes(12));
  // No views (vLLM returns before its kernel): the mapping is not read, even a bad one.
  EXPECT_EQ(after(run, {12, {}, 3, 4, {5, 5, -7, 0}}), iota_bytes(12));
  // No blocks: the views' offsets are checked against nothing, so they may be anything
  // >= 0; nothing is copied and nothing may sum them (UBSan, in the ASan tree).
  EXPECT_EQ(after(run, {12, {INT64_MAX, 4, INT64_MAX, 4}, 0, 4, {-1, 3}}), iota_bytes(12));

  expect_refused(run, {20, {0, 8, 4, 8}, 2, 8, {0, 1}}, ErrorCode::kInvalidArgument,
                 {"views[1] = [4, 8]", "different blocks"});
  expect_refused(run, {12, {0, 4}, 3, 4, {0, 1, 1, 2}}, ErrorCode::kBlockConflict,
                 {"block_mapping[0][1] = 1", "source of block_mapping[1]"});
  expect_refused(run, {12, {0, 4}, 3, 4, {0, 2, 1, 2}}, ErrorCode::kBlockConflict,
                 {"block_mapping[1][1] = 2", "destination of block_mapping[0]"});
  expect_refused(run, {12, {0, 4}, 3, 4, {2, 2}}, ErrorCode::kBlockConflict,
                 {"block_mapping[0][1] = 2", "source of block_mapping[0]"});
  expect_refused(run, {12, {0, 4}, 3, 4, {0, 3}}, ErrorCode::kBlockOutOfRange,
                 {"block_mapping[0][1] = 3", "num_blocks = 3"});
  expect_refused(run, {12, {0, 4}, 3, 4, {0, 1, -2, 0}}, ErrorCode::kBlockOutOfRange, {"block_mapping[1][0] = -2"});
  // The smallest failing position wins: pair 0's dst conflict before pair 1's range.
  expect_refused(run, {12, {0, 4}, 3, 4, {1, 1, 0, 9}}, ErrorCode::kBlockConflict, {"block_mapping[0][1] = 1"});
  // One byte past the allocation: the last block of view 0 ends at 13.
  expect_refused(run, {12, {1, 4}, 3, 4, {0, 1}}, ErrorCode::kShapeMismatch, {"views[0] = [1, 4]"});
  expect_refused(run, {12, {0, 5}, 3, 4, {0, 1}}, ErrorCode::kInvalidArgument, {"views[0] = [0, 5]"});
  expect_refused(run, {12, {-1, 4}, 3, 4, {0, 1}}, ErrorCode::kInvalidArgument, {"views[0] = [-1, 4]"});
  expect_refused(run, {12, {0, 4}, 3, 0, {0, 1}}, ErrorCode::kInvalidArgument, {"block_stride = 0"});
  expect_refused(run, {12, {0, 4}, 3, 4, {0, 1, 2}}, ErrorCode::kInvalidArgument, {"block_mapping has 3 entries"});
  expect_refused(run, {12, {0, 4, 8}, 3, 4, {0, 1}}, ErrorCode::kInvalidArgument, {"views has 3 entries"});
}

TEST(CopyBlocks, ReferenceKnownAnswers) { known_answers([](const CopyBlocksArgs& a) { ref::copy_blocks(a); }); }

class CopyBlocksBackend : public testing::TestWithParam<std::shared_ptr<const Backend>> {};

TEST_P(CopyBlocksBackend, KnownAnswers) {
  known_answers([&](const CopyBlocksArgs& a) { GetParam()->copy_blocks(a); });
}

INSTANTIATE_TEST_SUITE_P(Backends, CopyBlocksBackend, testing::ValuesIn(available_backends()),
                         [](const auto& info) { return std::string(info.param->name()); });

// The validator decides "a shared byte in different blocks" in closed form; the
// reference by owning every byte. Every geometry of two views, stride <= 6, offsets
// <= 13, up to 3 blocks: the same verdict (and the same message) or both valid.
TEST(CopyBlocks, ClosedFormViewRuleMatchesTheReference) {
  int compared = 0, refused = 0;
  for (int64_t stride = 1; stride <= 6; ++stride)
    for (int64_t n = 1; n <= 3; ++n)
      for (int64_t o1 = 0; o1 <= 13; ++o1)
        for (int64_t o2 = 0; o2 <= 13; ++o2)
          for (int64_t b1 = 1; b1 <= stride; ++b1)
            for (int64_t b2 = 1; b2 <= stride; ++b2) {
              const Ints views{o1, b1, o2, b2};
              const int64_t size = std::max(o1 + b1, o2 + b2) + (n - 1) * stride;
              Bytes bytes(static_cast<size_t>(size));
              const CopyBlocksArgs a{bytes.data(), size, views, n, stride, {}};
              std::string want, got;
              try {
                ref::copy_blocks(a);
              } catch (const Error& e) {
                want = e.what();
              }
              try {
                validate_copy_blocks_shape(a);
              } catch (const Error& e) {
                got = e.what();
              }
              ASSERT_EQ(got, want) << "views " << o1 << "," << b1 << " / " << o2 << "," << b2 << " stride " << stride
                                   << " blocks " << n;
              ++compared;
              refused += !want.empty();
            }
  EXPECT_GT(refused, 100);
  EXPECT_GT(compared - refused, 100);
}

TEST(CopyBlocks, MergedViewsCoverEachByteOnce) {
  // K and V halves, a second format over both, a view elsewhere.
  const Ints views{0, 4, 4, 4, 0, 8, 32, 2, 33, 2};
  const auto merged = merge_aliased_views(views);
  ASSERT_EQ(merged.size(), 2u);
  EXPECT_EQ(merged[0], (std::pair<int64_t, int64_t>{0, 8}));
  EXPECT_EQ(merged[1], (std::pair<int64_t, int64_t>{32, 3}));
}

}  // namespace
}  // namespace kvcheck
