// Known answers of SPEC §2/§3, computed by hand from the SPEC table (not from code).
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "impl/error.h"
#include "tests/test_util.h"
#include "impl/format.h"
#include "impl/layout.h"
#include "reference/layout.h"

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


TEST(Format, SupportedFormatsValidate) {
  for (const auto& f : supported_formats()) EXPECT_NO_THROW(f.validate()) << f.name;
}

// One test per SPEC §2 validation rule; each starts from a valid format and breaks
// exactly that rule, so removing the check makes the test fail.
TEST(Format, ValidationQuantizedWithoutGroup) {
  KVCacheFormat f = KVCacheFormat::V41();
  f.elements_per_sf = 0;
  expect_error([&] { f.validate(); }, ErrorCode::kInvalidFormat);
}

TEST(Format, ValidationQuantizedWithoutScaleFormat) {
  KVCacheFormat f = KVCacheFormat::MXFP8_INDEX();
  f.sf_format = SfFormat::kNone;
  expect_error([&] { f.validate(); }, ErrorCode::kInvalidFormat);
}

TEST(Format, ValidationGroupMustDivideElements) {
  KVCacheFormat f = KVCacheFormat::V41();
  f.elements_per_sf = 48;  // 512 % 48 = 32
  expect_error([&] { f.validate(); }, ErrorCode::kInvalidFormat, {"48", "512"});
}

TEST(Format, ValidationBf16Tail) {
  // SPEC §2: a tail is the last elements of a do_cast record, a multiple of 8 below elements.
  KVCacheFormat f = KVCacheFormat::V41();
  f.bf16_tail_elements = 64;  // 448 quantised elements, 14 groups of 32: valid
  EXPECT_NO_THROW(f.validate());
  EXPECT_EQ(f.bytes_per_token(), 448 + 14 + 128);
  f.bf16_tail_elements = 60;
  expect_error([&] { f.validate(); }, ErrorCode::kInvalidFormat, {"multiple of 8"});
  f.bf16_tail_elements = 512;
  expect_error([&] { f.validate(); }, ErrorCode::kInvalidFormat, {"below elements"});
  f.bf16_tail_elements = 48;  // 464 quantised elements: 32 does not divide them
  expect_error([&] { f.validate(); }, ErrorCode::kInvalidFormat, {"does not divide"});
  KVCacheFormat index = KVCacheFormat::MXFP8_INDEX();
  index.bf16_tail_elements = 32;
  expect_error([&] { index.validate(); }, ErrorCode::kInvalidFormat, {"needs do_cast"});
  KVCacheFormat fp4 = KVCacheFormat::V41_FP4();
  fp4.sf_format = SfFormat::kFP32Pow2;
  expect_error([&] { fp4.validate(); }, ErrorCode::kInvalidFormat, {"fp32_pow2", "e4m3"});
}

TEST(Format, Fp8Pow2SfIndexIsMxfp8sLayoutWithFp32Scales) {
  // vLLM's DSA indexer with its ue8m0 option (ENGINES.md §2): 128 e4m3, one fp32 2^k per 128,
  // block-planar: block 64 = 64 * 128 data bytes, then 64 * 4 scale bytes = 8448 (a multiple of 32).
  const KVCacheFormat f = KVCacheFormat::FP8_POW2SF_INDEX();
  EXPECT_EQ(f.bytes_per_token(), 132);
  EXPECT_TRUE(f.is_index());
  EXPECT_EQ(f.load_scale_row_bytes(), 4);
  EXPECT_EQ(CacheLayout::make(f, 2, 64).block_stride, 8448);
  EXPECT_EQ(CacheLayout::make(f, 2, 64).scale_offset(1, 3), 8448 + 64 * 128 + 3 * 4);
  KVCacheFormat fp4 = f;
  fp4.quantized_dtype = QuantizedDtype::kE2M1;
  expect_error([&] { fp4.validate(); }, ErrorCode::kInvalidFormat, {"fp32_pow2", "e4m3"});
}

