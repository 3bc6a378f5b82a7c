#include "tools/kvcheck/campaign.h"

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "impl/backend.h"
#include "impl/error.h"
#include "properties/registry.h"
#include "properties/runner.h"
#include "tools/kvcheck/isolate.h"

namespace kvcheck::tool {
namespace {

using Clock = std::chrono::steady_clock;

// One (property, backend) row of the campaign, accumulated over rounds.
struct Row {
  const props::Property* property;
  std::shared_ptr<const Backend> backend;
  std::string backend_label;
  int cases = 0;
  int failures = 0;
  double seconds = 0;
  std::string message, reproduce;
  uint64_t failing_seed = 0;
  std::string not_exercised;  // the backend lacks an operation of this property
};

bool selected(const props::Property& p, const std::vector<std::string>& filters) {
  if (filters.empty()) return true;
  for (const auto& f : filters)
    if (p.name.find(f) != std::string::npos || p.op == f) return true;
  return false;
}

uint64_t mix_seed(uint64_t seed, uint64_t round, uint64_t row) {
  uint64_t x = seed ^ (round * 0x9E3779B97F4A7C15ull) ^ (row * 0xC2B2AE3D27D4EB4Full);
  x = (x ^ (x >> 31)) * 0xBF58476D1CE4E5B9ull;
  return x ^ (x >> 29);
}

void print_table(const std::vector<Row>& rows, std::ostream& out) {
  size_t w = 8;
  for (const auto& r : rows) w = std::max(w, r.property->name.size());
  fmt::print(out, "\n{:<{}}  {:<8} {:>9} {:>9} {:>9}\n", "property", w, "backend", "cases", "failures", "time");
  fmt::print(out, "{:-<{}}\n", "", w + 40);
  int total_cases = 0, total_failures = 0;
  for (const auto& r : rows) {
    fmt::print(out, "{:<{}}  {:<8} {:>9} {:>9} {:>8.1f}s{}\n", r.property->name, w, r.backend_label, r.cases,
               r.failures, r.seconds, r.failures ? "  FAIL" : r.not_exercised.empty() ? "" : "  not exercised");
    total_cases += r.cases;
    total_failures += r.failures;
  }
  fmt::print(out, "{:-<{}}\n{:<{}}  {:<8} {:>9} {:>9}\n", "", w + 40, "total", w, "", total_cases, total_failures);
}

// "KVCHECK_PLUGIN=... " when plugins beyond the built-in ones are loaded (reproduce lines).
std::string plugin_env() {
  const char* env = std::getenv("KVCHECK_PLUGIN");
  return env && *env ? fmt::format("KVCHECK_PLUGIN={} ", env) : std::string();
}

// What each backend's capabilities leave out (the generators draw inside them).
void print_restrictions(const std::vector<std::shared_ptr<const Backend>>& backends, std::ostream& out) {
  for (const auto& b : backends) {
    std::string r = b->capabilities().restrictions();
    if (r.empty()) continue;
    r.pop_back();
    for (size_t at; (at = r.find('\n')) != std::string::npos;) r.replace(at, 1, "; ");
    fmt::print(out, "  {} supports a subset, cases drawn inside it: {}\n", b->name(), r);
  }
}

void print_not_exercised(const std::vector<Row>& rows, std::ostream& out) {
  bool header = false;
  for (const auto& r : rows) {
    if (r.not_exercised.empty()) continue;
    if (!header) fmt::print(out, "not exercised:\n");
    header = true;
    fmt::print(out, "  {} on {}: {}\n", r.property->name, r.backend_label, r.not_exercised);
  }
}

}  // namespace

void list_properties(std::ostream& out) {
  fmt::print(out, "{:<56} {:<12} {:<11} {}\n", "property", "op", "runs on", "invariant");
  for (const auto& p : props::registry().all())
    fmt::print(out, "{:<56} {:<12} {:<11} {}\n", p.name, p.op, p.per_backend ? "each backend" : "host",
               p.invariant);
}

void list_backends(std::ostream& out) {
  std::vector<std::string> missing;
  for (const auto& b : available_backends(&missing)) fmt::print(out, "{:<8} available\n", b->name());
  for (const auto& m : missing) fmt::print(out, "{}\n", m);
}

int run_campaign(const CampaignOptions& options, std::ostream& out, std::ostream& progress) {
  std::vector<std::string> missing;
  auto backends = available_backends(&missing);
  if (!options.backends.empty()) {
    std::vector<std::shared_ptr<const Backend>> chosen;
    for (const auto& name : options.backends) {
      try {
        chosen.push_back(backend_by_name(name));
      } catch (const Error& e) {
        fmt::print(out, "kvcheck run: {}\n", e.what());
        return 2;
      }
    }
    backends = chosen;
  }
  std::vector<Row> rows;
  for (const auto& p : props::registry().all()) {
    if (!selected(p, options.properties)) continue;
    for (const auto& b : backends) {
      Row row;
      row.property = &p;
      row.backend = b;
      row.backend_label = props::backend_label(p, *b);
      rows.push_back(row);
      if (!p.per_backend) break;  // host properties run once
    }
  }
  if (rows.empty()) {
    fmt::print(out, "kvcheck run: no property matches {}\n", fmt::join(options.properties, ", "));
    return 2;
  }

  if (!options.report_path.empty() && !std::ofstream(options.report_path)) {
    // Found out now, not after a nightly run that would then hide its real exit code.
    fmt::print(out, "kvcheck run: cannot write report {}\n", options.report_path);
    return 2;
  }
  const uint64_t seed = options.seed.value_or(
      props::configured_seed(static_cast<uint64_t>(Clock::now().time_since_epoch().count())));
  // RapidCheck echoes its configuration once ("Using configuration: seed=..."); make
  // that echo show the campaign's seed instead of an unrelated random one.
  const char* rc_params = std::getenv("RC_PARAMS");
  const std::string params = rc_params ? rc_params : "";
  if (params.find("seed=") == std::string::npos)
    setenv("RC_PARAMS", (params + (params.empty() ? "" : " ") + "seed=" + std::to_string(seed)).c_str(), 1);
  const bool timed = options.seconds > 0;
  const int per_row_cases = options.cases > 0 ? options.cases : 200;
  const int chunk = timed ? 20 : per_row_cases;
  std::string backend_names;
  for (const auto& b : backends) backend_names += (backend_names.empty() ? "" : ", ") + std::string(b->name());
  fmt::print(out, "kvcheck run: {} (property, backend) pairs on [{}], seed {}, budget {}\n", rows.size(), backend_names,
             seed, timed ? fmt::format("{:.0f} s", options.seconds) : fmt::format("{} cases each", per_row_cases));
  for (const auto& m : missing) fmt::print(out, "  not run: {}\n", m);
  print_restrictions(backends, out);
  out.flush();

  const bool tty = options.progress && &progress == &std::cerr && isatty(STDERR_FILENO);
  const auto start = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  double last_line = 0;
  int failures = 0;
  for (uint64_t round = 0;; ++round) {
    bool ran = false;
    for (size_t i = 0; i < rows.size(); ++i) {
      Row& r = rows[i];
      if (r.failures > 0) continue;  // a failing row keeps its minimal case
      // Round 0 always completes, so every selected row runs; later rounds stop at the budget.
      if (round > 0 && (!timed || elapsed() >= options.seconds)) break;
      const uint64_t case_seed = timed ? mix_seed(seed, round, i) : seed;
      if (!r.not_exercised.empty()) continue;
      const props::CaseBudget budget{case_seed, chunk, 100};
      const auto o = options.isolate && r.property->per_backend
                         ? run_property_isolated(*r.property, *r.backend, budget)
                         : props::run_property(*r.property, *r.backend, budget);
      r.not_exercised = o.not_exercised;
      ran = true;
      r.cases += o.cases;
      r.seconds += o.seconds;
      if (o.failed) {
        ++failures;
        r.failures = 1;
        r.message = o.message;
        r.reproduce = o.reproduce;
        r.failing_seed = case_seed;
        fmt::print(out, "\nFAIL {} on {}\n{}\nreproduce: {}RC_PARAMS=\"{}\" ./kvcheck run --property {} --backend {}\n",
                   r.property->name, r.backend_label, o.message, plugin_env(), o.reproduce, r.property->name,
                   r.backend->name());
        out.flush();
      }
      if (options.progress && (tty || elapsed() - last_line >= 10)) {
        const std::string line =
            fmt::format("[{:6.1f}s{}] round {} {:<52} failures {}", elapsed(),
                        timed ? fmt::format("/{:.0f}s", options.seconds) : std::string(), round + 1,
                        r.property->name + "/" + r.backend_label, failures);
        if (tty)
          progress << "\r" << line << "\x1b[K" << std::flush;
        else
          progress << line << "\n" << std::flush;
        last_line = elapsed();
      }
    }
    if (!ran || !timed) break;
  }
  if (tty) progress << "\r\x1b[K" << std::flush;

  print_table(rows, out);
  print_not_exercised(rows, out);
  fmt::print(out, "{} in {:.1f}s, seed {}{}\n", failures ? "FAILED" : "all properties held", elapsed(), seed,
             failures ? fmt::format(", {} failing (property, backend) pairs", failures) : std::string());

  if (!options.report_path.empty()) {
    nlohmann::json report;
    report["seed"] = seed;
    report["budget"] = timed ? nlohmann::json{{"seconds", options.seconds}} : nlohmann::json{{"cases", per_row_cases}};
    report["seconds"] = elapsed();
    report["backends"] = backend_names;
    report["not_run"] = missing;
    report["failures"] = failures;
    for (const auto& r : rows)
      report["results"].push_back({{"property", r.property->name},
                                   {"op", r.property->op},
                                   {"invariant", r.property->invariant},
                                   {"backend", r.backend_label},
                                   {"cases", r.cases},
                                   {"failures", r.failures},
                                   {"seconds", r.seconds},
                                   {"message", r.message},
                                   {"reproduce", r.reproduce},
                                   {"not_exercised", r.not_exercised}});
    std::ofstream f(options.report_path);
    f << report.dump(2) << "\n";
    if (!f) {
      fmt::print(out, "kvcheck run: cannot write report {}\n", options.report_path);
      return 2;
    }
    fmt::print(out, "report: {}\n", options.report_path);
  }
  return failures ? 1 : 0;
}

}  // namespace kvcheck::tool
