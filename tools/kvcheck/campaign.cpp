#include "tools/kvcheck/campaign.h"

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <streambuf>

#include "impl/backends.h"
#include "impl/contract_backend.h"
#include "impl/error.h"
#include "impl/plugin/loader.h"
#include "properties/registry.h"
#include "properties/regression.h"
#include "properties/runner.h"
#include "tools/kvcheck/report.h"
#include "tools/kvcheck/isolate.h"

namespace kvcheck::tool {
namespace {

using Clock = std::chrono::steady_clock;

// One (property, backend) row of the campaign, accumulated over rounds.
struct Row {
  size_t index = 0;  // in the whole selection, before --shard: seeds and shards follow it
  const props::Property* property;
  std::shared_ptr<const Backend> backend;
  std::string backend_label;
  int cases = 0;
  int failures = 0;
  double seconds = 0;
  std::string message, reproduce;
  int64_t calls = 0;  // calls into the backend under test, over every round
  nlohmann::json failure;  // null, or {message, seed, reproduce, regression_file}
  std::string not_exercised;  // the backend lacks an operation of this property
  props::ClassCounts classes;  // case classes over every round (properties/classes.h)
  props::ClassBoundContext class_context;
};

Row make_row(const props::Property& p, std::shared_ptr<const Backend> b) {
  Row r;
  r.property = &p;
  r.backend_label = props::backend_label(p, *b);
  r.backend = std::move(b);
  return r;
}

// The class bound breaks of a row ("" when none or too few cases to judge).
std::string bound_breaks(const Row& r) {
  if (r.failures || r.cases < props::kClassBoundMinCases) return "";
  return props::check_class_bounds(r.property->class_bounds, r.classes, r.cases, r.class_context);
}

// Per row, the share of cases in each class and the property's bounds on it: every
// row with `all`, else only rows that failed or broke a bound (summary.json has all).
void print_class_table(const std::vector<Row>& rows, bool all, std::ostream& out) {
  bool header = false;
  int hidden = 0;
  for (const auto& r : rows) {
    if (r.cases == 0 || (r.classes.empty() && r.property->class_bounds.empty())) continue;
    if (!all && r.failures == 0 && bound_breaks(r).empty()) {
      ++hidden;
      continue;
    }
    if (!header)
      fmt::print(out, "\ncase classes (share of each pair's cases; bounds judged from {} cases, unrestricted "
                      "backends; ! = outside)\n", props::kClassBoundMinCases);
    header = true;
    fmt::print(out, "  {}/{} ({} cases)\n", r.property->name, r.backend_label, r.cases);
    std::map<std::string, std::string> bound;
    for (const auto& b : r.property->class_bounds) {
      if (!props::class_bound_applies(b, r.class_context)) continue;  // a bound not judged is not shown
      std::string text;
      if (b.min_fraction > 0) text += fmt::format("floor {:.0f}%", 100 * b.min_fraction);
      if (b.max_fraction < 1) text += fmt::format("{}ceiling {:.0f}%", text.empty() ? "" : ", ", 100 * b.max_fraction);
      bound[b.name] = text;
    }
    std::map<std::string, int> shown(r.classes.begin(), r.classes.end());
    for (const auto& b : r.property->class_bounds) shown.emplace(b.name, 0);
    const std::string breaks = bound_breaks(r);
    for (const auto& [name, n] : shown) {
      const bool bad = breaks.find(name + ":") != std::string::npos;
      fmt::print(out, "    {}{:<34} {:>6} {:>6.1f}%  {}\n", bad ? "! " : "  ", name, n, 100.0 * n / r.cases,
                 bound.count(name) ? bound[name] : "");
    }
  }
  if (hidden)
    fmt::print(out, "\ncase classes: {} pairs within their bounds (--verbose prints them; summary.json has them)\n",
               hidden);
}

}  // namespace

std::optional<std::pair<int, int>> parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == text.size()) return std::nullopt;
  const std::string a = text.substr(0, slash), b = text.substr(slash + 1);
  const auto digits = [](const std::string& x) {
    return x.size() <= 5 && std::all_of(x.begin(), x.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (!digits(a) || !digits(b)) return std::nullopt;
  const int i = std::stoi(a), n = std::stoi(b);
  if (n < 1 || n > kMaxShards || i < 1 || i > n) return std::nullopt;
  return std::make_pair(i, n);
}

std::string shell_word(const std::string& s) {
  const bool plain = !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("/._-+:,=@%", c) != nullptr;
  });
  if (plain) return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

