// The format and numerics targets use the property builders (properties/gen/ops/format/format_gen.h,
// numerics_gen.h) on the input bytes: the empty input is the simplest scenario, a
// scenario grows with its input, and the one check of each op (format_check.h,
// numerics_check.h) passes on decoded inputs and can fail.
#include <gtest/gtest.h>

#include <type_traits>
#include <vector>

#include "fuzzers/decoders.h"
#include "properties/ops/format/format_check.h"
#include "properties/gen/splitmix.h"
#include "properties/ops/numerics/numerics_check.h"
#include "tests/test_util.h"

namespace kvcheck::fuzz {
namespace {

// One type per op for both engines.
static_assert(std::is_same_v<decltype(decode_format(std::declval<ByteSource&>())),
                             decltype(props::gen_format_scenario(props::FormatFields::kAny))::ValueType>);
static_assert(std::is_same_v<decltype(decode_numerics(std::declval<ByteSource&>())),
                             decltype(props::gen_numerics_scenario())::ValueType>);

TEST(FormatDecoder, EmptyInputIsTheSimplestScenario) {
  ByteSource src(nullptr, 0);
  const props::FormatScenario s = decode_format(src);
  EXPECT_EQ(s.format, KVCacheFormat::V41());
  EXPECT_EQ(s.block_size, 1);
  EXPECT_EQ(s.num_blocks, 1);
  EXPECT_EQ(s.block, 0);
  EXPECT_EQ(s.token, 0);
  EXPECT_EQ(s.dtype, CacheDtype::kUInt8);
  EXPECT_TRUE(s.shape.empty());
  EXPECT_EQ(s.sf_choice, 0);
  EXPECT_EQ(props::check_format(s).failure, "");
}

TEST(NumericsDecoder, EmptyInputIsTheSimplestScenario) {
  ByteSource src(nullptr, 0);
  const props::NumericsScenario s = decode_numerics(src);
  EXPECT_EQ(s.format, KVCacheFormat::V41());
  EXPECT_TRUE(s.floats.empty());
  ASSERT_EQ(s.group.size(), static_cast<size_t>(KVCacheFormat::V41().elements_per_sf));
  for (bf16_bits v : s.group) EXPECT_TRUE((v & 0x7F80) != 0 && (v & 0x7F80) != 0x7F80) << v;  // plain normals
  EXPECT_EQ(props::check_numerics(s).failure, "");
}

TEST(FormatNumericsDecoders, ScenariosGrowWithTheInputAndPassTheirCheck) {
  size_t max_floats_short = 0, max_floats_long = 0, max_rank_short = 0;
  int kinds[3] = {0, 0, 0};
  for (uint64_t seed = 0; seed < 300; ++seed) {
    for (size_t len : {size_t{12}, size_t{400}}) {
      const auto b = random_bytes(seed, len);
      ByteSource s1(b.data(), b.size()), s2(b.data(), b.size());
      const props::FormatScenario f = decode_format(s1);
      const props::NumericsScenario n = decode_numerics(s2);
      EXPECT_EQ(props::check_format(f).failure, "") << props::describe(f);
      EXPECT_EQ(props::check_numerics(n).failure, "") << props::describe(n);
      if (len == 12) {
        max_floats_short = std::max(max_floats_short, n.floats.size());
        max_rank_short = std::max(max_rank_short, f.shape.size());
      } else {
        max_floats_long = std::max(max_floats_long, n.floats.size());
        ++kinds[f.format.name == "fuzzed" ? 2 : f.format.name.find("~mutated") != std::string::npos ? 1 : 0];
      }
    }
  }
  EXPECT_LE(max_floats_short, 2u);  // count <= remaining / 5 after the format and values
  EXPECT_LE(max_rank_short, 3u);    // rank <= remaining / 3
  EXPECT_GE(max_floats_long, 40u);
  for (int k : kinds) EXPECT_GE(k, 60);  // valid, mutated, arbitrary: about a third each
}

TEST(FormatCheck, FailsOnAFormatThatMisusesATableName) {
  props::FormatScenario s;
  s.format = KVCacheFormat::V41();
  s.format.elements_per_sf = 64;  // still valid, but no longer the table's V41
  const std::string f = props::check_format(s, props::kFormatValidation).failure;
  EXPECT_NE(f.find("differs from the SPEC table entry"), std::string::npos) << f;
  s.shape = {1, 132};  // resolve_format: 132 bytes without sf is ambiguous
  EXPECT_EQ(props::check_format(s, props::kResolveMatchesTable).failure, "");
}

TEST(NumericsCheck, FailsWhenTheGroupIsNotOneScaleGroup) {
  props::NumericsScenario s;
  s.format = KVCacheFormat::MXFP8_INDEX();
  s.group.assign(3, 0x3F80);  // not elements_per_sf values: quantize_group must refuse
  const std::string f = props::check_numerics(s).failure;
  EXPECT_NE(f.find("quantize_group threw"), std::string::npos) << f;
}

}  // namespace
}  // namespace kvcheck::fuzz
