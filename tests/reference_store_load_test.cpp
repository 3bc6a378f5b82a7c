// Known answers for the reference store/load (SPEC §5.1/5.2) on tiny caches. Every
// expected byte is written out by hand from SPEC §3 offsets and the §4 recipes (see
// numerics_test.cpp for the derivations of the codes used here).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "impl/error.h"
#include "tests/test_util.h"
#include "reference/load.h"
#include "reference/store.h"

namespace kvcheck {
namespace {

using Bytes = std::vector<uint8_t>;
constexpr uint8_t kSentinel = 0xEE;
constexpr int32_t kMin = std::numeric_limits<int32_t>::min();
constexpr int32_t kMax = std::numeric_limits<int32_t>::max();


void put_le16(Bytes& b, size_t at, uint16_t v) {
  b[at] = static_cast<uint8_t>(v & 0xFF);
  b[at + 1] = static_cast<uint8_t>(v >> 8);
}
uint16_t get_le16(const Bytes& b, size_t at) {
  return static_cast<uint16_t>(b[at] | (b[at + 1] << 8));
}

// kv[rows][stride] of BF16; element e of row r = 0x3F00 + 16*r + e; padding 0xDEAD.
std::vector<bf16_bits> bf16_rows(int rows, int elements, int stride) {
  std::vector<bf16_bits> kv(static_cast<size_t>(rows * stride), 0xDEAD);
  for (int r = 0; r < rows; ++r)
    for (int e = 0; e < elements; ++e)
      kv[static_cast<size_t>(r * stride + e)] = static_cast<bf16_bits>(0x3F00 + 16 * r + e);
  return kv;
}

// ---------------------------------------------------------------- store, BF16

// BF16(8), block_size 2, 3 blocks: bpt 16, stride round_up(32, 32) = 32, 6 slots.
// Rows: 0 -> slot 0 (bytes [0,16)), 1 -> -1 (right after slot 0's row: a clamp-to-0
// bug would overwrite it), 2 -> slot 5 = block 2 token 1 (bytes [80, 96)).
TEST(RefStore, Bf16PaddingNextToSlotZero) {
  const auto f = KVCacheFormat::BF16(8);
  const auto kv = bf16_rows(3, 8, 10);  // row stride 10 > E: padded rows
  const std::vector<int32_t> slots{0, -1, 5};
  Bytes cache(96, kSentinel);
  ref::store_kv_cache({kv.data(), 3, 10}, slots, cache, f, 3, 2);
  Bytes expected(96, kSentinel);
  for (int e = 0; e < 8; ++e) {
    put_le16(expected, static_cast<size_t>(2 * e), static_cast<uint16_t>(0x3F00 + e));
    put_le16(expected, static_cast<size_t>(80 + 2 * e), static_cast<uint16_t>(0x3F00 + 32 + e));
  }
  EXPECT_EQ(cache, expected);
}

TEST(RefStore, AllPaddingAndEmptyWriteNothing) {
  const auto f = KVCacheFormat::BF16(8);
  const auto kv = bf16_rows(3, 8, 8);
  Bytes cache(96, kSentinel);
  ref::store_kv_cache({kv.data(), 3, 8}, std::vector<int32_t>{-1, -1, -1}, cache, f, 3, 2);
  EXPECT_EQ(cache, Bytes(96, kSentinel));
  ref::store_kv_cache({nullptr, 0, 0}, std::span<const int32_t>{}, cache, f, 3, 2);
  EXPECT_EQ(cache, Bytes(96, kSentinel));
}

// ---------------------------------------------------------------- store, quantised

// V41, block_size 3, 2 blocks: stride round_up(3*528, 1056) = 2112, records 1584 B,
// padding [1584, 2112) per block. Slot 5 = block 1 token 2 -> data at 2112 + 2*528 =
// 3168, scales at 3168 + 512 = 3680.
// Group 0 = [3, 1, -0.5, 0x3DCD, 1.0625]: scale 0x78, codes 7C 70 E8 55 70 (Recipe41).
// Element 32 = -0 (group 1, otherwise zero): code 0x80, scale 105 (all-zero group).
// Groups 2..15 zero: scale 105, codes 0.
TEST(RefStore, V41OneTokenByHand) {
  const auto f = KVCacheFormat::V41();
  std::vector<bf16_bits> kv(512, 0);
  kv[0] = 0x4040; kv[1] = 0x3F80; kv[2] = 0xBF00; kv[3] = 0x3DCD; kv[4] = 0x3F88;
  kv[32] = 0x8000;
  Bytes cache(2 * 2112, kSentinel);
  ref::store_kv_cache({kv.data(), 1, 512}, std::vector<int32_t>{5}, cache, f, 2, 3);
  Bytes expected(2 * 2112, kSentinel);
  std::memset(&expected[3168], 0, 512);
  const uint8_t head[] = {0x7C, 0x70, 0xE8, 0x55, 0x70};
  std::memcpy(&expected[3168], head, sizeof head);
  expected[3168 + 32] = 0x80;
  expected[3680] = 0x78;
  for (int g = 1; g < 16; ++g) expected[3680 + static_cast<size_t>(g)] = 105;
  EXPECT_EQ(cache, expected);
}

// V41_FP4, block_size 1, 2 blocks: stride 288 (lcm(32, 288) = 288). Slot 1 -> data at
// 288 (256 B), scales at 544 (32 B). Group 0 = Recipe43: codes 7 5 3 7 D, scale 0x37.
// Packing: byte i = code[2i] | code[2i+1] << 4 -> 0x57, 0x73, 0x0D.
// Element 17 = -0 (group 1): code 8 in the high nibble of byte 8 -> 0x80; group 1..31
// scales are the all-zero scale 0x01.
TEST(RefStore, V41Fp4PackingByHand) {
  const auto f = KVCacheFormat::V41_FP4();
  std::vector<bf16_bits> kv(512, 0);
  kv[0] = 0x40B4; kv[1] = 0x4016; kv[2] = 0x3F96; kv[3] = 0x4096; kv[4] = 0xC016;
  kv[17] = 0x8000;
  Bytes cache(576, kSentinel);
  ref::store_kv_cache({kv.data(), 1, 512}, std::vector<int32_t>{1}, cache, f, 2, 1);
  Bytes expected(576, kSentinel);
  std::memset(&expected[288], 0, 256);
  expected[288] = 0x57; expected[289] = 0x73; expected[290] = 0x0D; expected[288 + 8] = 0x80;
  expected[544] = 0x37;
  for (int g = 1; g < 32; ++g) expected[544 + static_cast<size_t>(g)] = 0x01;
  EXPECT_EQ(cache, expected);
}

// FP4_INDEX, block_size 2, 1 block: stride round_up(136, 32) = 160. Slot 1: data at
// 1*64, scales at 2*64 + 1*4 = 132; padding [136, 160). Group 0 = Recipe42
// [3, -1.25, 0.75, 0.125] -> codes 7 C 3 0 -> bytes 0xC7 0x03, scale 0x7E; groups 1..3
// zero -> scale 112.
TEST(RefStore, Fp4IndexNonInterleavedByHand) {
  const auto f = KVCacheFormat::FP4_INDEX();
  std::vector<bf16_bits> kv(128, 0);
  kv[0] = 0x4040; kv[1] = 0xBFA0; kv[2] = 0x3F40; kv[3] = 0x3E00;
  Bytes cache(160, kSentinel);
  ref::store_kv_cache({kv.data(), 1, 128}, std::vector<int32_t>{1}, cache, f, 1, 2);
  Bytes expected(160, kSentinel);
  std::memset(&expected[64], 0, 64);
  expected[64] = 0xC7; expected[65] = 0x03;
  expected[132] = 0x7E; expected[133] = 112; expected[134] = 112; expected[135] = 112;
  EXPECT_EQ(cache, expected);
}

// FP8_FP32SF_INDEX, block_size 1, 1 block: stride 160; data [0,128), scale [128,132).
// Recipe44 [100, 1, -0.5]: codes 7E 49 C1, scale 0x3E64924A little-endian.
TEST(RefStore, Fp8Fp32ScaleByHand) {
  const auto f = KVCacheFormat::FP8_FP32SF_INDEX();
  std::vector<bf16_bits> kv(128, 0);
  kv[0] = 0x42C8; kv[1] = 0x3F80; kv[2] = 0xBF00;
  Bytes cache(160, kSentinel);
  ref::store_kv_cache({kv.data(), 1, 128}, std::vector<int32_t>{0}, cache, f, 1, 1);
  Bytes expected(160, kSentinel);
  std::memset(&expected[0], 0, 128);
  expected[0] = 0x7E; expected[1] = 0x49; expected[2] = 0xC1;
  expected[128] = 0x4A; expected[129] = 0x92; expected[130] = 0x64; expected[131] = 0x3E;
  EXPECT_EQ(cache, expected);
}

// ---------------------------------------------------------------- load

// BF16(8), block_size 2, 3 blocks (stride 32). Cache token (b, t) element e holds
// 0x1000*b + 0x100*t + e. Segments in shuffled order with a zero fill, an empty
// segment and gaps: rows 1, 3 and 6 are covered by nobody and keep the sentinel.
TEST(RefLoad, Bf16ShuffledZeroFillAndGaps) {
  const auto f = KVCacheFormat::BF16(8);
  Bytes cache(96, kSentinel);
  for (int b = 0; b < 3; ++b)
    for (int t = 0; t < 2; ++t)
      for (int e = 0; e < 8; ++e)
        put_le16(cache, static_cast<size_t>(b * 32 + t * 16 + 2 * e),
                 static_cast<uint16_t>(0x1000 * b + 0x100 * t + e));
  const std::vector<int32_t> segs{2, 0, 2, 4,   // block 2 tokens 0,1 -> rows 4,5
                                  -1, 0, 1, 0,  // zero row 0
                                  1, 1, 1, 6,   // empty
                                  0, 1, 2, 2};  // block 0 token 1 -> row 2
  Bytes out(7 * 16, 0xAB);
  ref::load_paged_kv_cache(cache, f, 3, 2, segs, 7, {out.data(), 16, nullptr, 0, 7});
  Bytes expected(7 * 16, 0xAB);
  std::memset(&expected[0], 0, 16);
  for (int e = 0; e < 8; ++e) {
    put_le16(expected, static_cast<size_t>(2 * 16 + 2 * e), static_cast<uint16_t>(0x0100 + e));
    put_le16(expected, static_cast<size_t>(4 * 16 + 2 * e), static_cast<uint16_t>(0x2000 + e));
    put_le16(expected, static_cast<size_t>(5 * 16 + 2 * e), static_cast<uint16_t>(0x2100 + e));
  }
  EXPECT_EQ(out, expected);
}

// FP4_INDEX, block_size 2, 1 block (stride 160): token 1's data at 64 (bytes 1..64),
// scales at 132 = [0x7E, 0x70, 0x70, 0x71] -> int32 0x7170707E (byte j -> bits 8j).
// Output rows padded (data stride 70, scale stride 8); row 1 is a zero fill.
TEST(RefLoad, Fp4IndexRawBytesAndPackedScales) {
  const auto f = KVCacheFormat::FP4_INDEX();
  Bytes cache(160, kSentinel);
  for (int i = 0; i < 64; ++i) cache[64 + static_cast<size_t>(i)] = static_cast<uint8_t>(i + 1);
  cache[132] = 0x7E; cache[133] = 0x70; cache[134] = 0x70; cache[135] = 0x71;
  Bytes data(2 * 70, 0xAB), scales(2 * 8, 0xAB);
  ref::load_paged_kv_cache(cache, f, 1, 2, std::vector<int32_t>{0, 1, 2, 0, -1, 0, 1, 1},
                           2, {data.data(), 70, scales.data(), 8, 2});
  for (int i = 0; i < 64; ++i) EXPECT_EQ(data[static_cast<size_t>(i)], i + 1);
  for (size_t i = 64; i < 70; ++i) EXPECT_EQ(data[i], 0xAB);  // row padding untouched
  for (size_t i = 70; i < 134; ++i) EXPECT_EQ(data[i], 0x00);  // zero fill
  int32_t word;
  std::memcpy(&word, &scales[0], 4);
  EXPECT_EQ(word, 0x7170707E);
  EXPECT_EQ(scales[4], 0xAB);
  std::memcpy(&word, &scales[8], 4);
  EXPECT_EQ(word, 0);
}

// FP8_FP32SF_INDEX: the scale row is the float 0x3E64924A.
TEST(RefLoad, Fp8Fp32ScaleAsFloat) {
  const auto f = KVCacheFormat::FP8_FP32SF_INDEX();
  Bytes cache(160, 0);
  cache[0] = 0x49;
  cache[128] = 0x4A; cache[129] = 0x92; cache[130] = 0x64; cache[131] = 0x3E;
  Bytes data(128, 0xAB);
  float scale = -1.0f;
  ref::load_paged_kv_cache(cache, f, 1, 1, std::vector<int32_t>{0, 0, 1, 0}, 1,
                           {data.data(), 128, reinterpret_cast<uint8_t*>(&scale), 4, 1});
  EXPECT_EQ(data[0], 0x49);
  uint32_t bits;
  std::memcpy(&bits, &scale, 4);
  EXPECT_EQ(bits, 0x3E64924Au);
}

// V41 do_cast, block_size 1: record at 0, scales at 512. Group 0 scale 0x78 (2^-7):
// codes 7C 70 E8 55 -> 3, 1, -0.5, 13/128 (Recipe41) and 0x7F -> NaN -> 0x7FFF.
// Group 1 scale 105 (2^-22), code 0x38 (1.0) -> 2^-22 = bf16 0x3480.
// Group 2 scale 253 (2^126), code 0x7E: 448*2^126 overflows -> +Inf 0x7F80.
// Group 3 scale 0xFF (NaN): every element, code 0 too, is q*NaN -> 0x7FFF. Other groups: scale byte 0 (2^-127),
// codes 0 -> +0.
TEST(RefLoad, V41DoCastByHand) {
  const auto f = KVCacheFormat::V41();
  Bytes cache(1056, 0);
  const uint8_t head[] = {0x7C, 0x70, 0xE8, 0x55, 0x7F};
  std::memcpy(&cache[0], head, sizeof head);
  cache[32] = 0x38; cache[64] = 0x7E; cache[96] = 0x38;
  cache[512] = 0x78; cache[513] = 105; cache[514] = 253; cache[515] = 0xFF;
  Bytes out(1024, 0xAB);
  ref::load_paged_kv_cache(cache, f, 1, 1, std::vector<int32_t>{0, 0, 1, 0}, 1,
                           {out.data(), 1024, nullptr, 0, 1});
  Bytes expected(1024, 0);
  put_le16(expected, 0, 0x4040); put_le16(expected, 2, 0x3F80); put_le16(expected, 4, 0xBF00);
  put_le16(expected, 6, 0x3DD0); put_le16(expected, 8, 0x7FFF); put_le16(expected, 64, 0x3480);
  put_le16(expected, 128, 0x7F80);
  for (size_t e = 96; e < 128; ++e) put_le16(expected, 2 * e, 0x7FFF);
  for (size_t i = 0; i < 1024; i += 2)
    EXPECT_EQ(get_le16(out, i), get_le16(expected, i)) << "element " << i / 2;
}

// V41_FP4 do_cast: byte 0 = 0x57 (elements 0: 7, 1: 5), byte 1 = 0xD3 (2: 3, 3: D),
// scale 0x37 = 0.9375: 6*0.9375 = 5.625 (0x40B4), 3*0.9375 = 2.8125 (0x4034),
// 1.5*0.9375 = 1.40625 (0x3FB4), -2.8125 (0xC034).
TEST(RefLoad, V41Fp4DoCastUnpacksLowNibbleFirst) {
  const auto f = KVCacheFormat::V41_FP4();
  Bytes cache(288, 0);
  cache[0] = 0x57; cache[1] = 0xD3;
  cache[256] = 0x37;
  Bytes out(1024, 0xAB);
  ref::load_paged_kv_cache(cache, f, 1, 1, std::vector<int32_t>{0, 0, 1, 0}, 1,
                           {out.data(), 1024, nullptr, 0, 1});
  EXPECT_EQ(get_le16(out, 0), 0x40B4);
  EXPECT_EQ(get_le16(out, 2), 0x4034);
  EXPECT_EQ(get_le16(out, 4), 0x3FB4);
  EXPECT_EQ(get_le16(out, 6), 0xC034);
  for (size_t i = 8; i < 1024; ++i) ASSERT_EQ(out[i], 0) << i;
}

// Store then load through the reference: V41's Recipe41 group comes back dequantised.
TEST(RefStoreLoad, V41RoundTrip) {
  const auto f = KVCacheFormat::V41();
  std::vector<bf16_bits> kv(2 * 512, 0);
  kv[512 + 0] = 0x4040; kv[512 + 1] = 0x3F80; kv[512 + 2] = 0xBF00; kv[512 + 3] = 0x3DCD;
  Bytes cache(2 * 2112, kSentinel);
  ref::store_kv_cache({kv.data(), 2, 512}, std::vector<int32_t>{-1, 4}, cache, f, 2, 3);
  Bytes out(1024, 0xAB);
  ref::load_paged_kv_cache(cache, f, 2, 3, std::vector<int32_t>{1, 1, 2, 0}, 1,
                           {out.data(), 1024, nullptr, 0, 1});
  EXPECT_EQ(get_le16(out, 0), 0x4040);
  EXPECT_EQ(get_le16(out, 2), 0x3F80);
  EXPECT_EQ(get_le16(out, 4), 0xBF00);
  EXPECT_EQ(get_le16(out, 6), 0x3DD0);  // 0.10009765625 -> 13/128
  for (size_t i = 8; i < 1024; ++i) ASSERT_EQ(out[i], 0) << i;
}

// ---------------------------------------------------------------- store errors

// Each case: the bad row comes after a valid one, so writing before validating would
// change the cache; the cache must stay byte-identical.
struct StoreFixture {
  KVCacheFormat f = KVCacheFormat::BF16(8);
  std::vector<bf16_bits> kv = bf16_rows(4, 8, 8);
  Bytes cache = Bytes(96, kSentinel);  // 3 blocks of 2 -> 6 slots