TEST(Format, Fp8DsMlaIsThe656ByteRecord) {
  // vLLM fp8_ds_mla / FlashMLA V32 (ENGINES.md §2): 512 e4m3, 4 fp32 tile scales, 64 bf16.
  const KVCacheFormat f = KVCacheFormat::FP8_DS_MLA();
  EXPECT_EQ(f.elements, 576);
  EXPECT_EQ(f.quantized_elements(), 512);
  EXPECT_EQ(f.quantized_bytes(), 512);
  EXPECT_EQ(f.num_scales(), 4);
  EXPECT_EQ(f.scale_width(), 4);
  EXPECT_EQ(f.sf_bytes(), 16);
  EXPECT_EQ(f.tail_offset(), 528);
  EXPECT_EQ(f.tail_bytes(), 128);
  EXPECT_EQ(f.bytes_per_token(), 656);
  EXPECT_EQ(f.load_row_bytes(), 1152);  // 576 BF16
  EXPECT_EQ(f.token_alignment(), 16);
  const std::vector<int64_t> shape = {100, 64, 1, 656};
  EXPECT_EQ(resolve_format(CacheDtype::kUInt8, shape).name, "FP8_DS_MLA");
  EXPECT_EQ(format_by_name("FP8_DS_MLA"), f);
  // SPEC §3: interleaved, lcm(32, 656) = 1312 = 2 records: block 64 -> 41984 bytes, block 3 -> 2624.
  EXPECT_EQ(CacheLayout::make(f, 2, 64).block_stride, 41984);
  EXPECT_EQ(CacheLayout::make(f, 2, 3).block_stride, 2624);
  const PagedLayout p = CacheLayout::make(f, 4, 16).paged();
  EXPECT_EQ(p.tail_offset(1, 2), 16 * 656 + 2 * 656 + 528);
}

TEST(Format, Model1IsThe584ByteBlockPlanarRecord) {
  // FlashMLA MODEL1 (ENGINES.md §2, FlashMLA tests/quant.py): per token 448 e4m3 + 64 bf16
  // rope (576 bytes, one row), then 7 ue8m0 tile scales + 1 pad byte, block-planar.
  const KVCacheFormat f = KVCacheFormat::MODEL1();
  EXPECT_EQ(f.elements, 512);
  EXPECT_EQ(f.quantized_elements(), 448);
  EXPECT_EQ(f.quantized_bytes(), 448);
  EXPECT_EQ(f.num_scales(), 7);
  EXPECT_EQ(f.scale_width(), 1);
  EXPECT_EQ(f.sf_bytes(), 7);
  EXPECT_EQ(f.sf_token_bytes(), 8);
  EXPECT_EQ(f.tail_offset(), 448);
  EXPECT_EQ(f.tail_bytes(), 128);
  EXPECT_EQ(f.bytes_per_token(), 584);
  EXPECT_EQ(f.load_row_bytes(), 1024);  // 512 BF16
  EXPECT_EQ(f.token_alignment(), 8);
  const std::vector<int64_t> shape = {100, 64, 1, 584};
  EXPECT_EQ(resolve_format(CacheDtype::kUInt8, shape).name, "MODEL1");
  EXPECT_EQ(format_by_name("MODEL1"), f);
  // SPEC §3: round_up(64 * 584 = 37376, 576) = 65 * 576 = 37440; block 133: 77672 -> 135 * 576.
  EXPECT_EQ(CacheLayout::make(f, 2, 64).block_stride, 37440);
  EXPECT_EQ(CacheLayout::make(f, 2, 133).block_stride, 77760);
  // Block 2 token 5 of bs 64: data at 2*37440 + 5*576 = 77760, the rope tail 448 later,
  // the scales after the block's 64 rows: 74880 + 36864 + 5*8.
  const CacheLayout l = CacheLayout::make(f, 3, 64);
  EXPECT_EQ(l.data_offset(2, 5), 77760);
  EXPECT_EQ(l.paged().tail_offset(2, 5), 78208);
  EXPECT_EQ(l.scale_offset(2, 5), 111784);
  EXPECT_EQ(l.size_bytes(), 3 * 37440);
  EXPECT_EQ(ref::data_offset(f, 64, 2, 5), 77760);
  EXPECT_EQ(ref::tail_offset(f, 64, 2, 5), 78208);
  EXPECT_EQ(ref::scale_offset(f, 64, 2, 5), 111784);
}

