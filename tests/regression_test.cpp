// Property regression files (properties/regression.h): scenarios survive the JSON
// round trip, a minimal counterexample found by RapidCheck replays without it and
// fails exactly where the bug is, and the campaign's run records (summary.json,
// JUnit) carry what a nightly script reads.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "impl/backends.h"
#include "tests/test_util.h"
#include "properties/registry.h"
#include "properties/regression.h"
#include "properties/runner.h"
#include "reference/layout.h"
#include "tools/kvcheck/campaign.h"
#include "tools/kvcheck/report.h"

namespace kvcheck {
namespace {

const props::Property& property(std::string_view name) {
  for (const auto& p : props::registry().all())
    if (p.name == name) return p;
  throw std::runtime_error("no property " + std::string(name));
}

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