  void expect(std::vector<int32_t> slots, ErrorCode code, std::vector<std::string> needles,
              KVInput in = {}, int32_t block_size = 2, int64_t num_blocks = 3) {
    if (in.data == nullptr && in.rows == 0) in = {kv.data(), 4, 8};
    const Bytes before = cache;
    expect_error([&] { ref::store_kv_cache(in, slots, cache, f, num_blocks, block_size); },
                 code, needles);
    EXPECT_EQ(cache, before);
  }
};

TEST(RefStoreErrors, SlotOutOfRange) {
  StoreFixture s;
  for (int32_t bad : {-2, kMin, kMax, 6})
    s.expect({0, bad}, ErrorCode::kSlotOutOfRange, {"slot_mapping[1]", std::to_string(bad)});
}

TEST(RefStoreErrors, DuplicateSlot) {
  StoreFixture s;
  s.expect({3, -1, 0, 3}, ErrorCode::kDuplicateSlot, {"slot_mapping[0]", "slot_mapping[3]", "3"});
  // The smallest failing row wins (docs/spec.md §5.2): a duplicate at row 1 beats an
  // out-of-range slot at row 3, and an out-of-range slot at row 1 beats a duplicate at 2.
  s.expect({0, 0, -1, 7}, ErrorCode::kDuplicateSlot, {"slot_mapping[1] = 0 repeats slot_mapping[0]"});
  s.expect({0, 7, 0}, ErrorCode::kSlotOutOfRange, {"slot_mapping[1] = 7"});
}

TEST(RefStoreErrors, ShapesAndArguments) {
  StoreFixture s;
  // 4 slots but kv holds 3 rows: the row count comes from slot_mapping.
  s.expect({0, 1, 2, 3}, ErrorCode::kShapeMismatch, {"3", "4"}, {s.kv.data(), 3, 8});
  s.expect({0, 1}, ErrorCode::kInvalidArgument, {"7"}, {s.kv.data(), 4, 7});  // stride < E
  s.expect({0, 1}, ErrorCode::kShapeMismatch, {}, {nullptr, 4, 8});
  s.expect({0, 1}, ErrorCode::kInvalidArgument, {"block_size", "0"}, {}, 0);
  s.expect({0, 1}, ErrorCode::kInvalidArgument, {"num_blocks"}, {}, 2, 0);
  s.f.token_interleaved = true;  // BF16 is never interleaved
  s.expect({0, 1}, ErrorCode::kInvalidFormat, {});
  const std::vector<int32_t> one{0};
  expect_error([&] { ref::store_kv_cache({s.kv.data(), 4, 8}, one, {},
                                         KVCacheFormat::BF16(8), 3, 2); },
               ErrorCode::kShapeMismatch);
}

// ---------------------------------------------------------------- load errors

struct LoadFixture {
  KVCacheFormat f = KVCacheFormat::MXFP8_INDEX();  // 128 data bytes + 4 scale bytes
  Bytes cache = Bytes(3 * 288, 0x11);              // 3 blocks of 2: stride round_up(264, 32)
  Bytes data = Bytes(6 * 128, 0xAB), scales = Bytes(6 * 4, 0xCD);