TEST(Format, Nvfp4DsMlaIsThe352ByteRecordWithTransposedScales) {
  // vLLM nvfp4_ds_mla / FlashMLA V32_NVFP4_FP8ROPE: per token 512 e2m1 (256 bytes), 64
  // unscaled e4m3 rope values (64 bytes), then 32 e4m3 scales, group s's at byte
  // 320 + 8*(s%4) + s/4 (the reader's byte p holds group 4*(p%8) + p/8).
  const KVCacheFormat f = KVCacheFormat::NVFP4_DS_MLA();
  EXPECT_EQ(f.elements, 576);
  EXPECT_EQ(f.quantized_elements(), 512);
  EXPECT_EQ(f.quantized_bytes(), 256);
  EXPECT_EQ(f.num_scales(), 32);
  EXPECT_EQ(f.sf_bytes(), 32);
  EXPECT_EQ(f.tail_bytes(), 64);
  EXPECT_EQ(f.tail_offset(), 256);
  EXPECT_EQ(f.scales_in_record(), 320);
  EXPECT_EQ(f.bytes_per_token(), 352);
  EXPECT_EQ(f.load_row_bytes(), 1152);  // 576 BF16
  EXPECT_EQ(f.token_alignment(), 32);
  const std::vector<int64_t> shape = {100, 64, 1, 352};
  EXPECT_EQ(resolve_format(CacheDtype::kUInt8, shape).name, "NVFP4_DS_MLA");
  EXPECT_EQ(format_by_name("NVFP4_DS_MLA"), f);
  // SPEC §3: 352 = 11 * 32, so blocks are packed: 64 * 352 = 22528.
  const CacheLayout l = CacheLayout::make(f, 3, 64);
  EXPECT_EQ(l.block_stride, 22528);
  // Block 2 token 5: data 2*22528 + 5*352 = 46816, rope 256 later, scales 320 later.
  EXPECT_EQ(l.data_offset(2, 5), 46816);
  EXPECT_EQ(l.paged().tail_offset(2, 5), 47072);
  EXPECT_EQ(l.scale_offset(2, 5), 47136);
  EXPECT_EQ(ref::data_offset(f, 64, 2, 5), 46816);
  EXPECT_EQ(ref::tail_offset(f, 64, 2, 5), 47072);
  EXPECT_EQ(ref::scale_offset(f, 64, 2, 5), 47136);
  const std::pair<int64_t, int64_t> groups[] = {{0, 0}, {1, 8}, {2, 16}, {3, 24}, {4, 1}, {5, 9}, {30, 23}, {31, 31}};
  for (const auto& [g, byte] : groups) {
    EXPECT_EQ(l.paged().scale_byte(g), byte) << "group " << g;
    EXPECT_EQ(ref::scale_byte(f, g), byte) << "group " << g;
  }
  // An e4m3 tail or transposed scales elsewhere: the rules of SPEC §2.
  KVCacheFormat bad = f;
  bad.token_interleaved = false;
  expect_error([&] { bad.validate(); }, ErrorCode::kInvalidFormat, {"scales_last"});
  bad = f;
  bad.bf16_tail_elements = 0;
  bad.elements = 512;
  expect_error([&] { bad.validate(); }, ErrorCode::kInvalidFormat, {"an e4m3 tail needs tail elements"});
  bad = KVCacheFormat::V41();
  bad.sf_format = SfFormat::kE4M3RoundUp;
  expect_error([&] { bad.validate(); }, ErrorCode::kInvalidFormat, {"e4m3_round_up scales need e2m1 data"});
}

TEST(Format, BlockPlanarDoCastPadsScalesToEightBytes) {
  // V41_FP4 made block-planar: 256 data bytes per row, 32 e4m3 scales (a multiple of 8
  // already); with 24 groups of 16 (384 elements) 24 scale bytes, 288 bytes per token.
  KVCacheFormat f = KVCacheFormat::V41_FP4();
  f.token_interleaved = false;
  EXPECT_NO_THROW(f.validate());
  EXPECT_EQ(f.sf_token_bytes(), 32);
  f.elements = 376;  // 23.5 groups: invalid
  expect_error([&] { f.validate(); }, ErrorCode::kInvalidFormat, {"elements_per_sf"});
  f.elements = 368;  // 23 groups: 23 scale bytes padded to 24
  EXPECT_EQ(f.sf_token_bytes(), 24);
  EXPECT_EQ(f.bytes_per_token(), 184 + 24);
  // Index formats keep their scale records unpadded.
  EXPECT_EQ(KVCacheFormat::FP4_INDEX().sf_token_bytes(), 4);
}

