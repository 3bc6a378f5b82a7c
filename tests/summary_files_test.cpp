// The summary files of `kvcheck` (tools/kvcheck/report.h, summary_merge.h) against what
// an adversarial review found: outputs that are FIFOs, symlinks or pipes; `junit` and
// `summary merge` fed what is not a summary, or shards of different runs; JUnit that
// hid a verdict other than pass; `record finish` aborting or writing pass over a
// failure; outputs that overwrite inputs or each other.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "tools/kvcheck/report.h"
#include "tools/kvcheck/summary_merge.h"

namespace kvcheck {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A fresh directory under the temporary directory, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string t = (fs::temp_directory_path() / "kvcheck_summary_files_XXXXXX").string();
    if (!mkdtemp(t.data())) throw std::runtime_error("mkdtemp failed");
    path_ = t;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), {});
}

void write(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
}

bool is_fifo(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
}

bool is_symlink(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

// ---- the latest-<kind> link: ours is moved to the new run, anything else stays ----

TEST(RunDir, MovesTheLatestLinkAndLeavesAFileOrDirectoryThere) {
  TempDir t;
  const std::string first = tool::make_run_dir(t.path(), "run");
  ASSERT_TRUE(is_symlink(t / "latest-run"));
  EXPECT_EQ(fs::read_symlink(t / "latest-run"), fs::path("runs") / fs::path(first).filename());
  sleep(1);  // run directories are named by the second and the pid
  const std::string second = tool::make_run_dir(t.path(), "run");
  ASSERT_NE(first, second);
  EXPECT_EQ(fs::read_symlink(t / "latest-run"), fs::path("runs") / fs::path(second).filename());
  write(t / "latest-fuzz", "a person's notes\n");
  fs::create_directory(t / "latest-mutants");
  write(t / "latest-mutants/keep", "x");
  testing::internal::CaptureStderr();
  const std::string fuzz = tool::make_run_dir(t.path(), "fuzz");
  const std::string mutants = tool::make_run_dir(t.path(), "mutants");
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(fs::is_directory(fuzz) && fs::is_directory(mutants));
  EXPECT_EQ(read(t / "latest-fuzz"), "a person's notes\n");
  EXPECT_EQ(read(t / "latest-mutants/keep"), "x");
  EXPECT_NE(err.find("latest-fuzz is not a symlink"), std::string::npos) << err;
  EXPECT_NE(err.find("latest-mutants is not a symlink"), std::string::npos) << err;
}

// ---- H1: write_file_atomically onto what is not a regular file ----

TEST(AtomicWrite, WritesThroughAFifoAndKeepsIt) {
  TempDir d;
  const std::string fifo = d / "out.xml";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  // A reader that is there before the write (non-blocking open: no writer yet).
  const int r = open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(r, 0);
  EXPECT_TRUE(tool::write_file_atomically(fifo, "through the fifo\n"));
  char buf[64] = {};
  const ssize_t n = ::read(r, buf, sizeof buf);
  close(r);
  EXPECT_EQ(std::string(buf, n > 0 ? n : 0), "through the fifo\n");
  EXPECT_TRUE(is_fifo(fifo)) << "the FIFO was replaced";
  for (const auto& e : fs::directory_iterator(d.path()))
    EXPECT_EQ(e.path().string(), fifo) << "left " << e.path();
}

TEST(AtomicWrite, WritesThroughAPipeBehindDevFd) {  // `kvcheck junit s.json >(cat)`
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  EXPECT_TRUE(tool::write_file_atomically("/dev/fd/" + std::to_string(p[1]), "piped\n"));
  close(p[1]);
  char buf[64] = {};
  const ssize_t n = ::read(p[0], buf, sizeof buf);
  close(p[0]);
  EXPECT_EQ(std::string(buf, n > 0 ? n : 0), "piped\n");
}

TEST(AtomicWrite, KeepsASymlinkAndReplacesItsTarget) {
  TempDir d;
  fs::create_directory(d / "real");
  write(d / "real/summary.json", "old\n");
  fs::create_symlink("real/summary.json", d / "link.json");
  ASSERT_TRUE(tool::write_file_atomically(d / "link.json", "new\n"));
  EXPECT_TRUE(is_symlink(d / "link.json")) << "the symlink was replaced by a file";
  EXPECT_EQ(read(d / "real/summary.json"), "new\n");
  // A symlink to a symlink: the last target is written.
  fs::create_symlink("link.json", d / "link2.json");
  ASSERT_TRUE(tool::write_file_atomically(d / "link2.json", "newer\n"));
  EXPECT_TRUE(is_symlink(d / "link2.json"));
  EXPECT_TRUE(is_symlink(d / "link.json"));
  EXPECT_EQ(read(d / "real/summary.json"), "newer\n");
  // A dangling symlink: its target is created.
  fs::create_symlink("real/absent.json", d / "dangling.json");
  ASSERT_TRUE(tool::write_file_atomically(d / "dangling.json", "created\n"));
  EXPECT_TRUE(is_symlink(d / "dangling.json"));
  EXPECT_EQ(read(d / "real/absent.json"), "created\n");
  for (const auto& e : fs::recursive_directory_iterator(d.path()))
    EXPECT_EQ(e.path().string().find(".tmp-"), std::string::npos) << "left " << e.path();
}

TEST(AtomicWrite, RefusesADirectory) {
  TempDir d;
  fs::create_directory(d / "dir");
  EXPECT_FALSE(tool::write_file_atomically(d / "dir", "x"));
  EXPECT_TRUE(fs::is_directory(d / "dir"));
}

// ---- H3: kvcheck junit validates its input; a verdict other than pass fails ----

json run_summary(const std::string& verdict) {
  return {{"schema", "kvcheck-summary"},
          {"schema_version", 1},
          {"kind", "run"},
          {"commit", "abc"},
          {"verdict", verdict},
          {"seed", 5},
          {"results",
           {{{"name", "prop_a/cpu"}, {"kind", "property"}, {"op", "store"}, {"verdict", "pass"}, {"index", 0},
             {"cases", 2}, {"backend_calls", 1}, {"failures", json::array()}}}}};
}

TEST(JunitFile, RefusesWhatIsNotASummary) {
  TempDir d;
  json wrong_schema = run_summary("pass"), version2 = run_summary("pass"), version_string = run_summary("pass"),
       fuzz_of_run = run_summary("pass"), banana = run_summary("banana"), no_results = run_summary("pass");
  wrong_schema["schema"] = "something-else";
  version2["schema_version"] = 2;
  version_string["schema_version"] = "1";
  fuzz_of_run["kind"] = "fuzz";  // its results are properties
  no_results.erase("results");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{}", "schema"},
      {"[]", "not a JSON object"},
      {"null", "not a JSON object"},
      {"42", "not a JSON object"},
      {wrong_schema.dump(), "schema"},
      {version2.dump(), "schema_version"},
      {version_string.dump(), "schema_version"},
      {fuzz_of_run.dump(), "kind"},
      {banana.dump(), "verdict"},
      {no_results.dump(), "results"}};
  for (const auto& [text, field] : cases) {
    write(d / "s.json", text);
    std::ostringstream err;
    EXPECT_EQ(tool::junit_file(d / "s.json", d / "out.xml", err), 2) << text;
    EXPECT_NE(err.str().find(d / "s.json"), std::string::npos) << err.str();
    EXPECT_NE(err.str().find(field), std::string::npos) << "want '" << field << "' in: " << err.str();
    EXPECT_FALSE(fs::exists(d / "out.xml")) << text;
  }
  write(d / "s.json", run_summary("pass").dump());
  std::ostringstream err;
  EXPECT_EQ(tool::junit_file(d / "s.json", d / "out.xml", err), 0) << err.str();
  EXPECT_NE(read(d / "out.xml").find("tests=\"1\" failures=\"0\""), std::string::npos) << read(d / "out.xml");
}

