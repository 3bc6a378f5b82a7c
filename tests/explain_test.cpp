// kvcheck explain (tools/kvcheck/explain.h): decodes corpus files with the fuzzers'
// decoder, guesses the target from the path, and reports unusable input.
#include "tools/kvcheck/explain.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace {

// The source tree holding corpus/ (this file is <root>/tests/explain_test.cpp).
const std::string kRoot = KVCHECK_SOURCE_DIR;

TEST(Explain, CorpusSeedDecodesAndPasses) {
  std::ostringstream out;
  // A committed seed: target guessed from corpus/<target>/.
  EXPECT_EQ(kvcheck::explain_file(kRoot + "/corpus/store/all-padding-bs133", "", out), 0) << out.str();
  EXPECT_NE(out.str().find("target store"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("all-padding"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("block_size 133"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("result: PASS"), std::string::npos) << out.str();
}

TEST(Explain, ExplicitTargetOverridesThePath) {
  std::ostringstream out;
  EXPECT_EQ(kvcheck::explain_file(kRoot + "/corpus/store/empty", "format", out), 0) << out.str();
  EXPECT_NE(out.str().find("format scenario"), std::string::npos) << out.str();
}

TEST(Explain, UnusableInputsSayWhy) {
  std::ostringstream missing, unknown, unguessable;
  EXPECT_EQ(kvcheck::explain_file("/nonexistent/file", "", missing), 2);
  EXPECT_NE(missing.str().find("cannot read"), std::string::npos);
  EXPECT_EQ(kvcheck::explain_file(kRoot + "/corpus/store/empty", "nosuch", unknown), 2);
  EXPECT_NE(unknown.str().find("no fuzz target 'nosuch'"), std::string::npos);
  const std::string tmp = ::testing::TempDir() + "/kvcheck_explain_input";
  std::ofstream(tmp) << "x";
  EXPECT_EQ(kvcheck::explain_file(tmp, "", unguessable), 2);
  EXPECT_NE(unguessable.str().find("store"), std::string::npos);  // lists the targets
}

// The tracked property regression file (README "Reading the output"): its scenario in
// the file is the known answer, read off the file by hand.
const std::string kStoreRegression = kRoot + "/corpus/store/regressions/store_matches_reference-a9196fe6132ec361.json";

// The longest of the scenario's field lines (indented; the one-line "decoded:" form is not).
size_t longest_field_line(const std::string& text) {
  std::istringstream in(text);
  size_t longest = 0;
  for (std::string line; std::getline(in, line);)
    if (line.rfind("  ", 0) == 0) longest = std::max(longest, line.size());
  return longest;
}

TEST(Explain, RegressionScenarioIsReadableNotOneLineJson) {
  std::ostringstream out;
  EXPECT_EQ(kvcheck::explain_file(kStoreRegression, "", out), 0) << out.str();
  const std::string s = out.str();
  EXPECT_NE(s.find("scenario (store):\n"), std::string::npos) << s;
  EXPECT_NE(s.find("\n  block_size: 16\n"), std::string::npos) << s;
  EXPECT_NE(s.find("\n  slot_mapping: [15]\n"), std::string::npos) << s;
  EXPECT_NE(s.find("\n  format: {do_cast false, elements 128, elements_per_sf 32, name \"MXFP8_INDEX\""),
            std::string::npos) << s;
  // The one kv row: its first 16 of 128 values.
  EXPECT_NE(s.find("\n  kv: 1 row(s)\n    [0] 4943 c609 47a4 4658 c766 48d8 c64d 4973 ca7e 47d2 c8f3 c98e c809 481f "
                   "c823 48b7 ... (128 values)\n"),
            std::string::npos) << s;
  // The project's printer of the scenario type, as RapidCheck showed the counterexample.
  EXPECT_NE(s.find("decoded: store {format MXFP8_INDEX, block_size 16, num_blocks 1, fill_seed 0} n=1 "
                   "row_stride=128 slot_mapping=[15] (distinct)"),
            std::string::npos) << s;
  EXPECT_EQ(s.find("\"block_size\":16"), std::string::npos) << "one-line JSON: " << s;
  EXPECT_LE(longest_field_line(s), 160u) << s;
  EXPECT_NE(s.find("result: PASS"), std::string::npos) << s;
}

// An empty string field (a store_kv's `"fault": ""`, read as no fault) is printed as
// "" (it was taken for an array of rows: json type_error 305, exit 2); a field the case
// never reads is refused before anything is printed.
TEST(Explain, AnEmptyStringFieldIsShownAndAFieldOfNoEffectRefused) {
  std::ifstream in(kRoot + "/corpus/store_kv/regressions/store_kv_rope_matches_reference-417dd02de86e5149.json");
  nlohmann::json doc = nlohmann::json::parse(in);
  doc["scenario"]["fault"] = "";
  const std::string tmp = ::testing::TempDir() + "/kvcheck_explain_empty_fault.json";
  std::ofstream(tmp) << doc.dump();
  std::ostringstream out;
  EXPECT_EQ(kvcheck::explain_file(tmp, "", out), 0) << out.str();
  EXPECT_NE(out.str().find("\n  fault: \"\"\n"), std::string::npos) << out.str();
  doc["scenario"]["rope"]["rot_dimm"] = 8;
  std::ofstream(tmp) << doc.dump();
  std::ostringstream refused;
  EXPECT_EQ(kvcheck::explain_file(tmp, "", refused), 2) << refused.str();
  EXPECT_NE(refused.str().find("scenario field 'rope.rot_dimm' has no effect"), std::string::npos) << refused.str();
  EXPECT_EQ(refused.str().find("scenario (store_kv):"), std::string::npos) << refused.str();
}

TEST(Explain, LongArraysAndManyRowsAreAbbreviated) {
  std::ifstream in(kStoreRegression);
  nlohmann::json doc = nlohmann::json::parse(in);
  auto& sc = doc["scenario"];
  sc["num_blocks"] = 3;  // 48 slots: 0..39 are distinct and valid
  sc["slot_mapping"] = nlohmann::json::array();
  for (int i = 0; i < 40; ++i) sc["slot_mapping"].push_back(i);
  const std::string row = sc["kv"][0].get<std::string>();
  sc["kv"] = nlohmann::json::array();
  for (int i = 0; i < 40; ++i) sc["kv"].push_back(row);
  const std::string path = ::testing::TempDir() + "/kvcheck_explain_long.json";
  std::ofstream(path) << doc.dump(2);
  std::ostringstream out;
  EXPECT_EQ(kvcheck::explain_file(path, "", out), 0) << out.str();
  const std::string s = out.str();
  EXPECT_NE(s.find("\n  slot_mapping: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, ... (40 values)]\n"),
            std::string::npos) << s;
  EXPECT_NE(s.find("\n  kv: 40 row(s)\n    [0] 4943 c609"), std::string::npos) << s;
  EXPECT_NE(s.find("\n    [7] 4943 c609"), std::string::npos) << s;
  EXPECT_EQ(s.find("\n    [8] "), std::string::npos) << s;
  EXPECT_NE(s.find("\n    ... (32 more rows)\n"), std::string::npos) << s;
  EXPECT_LE(longest_field_line(s), 160u) << s;
  std::filesystem::remove(path);
}

}  // namespace