TEST(Format, ValidationBf16Elements) {
  expect_error([] { KVCacheFormat::BF16(12); }, ErrorCode::kInvalidFormat, {"12"});
  expect_error([] { KVCacheFormat::BF16(4104); }, ErrorCode::kInvalidFormat, {"4104"});
  expect_error([] { KVCacheFormat::BF16(0); }, ErrorCode::kInvalidFormat);
  EXPECT_NO_THROW(KVCacheFormat::BF16(4096));
  EXPECT_NO_THROW(KVCacheFormat::BF16(8));
}

TEST(Format, DerivedSizesByHand) {
  // FP8_FP32SF_INDEX: 128 e4m3 bytes, ceil(128/128) = 1 scale of 4 bytes.
  const auto fp8 = KVCacheFormat::FP8_FP32SF_INDEX();
  EXPECT_EQ(fp8.quantized_bytes(), 128);
  EXPECT_EQ(fp8.num_scales(), 1);
  EXPECT_EQ(fp8.sf_bytes(), 4);
  // V41_FP4: 512/2 = 256 data bytes, 512/16 = 32 e4m3 scales.
  const auto v41fp4 = KVCacheFormat::V41_FP4();
  EXPECT_EQ(v41fp4.quantized_bytes(), 256);
  EXPECT_EQ(v41fp4.num_scales(), 32);
  EXPECT_EQ(v41fp4.sf_bytes(), 32);
  // gcd(32, 528) = 16 (SPEC §3), gcd(32, 288) = 32, gcd(32, 68) = 4.
  EXPECT_EQ(KVCacheFormat::V41().token_alignment(), 16);
  EXPECT_EQ(v41fp4.token_alignment(), 32);
  EXPECT_EQ(KVCacheFormat::FP4_INDEX().token_alignment(), 4);
}

TEST(Format, ResolveFromShape) {
  const std::vector<int64_t> v41{100, 64, 1, 528}, v41fp4{100, 64, 1, 288},
      fp4{100, 64, 1, 68}, bf16{100, 64, 512};
  EXPECT_EQ(resolve_format(CacheDtype::kUInt8, v41).name, "V41");
  EXPECT_EQ(resolve_format(CacheDtype::kUInt8, v41fp4).name, "V41_FP4");
  EXPECT_EQ(resolve_format(CacheDtype::kUInt8, fp4).name, "FP4_INDEX");
  EXPECT_EQ(resolve_format(CacheDtype::kBF16, bf16), KVCacheFormat::BF16(512));
}

TEST(Format, Resolve132BytesIsAmbiguousUnlessScaleFormatGiven) {
  const std::vector<int64_t> shape{10, 64, 1, 132};
  expect_error([&] { resolve_format(CacheDtype::kUInt8, shape); }, ErrorCode::kAmbiguousFormat,
               {"FP8_FP32SF_INDEX", "MXFP8_INDEX", "FP8_POW2SF_INDEX", "132"});
  EXPECT_EQ(resolve_format(CacheDtype::kUInt8, shape, SfFormat::kFP32).name, "FP8_FP32SF_INDEX");
  EXPECT_EQ(resolve_format(CacheDtype::kUInt8, shape, SfFormat::kUE8M0).name, "MXFP8_INDEX");
  EXPECT_EQ(resolve_format(CacheDtype::kUInt8, shape, SfFormat::kFP32Pow2FloorFirst).name, "FP8_POW2SF_INDEX");
  expect_error([&] { resolve_format(CacheDtype::kUInt8, shape, SfFormat::kE4M3); },
               ErrorCode::kUnknownFormat, {"132"});
}