std::string junit_of(const json& summary) {
  std::ostringstream x;
  tool::write_junit(summary, x);
  return x.str();
}

TEST(Junit, AVerdictOtherThanPassIsAFailingTestcase) {
  EXPECT_EQ(junit_of(run_summary("pass")).find("kvcheck verdict"), std::string::npos);
  for (const char* verdict : {"running", "interrupted", "not_exercised", "fail", "incomplete"}) {
    json s = run_summary(verdict);
    if (std::string(verdict) == "incomplete") {
      s["missing_shards"] = {2};
      s["missing_pairs"] = {5, 6};
    }
    const std::string x = junit_of(s);
    // The one passing row and the verdict's testcase, which fails.
    EXPECT_NE(x.find("<testsuites name=\"kvcheck run\" tests=\"2\" failures=\"1\""), std::string::npos) << x;
    EXPECT_NE(x.find("<testcase classname=\"kvcheck\" name=\"kvcheck verdict\""), std::string::npos) << x;
    EXPECT_NE(x.find(std::string("<failure message=\"verdict ") + verdict), std::string::npos) << x;
    if (std::string(verdict) == "incomplete") {
      EXPECT_NE(x.find("missing shards: 2"), std::string::npos) << x;
      EXPECT_NE(x.find("pairs no shard holds: 5, 6"), std::string::npos) << x;
    }
  }
  // A pass that its rows contradict: a failing row, or no passing one (none, or only
  // rows not run). kvcheck never writes these; an edited summary can.
  for (int variant = 0; variant < 3; ++variant) {
    json p = run_summary("pass");
    if (variant == 0) {
      p["results"][0]["verdict"] = "fail";
      p["results"][0]["failures"] = {{{"message", "differs"}}};
    } else if (variant == 1) {
      p["results"] = json::array();
    } else {
      p["results"][0]["verdict"] = "not_run";
    }
    const std::string x = junit_of(p);
    EXPECT_NE(x.find("<testcase classname=\"kvcheck\" name=\"kvcheck verdict\""), std::string::npos) << x;
    EXPECT_NE(x.find(variant == 0 ? "verdict pass: but 1 result failed" : "verdict pass: but no result passed"),
              std::string::npos)
        << x;
    EXPECT_NE(x.find(variant == 0 ? "failures=\"2\"" : "failures=\"1\""), std::string::npos) << x;
  }
  // A failing row already says fail: no second failure for the verdict.
  json s = run_summary("fail");
  s["results"][0]["verdict"] = "fail";
  s["results"][0]["failures"] = {{{"message", "differs"}}};
  const std::string x = junit_of(s);
  EXPECT_NE(x.find("tests=\"1\" failures=\"1\""), std::string::npos) << x;
  EXPECT_EQ(x.find("kvcheck verdict"), std::string::npos) << x;
}