  void expect(std::vector<int32_t> segs, int32_t total_k, ErrorCode code,
              std::vector<std::string> needles, LoadOutput out = {}) {
    if (out.rows == 0) out = {data.data(), 128, scales.data(), 4, 6};
    const Bytes data_before = data, scales_before = scales;
    expect_error([&] { ref::load_paged_kv_cache(cache, f, 3, 2, segs, total_k, out); },
                 code, needles);
    EXPECT_EQ(data, data_before);
    EXPECT_EQ(scales, scales_before);
  }
};

TEST(RefLoadErrors, Arguments) {
  LoadFixture l;
  l.expect({0, 0, 2, 0, 1}, 2, ErrorCode::kInvalidArgument, {"5"});
  l.expect({0, 0, 2, 0}, -1, ErrorCode::kInvalidArgument, {"-1"});
  l.expect({0, 0, 2, 0}, 2, ErrorCode::kShapeMismatch, {"1"}, {l.data.data(), 128, l.scales.data(), 4, 1});
  l.expect({0, 0, 2, 0}, 2, ErrorCode::kShapeMismatch, {}, {nullptr, 128, l.scales.data(), 4, 6});
  l.expect({0, 0, 2, 0}, 2, ErrorCode::kShapeMismatch, {}, {l.data.data(), 128, nullptr, 4, 6});
  l.expect({0, 0, 2, 0}, 2, ErrorCode::kShapeMismatch, {"127"}, {l.data.data(), 127, l.scales.data(), 4, 6});
  l.expect({0, 0, 2, 0}, 2, ErrorCode::kShapeMismatch, {"3"}, {l.data.data(), 128, l.scales.data(), 3, 6});
}

TEST(RefLoadErrors, SegmentBlock) {
  LoadFixture l;
  for (int32_t bad : {-2, 3, kMin, kMax})
    l.expect({0, 0, 2, 0, bad, 0, 1, 2}, 4, ErrorCode::kSegmentBlockOutOfRange,
             {"load_segments[1]", std::to_string(bad)});
}

TEST(RefLoadErrors, SegmentRange) {
  LoadFixture l;
  l.expect({0, 0, 2, 0, 1, -1, 1, 2}, 4, ErrorCode::kSegmentRangeInvalid, {"load_segments[1]", "-1"});
  l.expect({0, 0, 2, 0, 1, 2, 1, 2}, 4, ErrorCode::kSegmentRangeInvalid, {"load_segments[1]"});
  l.expect({0, 0, 2, 0, 1, 0, 3, 2}, 4, ErrorCode::kSegmentRangeInvalid, {"load_segments[1]", "3"});
  // Zero fills obey the same range rule (pieces of at most block_size, SPEC §5.3).
  l.expect({0, 0, 2, 0, -1, 0, 3, 2}, 5, ErrorCode::kSegmentRangeInvalid, {"load_segments[1]"});
}

TEST(RefLoadErrors, SegmentDestination) {
  LoadFixture l;
  l.expect({0, 0, 2, 0, 1, 0, 1, -1}, 4, ErrorCode::kSegmentDestinationOutOfRange, {"load_segments[1]", "-1"});
  l.expect({0, 0, 2, 0, 1, 0, 2, 3}, 4, ErrorCode::kSegmentDestinationOutOfRange, {"load_segments[1]", "5"});
  l.expect({0, 0, 2, 0, 1, 0, 1, kMax}, 4, ErrorCode::kSegmentDestinationOutOfRange,
           {"load_segments[1]", std::to_string(kMax)});
  l.expect({0, 0, 1, 0}, 0, ErrorCode::kSegmentDestinationOutOfRange, {"load_segments[0]"});
}

TEST(RefLoadErrors, Overlap) {
  LoadFixture l;
  l.expect({0, 0, 2, 0, 1, 0, 2, 1}, 4, ErrorCode::kSegmentOverlap,
           {"load_segments[1] = [1, 0, 2, 1] writes output row 1", "load_segments[0]"});
  // The smallest failing segment wins: overlap at segment 1 beats a bad block at 2.
  l.expect({0, 0, 2, 0, 1, 0, 2, 1, 9, 0, 1, 3}, 4, ErrorCode::kSegmentOverlap,
           {"load_segments[1]"});
  l.expect({0, 0, 2, 0, 9, 0, 1, 3, 1, 0, 2, 1}, 4, ErrorCode::kSegmentBlockOutOfRange,
           {"load_segments[1]", "9"});
  // Far apart in segment order: [5,6) of segment 0 inside [4,6) of segment 2.
  l.expect({1, 0, 1, 5, 0, 0, 2, 0, 2, 0, 2, 4}, 6, ErrorCode::kSegmentOverlap,
           {"load_segments[0]", "load_segments[2]"});
  // A zero fill overlapping a copy is an overlap too.
  l.expect({-1, 0, 1, 1, 0, 0, 2, 0}, 2, ErrorCode::kSegmentOverlap, {"load_segments[0]"});
}

TEST(RefLoadErrors, NullCache) {
  LoadFixture l;
  const std::vector<int32_t> reads{-1, 0, 1, 0, 0, 0, 1, 1};
  const Bytes before = l.data;
  expect_error([&] { ref::load_paged_kv_cache({}, l.f, 3, 2, reads, 2,
                                              {l.data.data(), 128, l.scales.data(), 4, 6}); },
               ErrorCode::kShapeMismatch, {"load_segments[1]"});
  EXPECT_EQ(l.data, before);
  // Zero fills and empty segments read no cache: a null cache is fine for them.
  const std::vector<int32_t> zeros{-1, 0, 2, 0, 0, 1, 1, 2};
  EXPECT_NO_THROW(ref::load_paged_kv_cache({}, l.f, 3, 2, zeros, 2,
                                           {l.data.data(), 128, l.scales.data(), 4, 6}));
  EXPECT_EQ(l.data[0], 0);
}

// Empty segments write nothing, so they overlap nothing (even at a covered row).
TEST(RefLoad, EmptySegmentInsideAnotherIsNotOverlap) {
  LoadFixture l;
  const std::vector<int32_t> segs{0, 0, 2, 0, 1, 1, 1, 1};
  EXPECT_NO_THROW(ref::load_paged_kv_cache(l.cache, l.f, 3, 2, segs, 2,
                                           {l.data.data(), 128, l.scales.data(), 4, 6}));
  EXPECT_EQ(l.data[0], 0x11);
  EXPECT_EQ(l.data[2 * 128], 0xAB);  // row 2 uncovered
}

}  // namespace
}  // namespace kvcheck
