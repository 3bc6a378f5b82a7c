#include "bench/perf_gate.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace kvcheck::bench {
namespace {

std::string format(const char* fmt, auto... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}

// Whether baseline row b is this run's row r: both bandwidth rows (not decode) of one
// op, format, token count and block size. Throws on a row without those fields.
bool same_row(const nlohmann::json& b, const PerfRow& r) {
  return !r.decode && !b.value("decode", false) && b.at("op") == r.op && b.at("format") == r.format &&
         b.at("tokens") == r.tokens && b.at("block_size") == r.block_size;
}

}  // namespace

std::string ungated_options(const nlohmann::json& run) {
  std::string o;
  if (const std::string slots = run.value("slots", std::string("scattered")); slots != "scattered")
    o += "--slots " + slots;
  if (const std::string launch = run.value("launch", std::string("plain")); launch != "plain")
    o += (o.empty() ? "--" : " --") + launch;
  return o;
}

PerfGateResult check_perf_baseline(const std::vector<PerfRow>& rows, const nlohmann::json& baseline, double tolerance,
                                   const std::string& device, const std::string& baseline_name) {
  PerfGateResult g;
  g.tolerance = tolerance >= 0 ? tolerance : baseline.value("tolerance_points", 5.0);
  const std::string base_device = baseline.value("device", std::string());
  if (base_device != device) {  // ratios to the copy shift between GPUs: no verdict
    g.report = format("performance gate: not run: the baseline %s is from '%s', this is '%s'\n", baseline_name.c_str(),
                      base_device.c_str(), device.c_str());
    return g;
  }
  // bench_cuda --slots blocks (another access pattern) or --pdl (another launch): other ratios.
  if (const std::string o = ungated_options(baseline); !o.empty()) {
    g.report = format("performance gate: not run: the baseline %s holds rows of %s; the gate compares "
                      "scattered slots and plain launches\n", baseline_name.c_str(), o.c_str());
    return g;
  }
  g.ran = true;
  g.report = format("performance gate: %s (%s), ratio to the copy in %% points, tolerance %.1f\n",
                    baseline_name.c_str(), base_device.c_str(), g.tolerance);
  g.report += format("%-6s %-28s %7s %4s %8s %8s %7s  %s\n", "op", "format", "tokens", "bs", "baseline", "now",
                     "delta", "verdict");
  for (const nlohmann::json& b : baseline.at("rows")) {
    if (b.value("decode", false)) continue;
    const std::string op = b.at("op"), fmt = b.at("format");
    const int64_t tokens = b.at("tokens"), bs = b.at("block_size");
    const double want = 100 * b.at("ratio_to_copy").get<double>();
    const auto it = std::find_if(rows.begin(), rows.end(), [&](const PerfRow& r) { return same_row(b, r); });
    if (it == rows.end()) {  // counted, not listed: a --format or --quick run leaves out most rows
      ++g.not_measured;
      continue;
    }
    const double now = 100 * it->ratio_to_copy, delta = now - want;
    if (tokens < kMinGatedTokens || b.value("ms", kMinGatedMs) < kMinGatedMs) {
      ++g.not_gated;
      g.report += format("%-6s %-28s %7lld %4lld %8.2f %8.2f %+7.2f  %s\n", op.c_str(), fmt.c_str(),
                         static_cast<long long>(tokens), static_cast<long long>(bs), want, now, delta,
                         "not gated (launch-bound)");
      continue;
    }
    ++g.compared;
    const bool drop = delta < -g.tolerance;
    g.dropped += drop ? 1 : 0;
    g.report += format("%-6s %-28s %7lld %4lld %8.2f %8.2f %+7.2f  %s\n", op.c_str(), fmt.c_str(),
                       static_cast<long long>(tokens), static_cast<long long>(bs), want, now, delta,
                       drop ? "DROPPED" : "ok");
  }
  // This run's rows the baseline lacks (a kernel or format added since it was written):
  // listed so a team sees what no baseline guards yet; they cannot fail.
  for (const PerfRow& r : rows) {
    if (r.decode || r.tokens < kMinGatedTokens) continue;
    const nlohmann::json& all = baseline.at("rows");
    if (std::any_of(all.begin(), all.end(), [&](const nlohmann::json& b) { return same_row(b, r); })) continue;
    ++g.not_in_baseline;
    g.report += format("%-6s %-28s %7lld %4lld %8s %8.2f %7s  %s\n", r.op.c_str(), r.format.c_str(),
                       static_cast<long long>(r.tokens), static_cast<long long>(r.block_size), "-",
                       100 * r.ratio_to_copy, "", "not in the baseline (not gated)");
  }
  g.report += format("performance gate: %d rows compared, %d dropped by more than %.1f points, %d not measured (not "
                     "in this run), %d under %lld tokens or %.0f us not gated, %d not in the baseline: %s\n",
                     g.compared, g.dropped, g.tolerance, g.not_measured, g.not_gated,
                     static_cast<long long>(kMinGatedTokens), kMinGatedMs * 1e3, g.not_in_baseline,
                     g.compared == 0 ? "FAILED (nothing compared)" : g.dropped ? "FAILED" : "passed");
  return g;
}

PerfGateResult check_perf_baselines(const std::vector<PerfRow>& rows, const std::vector<NamedBaseline>& baselines,
                                    double tolerance, const std::string& device) {
  std::string seen;  // "name ('device')", ... for the report when none is from `device`
  std::string ungated;  // "name (--pdl)", ...: this device's files measured otherwise
  const NamedBaseline* match = nullptr;
  for (const NamedBaseline& b : baselines) {
    std::string from, options;
    try {
      from = b.json.at("device").get<std::string>();
      options = ungated_options(b.json);
    } catch (const nlohmann::json::exception& e) {
      throw std::invalid_argument(b.name + ": " + e.what());
    }
    // A --slots blocks or --pdl file is measured otherwise: never the one compared (check_perf_baseline).
    if (from == device && !options.empty()) ungated += (ungated.empty() ? "" : ", ") + b.name + " (" + options + ")";
    if (match == nullptr && from == device && options.empty()) match = &b;
    seen += (seen.empty() ? "" : ", ") + b.name + " ('" + from + "')";
  }
  if (match != nullptr) {
    try {
      return check_perf_baseline(rows, match->json, tolerance, device, match->name);
    } catch (const nlohmann::json::exception& e) {
      throw std::invalid_argument(match->name + ": " + e.what());
    }
  }
  PerfGateResult g;
  if (!ungated.empty())
    g.report = "performance gate: not run: the baselines from '" + device + "' hold rows measured otherwise than " +
               "the gate's scattered slots and plain launches: " + ungated + "\n";
  else
    g.report = "performance gate: not run: no baseline is from '" + device + "' (" +
               (seen.empty() ? std::string("no baseline given") : seen) + ")\n";
  return g;
}

}  // namespace kvcheck::bench