// ---- M1, M2: summary merge refuses shards of different runs and bad fields ----

json shard(int index, int count, const std::vector<int>& pairs) {
  json s = {{"schema", "kvcheck-summary"},
            {"schema_version", 1},
            {"kind", "run"},
            {"commit", "0123abcd"},
            {"start_time", "2026-01-01T00:00:00Z"},
            {"seed", 5},
            {"budget", {{"cases", 2}}},
            {"options", {{"backends", {"cpu"}}, {"properties", {"store"}}, {"fail_fast", false}}},
            {"backends", {"cpu"}},
            {"isolation", "worker"},
            {"host_properties_left_out", 0},
            {"shard", {{"index", index}, {"count", count}, {"pairs_total", 4}}},
            {"verdict", "pass"},
            {"seconds", 1.5},
            {"totals", {{"results", pairs.size()}, {"failures", 0}, {"execs", 2 * pairs.size()}, {"workers_started", 1}}},
            {"results", json::array()}};
  for (int p : pairs)
    s["results"].push_back({{"name", "prop_" + std::to_string(p) + "/cpu"},
                            {"index", p},
                            {"kind", "property"},
                            {"op", "store"},
                            {"verdict", "pass"},
                            {"cases", 2},
                            {"execs", 2},
                            {"backend_calls", 3},
                            {"seconds", 0.5},
                            {"failures", json::array()}});
  return s;
}

const std::vector<std::string> kPaths = {"a.json", "b.json"};

