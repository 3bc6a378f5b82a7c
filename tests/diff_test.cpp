// The decoded failure reports' byte locator (properties/diff.h), by hand from SPEC §2-§3:
// which block, token, field and element a cache byte is, and where the token's data and
// scales start, for a token-interleaved record with a BF16 tail (FP8_DS_MLA) and a
// block-planar one (MXFP8_INDEX); and diff_cache naming a tail element.
#include <gtest/gtest.h>

#include <vector>

#include "impl/layout.h"
#include "properties/diff.h"

namespace kvcheck::props {
namespace {

using Kind = CacheByteLocation::Kind;

TEST(LocateCacheByte, InterleavedRecordWithATail) {
  // FP8_DS_MLA: 512 data, 4 x 4 scale bytes, 64 x 2 tail bytes = 656 per token;
  // block_size 2: 1312 bytes of records, a multiple of 32, so the stride is 1312.
  const KVCacheFormat f = KVCacheFormat::FP8_DS_MLA();
  const CacheByteLocation scale = locate_cache_byte(f, 2, 656 + 512 + 4);
  EXPECT_EQ(scale.kind, Kind::kScale);
  EXPECT_EQ(scale.token, 1);
  EXPECT_EQ(scale.index, 1);
  EXPECT_EQ(scale.data_start, 656);
  EXPECT_EQ(scale.scale_start, 656 + 512);
  const CacheByteLocation tail = locate_cache_byte(f, 2, 1312 + 528 + 2);  // block 1, token 0
  EXPECT_EQ(tail.kind, Kind::kTail);
  EXPECT_EQ(tail.block, 1);
  EXPECT_EQ(tail.index, 513);
  EXPECT_EQ(tail.data_start, 1312);
  EXPECT_EQ(locate_cache_byte(f, 2, 2 * 1312 + 5, 1312 * 2 + 64).kind, Kind::kPadding);  // other layers' bytes
}

TEST(LocateCacheByte, BlockPlanarRecord) {
  // MXFP8_INDEX: 128 e4m3 bytes per token in the block's data region, then 4 ue8m0
  // scale bytes per token in its scale region. block_size 4: data 512, scales 16.
  const KVCacheFormat f = KVCacheFormat::MXFP8_INDEX();
  const CacheByteLocation data = locate_cache_byte(f, 4, 130);
  EXPECT_EQ(data.kind, Kind::kData);
  EXPECT_EQ(data.token, 1);
  EXPECT_EQ(data.index, 2);
  EXPECT_EQ(data.data_start, 128);
  EXPECT_EQ(data.scale_start, 512 + 4);
  const CacheByteLocation scale = locate_cache_byte(f, 4, 520);
  EXPECT_EQ(scale.kind, Kind::kScale);
  EXPECT_EQ(scale.token, 2);
  EXPECT_EQ(scale.index, 0);
  EXPECT_EQ(scale.data_start, 256);
  EXPECT_EQ(scale.scale_start, 520);
}

TEST(DiffCache, NamesATailElement) {
  const CacheLayout layout = CacheLayout::make(KVCacheFormat::FP8_DS_MLA(), 1, 2);
  std::vector<uint8_t> a(static_cast<size_t>(layout.size_bytes()), 0), b = a;
  b[656 + 528 + 2] = 0x80;  // token 1, tail element 1: bf16 0x0080
  const std::string d = diff_cache(layout, a, b);
  EXPECT_NE(d.find("token 1 (slot 1), BF16 tail element 1 (row element 513)"), std::string::npos) << d;
}

}  // namespace
}  // namespace kvcheck::props