TEST(Format, ResolveUnknownSizes) {
  // 296 is the seed's wrong V41_FP4 size (SPEC §2 [decided]).
  for (int64_t bytes : {296, 0, 1, 529, 264}) {
    const std::vector<int64_t> shape{4, 1, bytes};
    expect_error([&] { resolve_format(CacheDtype::kUInt8, shape); }, ErrorCode::kUnknownFormat,
                 {std::to_string(bytes)});
  }
  const std::vector<int64_t> v41{4, 1, 528};
  expect_error([&] { resolve_format(CacheDtype::kUInt8, v41, SfFormat::kFP32); },
               ErrorCode::kUnknownFormat);
  for (int64_t e : {12, 4104, 0}) {
    const std::vector<int64_t> shape{4, e};
    expect_error([&] { resolve_format(CacheDtype::kBF16, shape); }, ErrorCode::kUnknownFormat);
  }
  expect_error([] { resolve_format(CacheDtype::kUInt8, std::span<const int64_t>{}); },
               ErrorCode::kUnknownFormat);
}

TEST(Format, ByName) {
  for (const auto& f : supported_formats()) EXPECT_EQ(format_by_name(f.name), f);
  EXPECT_EQ(format_by_name("BF16(64)"), KVCacheFormat::BF16(64));
  EXPECT_EQ(format_by_name("BF16(64)").bytes_per_token(), 128);
  expect_error([] { format_by_name("v41"); }, ErrorCode::kUnknownFormat, {"v41", "MXFP8_INDEX"});
  expect_error([] { format_by_name("BF16()"); }, ErrorCode::kUnknownFormat);
  expect_error([] { format_by_name("BF16(-8)"); }, ErrorCode::kUnknownFormat);
  expect_error([] { format_by_name("BF16(12)"); }, ErrorCode::kInvalidFormat);
}

}  // namespace
}  // namespace kvcheck

// SlotDivider (impl/paged_layout.h) is the kernels' slot / block_size: equal to the
// division at every quotient boundary of every block size up to 4096, and of large and
// awkward ones (powers of two and their neighbours, up to INT32_MAX), up to slot
// INT32_MAX. Known answers by hand: 3 -> magic floor(2^33/3)+1, shift 33; 64 -> 2^31+1, 37.
TEST(Layout, SlotDividerIsTheDivision) {
  const kvcheck::SlotDivider three = kvcheck::SlotDivider::of(3), s64 = kvcheck::SlotDivider::of(64);
  EXPECT_EQ(three.magic, 2863311531u);
  EXPECT_EQ(three.shift, 33u);
  EXPECT_EQ(s64.magic, 2147483649u);
  EXPECT_EQ(s64.shift, 37u);
  EXPECT_EQ(three.block(7), 2);
  EXPECT_EQ(three.token(7, three.block(7)), 1);
  std::vector<int32_t> sizes;
  for (int32_t d = 1; d <= 4096; ++d) sizes.push_back(d);
  for (int k = 12; k <= 30; ++k)
    for (const int64_t d : {(int64_t{1} << k) - 1, int64_t{1} << k, (int64_t{1} << k) + 1, (int64_t{3} << k) / 2 + 7})
      sizes.push_back(static_cast<int32_t>(d));
  sizes.push_back(INT32_MAX - 1);
  sizes.push_back(INT32_MAX);
  uint64_t checked = 0;
  for (const int32_t d : sizes) {
    const kvcheck::SlotDivider div = kvcheck::SlotDivider::of(d);
    uint32_t l = 0;
    while ((int64_t{1} << l) < d) ++l;
    ASSERT_LT((uint64_t{1} << (31 + l)) / uint64_t(d) + 1, uint64_t{1} << 32) << "magic of " << d;
    const auto expect = [&](int64_t slot) {
      if (slot < 0 || slot > INT32_MAX) return;
      const int32_t s = static_cast<int32_t>(slot);
      ASSERT_EQ(div.block(s), s / d) << "slot " << s << " block_size " << d;
      ASSERT_EQ(div.token(s, div.block(s)), s % d) << "slot " << s << " block_size " << d;
      ++checked;
    };
    const int64_t last_q = INT32_MAX / d;
    for (int64_t q : {int64_t{0}, int64_t{1}, int64_t{2}, last_q / 3, last_q / 2, last_q - 1, last_q})
      for (const int64_t slot : {q * d - 1, q * d, q * d + 1, q * d + d - 1}) expect(slot);
    expect(INT32_MAX);
  }
  EXPECT_GT(checked, 100000u);
}