// The message merge_summaries throws for the two shards, "" when they merge.
std::string merge_error(const json& a, const json& b) {
  try {
    tool::merge_summaries({a, b}, kPaths);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(SummaryMerge, TwoShardsOfOneRunMerge) {
  const json m = tool::merge_summaries({shard(1, 2, {0, 2}), shard(2, 2, {1, 3})}, kPaths);
  EXPECT_EQ(m["verdict"], "pass");
  EXPECT_EQ(m["totals"]["execs"], 8);  // 4 rows of 2 cases
  EXPECT_EQ(m["totals"]["workers_started"], 2);
}

TEST(SummaryMerge, SpansFromTheFirstShardsStartToTheLastOnesEnd) {
  json a = shard(1, 2, {0, 2}), b = shard(2, 2, {1, 3});
  a["start_time"] = "2026-01-01T00:00:05Z";
  a["end_time"] = "2026-01-01T00:09:00Z";
  b["start_time"] = "2026-01-01T00:00:01Z";
  b["end_time"] = "2026-01-01T00:07:00Z";
  json m = tool::merge_summaries({a, b}, kPaths);
  EXPECT_EQ(m["start_time"], "2026-01-01T00:00:01Z");
  EXPECT_EQ(m["end_time"], "2026-01-01T00:09:00Z");  // not the time of the merge
  b["end_time"] = nullptr;                            // a shard without an end: the run has none
  m = tool::merge_summaries({a, b}, kPaths);
  EXPECT_TRUE(m["end_time"].is_null());
}

TEST(SummaryMerge, RefusesShardsOfDifferentRuns) {
  const std::vector<std::pair<std::string, std::function<void(json&)>>> changes = {
      {"commit", [](json& s) { s["commit"] = "fedc9876"; }},
      {"options", [](json& s) { s["options"]["properties"] = {"load"}; }},
      {"options", [](json& s) { s["options"]["fail_fast"] = true; }},
      {"options", [](json& s) { s["options"]["backends"] = json::array(); }},
      {"backends", [](json& s) { s["backends"] = {"cpu", "cuda"}; }},
      {"isolation", [](json& s) { s["isolation"] = "in-process"; }},
      {"host_properties_left_out", [](json& s) { s["host_properties_left_out"] = 3; }},
      {"commit", [](json& s) { s.erase("commit"); }},
  };
  for (const auto& [field, change] : changes) {
    json b = shard(2, 2, {1, 3});
    change(b);
    const std::string e = merge_error(shard(1, 2, {0, 2}), b);
    EXPECT_NE(e.find("b.json"), std::string::npos) << field << ": " << e;
    EXPECT_NE(e.find("a.json"), std::string::npos) << field << ": " << e;
    EXPECT_NE(e.find(field), std::string::npos) << field << ": " << e;
  }
}

TEST(SummaryMerge, RefusesBadFieldsNamingFileAndField) {
  const std::vector<std::pair<std::string, std::function<void(json&)>>> changes = {
      {"verdict", [](json& s) { s["verdict"] = "banana"; }},
      {"verdict", [](json& s) { s["verdict"] = 1; }},
      {"schema_version", [](json& s) { s["schema_version"] = 2; }},
      {"schema_version", [](json& s) { s["schema_version"] = 0; }},
      {"schema_version", [](json& s) { s["schema_version"] = "1"; }},
      {"results[0].failures", [](json& s) { s["results"][0]["failures"] = "oops"; }},
      {"results[0].verdict", [](json& s) { s["results"][0]["verdict"] = "maybe"; }},
      {"results[1].cases", [](json& s) { s["results"][1]["cases"] = -5; }},
      {"results[1].cases", [](json& s) { s["results"][1]["cases"] = 1e30; }},
      {"results[1].cases", [](json& s) { s["results"][1]["cases"] = "x"; }},
      {"results[0].index", [](json& s) { s["results"][0]["index"] = 1.5; }},
      {"results[0].backend_calls", [](json& s) { s["results"][0]["backend_calls"] = "x"; }},
      {"shard.index", [](json& s) { s["shard"]["index"] = 2.5; }},
      {"shard.count", [](json& s) { s["shard"]["count"] = 1000000000000000000LL; }},
      {"shard.pairs_total", [](json& s) { s["shard"]["pairs_total"] = -1; }},
      // 2^63-1 pairs: merge listed each missing one (4 GB and counting, found by a reviewer)
      {"shard.pairs_total", [](json& s) { s["shard"]["pairs_total"] = std::numeric_limits<int64_t>::max(); }},
      {"shard.pairs_total", [](json& s) { s["shard"]["pairs_total"] = tool::kMaxPairs + 1; }},
      {"seconds", [](json& s) { s["seconds"] = "x"; }},
      {"totals.workers_started", [](json& s) { s["totals"]["workers_started"] = "x"; }},
      {"backends", [](json& s) { s["backends"] = {1}; }},
      {"results", [](json& s) { s["results"] = json::object(); }},
  };
  for (const auto& [field, change] : changes) {
    json b = shard(2, 2, {1, 3});
    change(b);
    const std::string e = merge_error(shard(1, 2, {0, 2}), b);
    EXPECT_NE(e.find("b.json"), std::string::npos) << field << ": " << e;
    EXPECT_NE(e.find(field), std::string::npos) << field << ": " << e;
    EXPECT_EQ(e.find("json.exception"), std::string::npos) << field << ": " << e;
  }
}

TEST(SummaryMerge, APairTwiceSaysWhereItIs) {
  json a = shard(1, 2, {0, 2}), b = shard(2, 2, {1, 3});
  b["results"].push_back(b["results"][0]);  // pair 1 twice in b.json
  std::string e = merge_error(a, b);
  EXPECT_NE(e.find("b.json: results[2]: pair 1 (prop_1/cpu) is listed twice in this file"), std::string::npos) << e;
  a = shard(1, 2, {0, 2});
  a["shard"]["pairs_total"] = 0;
  b = shard(2, 2, {1, 3});
  b["shard"]["pairs_total"] = 0;
  e = merge_error(a, b);
  EXPECT_NE(e.find("results[0].index: 0 (prop_0/cpu) is not below shard.pairs_total 0"), std::string::npos) << e;
}

TEST(SummaryMerge, RefusesTotalsThatOverflow) {
  json a = shard(1, 2, {0, 2}), b = shard(2, 2, {1, 3});
  a["results"][0]["cases"] = std::numeric_limits<int64_t>::max();
  a["results"][1]["cases"] = 0;
  b["results"][0]["cases"] = std::numeric_limits<int64_t>::max();
  b["results"][1]["cases"] = 0;
  const std::string e = merge_error(a, b);
  EXPECT_NE(e.find("overflow"), std::string::npos) << e;
  EXPECT_NE(e.find("b.json: results[0].cases"), std::string::npos) << e;
  // One such row alone is a number the totals hold.
  b["results"][0]["cases"] = 0;
  EXPECT_EQ(merge_error(a, b), "");
  json c = shard(2, 2, {1, 3});
  c["results"][0]["cases"] = std::numeric_limits<uint64_t>::max();  // past int64
  EXPECT_NE(merge_error(shard(1, 2, {0, 2}), c).find("results[0].cases"), std::string::npos);
}

// ---- M3: record finish ----

// A run directory as `kvcheck record start fuzz` leaves it.
std::string started_fuzz_run(const TempDir& d) {
  std::ostringstream out, err;
  EXPECT_EQ(tool::record_start("fuzz", d / "work", out, err), 0) << err.str();
  std::string dir = out.str();
  while (!dir.empty() && dir.back() == '\n') dir.pop_back();
  return dir;
}

json summary_of(const std::string& dir) { return json::parse(read(dir + "/summary.json")); }

TEST(RecordFinish, WritesTheResultsOfAFuzzRun) {
  TempDir d;
  const std::string dir = started_fuzz_run(d);
  write(dir + "/results.jsonl", R"({"name":"store","kind":"fuzz_target","verdict":"pass","execs":10})"
                                "\n"
                                R"({"name":"load","kind":"fuzz_target","verdict":"pass","execs":5})"
                                "\n");
  std::ostringstream err;
  EXPECT_EQ(tool::record_finish(dir, "running", "", err), 0) << err.str();
  EXPECT_EQ(summary_of(dir)["verdict"], "running");
  EXPECT_EQ(tool::record_finish(dir, "pass", d / "j.xml", err), 0) << err.str();
  const json s = summary_of(dir);
  EXPECT_EQ(s["verdict"], "pass");
  EXPECT_EQ(s["totals"]["execs"], 15);
  EXPECT_EQ(s["totals"]["results"], 2);
  EXPECT_NE(read(d / "j.xml").find("tests=\"2\" failures=\"0\""), std::string::npos);
}

TEST(RecordFinish, BadFilesExit2WithoutAborting) {
  const std::vector<std::pair<std::string, std::string>> bad_results = {
      {"42\n", "results.jsonl line 1"},
      {"{\"name\":\"a\",\"verdict\":\"pass\"}\n{\"verdict\":5}\n", "results.jsonl line 2"},
      {"{\"name\":\"a\",\"verdict\":\"pass\",\"execs\":1e30}\n", "execs"},
      {"{\"name\":\"a\",\"verdict\":\"pass\",\"execs\":\"x\"}\n", "execs"},
      {"not json\n", "results.jsonl line 1"}};
  for (const auto& [text, what] : bad_results) {
    TempDir d;
    const std::string dir = started_fuzz_run(d);
    const std::string before = read(dir + "/summary.json");
    write(dir + "/results.jsonl", text);
    std::ostringstream err;
    EXPECT_EQ(tool::record_finish(dir, "pass", "", err), 2) << text;
    EXPECT_NE(err.str().find(what), std::string::npos) << "want '" << what << "' in: " << err.str();
    EXPECT_EQ(read(dir + "/summary.json"), before) << text;
  }
  {  // two rows whose execs overflow the total
    TempDir d;
    const std::string dir = started_fuzz_run(d);
    write(dir + "/results.jsonl", "{\"name\":\"a\",\"verdict\":\"pass\",\"execs\":9223372036854775807}\n"
                                  "{\"name\":\"b\",\"verdict\":\"pass\",\"execs\":9223372036854775807}\n");
    std::ostringstream err;
    EXPECT_EQ(tool::record_finish(dir, "pass", "", err), 2);
    EXPECT_NE(err.str().find("overflow"), std::string::npos) << err.str();
  }
  {  // a summary whose start_epoch is not a number
    TempDir d;
    const std::string dir = started_fuzz_run(d);
    json s = summary_of(dir);
    s["start_epoch"] = "x";
    write(dir + "/summary.json", s.dump());
    std::ostringstream err;
    EXPECT_EQ(tool::record_finish(dir, "pass", "", err), 2);
    EXPECT_NE(err.str().find("start_epoch"), std::string::npos) << err.str();
  }
  {  // no summary.json at all
    TempDir d;
    std::ostringstream err;
    EXPECT_EQ(tool::record_finish(d.path(), "pass", "", err), 2);
    EXPECT_NE(err.str().find("no such file"), std::string::npos) << err.str();
  }
}

TEST(RecordFinish, RefusesADirectoryItDidNotStart) {
  TempDir d;
  // A finished `kvcheck run` that failed.
  json s = run_summary("fail");
  s["results"][0]["verdict"] = "fail";
  s["results"][0]["failures"] = {{{"message", "differs"}}};
  write(d / "summary.json", s.dump(2));
  const std::string before = read(d / "summary.json");
  std::ostringstream err;
  EXPECT_EQ(tool::record_finish(d.path(), "pass", "", err), 2);
  EXPECT_EQ(read(d / "summary.json"), before);
  EXPECT_NE(err.str().find("record start"), std::string::npos) << err.str();
  // A fuzz run that is already finished.
  const std::string dir = started_fuzz_run(d);
  write(dir + "/results.jsonl", "{\"name\":\"a\",\"verdict\":\"pass\",\"execs\":1}\n");
  EXPECT_EQ(tool::record_finish(dir, "interrupted", "", err), 0) << err.str();
  EXPECT_EQ(tool::record_finish(dir, "pass", "", err), 2);
  EXPECT_EQ(summary_of(dir)["verdict"], "interrupted");
}

TEST(RecordFinish, NeverWritesPassOverAFailureOrNoResults) {
  TempDir d;
  const std::string dir = started_fuzz_run(d);
  write(dir + "/results.jsonl", "{\"name\":\"a\",\"verdict\":\"pass\",\"execs\":1}\n"
                                "{\"name\":\"b\",\"verdict\":\"fail\",\"execs\":1,\"failures\":[{\"message\":\"x\"}]}\n");
  std::ostringstream err;
  EXPECT_EQ(tool::record_finish(dir, "pass", "", err), 1);
  EXPECT_EQ(summary_of(dir)["verdict"], "fail");
  EXPECT_NE(err.str().find("b failed"), std::string::npos) << err.str();

  TempDir d3;  // a target that passed without one execution ran nothing
  const std::string idle = started_fuzz_run(d3);
  write(idle + "/results.jsonl", "{\"name\":\"store\",\"verdict\":\"pass\",\"execs\":0}\n");
  std::ostringstream err3;
  EXPECT_EQ(tool::record_finish(idle, "pass", "", err3), 1);
  EXPECT_EQ(summary_of(idle)["verdict"], "not_exercised");
  EXPECT_EQ(summary_of(idle)["results"][0]["verdict"], "not_run");

  TempDir d2;  // (a second run directory in the same second would be the same one)
  const std::string empty = started_fuzz_run(d2);  // no results.jsonl
  std::ostringstream err2;
  EXPECT_EQ(tool::record_finish(empty, "pass", "", err2), 1);
  EXPECT_EQ(summary_of(empty)["verdict"], "not_exercised");
  EXPECT_NE(err2.str().find("no results"), std::string::npos) << err2.str();
}

// ---- L3: outputs that overwrite inputs or each other ----

TEST(OutputPaths, JunitRefusesToOverwriteItsSummary) {
  TempDir d;
  write(d / "s.json", run_summary("pass").dump());
  const std::string before = read(d / "s.json");
  std::ostringstream err;
  EXPECT_EQ(tool::junit_file(d / "s.json", d / "s.json", err), 2);
  EXPECT_EQ(read(d / "s.json"), before);
  EXPECT_NE(err.str().find("same file"), std::string::npos) << err.str();
  // The same file by another name: a symlink, or a path with ./ in it.
  fs::create_symlink("s.json", d / "alias.json");
  EXPECT_EQ(tool::junit_file(d / "s.json", d / "alias.json", err), 2);
  EXPECT_EQ(tool::junit_file(d / "s.json", d.path() + "/./s.json", err), 2);
  EXPECT_EQ(read(d / "s.json"), before);
}

TEST(OutputPaths, MergeRefusesToOverwriteAShardOrWriteHalf) {
  TempDir d;
  write(d / "a.json", shard(1, 2, {0, 2}).dump());
  write(d / "b.json", shard(2, 2, {1, 3}).dump());
  const std::string a = read(d / "a.json"), b = read(d / "b.json");
  const std::vector<std::string> in = {d / "a.json", d / "b.json"};
  std::ostringstream out, err;
  EXPECT_EQ(tool::summary_merge(in, d / "a.json", "", out, err), 2);  // --out onto a shard
  EXPECT_EQ(read(d / "a.json"), a);
  EXPECT_EQ(tool::summary_merge(in, d / "m.json", d / "b.json", out, err), 2);  // --junit onto a shard
  EXPECT_EQ(tool::summary_merge(in, d / "m.json", d / "m.json", out, err), 2);  // --out = --junit
  EXPECT_FALSE(fs::exists(d / "m.json"));
  EXPECT_NE(err.str().find("same file"), std::string::npos) << err.str();
  // --junit cannot be written: --out is not written either.
  EXPECT_EQ(tool::summary_merge(in, d / "m.json", d / "no-such-dir/j.xml", out, err), 2);
  EXPECT_FALSE(fs::exists(d / "m.json"));
  EXPECT_EQ(read(d / "a.json"), a);
  EXPECT_EQ(read(d / "b.json"), b);
  EXPECT_EQ(tool::summary_merge(in, d / "m.json", d / "j.xml", out, err), 0) << err.str();
  EXPECT_TRUE(fs::exists(d / "m.json") && fs::exists(d / "j.xml"));
}

}  // namespace
}  // namespace kvcheck
