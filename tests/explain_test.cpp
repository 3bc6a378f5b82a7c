// kvcheck explain (tools/kvcheck/explain.h): decodes corpus files with the fuzzers'
// decoder, guesses the target from the path, and reports unusable input.
#include "tools/kvcheck/explain.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace {

// The source tree holding corpus/ (this file is <root>/tests/explain_test.cpp).
const std::string kRoot = std::filesystem::path(__FILE__).parent_path().parent_path().string();

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

}  // namespace
