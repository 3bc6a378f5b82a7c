// JUnit XML of a summary (tools/kvcheck/report.h write_junit): the seeds a CI reader needs
// to reproduce a run, on the suite (kvcheck run), per testcase (a fuzz target) and in
// each failure's text next to its reproduce command. (The CTest cli.junit_seed parses a
// real run's XML with Python's XML parser.)
#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <string>

#include "tools/kvcheck/report.h"

namespace kvcheck {
namespace {

TEST(Junit, SuiteCarriesTheRunSeed) {
  const nlohmann::json summary = {{"kind", "run"}, {"seed", 30247991833355115ull}, {"verdict", "fail"},
                                  {"results",
                                   {{{"name", "prop_x/cpu"}, {"op", "store"}, {"verdict", "fail"},
                                     {"failures", {{{"message", "differs"}, {"seed", 42},
                                                    {"reproduce", "RC_PARAMS=\"reproduce=AB\" ./kvcheck run"}}}}}}}};
  std::ostringstream x;
  tool::write_junit(summary, x);
  const std::string s = x.str();
  // Inside the testsuite, before the first testcase.
  EXPECT_TRUE(std::regex_search(s, std::regex("<testsuite [^>]*>\\s*<properties>[^\n]*<property name=\"seed\" "
                                              "value=\"30247991833355115\"/>[^\n]*</properties>\\s*<testcase")))
      << s;
  EXPECT_NE(s.find("differs\nseed: 42\nreproduce: RC_PARAMS=&quot;reproduce=AB&quot; ./kvcheck run\n"),
            std::string::npos)
      << s;
}

TEST(Junit, FuzzTargetsCarryTheirOwnSeed) {
  const nlohmann::json summary = {{"kind", "fuzz"},
                                  {"verdict", "pass"},
                                  {"results",
                                   {{{"name", "store"}, {"verdict", "pass"}, {"seed", 2638148355ull}},
                                    {{"name", "load"}, {"verdict", "pass"}, {"seed", nullptr}}}}};
  std::ostringstream x;
  tool::write_junit(summary, x);
  const std::string s = x.str();
  EXPECT_TRUE(std::regex_search(s, std::regex("<testcase classname=\"fuzz\" name=\"store\"[^>]*>\\s*<properties>"
                                              "<property name=\"seed\" value=\"2638148355\"/></properties>\\s*"
                                              "</testcase>")))
      << s;
  EXPECT_TRUE(std::regex_search(s, std::regex("<testcase classname=\"fuzz\" name=\"load\"[^>]*/>"))) << s;
  // No suite seed: a fuzz run has one per target.
  EXPECT_EQ(std::regex_search(s, std::regex("<testsuite [^>]*>\\s*<properties>[^\n]*name=\"seed\"")), false) << s;
}

}  // namespace
}  // namespace kvcheck
