#include "tools/kvcheck/summary_merge.h"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
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

}  // namespace

nlohmann::json merge_summaries(const std::vector<nlohmann::json>& shards, const std::vector<std::string>& paths) {
  if (shards.empty()) throw std::runtime_error("no summary to merge");
  if (paths.size() != shards.size()) throw std::logic_error("merge_summaries: one path per shard");
  // What one run records that its shards must share: the selection (options, backends,
  // host properties left out, pairs_total, shard count), commit, seed, budget, isolation.
  static const std::vector<std::vector<std::string>> kSameRun = {
      {"commit"},  {"seed"},  {"budget"},    {"options"},          {"backends"}, {"host_properties_left_out"},
      {"isolation"}, {"shard", "count"}, {"shard", "pairs_total"}};
  const auto field = [](const nlohmann::json& s, const std::vector<std::string>& keys) {
    const nlohmann::json* j = &s;
    for (const auto& k : keys) {
      if (!j->is_object() || !j->contains(k)) return nlohmann::json();
      j = &(*j)[k];
    }
    return *j;
  };
  std::map<int64_t, size_t> by_index;  // shard index -> position in `shards`
  for (size_t k = 0; k < shards.size(); ++k) {
    const nlohmann::json& s = shards[k];
    const std::string& path = paths[k];
    check_summary(s, path);  // the schema: "PATH: FIELD: what" (report.h)
    if (s["kind"] != "run") bad(path, "kind: not the summary.json of a `kvcheck run` (kind " + s["kind"].dump() + ")");
    if (!s.contains("shard") || !s["shard"].is_object())
      bad(path, "not a shard's summary (it has no \"shard\": run with --shard I/N)");
    for (size_t i = 0; i < s["results"].size(); ++i)
      if (!s["results"][i].contains("index") || s["results"][i]["index"].is_null())
        bad(path, fmt::format("results[{}].index: missing (every result of a shard has its pair's index)", i));
    for (const auto& keys : kSameRun) {
      const nlohmann::json mine = field(s, keys), first = field(shards[0], keys);
      if (mine != first)
        bad(path, fmt::format("{} {} differs from {}'s {}: not shards of one run", fmt::join(keys, "."), mine.dump(),
                              paths[0], first.dump()));
    }
    const int64_t index = s["shard"]["index"].get<int64_t>();
    if (!by_index.emplace(index, k).second)
      bad(path, fmt::format("shard {}/{} again (also {})", index, s["shard"]["count"].get<int64_t>(),
                            paths[by_index[index]]));
  }
  const int64_t count = shards[0]["shard"]["count"].get<int64_t>();
  const int64_t pairs_total = shards[0]["shard"]["pairs_total"].get<int64_t>();
  nlohmann::json merged = shards[by_index.begin()->second];
  merged["shard"] = nullptr;
  merged["merged_from"] = paths;
  nlohmann::json list = nlohmann::json::array(), results = nlohmann::json::array();
  std::map<int64_t, std::string> seen;  // pair index -> the file that had it
  bool failed = false, unfinished = false, interrupted = false, exercised = false;
  double seconds = 0;
  int64_t execs = 0, failures = 0, workers = 0;
  // a += b, or a message naming the file and the field when the total overflows.
  const auto add = [](int64_t& total, int64_t b, const std::string& path, const std::string& what) {
    if (__builtin_add_overflow(total, b, &total))
      bad(path, fmt::format("{}: the merged total overflows 2^63-1", what));
  };
  std::set<std::string> backends;
  // The run's span: from the first shard's start to the last one's end (ISO 8601 UTC
  // strings, ordered as text); no end while any shard has none (still running).
  std::string start_time, end_time;
  bool ended = true;
  for (const auto& [index, k] : by_index) {
    const nlohmann::json& s = shards[k];
    const std::string& path = paths[k];
    const std::string verdict = s["verdict"];
    list.push_back({{"index", index}, {"file", path}, {"run_dir", s.value("run_dir", nlohmann::json())},
                    {"verdict", verdict}});
    failed |= verdict == "fail";
    unfinished |= verdict == "running" || verdict == "incomplete";
    interrupted |= verdict == "interrupted";
    const std::string started = s["start_time"];
    if (start_time.empty() || started < start_time) start_time = started;
    if (s.contains("end_time") && s["end_time"].is_string()) end_time = std::max(end_time, s["end_time"].get<std::string>());
    else ended = false;
    seconds = std::max(seconds, s.contains("seconds") && !s["seconds"].is_null() ? s["seconds"].get<double>() : 0.0);
    if (s.contains("totals") && s["totals"].is_object() && s["totals"].contains("workers_started") &&
        !s["totals"]["workers_started"].is_null())
      add(workers, s["totals"]["workers_started"].get<int64_t>(), path, "totals.workers_started");
    if (s.contains("backends"))
      for (const auto& b : s["backends"]) backends.insert(b.get<std::string>());
    for (size_t n = 0; n < s["results"].size(); ++n) {
      const nlohmann::json& r = s["results"][n];
      const int64_t i = r["index"].get<int64_t>();
      const std::string name = r["name"];
      if (i >= pairs_total)
        bad(path, fmt::format("results[{}].index: {} ({}) is not below shard.pairs_total {}", n, i, name, pairs_total));
      if (i % count != index - 1)
        bad(path, fmt::format("results[{}].index: pair {} ({}) is not one of shard {}/{}'s", n, i, name, index, count));
      if (const auto [at, fresh] = seen.emplace(i, path); !fresh)
        bad(path, at->second == path ? fmt::format("results[{}]: pair {} ({}) is listed twice in this file", n, i, name)
                                     : fmt::format("pair {} ({}) is in two shards (also {})", i, name, at->second));
      const std::string v = r["verdict"];
      failed |= v == "fail";
      exercised |= v == "pass" && r.contains("backend_calls") && !r["backend_calls"].is_null() &&
                   r["backend_calls"].get<int64_t>() > 0;
      if (r.contains("cases") && !r["cases"].is_null())
        add(execs, r["cases"].get<int64_t>(), path, fmt::format("results[{}].cases", n));
      failures += v == "fail";
      results.push_back(r);
    }
  }
  std::sort(results.begin(), results.end(),
            [](const nlohmann::json& a, const nlohmann::json& b) { return a["index"] < b["index"]; });
  nlohmann::json missing_shards = nlohmann::json::array(), missing_pairs = nlohmann::json::array();
  for (int64_t i = 1; i <= count; ++i)
    if (!by_index.count(i)) missing_shards.push_back(i);
  for (int64_t i = 0; i < pairs_total; ++i)
    if (!seen.count(i)) missing_pairs.push_back(i);  // at most kMaxPairs (check_summary)
  merged["shards"] = list;
  merged["missing_shards"] = missing_shards;
  merged["missing_pairs"] = missing_pairs;
  merged["results"] = results;
  merged["seconds"] = seconds;
  merged["backends"] = backends;
  merged["totals"] = {{"results", results.size()}, {"failures", failures}, {"execs", execs},
                      {"workers_started", workers}};
  const bool incomplete = unfinished || !missing_shards.empty() || !missing_pairs.empty();
  // The pass rule (finished_verdict), a failure first, then what kept the run from ending.
  const std::string finished = finished_verdict(failed ? 1 : 0, exercised ? 1 : 0);
  merged["verdict"] = finished == "fail" ? finished
                      : incomplete       ? "incomplete"
                      : interrupted      ? "interrupted"
                                         : finished;
  merged["start_time"] = start_time;
  merged["end_time"] = ended ? nlohmann::json(end_time) : nlohmann::json(nullptr);
  return merged;
}

int summary_merge(const std::vector<std::string>& paths, const std::string& out_path, const std::string& junit_path,
                  std::ostream& out, std::ostream& err) {
  // Before anything is read or written: no output onto a shard or onto the other output,
  // and both outputs writable (no --out written when --junit cannot be).
  std::vector<NamedPath> inputs;
  for (const auto& p : paths) inputs.push_back({"the shard", p});
  if (const std::string bad = check_output_paths(inputs, {{"--out", out_path}, {"--junit", junit_path}});
      !bad.empty()) {
    err << "kvcheck summary merge: " << bad << "\n";
    return 2;
  }
  std::vector<nlohmann::json> shards;
  for (const auto& p : paths) {
    try {
      std::ifstream in(p);
      if (!in) throw std::runtime_error(std::string("cannot open: ") + std::strerror(errno));
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
    fmt::print(out, "shard {}/{}: {} ({})\n", s["index"].get<int64_t>(), shards[0]["shard"]["count"].get<int64_t>(),
               s["verdict"].get<std::string>(), s["file"].get<std::string>());
  for (const auto& i : merged["missing_shards"]) fmt::print(out, "shard {}: MISSING\n", i.get<int64_t>());
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
