#include "tools/kvcheck/summary_merge.h"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "tools/kvcheck/report.h"

namespace kvcheck::tool {
namespace {

[[noreturn]] void bad(const std::string& path, const std::string& what) {
  throw std::runtime_error(path + ": " + what);
}

std::string str(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
}

}  // namespace

nlohmann::json merge_summaries(const std::vector<nlohmann::json>& shards, const std::vector<std::string>& paths) {
  if (shards.empty()) throw std::runtime_error("no summary to merge");
  int count = 0;
  int64_t pairs_total = -1;
  nlohmann::json seed, budget;
  std::map<int, size_t> by_index;  // shard index -> position in `shards`
  for (size_t k = 0; k < shards.size(); ++k) {
    const nlohmann::json& s = shards[k];
    const std::string& path = paths[k];
    if (str(s, "schema") != "kvcheck-summary" || str(s, "kind") != "run")
      bad(path, "not the summary.json of a `kvcheck run`");
    if (!s.contains("shard") || !s["shard"].is_object())
      bad(path, "not a shard's summary (it has no \"shard\": run with --shard I/N)");
    const int index = s["shard"].value("index", 0), n = s["shard"].value("count", 0);
    const int64_t total = s["shard"].value("pairs_total", int64_t{-1});
    if (k == 0) {
      count = n;
      pairs_total = total;
      seed = s.value("seed", nlohmann::json());
      budget = s.value("budget", nlohmann::json());
    } else {
      if (n != count) bad(path, fmt::format("shard of {} shards, {} is of {}", n, paths[0], count));
      if (total != pairs_total)
        bad(path, fmt::format("its run selects {} pairs, {}'s selects {}: not shards of one run", total, paths[0],
                              pairs_total));
      if (s.value("seed", nlohmann::json()) != seed)
        bad(path, fmt::format("seed {} differs from {}'s {}", s.value("seed", nlohmann::json()).dump(), paths[0],
                              seed.dump()));
      if (s.value("budget", nlohmann::json()) != budget)
        bad(path, fmt::format("budget {} differs from {}'s {}", s.value("budget", nlohmann::json()).dump(), paths[0],
                              budget.dump()));
    }
    if (index < 1 || index > count) bad(path, fmt::format("shard index {} is not in 1..{}", index, count));
    if (!by_index.emplace(index, k).second)
      bad(path, fmt::format("shard {}/{} again (also {})", index, count, paths[by_index[index]]));
  }
  nlohmann::json merged = shards[by_index.begin()->second];
  merged["shard"] = nullptr;
  merged["merged_from"] = paths;
  nlohmann::json list = nlohmann::json::array(), results = nlohmann::json::array();
  std::set<int64_t> seen;
  bool failed = false, unfinished = false, interrupted = false, exercised = false;
  double seconds = 0;
  int64_t execs = 0, failures = 0, workers = 0;
  std::set<std::string> backends;
  for (const auto& [index, k] : by_index) {
    const nlohmann::json& s = shards[k];
    const std::string verdict = str(s, "verdict");
    list.push_back({{"index", index}, {"file", paths[k]}, {"run_dir", s.value("run_dir", nlohmann::json())},
                    {"verdict", verdict}});
    failed |= verdict == "fail";
    unfinished |= verdict == "running" || verdict.empty();
    interrupted |= verdict == "interrupted";
    seconds = std::max(seconds, s.value("seconds", 0.0));
    workers += s.value("totals", nlohmann::json::object()).value("workers_started", int64_t{0});
    if (s.value("isolation", nlohmann::json()) != merged.value("isolation", nlohmann::json()))
      merged["isolation"] = "mixed";  // shards run with different isolation options
    for (const auto& b : s.value("backends", nlohmann::json::array())) backends.insert(b.get<std::string>());
    for (const auto& r : s.value("results", nlohmann::json::array())) {
      const int64_t i = r.value("index", int64_t{-1});
      if (i < 0 || i >= pairs_total) bad(paths[k], fmt::format("result {} has no pair index in 0..{}", str(r, "name"),
                                                               pairs_total - 1));
      if (!seen.insert(i).second) bad(paths[k], fmt::format("pair {} ({}) is in two shards", i, str(r, "name")));
      failed |= str(r, "verdict") == "fail";
      exercised |= str(r, "verdict") == "pass" && r.value("backend_calls", int64_t{0}) > 0;
      execs += r.value("cases", int64_t{0});
      failures += str(r, "verdict") == "fail";
      results.push_back(r);
    }
  }
  std::sort(results.begin(), results.end(),
            [](const nlohmann::json& a, const nlohmann::json& b) { return a["index"] < b["index"]; });
  nlohmann::json missing_shards = nlohmann::json::array(), missing_pairs = nlohmann::json::array();
  for (int i = 1; i <= count; ++i)
    if (!by_index.count(i)) missing_shards.push_back(i);
  for (int64_t i = 0; i < pairs_total; ++i)
    if (!seen.count(i)) missing_pairs.push_back(i);
  merged["shards"] = list;
  merged["missing_shards"] = missing_shards;
  merged["missing_pairs"] = missing_pairs;
  merged["results"] = results;
  merged["seconds"] = seconds;
  merged["backends"] = backends;
  merged["totals"] = {{"results", results.size()}, {"failures", failures}, {"execs", execs},
                      {"workers_started", workers}};
  const bool incomplete = unfinished || !missing_shards.empty() || !missing_pairs.empty();
  merged["verdict"] = failed ? "fail"
                      : incomplete ? "incomplete"
                      : interrupted ? "interrupted"
                      : !exercised ? "not_exercised"
                                   : "pass";
  merged["end_time"] = utc_now();
  return merged;
}

int summary_merge(const std::vector<std::string>& paths, const std::string& out_path, const std::string& junit_path,
                  std::ostream& out, std::ostream& err) {
  std::vector<nlohmann::json> shards;
  for (const auto& p : paths) {
    try {
      std::ifstream in(p);
      if (!in) throw std::runtime_error("cannot open");
      shards.push_back(nlohmann::json::parse(in));
    } catch (const std::exception& e) {
      err << "kvcheck summary merge: " << p << ": " << e.what() << "\n";
      return 2;
    }
  }
  nlohmann::json merged;
  try {
    merged = merge_summaries(shards, paths);
  } catch (const std::exception& e) {
    err << "kvcheck summary merge: " << e.what() << "\n";
    return 2;
  }
  for (const auto& s : merged["shards"])
    fmt::print(out, "shard {}/{}: {} ({})\n", s["index"].get<int>(), shards[0]["shard"]["count"].get<int>(),
               s["verdict"].get<std::string>(), s["file"].get<std::string>());
  for (const auto& i : merged["missing_shards"]) fmt::print(out, "shard {}: MISSING\n", i.get<int>());
  const std::string verdict = merged["verdict"];
  fmt::print(out, "merged: {} results, {} failures, {} cases; verdict {}{}\n", merged["totals"]["results"].get<int64_t>(),
             merged["totals"]["failures"].get<int64_t>(), merged["totals"]["execs"].get<int64_t>(), verdict,
             merged["missing_pairs"].empty() ? ""
                                             : fmt::format(" ({} pairs no shard holds)", merged["missing_pairs"].size()));
  if (const std::string bad = write_summary_files(merged, {out_path}, junit_path); !bad.empty()) {
    err << "kvcheck summary merge: cannot write " << bad << "\n";
    return 2;
  }
  fmt::print(out, "summary: {}\n", out_path);
  return verdict == "pass" ? 0 : 1;
}

}  // namespace kvcheck::tool