namespace {

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

// The results table; both name columns are as wide as their longest entry.
void print_table(const std::vector<Row>& rows, std::ostream& out) {
  size_t w = 8, wb = 7;
  for (const auto& r : rows) {
    w = std::max(w, r.property->name.size());
    wb = std::max(wb, r.backend_label.size());
  }
  fmt::print(out, "\n{:<{}}  {:<{}} {:>9} {:>9} {:>9} {:>9}\n", "property", w, "backend", wb, "cases", "failures",
             "time", "cases/s");
  fmt::print(out, "{:-<{}}\n", "", w + wb + 42);
  int total_cases = 0, total_failures = 0;
  for (const auto& r : rows) {
    const std::string rate = r.seconds > 0 && r.cases > 0 ? fmt::format("{:.0f}", r.cases / r.seconds) : "-";
    fmt::print(out, "{:<{}}  {:<{}} {:>9} {:>9} {:>8.1f}s {:>9}{}\n", r.property->name, w, r.backend_label, wb, r.cases,
               r.failures, r.seconds, rate, r.failures ? "  FAIL" : r.not_exercised.empty() ? "" : "  not exercised");
    total_cases += r.cases;
    total_failures += r.failures;
  }
  fmt::print(out, "{:-<{}}\n{:<{}}  {:<{}} {:>9} {:>9}\n", "", w + wb + 42, "total", w, "", wb, total_cases,
             total_failures);
}

// The environment a reproduce line needs: "KVCHECK_PLUGIN=... " when plugins beyond the
// built-in ones are loaded, the Python backend and its interpreter (docs/python.md), and
// the watchdog limit when it was set (a hang reproduces within the same limit).
std::string plugin_env() {
  std::string out;
  for (const char* name : {"KVCHECK_PLUGIN", "KVCHECK_PYTHON_BACKEND", "KVCHECK_PYTHON", "KVCHECK_PYTHONPATH",
                           "KVCHECK_PYTHON_NARROW",
                           "KVCHECK_PLUGIN_TIMEOUT"})
    if (const char* env = std::getenv(name); env && *env) out += fmt::format("{}={} ", name, shell_word(env));
  return out;
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

// The summary's "options" (docs/spec.md §6): what the run was asked to select.
nlohmann::json options_json(const CampaignOptions& options) {
  // A contract's selection is its own properties unless --property narrowed them.
  return {{"backends", options.backends},
          {"properties", options.properties.empty() ? options.within : options.properties},
          {"fail_fast", options.fail_fast}};
}

// Each --property must name something: one typo among several filters would otherwise
// drop its rows from a gate (or list nothing) without a word. 0, or 2 after printing
// the first filter that matches no property, as `kvcheck <command>` refuses it.
int refuse_unmatched_property(const std::vector<std::string>& filters, const std::string& command,
                              std::ostream& out, const std::vector<std::string>& within = {}) {
  const auto& all = props::registry().all();
  for (const std::string& f : filters)
    if (std::none_of(all.begin(), all.end(),
                     [&](const props::Property& p) { return selected(p, {f}) && selected(p, within); })) {
      fmt::print(out, "kvcheck {}: no property matches {}: --property takes a substring of a property name or an "
                      "op{} (kvcheck run --list names them)\n",
                 command, f, within.empty() ? "" : fmt::format(", among the {} properties", fmt::join(within, " and ")));
      return 2;
    }
  return 0;
}

// The line that reruns row (p, b) with RapidCheck's reproduce parameters (`params`, ""
// for none) and the environment it needs.
std::string reproduce_line(const CampaignOptions& options, const std::string& params, const props::Property& p,
                           const Backend& b) {
  return fmt::format("{}{}{}", plugin_env(), params.empty() ? "" : "RC_PARAMS=\"" + params + "\" ",
                     options.rerun.empty() ? fmt::format("./kvcheck run --property {} --backend {}", p.name, b.name())
                                           : fmt::format("{} --property {}", options.rerun, p.name));
}

}  // namespace

int list_properties(const std::vector<std::string>& filters, std::ostream& out) {
  if (const int rc = refuse_unmatched_property(filters, "run", out); rc != 0) return rc;
  const auto& all = props::registry().all();
  fmt::print(out, "{:<56} {:<12} {:<11} {}\n", "property", "op", "runs on", "invariant");
  for (const auto& p : all)
    if (filters.empty() || selected(p, filters))
      fmt::print(out, "{:<56} {:<12} {:<11} {}\n", p.name, p.op, p.per_backend ? "each backend" : "host",
                 p.invariant);
  return 0;
}

void list_backends(std::ostream& out) {
  std::vector<std::string> missing;
  const auto backends = available_backends(&missing);
  size_t w = 8;
  for (const auto& b : backends) w = std::max(w, b->name().size());
  for (const auto& b : backends) {
    fmt::print(out, "{:<{}} available\n", b->name(), w);
    // What it declares beyond "everything": the cases the generators draw for it.
    const std::string r = b->capabilities().restrictions();
    for (size_t at = 0, end; at < r.size(); at = end + 1) {
      end = r.find('\n', at);
      if (end == std::string::npos) end = r.size();
      fmt::print(out, "{:<{}}   {}\n", "", w, r.substr(at, end - at));
    }
  }
  for (const auto& m : missing) fmt::print(out, "{}\n", m);
}

namespace {

volatile std::sig_atomic_t g_stop_signal = 0;
void on_stop_signal(int sig) { g_stop_signal = sig; }
int g_stop_depth = 0;  // StopSignals alive on this thread (the outermost installs)
void (*g_old_int)(int) = nullptr;
void (*g_old_term)(int) = nullptr;
void (*g_old_hup)(int) = nullptr;
void (*g_old_pipe)(int) = nullptr;

// Writes to two streams: the terminal's and the run directory's campaign.log.
class TeeBuf final : public std::streambuf {
 public:
  TeeBuf(std::streambuf* a, std::streambuf* b) : a_(a), b_(b) {}

