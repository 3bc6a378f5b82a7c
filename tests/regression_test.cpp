// Property regression files (properties/regression.h): scenarios survive the JSON
// round trip, a minimal counterexample found by RapidCheck replays without it and
// fails exactly where the bug is, and the campaign's run records (summary.json,
// JUnit) carry what a nightly script reads.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <filesystem>
#include <limits>
#include <fstream>
#include <regex>
#include <span>
#include <sstream>

#include "fuzzers/decoders.h"
#include "impl/backends.h"
#include "tests/test_util.h"
#include "properties/gen/ops/swap_blocks/swap_blocks_gen.h"
#include "properties/registry.h"
#include "properties/regression.h"
#include "properties/runner.h"
#include "reference/layout.h"
#include "tools/kvcheck/campaign.h"
#include "tools/kvcheck/report.h"

namespace kvcheck {
namespace {

// The cpu backend with a planted store bug: after a correct store, the first data
// byte of the first valid row's record has its low bit flipped.
class BrokenStoreBackend final : public PlantedStoreBackend {
 public:
  std::string_view name() const override { return "broken-store"; }
  void store_kv_cache(const KVInput& kv, std::span<const int32_t> slots, const CacheView& cache) const override {
    cpu().store_kv_cache(kv, slots, cache);
    const int32_t bs = cache.layout.block_size;
    for (int32_t slot : slots)
      if (slot >= 0) {
        cache.base[ref::data_offset(cache.layout.format, bs, slot / bs, slot % bs)] ^= 1;
        return;
      }
  }
};

props::StoreScenario small_store() {
  props::StoreScenario s;
  s.shape = {KVCacheFormat::MXFP8_INDEX(), 61, 1, 5};
  s.slot_mapping = {-1, 0, 17};
  s.row_stride = 128 + 3;
  s.kv.assign(static_cast<size_t>(3 * s.row_stride), 0x3F80);  // 1.0
  s.kv[1] = 0xC0A0;                                               // -5.0
  s.kv[static_cast<size_t>(s.row_stride) + 7] = 0x7FC0;           // NaN
  return s;
}

TEST(Regression, StoreScenarioSurvivesJson) {
  const props::StoreScenario s = small_store();
  const nlohmann::json j = s;
  EXPECT_EQ(j["type"], "store");
  EXPECT_EQ(j["format"]["name"], "MXFP8_INDEX");
  EXPECT_EQ(j["kv"].size(), 3u);
  // Readable rows: four hex digits per bf16 value, in order.
  EXPECT_EQ(j["kv"][0].get<std::string>().substr(0, 14), "3f80 c0a0 3f80");
  const auto back = nlohmann::json::parse(j.dump()).get<props::StoreScenario>();
  EXPECT_EQ(back.shape.format, s.shape.format);
  EXPECT_EQ(back.shape.block_size, 61);
  EXPECT_EQ(back.shape.fill_seed, 5u);
  EXPECT_EQ(back.slot_mapping, s.slot_mapping);
  EXPECT_EQ(back.row_stride, s.row_stride);
  EXPECT_EQ(back.kv, s.kv);
}

TEST(Regression, LoadScenarioSurvivesJsonWithAPartialSegment) {
  props::LoadScenario s;
  s.shape = {KVCacheFormat::BF16(64), 16, 3, 9};
  s.load_segments = {2, 0, 16, 0, -1, 0, 4, 16, 0};  // last value: a broken (partial) segment
  s.total_k = 20;
  s.out_rows = 22;
  s.out_seed = 77;
  const nlohmann::json j = s;
  EXPECT_EQ(j["load_segments"][0], nlohmann::json({2, 0, 16, 0}));
  EXPECT_EQ(j["load_segments"][2], 0);
  const auto back = j.get<props::LoadScenario>();
  EXPECT_EQ(back.load_segments, s.load_segments);
  EXPECT_EQ(back.total_k, 20);
  EXPECT_EQ(back.out_rows, 22);
  EXPECT_EQ(back.out_seed, 77u);
}

TEST(Regression, MalformedScenarioIsRejected) {
  nlohmann::json j = small_store();
  j["kv"][1] = "3f80 zz";
  EXPECT_THROW(j.get<props::StoreScenario>(), std::exception);
  j = small_store();
  j["format"]["elements_per_sf"] = 7;  // does not divide 128: SPEC §2 validation
  EXPECT_THROW(j.get<props::StoreScenario>(), Error);
}

// The block ops' references keep a table entry per byte of a pool (16 or 24 bytes):
// a regression file asking for a pool past 2^24 bytes is refused when read, before
// anything is allocated, rather than exhausting memory.
TEST(Regression, BlockOpPoolsPast16MiBAreRefused) {
  props::CopyBlocksScenario c;
  c.size_bytes = int64_t{1} << 24;
  nlohmann::json j = c;
  EXPECT_NO_THROW(j.get<props::CopyBlocksScenario>());
  j["size_bytes"] = (int64_t{1} << 24) + 1;
  EXPECT_THROW(j.get<props::CopyBlocksScenario>(), std::runtime_error);
  props::SwapBlocksScenario s;
  s.dst.size_bytes = int64_t{1} << 24;
  j = s;
  EXPECT_NO_THROW(j.get<props::SwapBlocksScenario>());
  j["dst"]["size_bytes"] = (int64_t{1} << 24) + 1;
  EXPECT_THROW(j.get<props::SwapBlocksScenario>(), std::runtime_error);
  // dst_inside_src: -1 (dst apart) or an offset into src; -2 read as -1 silently.
  j = s;
  j["dst_inside_src"] = -1;
  EXPECT_NO_THROW(j.get<props::SwapBlocksScenario>());
  for (const int64_t bad : {int64_t{-2}, int64_t{-100}}) {
    j["dst_inside_src"] = bad;
    EXPECT_THROW(j.get<props::SwapBlocksScenario>(), std::runtime_error) << bad;
  }
}

// A concat fault file may put pe_cache inside the cache's buffer (pe_inside_cache):
// read only when pe_cache then ends inside it, whatever the file's numbers (a wrapped
// sum would hand the backends a wild pointer).
TEST(Regression, PeCacheInsideTheCacheMustFitInIt) {
  props::StoreScenario s;
  s.shape = {KVCacheFormat::BF16(8), 2, 1, 0, 0};  // one 32-byte block
  s.kv_lora_rank = 8;
  s.rope_dim = 8;
  s.row_stride = 16;
  s.pe_shape = s.shape;
  s.pe_inside_cache = 0;
  nlohmann::json j = s;
  EXPECT_NO_THROW(j.get<props::StoreScenario>());
  for (const int64_t bad : {int64_t{1}, std::numeric_limits<int64_t>::max()}) {
    j["pe_inside_cache"] = bad;
    EXPECT_THROW(j.get<props::StoreScenario>(), std::runtime_error) << bad;
  }
  j["pe_inside_cache"] = 0;
  j["pe_cache"]["num_blocks"] = 2;
  j["pe_cache"]["block_stride"] = std::numeric_limits<int64_t>::max();
  EXPECT_THROW(j.get<props::StoreScenario>(), std::runtime_error);
}

TEST(Regression, ReplayPassesOnTheRealBackendAndFailsOnABrokenOne) {
  const auto cpu = available_backends().front();
  const auto& p = property("prop_store_matches_reference");
  const auto doc = props::regression_document(p, "cpu", nlohmann::json(small_store()), {}, "");
  EXPECT_EQ(props::replay_regression(doc, *cpu), "");
  const std::string failure = props::replay_regression(doc, BrokenStoreBackend());
  EXPECT_NE(failure.find("first differing cache byte"), std::string::npos) << failure;
  EXPECT_NE(failure.find("token 0 (slot 0)"), std::string::npos) << failure;  // row 1 stores slot 0
}

TEST(Regression, WrongExpectedErrorFails) {
  props::StoreFaultScenario c{small_store(), "slot_mapping[2] = -2", ErrorCode::kDuplicateSlot};
  c.scenario.slot_mapping[2] = -2;  // really an out-of-range slot
  const auto& p = property("prop_store_invalid_metadata_throws_and_writes_nothing");
  const auto cpu = available_backends().front();
  const std::string failure = props::replay_regression(props::regression_document(p, "cpu", c, {}, ""), *cpu);
  EXPECT_NE(failure.find("expected duplicate-slot"), std::string::npos) << failure;
  c.code = ErrorCode::kSlotOutOfRange;
  EXPECT_EQ(props::replay_regression(props::regression_document(p, "cpu", c, {}, ""), *cpu), "");
}

TEST(Regression, UnknownPropertyOrVersionIsAnError) {
  auto doc = props::regression_document(property("prop_store_matches_reference"), "cpu", small_store(), {}, "");
  doc["property"] = "prop_renamed_away";
  EXPECT_THROW(props::replay_regression(doc, *available_backends().front()), std::runtime_error);
  doc["property"] = "prop_store_matches_reference";
  doc["kvcheck_regression"] = 99;
  EXPECT_THROW(props::replay_regression(doc, *available_backends().front()), std::runtime_error);
  // An op at odds with the property's (a hand edit: it replayed and said "op load").
  doc["kvcheck_regression"] = props::kRegressionVersion;
  EXPECT_EQ(props::replay_regression(doc, *available_backends().front()), "");
  doc["op"] = "load";
  EXPECT_THROW(props::replay_regression(doc, *available_backends().front()), std::runtime_error);
}

// A hand-edited field that changes nothing (misspelt, or meaningless there) is refused
// by name, at any depth; the same field spelt right, even at its default value (which
// the writers leave out), replays.
TEST(Regression, AScenarioFieldThatChangesNothingIsRefused) {
  const auto& p = property("prop_store_matches_reference");
  const auto cpu = available_backends().front();
  const auto doc = props::regression_document(p, "cpu", small_store(), {}, "");
  const auto refusal = [&](const nlohmann::json& d) {
    try {
      props::replay_regression(d, *cpu);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("replayed");
  };
  EXPECT_EQ(props::replay_regression(doc, *cpu), "");
  auto typo = doc;
  typo["scenario"]["threadz"] = 2;
  EXPECT_NE(refusal(typo).find("scenario field 'threadz' has no effect"), std::string::npos) << refusal(typo);
  auto defaults = doc;
  defaults["scenario"]["threads"] = 0;
  defaults["scenario"]["slot_mapping_tail"] = nlohmann::json::array();
  EXPECT_EQ(props::replay_regression(defaults, *cpu), "");
  // Nested: a store_kv file's cache and rope objects.
  const auto& kv = property("prop_store_kv_matches_reference");
  props::StoreKvScenario k;
  k.cache.dtype = KvDtype::kBF16;
  k.cache.block_size = 4;
  k.cache.num_blocks = 2;
  k.cache.num_kv_heads = 1;
  k.cache.head_dim = 8;
  k.slot_mapping = {5, -1};
  k.key = {KvDtype::kBF16, 2, 8, 8, std::vector<uint16_t>(16, 0x3F80)};
  k.value = k.key;
  const auto kv_doc = props::regression_document(kv, "cpu", k, {}, "");
  ASSERT_EQ(props::replay_regression(kv_doc, *cpu), "");
  auto nested = kv_doc;
  nested["scenario"]["cache"]["blok_size"] = 8;
  EXPECT_NE(refusal(nested).find("scenario field 'cache.blok_size' has no effect"), std::string::npos)
      << refusal(nested);
  auto in_rows = kv_doc;
  in_rows["scenario"]["key"]["token_strid"] = 16;
  EXPECT_NE(refusal(in_rows).find("'key.token_strid'"), std::string::npos) << refusal(in_rows);
  // Rows as an object's values were read in its keys' order, any key taken.
  auto rows_object = kv_doc;
  rows_object["scenario"]["key"]["data"] = {{"zz", rows_object["scenario"]["key"]["data"][1]},
                                            {"aa", rows_object["scenario"]["key"]["data"][0]}};
  EXPECT_NE(refusal(rows_object).find("'key.data' is object where the case has an array"), std::string::npos)
      << refusal(rows_object);
  // An optional object the writer leaves out: its own fields are checked one by one.
  auto pe = doc;
  pe["scenario"]["pe_cache"] = {{"block_size", 16}, {"fill_seed", 0}, {"format", doc["scenario"]["format"]},
                                {"num_blocks", 1}};
  EXPECT_NE(refusal(pe).find("scenario field 'pe_cache."), std::string::npos) << refusal(pe);
  // Outside the scenario: "faild_on" read as no pair, and the check runs where the case
  // would not (a capability the backend lacks).
  auto top = doc;
  top["faild_on"] = "x-to-cpu";
  EXPECT_NE(refusal(top).find("field 'faild_on' is not one of a regression file's"), std::string::npos)
      << refusal(top);
  // Nested past 32 levels: refused without recursion (a copy of 100,000 levels overflowed).
  auto deep = doc;
  nlohmann::json v = 1;
  for (int i = 0; i < 100000; ++i) v = nlohmann::json::array({std::move(v)});
  deep["scenario"]["x"] = std::move(v);
  EXPECT_NE(refusal(deep).find("nested deeper than 32 levels"), std::string::npos) << refusal(deep);
}

// One key twice in an object: nlohmann's parse keeps the last silently; a regression
// file's text is refused naming it, at any depth; a file as written parses as before.
TEST(Regression, AKeyTwiceInARegressionFileIsRefused) {
  const auto doc = props::regression_document(property("prop_store_matches_reference"), "cpu", small_store(), {}, "");
  EXPECT_EQ(props::parse_regression_text(doc.dump()), doc);
  const auto refusal = [](const std::string& text) {
    try {
      props::parse_regression_text(text);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("parsed");
  };
  std::string twice = doc.dump();
  twice.insert(twice.find("\"scenario\":{") + 12, "\"threads\":2,");
  twice.insert(twice.rfind('}'), ",\"op\":\"store\"");
  EXPECT_NE(refusal(twice).find("field 'op' appears twice"), std::string::npos) << refusal(twice);
  std::string nested = doc.dump();
  nested.insert(nested.find("\"scenario\":{") + 12, "\"threads\":2,\"threads\":0,");
  EXPECT_NE(refusal(nested).find("field 'threads' appears twice"), std::string::npos) << refusal(nested);
  // The same key in two objects is no repeat.
  EXPECT_EQ(refusal(R"({"a":{"k":1},"b":{"k":2},"c":[{"k":3},{"k":4}]})"), "parsed");
}

TEST(Regression, FileNameIsStableAndContentAddressed) {
  const auto& p = property("prop_store_matches_reference");
  const auto a = props::regression_document(p, "cpu", small_store(), {{"seed", 1}}, "x");
  const auto b = props::regression_document(p, "cuda", small_store(), {{"seed", 2}}, "y");
  auto other = small_store();
  other.slot_mapping[2] = 18;
  const auto c = props::regression_document(p, "cpu", other, {}, "");
  EXPECT_TRUE(std::regex_match(props::regression_file_name(a), std::regex("store_matches_reference-[0-9a-f]{16}\\.json")))
      << props::regression_file_name(a);
  EXPECT_EQ(props::regression_file_name(a), props::regression_file_name(b));  // same scenario, same name
  EXPECT_NE(props::regression_file_name(a), props::regression_file_name(c));
}

// The whole path: RapidCheck finds and shrinks a planted bug, the runner keeps the
// minimal scenario, and that scenario alone (no RapidCheck) reproduces it.
TEST(Regression, MinimalCounterexampleReplaysWithoutRapidCheck) {
  const BrokenStoreBackend broken;
  const auto& p = property("prop_store_matches_reference");
  const auto o = props::run_property(p, broken, {12345, 100, 100});
  ASSERT_TRUE(o.failed);
  ASSERT_FALSE(o.scenario.empty()) << o.message;
  const auto scenario = nlohmann::json::parse(o.scenario);
  const auto s = scenario.get<props::StoreScenario>();
  int valid = 0;
  for (int32_t slot : s.slot_mapping) valid += slot >= 0;
  EXPECT_EQ(valid, 1) << "RapidCheck shrinks to one stored row: " << scenario.dump();
  const auto doc = props::regression_document(p, "broken-store", scenario, {}, o.message);
  EXPECT_NE(props::replay_regression(doc, broken), "");
  EXPECT_EQ(props::replay_regression(doc, *available_backends().front()), "");
}

// ---- The K/V family (store_kv, gather_kv): JSON forms, exact, and the whole path.

// Field by field, floats by their bits (a NaN scale equals itself).
bool same_bits(std::span<const float> a, std::span<const float> b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::bit_cast<uint32_t>(a[i]) != std::bit_cast<uint32_t>(b[i])) return false;
  return true;
}

bool same(const props::KvCacheShape& a, const props::KvCacheShape& b) {
  return a.dtype == b.dtype && a.order == b.order && a.num_blocks == b.num_blocks && a.block_size == b.block_size &&
         a.num_kv_heads == b.num_kv_heads && a.head_dim == b.head_dim && a.pad_head == b.pad_head &&
         a.pad_token == b.pad_token && a.pad_page == b.pad_page && a.alloc == b.alloc &&
         a.num_layers == b.num_layers && a.layer == b.layer && a.scale_kind == b.scale_kind &&
         same_bits(a.k_scale, b.k_scale) && same_bits(a.v_scale, b.v_scale) && a.fill_seed == b.fill_seed &&
         a.capacity_cut == b.capacity_cut;
}

bool same(const props::KvRows& a, const props::KvRows& b) {
  return a.dtype == b.dtype && a.rows == b.rows && a.token_stride == b.token_stride &&
         a.head_stride == b.head_stride && a.data == b.data;
}

bool same(const std::optional<props::ScenarioRope>& a, const std::optional<props::ScenarioRope>& b) {
  if (!a || !b) return !a && !b;
  return a->rot_dim == b->rot_dim && a->rope_offset == b->rope_offset && a->is_neox == b->is_neox &&
         a->max_position == b->max_position && same_bits(a->cos_sin, b->cos_sin) && a->positions == b->positions;
}

bool same(const props::StoreKvScenario& a, const props::StoreKvScenario& b) {
  return same(a.cache, b.cache) && a.slot_mapping == b.slot_mapping && same(a.key, b.key) &&
         same(a.value, b.value) && a.fault == b.fault && a.code == b.code && a.threads == b.threads &&
         a.slot_tail == b.slot_tail && same(a.rope, b.rope);
}

bool same(const props::GatherKvScenario& a, const props::GatherKvScenario& b) {
  return same(a.cache, b.cache) && a.block_table == b.block_table && a.max_blocks == b.max_blocks &&
         a.cu_seqlens_k == b.cu_seqlens_k && a.out_k_dtype == b.out_k_dtype && a.out_v_dtype == b.out_v_dtype &&
         a.out_rows == b.out_rows && a.out_pad_head == b.out_pad_head && a.out_pad_token == b.out_pad_token &&
         a.out_seed == b.out_seed && a.fault == b.fault && a.code == b.code && a.threads == b.threads &&
         a.out_offset == b.out_offset && a.seq_starts == b.seq_starts && a.seq_start_unit == b.seq_start_unit;
}

// to_json, the text a file holds, from_json.
template <class S>
S through_file(const S& s) {
  return nlohmann::json::parse(nlohmann::json(s).dump(2)).get<S>();
}

bool has_non_finite(const props::KvCacheShape& c) {
  for (const auto* v : {&c.k_scale, &c.v_scale})
    for (float f : *v)
      if (!std::isfinite(f)) return true;
  return false;
}

props::StoreKvScenario small_store_kv() {
  props::StoreKvScenario s;
  s.cache.dtype = KvDtype::kE4M3;
  s.cache.num_blocks = 2;
  s.cache.block_size = 3;
  s.cache.num_kv_heads = 2;
  s.cache.head_dim = 4;
  s.cache.scale_kind = KvScaleKind::kPerHead;
  s.cache.k_scale = {0.5f, -0.0f};
  s.cache.v_scale = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()};
  s.slot_mapping = {-1, 4};
  s.key = props::make_kv_rows(KvDtype::kBF16, 2, 8, 4, 2, 4, 7);
  s.key.data[0] = 0x3F80;  // 1.0
  s.key.data[1] = 0xC0A0;  // -5.0
  s.value = props::make_kv_rows(KvDtype::kFP16, 2, 8, 4, 2, 4, 8);
  s.fault = "a scale is nan";
  s.code = ErrorCode::kInvalidArgument;
  return s;
}

TEST(Regression, KvScenarioJsonIsReadable) {
  const nlohmann::json j = small_store_kv();
  EXPECT_EQ(j["type"], "store_kv");
  EXPECT_EQ(j["cache"]["dtype"], "e4m3");
  EXPECT_EQ(j["cache"]["scale_kind"], "per-head");
  EXPECT_EQ(j["cache"]["k_scale"][0], 0.5);
  EXPECT_EQ(j["cache"]["v_scale"], nlohmann::json({"0x7fc00000", "0x7f800000"}));  // bits: JSON has no NaN
  EXPECT_EQ(j["key"]["dtype"], "bf16");
  EXPECT_EQ(j["key"]["data"].size(), 2u);  // one string per token row (token_stride 8 values)
  EXPECT_EQ(j["key"]["data"][0].get<std::string>().substr(0, 9), "3f80 c0a0");
  EXPECT_EQ(j["fault"], "a scale is nan");
  EXPECT_EQ(j["expected_error"], "invalid-argument");
  EXPECT_FALSE(j.contains("threads"));  // defaults are left out

  props::GatherKvScenario g;
  g.cache = small_store_kv().cache;
  g.max_blocks = 2;
  g.block_table = {1, -1, 0, 1, 0};  // two rows of max_blocks, then one entry too many
  g.cu_seqlens_k = {0, 2, 5};
  g.out_rows = 5;
  const nlohmann::json jg = g;
  EXPECT_EQ(jg["block_table"], nlohmann::json::parse("[[1, -1], [0, 1], 0]"));
  EXPECT_TRUE(same(through_file(g), g));
}

TEST(Regression, MalformedKvScenarioIsRejected) {
  nlohmann::json j = small_store_kv();
  j["key"]["data"][1] = "3f80 zz";
  EXPECT_THROW(j.get<props::StoreKvScenario>(), std::exception);
  j = small_store_kv();
  j["cache"]["v_scale"][0] = "nan";
  EXPECT_THROW(j.get<props::StoreKvScenario>(), std::exception);
  j = small_store_kv();
  j["cache"]["dtype"] = "int8";
  EXPECT_THROW(j.get<props::StoreKvScenario>(), std::exception);
  j = small_store_kv();
  j["type"] = "gather_kv";
  EXPECT_THROW(j.get<props::StoreKvScenario>(), std::exception);
  // Found by the adversarial review: each of these replayed another input than the file
  // describes, and passed. Rows that hold fewer elements than rows and strides claim
  // (the backend would read past the buffer), by a larger rows or a shorter data row:
  const auto refused = [](const nlohmann::json& bad, const std::string& why) {
    try {
      (void)bad.get<props::StoreKvScenario>();
      ADD_FAILURE() << "accepted: " << bad.dump();
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  j = small_store_kv();
  j["key"]["rows"] = 3;
  refused(j, "key: 16 elements of data, but rows 3, token_stride 8 and head_stride 4 over 2 heads of 4 claim more");
  j = small_store_kv();
  j["value"]["data"][1] = "3c00";
  refused(j, "value: 9 elements of data");
  j = small_store_kv();
  j["key"]["rows"] = int64_t{1} << 40;
  refused(j, "key rows 1099511627776 is more than a scenario may ask for");
  j = small_store_kv();
  j["cache"]["pad_page"] = -100;
  refused(j, "K/V cache shape out of range");
  j = small_store_kv();
  j["threads"] = -1;
  refused(j, "threads -1 is not in [0, 64]");
  j = small_store_kv();
  j["key"]["data"][0] = "+3f8 c0a0";
  refused(j, "bad 16-bit hex value at '+3f8 c0a' (four hex digits each)");
  j = small_store_kv();  // and the file as written is read back
  j["threads"] = 4;
  EXPECT_EQ(j.get<props::StoreKvScenario>().threads, 4);
}

// nlohmann's get<int32_t> wraps: 2^32 + 16 would be read as 16 and 2.5 as 2, so a
// corrupted file would replay another scenario (and pass). Each integer field is read
// whole or refused, naming the field.
TEST(Regression, IntegersAreReadWholeOrRefused) {
  const auto message = [](const nlohmann::json& j) -> std::string {
    try {
      (void)j.get<props::StoreKvScenario>();
      return "";
    } catch (const std::runtime_error& e) {
      return e.what();
    }
  };
  nlohmann::json j = small_store_kv();
  EXPECT_EQ(message(j), "");
  j["cache"]["block_size"] = (uint64_t{1} << 32) + 16;
  EXPECT_NE(message(j).find("field 'block_size': 4294967312 is not an integer in [-2147483648, 2147483647]"),
            std::string::npos)
      << message(j);
  j["cache"]["block_size"] = 2.5;
  EXPECT_NE(message(j).find("field 'block_size': 2.5"), std::string::npos) << message(j);
  j = small_store_kv();
  j["cache"]["fill_seed"] = -1;  // uint64_t
  EXPECT_NE(message(j).find("field 'fill_seed'"), std::string::npos) << message(j);
  j = small_store_kv();
  j["slot_mapping"][1] = int64_t{1} << 31;
  EXPECT_NE(message(j).find("field 'slot_mapping[1]'"), std::string::npos) << message(j);
  j["slot_mapping"][1] = -(int64_t{1} << 31);  // INT32_MIN itself is a value faults draw
  EXPECT_EQ(message(j), "");
}

// A regression file cannot ask for more memory than a generated case could: an output
// of 10^9 rows, a 10^9-block cache, a gather of 10^9 tokens are refused when read,
// before anything is allocated; a cache of no block (the round trip would divide by
// its block_size before the harness's own check) too.
TEST(Regression, ScenariosPastTheGeneratorsSizesAreRefused) {
  nlohmann::json j = small_store_kv();
  j["cache"]["num_blocks"] = 1000000000;
  EXPECT_THROW(j.get<props::StoreKvScenario>(), std::runtime_error);
  props::GatherKvScenario g;
  g.cache = small_store_kv().cache;
  g.max_blocks = 2;
  g.block_table = {1, 0};
  g.cu_seqlens_k = {0, 2};
  g.out_rows = 2;
  nlohmann::json jg = g;
  EXPECT_NO_THROW(jg.get<props::GatherKvScenario>());
  jg["cu_seqlens_k"][1] = 1000000000;
  EXPECT_THROW(jg.get<props::GatherKvScenario>(), std::runtime_error);
  jg = g;
  jg["out_rows"] = 1000000000;
  EXPECT_THROW(jg.get<props::GatherKvScenario>(), std::runtime_error);
  nlohmann::json js = small_store();
  EXPECT_NO_THROW(js.get<props::StoreScenario>());
  js["block_size"] = 0;
  EXPECT_THROW(js.get<props::StoreScenario>(), std::runtime_error);
  js = small_store();
  js["num_blocks"] = 1000000000;
  EXPECT_THROW(js.get<props::StoreScenario>(), std::runtime_error);
}

// Every scenario the builders make, valid, with a fault and with raw values (raw scale
// bits: NaN payloads, infinities, subnormals), comes back from its file unchanged.
TEST(Regression, KvScenariosRoundTripExactly) {
  int fp8_scaled = 0, faults = 0, raw = 0, non_finite = 0, gathers = 0, starts = 0, ropes = 0;
  for (uint64_t seed = 0; seed < 600; ++seed)
    for (size_t len : {size_t{16}, size_t{700}, size_t{4000}}) {
      const auto bytes = random_bytes(seed, len);
      fuzz::ByteSource a(bytes.data(), len), b(bytes.data(), len);
      const props::StoreKvScenario s = fuzz::decode_store_kv(a);
      const props::GatherKvScenario g = fuzz::decode_gather_kv(b);
      ASSERT_TRUE(same(through_file(s), s)) << nlohmann::json(s).dump();
      ASSERT_TRUE(same(through_file(g), g)) << nlohmann::json(g).dump();
      for (const props::KvCacheShape* c : {&s.cache, &g.cache}) {
        fp8_scaled += is_fp8(c->dtype) && !c->k_scale.empty();
        non_finite += has_non_finite(*c);
      }
      faults += s.code.has_value() + g.code.has_value();
      raw += (!s.fault.empty() && !s.code) + (!g.fault.empty() && !g.code);
      gathers += !g.cu_seqlens_k.empty() && g.cu_seqlens_k.back() > 0;
      starts += !g.seq_starts.empty();
      ropes += s.rope.has_value();
    }
  EXPECT_GE(fp8_scaled, 100);
  EXPECT_GE(faults, 100);
  EXPECT_GE(raw, 20);
  EXPECT_GE(non_finite, 5);
  EXPECT_GE(gathers, 100);
  EXPECT_GE(starts, 100);  // the fuzz decoder's default capabilities take seq_starts
  EXPECT_GE(ropes, 100);   // and a fused RoPE of the key rows (docs/spec.md §8.4): its table bit for bit
  // The RapidCheck generators of the properties (the same builders on RapidCheck draws).
  EXPECT_TRUE(rc::check("store_kv scenarios survive JSON", [] {
    const auto s = *rc::gen::oneOf(props::gen_store_kv_scenario(), props::gen_store_kv_fault_scenario(),
                                   props::gen_store_kv_rope_scenario(), props::gen_store_kv_rope_fault_scenario());
    RC_ASSERT(same(through_file(s), s));
  }));
  EXPECT_TRUE(rc::check("gather_kv scenarios survive JSON", [] {
    const auto g = *rc::gen::oneOf(props::gen_gather_kv_scenario(), props::gen_gather_kv_fault_scenario(),
                                   props::gen_gather_kv_seq_starts_fault_scenario());
    RC_ASSERT(same(through_file(g), g));
  }));
}

// A large RoPE table (2^20 floats, the generators' pattern but for its last rows) is
// written as the pattern's row count and its other rows: a campaign's failing case at
// head_dim 80 once made a 10.5 MB file. The pattern here is the header's formula, by
// hand; the full form (every row written) still reads, to the same table.
// A table of `rows` rows of the pattern (rope_gen.h's formula, by hand).
props::ScenarioRope pattern_table(int32_t rot_dim, int64_t rows) {
  props::ScenarioRope r;
  r.rot_dim = rot_dim;
  r.max_position = rows;
  r.positions = {rows - 1, 0};
  r.cos_sin.resize(static_cast<size_t>(rows * rot_dim));
  const int32_t half = rot_dim / 2;
  for (int64_t p = 0; p < rows; ++p)
    for (int32_t j = 0; j < half; ++j) {
      r.cos_sin[static_cast<size_t>(p * rot_dim + j)] = static_cast<float>((p + j) & 1023) / 1024.0f;
      r.cos_sin[static_cast<size_t>(p * rot_dim + half + j)] = -static_cast<float>((p ^ j) & 511) / 512.0f;
    }
  return r;
}

TEST(Regression, RopeTablePatternRowsAreACount) {
  props::ScenarioRope r = pattern_table(80, (int64_t{1} << 20) / 80 - 3);
  const int64_t drawn = 4;  // the last rows drawn, off the pattern
  for (int64_t p = r.max_position - drawn; p < r.max_position; ++p)
    for (int32_t i = 0; i < r.rot_dim; ++i)
      r.cos_sin[static_cast<size_t>(p * r.rot_dim + i)] = std::bit_cast<float>(0x7FC01234u + uint32_t(p + i % 40));
  nlohmann::json j = r;
  EXPECT_EQ(j.at("cos_sin_pattern_rows"), r.max_position - drawn);
  EXPECT_EQ(j.at("cos_sin_bits").size(), size_t{drawn});
  EXPECT_LT(j.dump().size(), size_t{8192});
  EXPECT_TRUE(same(std::optional(through_file(r)), std::optional(r)));
  // The full form: every row as hex halves, low half first, no count.
  nlohmann::json full = j;
  full.erase("cos_sin_pattern_rows");
  full["cos_sin_bits"] = nlohmann::json::array();
  for (int64_t p = 0; p < r.max_position; ++p) {
    std::string row;
    for (int32_t i = 0; i < r.rot_dim; ++i) {
      const uint32_t b = std::bit_cast<uint32_t>(r.cos_sin[static_cast<size_t>(p * r.rot_dim + i)]);
      row += fmt::format("{}{:04x} {:04x}", i ? " " : "", b & 0xFFFFu, b >> 16);
    }
    full["cos_sin_bits"].push_back(row);
  }
  EXPECT_TRUE(same(std::optional(full.get<props::ScenarioRope>()), std::optional(r)));
  // A row off the pattern in the middle ends the count there.
  r.cos_sin[static_cast<size_t>(5 * r.rot_dim + 7)] = -0.0f;
  j = r;
  EXPECT_EQ(j.at("cos_sin_pattern_rows"), 5);
  EXPECT_TRUE(same(std::optional(through_file(r)), std::optional(r)));
  // A table with no pattern row has no count.
  r.cos_sin[3] = 2.0f;
  EXPECT_FALSE(nlohmann::json(r).contains("cos_sin_pattern_rows"));
  // Counts a table cannot have.
  for (const int64_t bad : {int64_t{-1}, int64_t{1} << 40}) {
    nlohmann::json b = nlohmann::json(r);
    b["cos_sin_pattern_rows"] = bad;
    EXPECT_THROW(b.get<props::ScenarioRope>(), std::runtime_error) << bad;
  }
  for (const int32_t rot_dim : {79, 0, -80}) {
    nlohmann::json b = j;
    b["rot_dim"] = rot_dim;
    EXPECT_THROW(b.get<props::ScenarioRope>(), std::runtime_error) << rot_dim;
  }
  // One row past 2^22 floats in all is refused; the last count that fits is read.
  nlohmann::json past = j;
  past["cos_sin_bits"] = nlohmann::json::array();
  past["cos_sin_pattern_rows"] = (int64_t{1} << 22) / r.rot_dim + 1;
  EXPECT_THROW(past.get<props::ScenarioRope>(), std::runtime_error);
  past["cos_sin_pattern_rows"] = (int64_t{1} << 22) / r.rot_dim;
  EXPECT_EQ(past.get<props::ScenarioRope>().cos_sin.size(), size_t((int64_t{1} << 22) / r.rot_dim * r.rot_dim));
  // A table that is the pattern throughout: a count and no rows; one whose size is not
  // a whole number of rows keeps its tail after the count.
  props::ScenarioRope whole = pattern_table(8, 3000);
  j = whole;
  EXPECT_EQ(j.at("cos_sin_pattern_rows"), 3000);
  EXPECT_TRUE(j.at("cos_sin_bits").empty());
  EXPECT_TRUE(same(std::optional(through_file(whole)), std::optional(whole)));
  whole.cos_sin.resize(3000 * 8 + 3);
  whole.cos_sin[3000 * 8 + 1] = -0.0f;
  j = whole;
  EXPECT_EQ(j.at("cos_sin_pattern_rows"), 3000);
  EXPECT_EQ(j.at("cos_sin_bits").size(), 1u);
  EXPECT_TRUE(same(std::optional(through_file(whole)), std::optional(whole)));
}

// concat_and_cache_mla scenarios with a fused RoPE (docs/spec.md §8.4), valid and faulted,
// come back from their files unchanged: the same JSON text again (the table as fp32 bit
// patterns, so NaN payloads and -0 survive).
TEST(Regression, ConcatRopeScenariosRoundTripExactly) {
  int ropes = 0, nan_tables = 0;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const auto bytes = random_bytes(seed, 900);
    fuzz::ByteSource src(bytes.data(), bytes.size());
    const props::StoreFaultScenario c = fuzz::decode_concat_and_cache_mla(src);
    ASSERT_EQ(nlohmann::json(through_file(c)).dump(), nlohmann::json(c).dump());
    if (!c.scenario.rope) continue;
    ++ropes;
    nan_tables += std::any_of(c.scenario.rope->cos_sin.begin(), c.scenario.rope->cos_sin.end(),
                              [](float x) { return std::isnan(x); });
  }
  EXPECT_GE(ropes, 30);
  EXPECT_GE(nan_tables, 2);
  EXPECT_TRUE(rc::check("concat rope scenarios survive JSON", [] {
    const auto c = *rc::gen::oneOf(props::gen_concat_rope_fault_scenario(),
                                   rc::gen::map(props::gen_concat_rope_scenario(), [](props::StoreScenario s) {
                                     return props::StoreFaultScenario{std::move(s), "", std::nullopt};
                                   }));
    RC_ASSERT(nlohmann::json(through_file(c)).dump() == nlohmann::json(c).dump());
  }));
}

// The cpu backend, every operation forwarded; the two below each plant one K/V bug.
class CpuKvBackend : public PlantedStoreBackend {
 public:
  BackendCapabilities capabilities() const override { return cpu().capabilities(); }
  void store_kv_cache(const KVInput& kv, std::span<const int32_t> slots, const CacheView& cache) const override {
    cpu().store_kv_cache(kv, slots, cache);
  }
  void store_kv(const KvTokensIn& key, const KvTokensIn& value, std::span<const int32_t> slots,
                const KvCacheView& cache, const RopeArgs* rope = nullptr) const override {
    cpu().store_kv(key, value, slots, cache, rope);
  }
  void gather_kv(const GatherKvArgs& a) const override { cpu().gather_kv(a); }
};

// A planted store_kv bug: after a correct store, the first byte of the first valid
// slot's K record has its low bit flipped.
class BrokenStoreKvBackend final : public CpuKvBackend {
 public:
  std::string_view name() const override { return "broken-store-kv"; }
  void store_kv(const KvTokensIn& key, const KvTokensIn& value, std::span<const int32_t> slots,
                const KvCacheView& cache, const RopeArgs* rope = nullptr) const override {
    CpuKvBackend::store_kv(key, value, slots, cache, rope);
    const KvCacheLayout& l = cache.layout;
    for (int32_t slot : slots)
      if (slot >= 0) {
        cache.k[(slot / l.block_size * l.stride_page + slot % l.block_size * l.stride_token) * kv_dtype_bytes(l.dtype)] ^= 1;
        return;
      }
  }
};

// A planted gather_kv bug: the first element of out_k row 0 is off by one bit
// whenever a row was gathered.
class BrokenGatherKvBackend final : public CpuKvBackend {
 public:
  std::string_view name() const override { return "broken-gather-kv"; }
  void gather_kv(const GatherKvArgs& a) const override {
    CpuKvBackend::gather_kv(a);
    if (!a.cu_seqlens_k.empty() && a.cu_seqlens_k.back() > 0) a.out_k.data[0] ^= 1;
  }
};

// The whole path for the K/V family: RapidCheck shrinks the planted bug, the runner
// keeps the minimal scenario as JSON, and the regression document alone (no RapidCheck)
// fails on the broken backend and holds on cpu.
TEST(Regression, StoreKvMinimalCounterexampleReplaysWithoutRapidCheck) {
  const BrokenStoreKvBackend broken;
  const auto& p = property("prop_store_kv_matches_reference");
  const auto o = props::run_property(p, broken, {12345, 100, 100});
  ASSERT_TRUE(o.failed);
  ASSERT_FALSE(o.scenario.empty()) << "no regression scenario recorded:\n" << o.message;
  const auto scenario = nlohmann::json::parse(o.scenario);
  const auto s = scenario.get<props::StoreKvScenario>();
  int valid = 0;
  for (int32_t slot : s.slot_mapping) valid += slot >= 0;
  EXPECT_EQ(valid, 1) << "RapidCheck shrinks to one stored row: " << scenario.dump();
  const auto doc = props::regression_document(p, "broken-store-kv", scenario, {}, o.message);
  const std::string failure = props::replay_regression(doc, broken);
  EXPECT_NE(failure.find("op=store_kv"), std::string::npos) << failure;
  EXPECT_EQ(props::replay_regression(doc, *available_backends().front()), "");
  EXPECT_TRUE(std::regex_match(props::regression_file_name(doc), std::regex("store_kv_matches_reference-[0-9a-f]{16}\\.json")));
}

TEST(Regression, GatherKvMinimalCounterexampleReplaysWithoutRapidCheck) {
  const BrokenGatherKvBackend broken;
  const auto& p = property("prop_gather_kv_matches_reference");
  const auto o = props::run_property(p, broken, {12345, 100, 100});
  ASSERT_TRUE(o.failed);
  ASSERT_FALSE(o.scenario.empty()) << "no regression scenario recorded:\n" << o.message;
  const auto scenario = nlohmann::json::parse(o.scenario);
  const auto g = scenario.get<props::GatherKvScenario>();
  EXPECT_EQ(g.cu_seqlens_k, (std::vector<int32_t>{0, 1})) << "RapidCheck shrinks to one gathered row: " << scenario.dump();
  const auto doc = props::regression_document(p, "broken-gather-kv", scenario, {}, o.message);
  EXPECT_NE(props::replay_regression(doc, broken), "");
  EXPECT_EQ(props::replay_regression(doc, *available_backends().front()), "");
}

// A fault scenario's file demands its error: the replay fails while the code is wrong.
TEST(Regression, KvFaultReplayChecksTheExpectedError) {
  props::GatherKvScenario g;
  g.cache.num_blocks = 2;
  g.cache.block_size = 2;
  g.max_blocks = 1;
  g.block_table = {5};  // block 5 of 2: out of range
  g.cu_seqlens_k = {0, 1};
  g.out_rows = 1;
  g.fault = "block_table[0][0] = 5 is needed";
  g.code = ErrorCode::kRangeOutOfTable;  // wrong: SPEC §7.5 says kBlockOutOfRange
  const auto& p = property("prop_gather_kv_invalid_input_throws_and_writes_nothing");
  const auto cpu = available_backends().front();
  EXPECT_NE(props::replay_regression(props::regression_document(p, "cpu", g, {}, ""), *cpu), "");
  g.code = ErrorCode::kBlockOutOfRange;
  EXPECT_EQ(props::replay_regression(props::regression_document(p, "cpu", g, {}, ""), *cpu), "");
}

TEST(RunRecord, SummaryHasTheSchemaAScriptReads) {
  const std::string dir = (std::filesystem::temp_directory_path() / ("kvcheck_run_" + std::to_string(getpid()))).string();
  tool::CampaignOptions o;
  o.cases = 2;
  o.seed = 3;
  o.progress = false;
  o.properties = {"layout"};
  o.run_dir = dir;
  o.junit_path = dir + ".xml";
  std::ostringstream out, progress;
  const char* old = std::getenv("RC_PARAMS");
  const std::string saved = old ? old : "";
  const int rc = tool::run_campaign(o, out, progress);
  if (old) setenv("RC_PARAMS", saved.c_str(), 1); else unsetenv("RC_PARAMS");
  ASSERT_EQ(rc, 0) << out.str();
  std::ifstream f(dir + "/summary.json");
  ASSERT_TRUE(f) << out.str();
  const auto j = nlohmann::json::parse(f);
  EXPECT_EQ(j["schema"], "kvcheck-summary");
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["kind"], "run");
  EXPECT_EQ(j["verdict"], "pass");
  EXPECT_FALSE(j["commit"].get<std::string>().empty());
  EXPECT_TRUE(std::regex_match(j["start_time"].get<std::string>(), std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")));
  EXPECT_TRUE(j["host"]["isa"] == "avx2" || j["host"]["isa"] == "baseline");
  EXPECT_GE(j["host"]["threads"].get<int>(), 1);
  size_t layout_properties = 0;  // what --property layout selects (campaign.cpp)
  for (const auto& p : props::registry().all())
    layout_properties += p.name.find("layout") != std::string::npos || p.op == "layout";
  ASSERT_GE(layout_properties, 2u);
  ASSERT_EQ(j["results"].size(), layout_properties);  // every selected host property, once
  for (const auto& r : j["results"]) {
    EXPECT_EQ(r["verdict"], "pass");
    EXPECT_EQ(r["execs"], 2);
    EXPECT_EQ(r["backend"], "host");
  }
  std::ifstream log(dir + "/campaign.log");
  const std::string text((std::istreambuf_iterator<char>(log)), {});
  EXPECT_NE(text.find("all properties held"), std::string::npos);
  std::ifstream x(dir + ".xml");
  const std::string xml((std::istreambuf_iterator<char>(x)), {});
  EXPECT_NE(xml.find("<testcase classname=\"layout\" name=\"prop_layout_offsets_match_reference/host\""),
            std::string::npos)
      << xml;
  std::filesystem::remove_all(dir);
  std::filesystem::remove(dir + ".xml");
}

TEST(RunRecord, JunitEscapesAndReportsFailures) {
  const nlohmann::json summary = {
      {"kind", "fuzz"},
      {"verdict", "fail"},
      {"seconds", 1.5},
      {"results",
       {{{"name", "store"}, {"verdict", "fail"}, {"seconds", 1},
         {"failures", {{{"message", "a < b & \"c\"\nsecond line"}, {"reproduce", "fuzz_store x"}}}}},
        {{"name", "load"}, {"verdict", "pass"}, {"seconds", 0.5}},
        {{"name", "plan"}, {"verdict", "not_run"}, {"why", "interrupted"}}}}};
  std::ostringstream x;
  tool::write_junit(summary, x);
  const std::string s = x.str();
  EXPECT_NE(s.find("tests=\"3\" failures=\"1\" skipped=\"1\""), std::string::npos) << s;
  EXPECT_NE(s.find("<failure message=\"a &lt; b &amp; &quot;c&quot;\">"), std::string::npos) << s;
  EXPECT_NE(s.find("reproduce: fuzz_store x"), std::string::npos) << s;
  EXPECT_NE(s.find("<skipped message=\"interrupted\"/>"), std::string::npos) << s;
  EXPECT_EQ(s.find("a < b"), std::string::npos) << s;
}

TEST(RunRecord, AtomicWriteReplacesWholeFiles) {
  const std::string path = (std::filesystem::temp_directory_path() / ("kvcheck_atomic_" + std::to_string(getpid()))).string();
  ASSERT_TRUE(tool::write_file_atomically(path, "first version, longer\n"));
  ASSERT_TRUE(tool::write_file_atomically(path, "second\n"));
  std::ifstream f(path);
  const std::string text((std::istreambuf_iterator<char>(f)), {});
  EXPECT_EQ(text, "second\n");
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::temp_directory_path()))
    EXPECT_EQ(e.path().string().find(path + ".tmp"), std::string::npos) << "left " << e.path();
  std::filesystem::remove(path);
  EXPECT_FALSE(tool::write_file_atomically("/nonexistent-dir/kvcheck/summary.json", "x"));
}

}  // namespace
}  // namespace kvcheck
