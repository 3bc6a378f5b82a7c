// Known answers for SPEC §3 strides and offsets, computed by hand, for the reference's
// own formulas (reference/layout) and the production CacheLayout (impl/layout).
#include <gtest/gtest.h>

#include <utility>

#include "impl/error.h"
#include "impl/format.h"
#include "impl/layout.h"
#include "reference/layout.h"

namespace kvcheck {
namespace {

struct StrideCase {
  KVCacheFormat format;
  int32_t block_size;
  int64_t stride;
};

TEST(Layout, BlockStridesByHand) {
  const StrideCase cases[] = {
      // Interleaved: round_up(bs*bpt, lcm(32, bpt)). V41: lcm(32, 528) = 1056.
      {KVCacheFormat::V41(), 1, 1056},    // 528 -> 1056
      {KVCacheFormat::V41(), 2, 1056},    // 1056
      {KVCacheFormat::V41(), 3, 2112},    // 1584 -> 2112
      {KVCacheFormat::V41(), 64, 33792},  // SPEC example
      {KVCacheFormat::V41(), 133, 70752}, // SPEC example
      // V41_FP4: lcm(32, 288) = 288 (288 = 9*32), so no padding ever.
      {KVCacheFormat::V41_FP4(), 1, 288},
      {KVCacheFormat::V41_FP4(), 133, 38304},  // 133*288
      // Non-interleaved: round_up(bs*bpt, 32).
      {KVCacheFormat::FP4_INDEX(), 1, 96},       // 68 -> 96
      {KVCacheFormat::FP4_INDEX(), 2, 160},      // 136 -> 160
      {KVCacheFormat::FP4_INDEX(), 64, 4352},    // 4352 = 136*32
      {KVCacheFormat::FP4_INDEX(), 133, 9056},   // 9044 -> 283*32
      {KVCacheFormat::FP8_FP32SF_INDEX(), 1, 160},     // 132 -> 160
      {KVCacheFormat::MXFP8_INDEX(), 64, 8448},        // 8448 = 264*32
      {KVCacheFormat::MXFP8_INDEX(), 133, 17568},      // 17556 -> 549*32
      {KVCacheFormat::BF16(8), 2, 32},    // 2*16
      {KVCacheFormat::BF16(8), 3, 64},    // 48 -> 64
      {KVCacheFormat::BF16(512), 133, 136192},  // 133*1024
  };
  for (const auto& c : cases) {
    EXPECT_EQ(ref::block_stride(c.format, c.block_size), c.stride)
        << c.format.name << " block " << c.block_size;
    EXPECT_EQ(block_stride_for(c.format, c.block_size), c.stride)
        << c.format.name << " block " << c.block_size;
  }
}

TEST(Layout, OffsetsByHand) {
  // V41 (interleaved), block_size 3, stride 2112: token 1 of block 2 at 2*2112 + 528,
  // its scales after the 512 data bytes.
  const auto v41 = KVCacheFormat::V41();
  EXPECT_EQ(ref::data_offset(v41, 3, 2, 1), 4752);
  EXPECT_EQ(ref::scale_offset(v41, 3, 2, 1), 5264);
  // FP4_INDEX (non-interleaved), block_size 3: stride round_up(204, 32) = 224.
  // data of token 1 in block 2: 448 + 64; scales: 448 + 3*64 + 1*4.
  const auto fp4 = KVCacheFormat::FP4_INDEX();
  EXPECT_EQ(ref::data_offset(fp4, 3, 2, 1), 512);
  EXPECT_EQ(ref::scale_offset(fp4, 3, 2, 1), 644);
  // FP8_FP32SF_INDEX, block_size 3: stride round_up(396, 32) = 416;
  // token 2 of block 1: data 416 + 2*128, scales 416 + 3*128 + 2*4.
  const auto fp8 = KVCacheFormat::FP8_FP32SF_INDEX();
  EXPECT_EQ(ref::data_offset(fp8, 3, 1, 2), 672);
  EXPECT_EQ(ref::scale_offset(fp8, 3, 1, 2), 808);
  // BF16(8), block_size 3: stride 64; token 2 of block 1 at 64 + 32.
  EXPECT_EQ(ref::data_offset(KVCacheFormat::BF16(8), 3, 1, 2), 96);
  // 64-bit: block 100000 of V41/64 starts at 100000*33792 = 3'379'200'000 > 2^31.
  EXPECT_EQ(ref::data_offset(v41, 64, 100000, 1), 3'379'200'528);
  EXPECT_EQ(ref::scale_offset(v41, 64, 100000, 1), 3'379'201'040);

  const CacheLayout l = CacheLayout::make(fp4, 4, 3);
  EXPECT_EQ(l.data_offset(2, 1), 512);
  EXPECT_EQ(l.scale_offset(2, 1), 644);
  const CacheLayout l41 = CacheLayout::make(v41, 4, 3);
  EXPECT_EQ(l41.data_offset(2, 1), 4752);
  EXPECT_EQ(l41.scale_offset(2, 1), 5264);
}

TEST(Layout, ReferenceAndProductionAgree) {
  for (const auto& f : supported_formats()) {
    for (int32_t bs : {1, 2, 16, 53, 61, 64, 69, 133, 256}) {
      const CacheLayout l = CacheLayout::make(f, 3, bs);
      ASSERT_EQ(l.block_stride, ref::block_stride(f, bs)) << f.name << " bs " << bs;
      for (int64_t b = 0; b < 3; ++b)
        for (int64_t t : {int64_t{0}, int64_t{1}, int64_t{bs - 1}}) {
          ASSERT_EQ(l.data_offset(b, t), ref::data_offset(f, bs, b, t)) << f.name << " bs " << bs;
          if (f.is_quantized()) {
            ASSERT_EQ(l.scale_offset(b, t), ref::scale_offset(f, bs, b, t)) << f.name;
          }
        }
    }
  }
}

TEST(Layout, GeometryChecks) {
  const auto f = KVCacheFormat::V41();
  EXPECT_NO_THROW(ref::check_cache_geometry(f, 1, 1));
  for (auto [nb, bs] : {std::pair<int64_t, int32_t>{0, 16}, {1, 0}, {1, -1}, {-5, 16},
                        {int64_t{1} << 31, 1}}) {
    try {
      ref::check_cache_geometry(f, nb, bs);
      ADD_FAILURE() << "no throw for num_blocks " << nb << " block_size " << bs;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    }
  }
  KVCacheFormat broken = f;
  broken.elements_per_sf = 0;  // quantised without a group (SPEC §2)
  try {
    ref::check_cache_geometry(broken, 1, 1);
    ADD_FAILURE() << "no throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidFormat);
  }
}

}  // namespace
}  // namespace kvcheck

namespace kvcheck {
namespace {

// A block stride other than the packed one (SPEC §3): other layers' blocks between
// this cache's. V41 block 64 is packed in 33792 bytes; 3 layers' blocks side by side
// put block b of layer 0 at 101376*b. By hand: block 2 token 5's data at 2*101376 +
// 5*528 = 205392 (interleaved: data then scales per token, scales at +512 = 205904);
// the buffer must hold 2*101376 + 33792 = 236544 bytes (the last block's packed end).
TEST(Layout, StridedBlocksByHand) {
  const KVCacheFormat f = KVCacheFormat::V41();
  const CacheLayout l = CacheLayout::make(f, 3, 64, 3 * 33792);
  EXPECT_EQ(l.block_stride, 101376);
  EXPECT_EQ(l.packed_stride(), 33792);
  EXPECT_EQ(l.size_bytes(), 236544);
  EXPECT_EQ(l.data_offset(2, 5), 205392);
  EXPECT_EQ(l.scale_offset(2, 5), 205904);
  EXPECT_EQ(ref::data_offset(f, 64, 2, 5, 101376), 205392);
  EXPECT_EQ(ref::scale_offset(f, 64, 2, 5, 101376), 205904);
  // Packed: 0 means packed and is num_blocks * stride.
  EXPECT_EQ(CacheLayout::make(f, 3, 64, 0).size_bytes(), 3 * 33792);
  // A non-interleaved index format: MXFP8_INDEX block 64 packs 8448 bytes, its scales
  // at 64*128 = 8192 into the block; stride 8448 + 96 = 8544: block 1 token 3's scale
  // at 8544 + 8192 + 3*4 = 16748.
  const CacheLayout m = CacheLayout::make(KVCacheFormat::MXFP8_INDEX(), 2, 64, 8544);
  EXPECT_EQ(m.scale_offset(1, 3), 16748);
  EXPECT_EQ(ref::scale_offset(KVCacheFormat::MXFP8_INDEX(), 64, 1, 3, 8544), 16748);
  // Refused: off the 32-byte grid, below the packed stride (both sides).
  for (const int64_t bad : {int64_t{33792 + 16}, int64_t{33792 - 32}, int64_t{-32}}) {
    EXPECT_THROW(CacheLayout::make(f, 3, 64, bad), Error) << bad;
    EXPECT_THROW(ref::check_cache_geometry(f, 3, 64, bad), Error) << bad;
  }
  try {
    CacheLayout::make(f, 3, 64, 33760);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("below the packed stride 33792"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kvcheck