 protected:
  // A write that reaches either stream succeeds: the log goes on after the terminal's
  // pipe closed (`kvcheck run | head`), and the terminal after the log's disk filled.
  int overflow(int c) override {
    if (c == EOF) return !EOF;
    const bool to_a = a_->sputc(static_cast<char>(c)) != EOF;
    const bool to_b = b_ && b_->sputc(static_cast<char>(c)) != EOF;
    return to_a || to_b ? c : EOF;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    const auto r = a_->sputn(s, n);
    return b_ ? std::max(r, b_->sputn(s, n)) : r;
  }
  int sync() override {  // both, always; either will do (a failed flush set the stream bad: the log stopped)
    const bool a = a_->pubsync() == 0;
    const bool b = b_ && b_->pubsync() == 0;
    return a || b ? 0 : -1;
  }

 private:
  std::streambuf* a_;
  std::streambuf* b_;
};

// The (property, backend) rows the options select, before --shard, with the backends
// they run on, the backends that cannot run here and the host properties left out.
struct Selection {
  std::vector<std::string> missing;
  std::vector<std::shared_ptr<const Backend>> backends;
  std::vector<Row> rows;
  int host_left_out = 0;
  int backend_left_out = 0;  // per-backend properties selected that no selected backend runs
};

// Fills `sel`; 0, or 2 after printing why the options select nothing runnable (a
// plugin that cannot run, an unknown backend) on `terminal`.
int select_rows(const CampaignOptions& options, Selection& sel, std::ostream& terminal) {
  if (const int rc = refuse_unmatched_property(options.properties, options.command, terminal, options.within); rc != 0)
    return rc;
  std::vector<std::string>& missing = sel.missing;
  auto& backends = sel.backends;
  backends = available_backends(&missing);
  // The plugins given are what the run is for: none of them runnable is no run of cpu.
  if (options.backends.empty())
    if (const std::string why = user_plugins_unavailable(); !why.empty()) {
      fmt::print(terminal, "kvcheck {}: {}\n", options.command, why);
      return 2;
    }
  // Host properties run under any backend object (they ignore it): the first one here.
  const std::shared_ptr<const Backend> host_backend = backends.empty() ? nullptr : backends.front();
  bool want_host = options.backends.empty() && !options.plugin_run;
  if (!options.backends.empty()) {
    std::vector<std::shared_ptr<const Backend>> chosen;
    for (const auto& name : options.backends) {
      if (name == "host") {
        want_host = true;
        continue;
      }
      try {
        chosen.push_back(backend_by_name(name));
      } catch (const Error& e) {
        fmt::print(terminal, "kvcheck {}: {}\n", options.command, e.what());
        return 2;
      }
    }
    backends = chosen;
    // `kvcheck contract --format/--kv-dtype`: the pair narrowed to the formats asked for.
    if (!(options.contract_scope == ContractScope{}))
      for (auto& b : backends)
        if (const ContractBackend* c = as_contract(*b))
          b = contract_backend(c->writer_ptr(), c->reader_ptr(), options.contract_scope);
  } else if (options.contract_pairs) {
    // Every ordered pair of two backends here whose writer and reader meet in a
    // contract operation (docs/spec.md §6.2): what one writes, the other reads.
    const size_t single = backends.size();
    for (size_t w = 0; w < single; ++w)
      for (size_t r = 0; r < single; ++r) {
        if (w == r) continue;
        auto pair = contract_backend(backends[w], backends[r]);
        const uint32_t ops = pair->capabilities().ops;  // what both sides take (contract_backend.h)
        const uint32_t paged = KVCHECK_OP_STORE_KV_CACHE | KVCHECK_OP_LOAD_PAGED_KV_CACHE;
        const uint32_t kv = KVCHECK_OP_STORE_KV | KVCHECK_OP_GATHER_KV;
        if ((ops & paged) == paged || (ops & kv) == kv) backends.push_back(std::move(pair));
      }
  }
  std::vector<Row>& rows = sel.rows;
  int& host_left_out = sel.host_left_out;
  for (const auto& p : props::registry().all()) {
    if (!selected(p, options.properties) || !selected(p, options.within)) continue;
    if (!p.per_backend) {  // host properties run once, as "host"
      if (!want_host || !host_backend) {
        ++host_left_out;
        continue;
      }
      rows.push_back(make_row(p, host_backend));
      continue;
    }
    const size_t before = rows.size();
    for (const auto& b : backends)  // a contract backend runs the contract properties its pair can
      if (!as_contract(*b) || (is_contract_op(p.op) && b->capabilities().supports_property_op(p.op, nullptr)))
        rows.push_back(make_row(p, b));
    if (rows.size() == before) ++sel.backend_left_out;
  }
  return 0;
}

}  // namespace

StopSignals::StopSignals() {
  if (g_stop_depth++ > 0) return;  // an outer one holds the handlers and what they saw
  g_stop_signal = 0;
  g_old_int = std::signal(SIGINT, on_stop_signal);
  g_old_term = std::signal(SIGTERM, on_stop_signal);
  g_old_hup = std::signal(SIGHUP, on_stop_signal);
  // The reader of our output went away (`kvcheck run | head`): stop as for SIGHUP, with
  // a summary, where the default action killed the run and left it "running".
  g_old_pipe = std::signal(SIGPIPE, on_stop_signal);
  plugin::set_stop_requested(stop_requested);  // a plugin's hung probe is cut at once
}

StopSignals::~StopSignals() {
  if (--g_stop_depth > 0) return;
  plugin::set_stop_requested(nullptr);
  std::signal(SIGINT, g_old_int);
  std::signal(SIGTERM, g_old_term);
  std::signal(SIGHUP, g_old_hup);
  std::signal(SIGPIPE, g_old_pipe);
}

bool stop_requested() { return g_stop_signal != 0; }

int interrupted_before_run(const CampaignOptions& options, std::ostream& out) {
  nlohmann::json s = summary_header("run", utc_now());
  s["run_dir"] = nullptr;
  s["options"] = options_json(options);
  s["verdict"] = "interrupted";
  s["why"] = "interrupted while the backends loaded: nothing ran";
  s["end_time"] = utc_now();
  s["seconds"] = 0.0;
  s["results"] = nlohmann::json::array();
  s["totals"] = {{"results", 0}, {"failures", 0}, {"execs", 0}, {"workers_started", 0}};
  fmt::print(out, "kvcheck {}: INTERRUPTED while the backends loaded: nothing ran\n", options.command);
  // An old --report must not stay behind as this run's answer.
  if (const std::string bad = write_summary_files(s, {options.report_path}, options.junit_path); !bad.empty()) {
    fmt::print(out, "kvcheck {}: cannot write {}\n", options.command, bad);
    return 2;
  }
  return 130;
}

int selected_pairs(const CampaignOptions& options) {
  Selection sel;
  std::ostringstream ignored;
  return select_rows(options, sel, ignored) == 0 ? static_cast<int>(sel.rows.size()) : -1;
}

int run_campaign(const CampaignOptions& options, std::ostream& terminal, std::ostream& progress) {
  // From the first step: a Ctrl-C while the backends load (the first ~10 ms, or a slow
  // plugin's probe) killed the process with no summary, leaving an old --report in place.
  // Now the run goes on to its summary, verdict "interrupted", exit 130 (docs/spec.md §6).
  StopSignals signals;
  Selection sel;
  if (const int rc = select_rows(options, sel, terminal); rc != 0)
    return stop_requested() ? interrupted_before_run(options, terminal) : rc;
  std::vector<std::string>& missing = sel.missing;
  auto& backends = sel.backends;
  std::vector<Row>& rows = sel.rows;
  const int host_left_out = sel.host_left_out;
  const size_t pairs_total = rows.size();
  for (size_t i = 0; i < rows.size(); ++i) rows[i].index = i;
  // The backends the run's rows run on, "host" included (the host properties' label):
  // of the whole selection, before a --shard takes its part, so every shard of one run
  // records the same list (summary merge checks it).
  std::vector<std::string> backend_list;
  for (const auto& b : backends) backend_list.emplace_back(b->name());
  for (const Row& r : rows)
    if (std::find(backend_list.begin(), backend_list.end(), r.backend_label) == backend_list.end())
      backend_list.push_back(r.backend_label);
  if (options.shard_count > 0 && !rows.empty()) {
    std::vector<Row> mine;
    for (Row& r : rows)
      if (r.index % static_cast<size_t>(options.shard_count) == static_cast<size_t>(options.shard_index - 1))
        mine.push_back(std::move(r));
    if (mine.empty()) {
      fmt::print(terminal, "kvcheck {}: shard {}/{} holds none of the {} selected (property, backend) pairs (use at "
                           "most {} shards)\n", options.command,
                 options.shard_index, options.shard_count, pairs_total, pairs_total);
      return 2;
    }
    rows = std::move(mine);
  }
  const std::string host_note =
      host_left_out ? fmt::format("{} host properties (they never call a backend; --backend host runs them)",
                                  host_left_out)
                    : std::string();
  if (rows.empty()) {
    std::string gaps;  // a writer x reader pair with nothing in common says what is missing
    for (const auto& b : backends)
      if (const ContractBackend* c = as_contract(*b); c && !c->gaps().empty())
        gaps += fmt::format("\n  {}: {}", b->name(), c->gaps());
    // Properties that exist but run on no backend selected are said as such, not as a typo.
    const std::string backend_note =
        sel.backend_left_out && backends.empty()
            ? fmt::format("{} per-backend properties (--backend host runs only the host properties; name a "
                          "backend too: kvcheck backends lists them)",
                          sel.backend_left_out)
            : std::string();
    std::string left_out = host_note;
    if (!backend_note.empty()) left_out += (left_out.empty() ? "" : "; ") + backend_note;
    fmt::print(terminal, "kvcheck {}: no (property, backend) pair to run for {}{}{}\n", options.command,
               fmt::join(options.properties, ", "), left_out.empty() ? "" : " (left out: " + left_out + ")",
               gaps.empty() ? "" : "; the pair shares no operation it could check:" + gaps);
    return 2;
  }
  // Found out now, not after a nightly run that would then hide its real exit code;
  // --report and --junit one file would leave XML where the JSON should be.
  if (const std::string bad =
          check_output_paths({}, {{"--report", options.report_path}, {"--junit", options.junit_path}});
      !bad.empty()) {
    fmt::print(terminal, "kvcheck {}: {}\n", options.command, bad);
    return 2;
  }
  std::string run_dir = options.run_dir;
  try {
    if (run_dir.empty())
      run_dir = make_run_dir(options.work_dir.empty() ? default_work_dir() : options.work_dir, "run");
    else
      std::filesystem::create_directories(run_dir);
  } catch (const std::exception& e) {
    fmt::print(terminal, "kvcheck {}: {}\n", options.command, e.what());
    return 2;
  }
  const std::string summary_path = run_dir + "/summary.json";
  std::ofstream log_file(run_dir + "/campaign.log");
  TeeBuf tee(terminal.rdbuf(), log_file ? log_file.rdbuf() : nullptr);
  std::ostream out(&tee);

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
  const std::string backend_names = fmt::format("{}", fmt::join(backend_list, ", "));
  fmt::print(out, "kvcheck {}: {} (property, backend) pairs{} on [{}], seed {}, budget {}\n", options.command, rows.size(),
             options.shard_count ? fmt::format(" (shard {}/{} of {})", options.shard_index, options.shard_count,
                                               pairs_total)
                                 : std::string(),
             backend_names, seed,
             timed ? fmt::format("{:g} s", options.seconds) : fmt::format("{} cases each", per_row_cases));
  for (const auto& m : missing) fmt::print(out, "  not run: {}\n", m);
  if (!host_note.empty()) fmt::print(out, "  left out: {}\n", host_note);
  fmt::print(out, "run directory: {}\n", run_dir);
  print_restrictions(backends, out);
  out.flush();

  nlohmann::json header = summary_header("run", utc_now());
  header["run_dir"] = run_dir;
  header["seed"] = seed;
  header["budget"] = timed ? nlohmann::json{{"seconds", options.seconds}} : nlohmann::json{{"cases", per_row_cases}};
  header["options"] = options_json(options);
  header["backends"] = backend_list;
  header["not_run"] = missing;
  header["host_properties_left_out"] = host_left_out;
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");  // a --devices worker's GPU
  header["cuda_visible_devices"] = visible ? nlohmann::json(visible) : nlohmann::json(nullptr);
  header["shard"] = options.shard_count ? nlohmann::json{{"index", options.shard_index},
                                                         {"count", options.shard_count},
                                                         {"pairs_total", pairs_total}}
                                        : nlohmann::json(nullptr);

  // Chunks of cases run in a long-lived worker (isolate.h), or in this process.
  std::vector<ChunkRunner::Pair> pairs;
  for (const Row& r : rows) pairs.emplace_back(r.property, r.backend.get());
  ChunkRunner runner(std::move(pairs), options.fork_per_chunk, [] { return g_stop_signal != 0; });
  ChunkStats in_process;  // chunks run in this process (KVCHECK_PROFILE)
  header["isolation"] = options.isolate ? (options.fork_per_chunk ? "fork-per-chunk" : "worker") : "in-process";

  const auto start = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  int failures = 0;
  bool stopped_early = false;  // --fail-fast
  std::vector<bool> ran_any(rows.size(), false);
  auto summary = [&](const std::string& verdict) {
    nlohmann::json s = header;
    s["verdict"] = verdict;
    s["end_time"] = verdict == "running" ? nlohmann::json(nullptr) : nlohmann::json(utc_now());
    s["seconds"] = elapsed();
    int64_t execs = 0;
    s["results"] = nlohmann::json::array();
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      execs += r.cases;
      nlohmann::json j = {{"name", props::test_id(*r.property, *r.backend)},
                          {"index", r.index},
                          {"kind", "property"},
                          {"property", r.property->name},
                          {"op", r.property->op},
                          {"invariant", r.property->invariant},
                          {"backend", r.backend_label},
                          {"verdict", r.failures ? "fail" : ran_any[i] ? "pass" : "not_run"},
                          {"seconds", r.seconds},
                          {"cases", r.cases},
                          {"execs", r.cases},
                          {"backend_calls", r.calls},
                          {"execs_per_second", r.seconds > 0 ? r.cases / r.seconds : 0.0},
                          {"coverage", nullptr},
                          {"new_inputs", nullptr},
                          {"failures", r.failure.is_null() ? nlohmann::json::array() : nlohmann::json::array({r.failure})}};
      if (!ran_any[i]) j["why"] = stopped_early ? "--fail-fast stopped the run" : "interrupted";
      j["classes"] = r.classes;
      nlohmann::json bounds = nlohmann::json::array();
      for (const auto& b : r.property->class_bounds)
        bounds.push_back({{"class", b.name}, {"min_fraction", b.min_fraction}, {"max_fraction", b.max_fraction},
                          {"judged", props::class_bound_applies(b, r.class_context)}});
      j["class_bounds"] = std::move(bounds);
      j["class_bounds_broken"] = bound_breaks(r);
      if (!r.not_exercised.empty()) {  // the backend's capabilities leave this property out
        j["verdict"] = "not_run";
        j["why"] = r.not_exercised;
      }
      s["results"].push_back(std::move(j));
    }
    s["totals"] = {{"results", rows.size()}, {"failures", failures}, {"execs", execs},
                   {"workers_started", runner.workers_started()}};
    return s;
  };
  // "" when written, else the file it could not write and why.
  auto write_summary = [&](const std::string& verdict) {
    return write_summary_files(summary(verdict), {summary_path, options.report_path},
                               verdict == "running" ? std::string() : options.junit_path);
  };
  write_summary("running");

