// Known answers of SPEC §2/§3, computed by hand from the SPEC table (not from code).
#include <gtest/gtest.h>

#include "impl/error.h"
#include "impl/format.h"
#include "impl/layout.h"

namespace kvcheck {
namespace {

TEST(Format, BytesPerTokenFromSpecTable) {
  // 512 + 512/32 = 528; 256 + 32 = 288; 64 + 4 = 68; 128 + 4 = 132; 128 + 4 = 132.
  EXPECT_EQ(KVCacheFormat::V41().bytes_per_token(), 528);
  EXPECT_EQ(KVCacheFormat::V41_FP4().bytes_per_token(), 288);
  EXPECT_EQ(KVCacheFormat::FP4_INDEX().bytes_per_token(), 68);
  EXPECT_EQ(KVCacheFormat::FP8_FP32SF_INDEX().bytes_per_token(), 132);
  EXPECT_EQ(KVCacheFormat::MXFP8_INDEX().bytes_per_token(), 132);
  for (int e : {8, 512, 4096}) EXPECT_EQ(KVCacheFormat::BF16(e).bytes_per_token(), 2 * e);
}

TEST(Layout, BlockStrideKnownAnswers) {
  // lcm(32, 528) = 1056; 64*528 = 33792 = 32*1056; 133*528 = 70224 -> 67 * 1056 = 70752.
  EXPECT_EQ(block_stride_for(KVCacheFormat::V41(), 64), 33792);
  EXPECT_EQ(block_stride_for(KVCacheFormat::V41(), 133), 70752);
}

}  // namespace
}  // namespace kvcheck