  // A worker that ended badly between chunks fails the row of the chunk it ran last.
  auto fail_idle_deaths = [&] {
    for (const auto& d : runner.take_idle_deaths()) {
      Row& r = rows[d.pair];
      if (r.failures > 0) continue;
      ++failures;
      r.failures = 1;
      r.message = d.message;
      // `run` reruns it alone in a fresh worker; contract has no such option.
      const std::string reproduce =
          reproduce_line(options, "", *r.property, *r.backend) + (options.rerun.empty() ? " --fork-per-chunk" : "");
      fmt::print(out, "\nFAIL {} on {}\n{}\nreproduce: {}\n", r.property->name, r.backend_label, d.message, reproduce);
      r.failure = {{"message", d.message}, {"reproduce", reproduce}};
      out.flush();
      if (options.fail_fast) stopped_early = true;
    }
  };

  const bool tty = options.progress && &progress == &std::cerr && isatty(STDERR_FILENO);
  double last_line = 0, last_summary = 0;
  for (uint64_t round = 0; !g_stop_signal && !stopped_early; ++round) {
    bool ran = false;
    for (size_t i = 0; i < rows.size() && !g_stop_signal && !stopped_early; ++i) {
      Row& r = rows[i];
      if (r.failures > 0) continue;  // a failing row keeps its minimal case
      // Round 0 always completes, so every selected row runs; later rounds stop at the budget.
      if (round > 0 && (!timed || elapsed() >= options.seconds)) break;
      const uint64_t case_seed = timed ? mix_seed(seed, round, r.index) : seed;
      if (!r.not_exercised.empty()) continue;
      // What the backend cannot run is said as such, before any budget reason.
      if (r.cases == 0)
        if (std::string why = props::why_not_exercised(*r.property, *r.backend); !why.empty()) {
          r.not_exercised = std::move(why);
          ran_any[i] = true;
          continue;
        }
      // A property of a few costly cases runs them in round 0 only.
      if (r.property->max_cases_per_run > 0 && r.cases >= r.property->max_cases_per_run) continue;
      // ... and, in a timed run, only when one case fits in the budget left.
      // (Only a property that declares a cost: an ordinary row always runs its round 0.)
      if (timed && r.property->seconds_per_case > 0 && r.property->seconds_per_case > options.seconds - elapsed()) {
        if (r.cases == 0)
          r.not_exercised = fmt::format("needs ~{:.0f} s per case, budget too small ({:.1f} s of {:g} s left)",
                                        r.property->seconds_per_case, std::max(0.0, options.seconds - elapsed()),
                                        options.seconds);
        continue;
      }
      const props::CaseBudget budget{case_seed, chunk, 100};
      const bool here = !options.isolate || !r.property->per_backend;
      bool cut = false;  // a stop signal ended the chunk: nothing of it counts
      const auto o = here ? props::run_property(*r.property, *r.backend, budget) : runner.run(i, budget, &cut);
      fail_idle_deaths();
      if (cut) break;
      if (here) in_process.add(o);
      r.not_exercised = o.not_exercised;
      ran = true;
      ran_any[i] = true;
      r.cases += o.cases;
      r.calls += o.backend_calls;
      r.seconds += o.seconds;
      for (const auto& [name, n] : o.classes) r.classes[name] += n;
      r.class_context = o.class_context;
      if (o.failed) {
        ++failures;
        r.failures = 1;
        r.message = o.message;
        r.reproduce = o.reproduce;
        const std::string reproduce = reproduce_line(options, o.reproduce, *r.property, *r.backend);
        fmt::print(out, "\nFAIL {} on {}\n{}\nreproduce: {}\n", r.property->name, r.backend_label, o.message, reproduce);
        r.failure = {{"message", o.message}, {"seed", case_seed}, {"reproduce", reproduce}};
        if (!o.scenario.empty()) {
          // The minimal case as a readable scenario that replays without RapidCheck.
          const nlohmann::json doc = props::regression_document(
              *r.property, r.backend_label, nlohmann::json::parse(o.scenario),
              {{"seed", case_seed}, {"reproduce", o.reproduce}, {"commit", header["commit"]}, {"time", utc_now()}},
              o.message);
          std::string replay;
          try {
            const props::ScopedCaseIsolation per_case(options.isolate);  // this process never calls a plugin
            replay = props::replay_regression(doc, *r.backend);
          } catch (const std::exception& e) {
            replay = std::string("unusable: ") + e.what();
          }
          const std::string rel = "regressions/" + r.property->op + "/" + props::regression_file_name(doc);
          std::filesystem::create_directories(std::filesystem::path(run_dir) / "regressions" / r.property->op);
          if (write_file_atomically(run_dir + "/" + rel, doc.dump(2) + "\n")) {
            r.failure["regression_file"] = run_dir + "/" + rel;
            r.failure["regression_replay_fails"] = !replay.empty();
            fmt::print(out, "regression file: {}/{}\n  replayed from the file: {}\n  keep it: ./kvcheck corpus keep {}\n",
                       run_dir, rel, replay.empty() ? "PASSES (not a usable regression)" : "fails, as it should",
                       run_dir);
          }
        }
        out.flush();
        if (options.fail_fast) stopped_early = true;
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
      if (elapsed() - last_summary >= 5) {  // a crash or kill -9 still leaves a recent summary
        write_summary("running");
        last_summary = elapsed();
      }
    }
    if (!ran || !timed) break;
  }
  // Stopped before the rounds ended; a stop while the table prints (a reader that closed
  // the pipe after the lines it wanted) leaves the verdict to the results.
  const bool interrupted = g_stop_signal != 0;
  if (tty) progress << "\r\x1b[K" << std::flush;
  runner.stop();  // a profiling worker prints before the table
  fail_idle_deaths();
  if (profile_requested() && in_process.chunks) print_profile(stderr, "in process", in_process);

  // A row whose cases never reached the backend under test did not test it.
  for (Row& r : rows)
    if (r.failures == 0 && r.not_exercised.empty())
      r.not_exercised = props::no_calls_reason(*r.property, *r.backend, r.cases, r.calls);
  print_table(rows, out);
  print_class_table(rows, options.verbose, out);
  print_not_exercised(rows, out);
  // A run none of whose rows ran a case that reached its backend tested nothing: not a pass.
  const int64_t exercised = std::count_if(rows.begin(), rows.end(),
                                          [](const Row& r) { return r.cases > 0 && r.not_exercised.empty(); });
  const std::string verdict = interrupted ? "interrupted" : finished_verdict(failures, exercised);
  const bool nothing = verdict == "not_exercised";
  fmt::print(out, "{} in {:.1f}s, seed {}{}{}\n",
             interrupted ? "INTERRUPTED"
             : failures  ? "FAILED"
             : nothing   ? "NOTHING EXERCISED: no (property, backend) pair ran a case that reached its backend"
                         : "all properties held",
             elapsed(), seed,
             failures ? fmt::format(", {} failing (property, backend) pairs", failures) : std::string(),
             stopped_early ? " (--fail-fast: stopped at the first failure)" : "");
  if (const std::string bad = write_summary(verdict); !bad.empty()) {
    fmt::print(out, "kvcheck {}: cannot write {} (the verdict above stands; exit 2)\n", options.command, bad);
    return 2;
  }
  fmt::print(out, "summary: {}\n", summary_path);
  if (!options.report_path.empty()) fmt::print(out, "report: {}\n", options.report_path);
  if (!options.junit_path.empty()) fmt::print(out, "junit: {}\n", options.junit_path);
  out.flush();
  if (interrupted) return 130;
  return failures || nothing ? 1 : 0;
}

}  // namespace kvcheck::tool
