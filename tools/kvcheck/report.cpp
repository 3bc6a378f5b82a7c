#include "tools/kvcheck/report.h"

#include <fcntl.h>
#include <fmt/chrono.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <limits>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>
#include <stdexcept>

#include "impl/cpu/isa.h"
#include "impl/cpu/parallel.h"
#include "properties/gen/scenario_json.h"

#ifndef KVCHECK_SOURCE_DIR
#define KVCHECK_SOURCE_DIR "."
#endif

namespace kvcheck::tool {

std::string finished_verdict(int64_t failing, int64_t passing) {
  return failing > 0 ? "fail" : passing == 0 ? "not_exercised" : "pass";
}

namespace {

namespace fs = std::filesystem;

std::string run_command(const std::string& cmd) {
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[256];
    while (fgets(buf, sizeof buf, p)) out += buf;
    if (pclose(p) != 0) return "";
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

// XML text and attribute escaping (the five predefined entities; control
// characters other than tab/newline become spaces, which XML 1.0 cannot hold).
std::string xml(const std::string& s) {
  std::string r;
  r.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': r += "&amp;"; break;
      case '<': r += "&lt;"; break;
      case '>': r += "&gt;"; break;
      case '"': r += "&quot;"; break;
      case '\'': r += "&apos;"; break;
      default: r += (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') ? ' ' : c;
    }
  }
  return r;
}

double number_or(const nlohmann::json& j, const char* key, double fallback) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : fallback;
}

std::string string_or(const nlohmann::json& j, const char* key, const std::string& fallback) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : fallback;
}

// A seed as the summary holds it (a number, or a string), "" when absent or null.
std::string seed_of(const nlohmann::json& j) {
  if (!j.contains("seed") || j["seed"].is_null()) return "";
  return j["seed"].is_string() ? j["seed"].get<std::string>() : j["seed"].dump();
}

// Writes all of `content` to `fd`; false on an error (errno kept).
bool write_all(int fd, const std::string& content) {
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

// The temporary file write_file_atomically writes `target` through, renamed over it;
// check_output_paths creates it once before a run.
std::string temporary_beside(const std::string& target) { return fmt::format("{}.tmp-{}", target, getpid()); }

// The path a chain of symlinks ends at (a relative link resolved against its own
// directory), `path` itself when it is no symlink; a dangling chain ends at the name
// that does not exist. After 40 links (the kernel's ELOOP limit) the path reached.
std::string final_target(const std::string& path) {
  fs::path p = path;
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st {};
    if (lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) break;
    std::error_code ec;
    const fs::path to = fs::read_symlink(p, ec);
    if (ec) break;
    p = (to.is_absolute() ? to : p.parent_path() / to).lexically_normal();
  }
  return p.string();
}

// The summary verdicts (docs/spec.md §6) and those of a result.
const std::vector<std::string> kVerdicts = {"pass", "fail", "interrupted", "running", "not_exercised", "incomplete"};
const std::vector<std::string> kResultVerdicts = {"pass", "fail", "not_run"};

bool one_of(const std::vector<std::string>& list, const nlohmann::json& v) {
  return v.is_string() && std::find(list.begin(), list.end(), v.get<std::string>()) != list.end();
}

[[noreturn]] void bad_field(const std::string& where, const std::string& field, const std::string& what) {
  throw std::runtime_error(fmt::format("{}: {}: {}", where, field, what));
}

// What a value is, for messages: its JSON, shortened.
std::string shown(const nlohmann::json& v) {
  std::string d = v.dump();
  return d.size() > 60 ? d.substr(0, 57) + "..." : d;
}

// A count: an integer 0 ... 2^63-1 (what int64_t holds; no float, no string).
bool is_count(const nlohmann::json& v) { return props::fits_integer<int64_t>(v) && v.get<int64_t>() >= 0; }

// j[key], when present and not null, must be a count.
void check_count(const nlohmann::json& j, const char* key, const std::string& where, const std::string& prefix) {
  if (!j.contains(key) || j[key].is_null()) return;
  if (!is_count(j[key])) bad_field(where, prefix + key, "want an integer from 0 to 2^63-1, got " + shown(j[key]));
}

// j[key], when present and not null, must be a finite number >= 0 (seconds).
void check_seconds_field(const nlohmann::json& j, const char* key, const std::string& where,
                         const std::string& prefix) {
  if (!j.contains(key) || j[key].is_null()) return;
  const auto& v = j[key];
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0)
    bad_field(where, prefix + key, "want a number of seconds >= 0, got " + shown(v));
}

void check_string(const nlohmann::json& j, const char* key, const std::string& where, const std::string& prefix) {
  if (j.contains(key) && !j[key].is_string()) bad_field(where, prefix + key, "want a string, got " + shown(j[key]));
}

// One result of a summary of kind `kind` (run | fuzz); `field` names it ("results[3]").
void check_result(const nlohmann::json& r, const std::string& kind, const std::string& where, const std::string& field) {
  if (!r.is_object()) bad_field(where, field, "not a JSON object: " + shown(r));
  const std::string f = field.empty() ? "" : field + ".";
  if (!r.contains("name") || !r["name"].is_string()) bad_field(where, f + "name", "want a string, got " + shown(r.value("name", nlohmann::json())));
  if (!r.contains("verdict") || !one_of(kResultVerdicts, r["verdict"]))
    bad_field(where, f + "verdict", "want pass, fail or not_run, got " + shown(r.value("verdict", nlohmann::json())));
  if (r.contains("kind")) {
    const std::string want = kind == "fuzz" ? "fuzz_target" : "property";
    if (!r["kind"].is_string() || r["kind"].get<std::string>() != want)
      bad_field(where, f + "kind", fmt::format("want \"{}\" in a summary of kind {}, got {}", want, kind, shown(r["kind"])));
  }
  for (const char* key : {"index", "cases", "execs", "backend_calls"}) check_count(r, key, where, f);
  check_seconds_field(r, "seconds", where, f);
  for (const char* key : {"op", "why"}) check_string(r, key, where, f);
  if (r.contains("failures")) {
    if (!r["failures"].is_array()) bad_field(where, f + "failures", "want an array, got " + shown(r["failures"]));
    for (size_t i = 0; i < r["failures"].size(); ++i) {
      const auto& x = r["failures"][i];
      const std::string xf = fmt::format("{}failures[{}]", f, i);
      if (!x.is_object()) bad_field(where, xf, "not a JSON object: " + shown(x));
      check_string(x, "message", where, xf + ".");
    }
  }
}

// The run's verdict when it needs a testcase of its own in JUnit ("" when not: pass
// that a passing row and no failing one bear out, or fail that a failing row says):
// "verdict V: why". kvcheck writes neither contradiction below; a summary edited or
// written by another tool can hold one, and JUnit must not show it green.
std::string verdict_failure(const nlohmann::json& summary, int failing_rows, int passing_rows) {
  const nlohmann::json none;
  const nlohmann::json& v = summary.contains("verdict") ? summary["verdict"] : none;
  const std::string verdict = v.is_string() ? v.get<std::string>() : "";
  if (verdict == "pass") {
    const std::string due = finished_verdict(failing_rows, passing_rows);
    if (due == "fail")
      return fmt::format("verdict pass: but {} result{} failed, so the summary contradicts itself", failing_rows,
                         failing_rows == 1 ? "" : "s");
    if (due == "not_exercised")
      return "verdict pass: but no result passed (none, or only ones not run), so nothing was exercised";
    return "";
  }
  if (verdict == "fail" && failing_rows > 0) return "";
  if (verdict == "fail") return "verdict fail: the run failed, but no result says which";
  if (verdict == "running")
    return "verdict running: the run never finished (its process died or was killed, or it still runs)";
  if (verdict == "interrupted") return "verdict interrupted: the run was stopped (SIGINT, SIGTERM, SIGHUP or SIGPIPE) before it finished";
  if (verdict == "not_exercised") return "verdict not_exercised: no result reached the code under test";
  if (verdict == "incomplete") {
    std::vector<std::string> why;
    const auto list = [&](const char* key, const char* what) {
      if (!summary.contains(key) || !summary[key].is_array() || summary[key].empty()) return;
      std::vector<std::string> items;
      for (const auto& x : summary[key]) {
        if (items.size() == 20) {
          items.push_back(fmt::format("... ({} in all)", summary[key].size()));
          break;
        }
        items.push_back(x.is_string() ? x.get<std::string>() : x.dump());
      }
      why.push_back(fmt::format("{}: {}", what, fmt::join(items, ", ")));
    };
    list("missing_shards", "missing shards");
    list("missing_pairs", "pairs no shard holds");
    if (summary.contains("shards") && summary["shards"].is_array())
      for (const auto& sh : summary["shards"])
        if (sh.is_object() && sh.value("verdict", nlohmann::json()) == "running")
          why.push_back(fmt::format("shard {} did not finish", sh.value("index", nlohmann::json()).dump()));
    if (summary.contains("devices") && summary["devices"].is_array())
      for (const auto& d : summary["devices"])
        if (d.is_object() && d.contains("exit") && d["exit"] != 0 && d["exit"] != 1)
          why.push_back(fmt::format("device {} ended: {}", d.value("device", nlohmann::json()).dump(),
                                    d["exit"].is_string() ? d["exit"].get<std::string>() : d["exit"].dump()));
    return "verdict incomplete: " + (why.empty() ? std::string("a shard or pair is missing") : fmt::format("{}", fmt::join(why, "; ")));
  }
  return "verdict " + (verdict.empty() ? std::string("(none)") : verdict) + ": not a verdict of a finished, passing run";
}

}  // namespace

void check_summary(const nlohmann::json& s, const std::string& path) {
  if (!s.is_object()) throw std::runtime_error(path + ": not a JSON object, so no kvcheck summary");
  const nlohmann::json none;
  const auto get = [&](const char* key) -> const nlohmann::json& { return s.contains(key) ? s[key] : none; };
  if (get("schema") != "kvcheck-summary")
    bad_field(path, "schema", "want \"kvcheck-summary\", got " + shown(get("schema")) + ": no kvcheck summary");
  if (!get("schema_version").is_number_integer() || get("schema_version") != kSummaryVersion)
    bad_field(path, "schema_version", fmt::format("want {}, got {}", kSummaryVersion, shown(get("schema_version"))));
  if (get("kind") != "run" && get("kind") != "fuzz") bad_field(path, "kind", "want run or fuzz, got " + shown(get("kind")));
  const std::string kind = get("kind");
  if (!one_of(kVerdicts, get("verdict")))
    bad_field(path, "verdict", "want pass, fail, interrupted, running, not_exercised or incomplete, got " +
                                   shown(get("verdict")));
  if (!get("results").is_array()) bad_field(path, "results", "want an array, got " + shown(get("results")));
  for (size_t i = 0; i < s["results"].size(); ++i)
    check_result(s["results"][i], kind, path, fmt::format("results[{}]", i));
  for (const char* key : {"commit", "start_time", "isolation", "run_dir"}) check_string(s, key, path, "");
  check_seconds_field(s, "seconds", path, "");
  check_count(s, "start_epoch", path, "");
  check_count(s, "host_properties_left_out", path, "");
  if (s.contains("seed")) {
    const auto& v = s["seed"];
    if (!v.is_null() && !v.is_string() && !v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
      bad_field(path, "seed", "want an unsigned integer or a string, got " + shown(v));
  }
  if (s.contains("backends")) {
    const auto& b = s["backends"];
    if (!b.is_array() || std::any_of(b.begin(), b.end(), [](const nlohmann::json& x) { return !x.is_string(); }))
      bad_field(path, "backends", "want an array of strings, got " + shown(b));
  }
  if (s.contains("totals") && !s["totals"].is_null()) {
    if (!s["totals"].is_object()) bad_field(path, "totals", "want an object, got " + shown(s["totals"]));
    for (const char* key : {"results", "failures", "execs", "workers_started"}) check_count(s["totals"], key, path, "totals.");
  }
  for (const char* key : {"missing_shards", "missing_pairs"})
    if (s.contains(key)) {
      if (!s[key].is_array()) bad_field(path, key, "want an array, got " + shown(s[key]));
      for (size_t i = 0; i < s[key].size(); ++i)
        if (!is_count(s[key][i]))
          bad_field(path, fmt::format("{}[{}]", key, i), "want an integer from 0 to 2^63-1, got " + shown(s[key][i]));
    }
  if (s.contains("shard") && !s["shard"].is_null()) {
    const auto& sh = s["shard"];
    if (!sh.is_object()) bad_field(path, "shard", "want null or an object, got " + shown(sh));
    for (const char* key : {"index", "count", "pairs_total"}) {
      if (!sh.contains(key)) bad_field(path, std::string("shard.") + key, "missing");
      check_count(sh, key, path, "shard.");
    }
    const int64_t index = sh["index"].get<int64_t>(), count = sh["count"].get<int64_t>();
    if (count < 1 || count > kMaxShards)
      bad_field(path, "shard.count", fmt::format("want 1 ... {}, got {}", kMaxShards, count));
    if (index < 1 || index > count) bad_field(path, "shard.index", fmt::format("want 1 ... {}, got {}", count, index));
    if (const int64_t pairs = sh["pairs_total"].get<int64_t>(); pairs > kMaxPairs)
      bad_field(path, "shard.pairs_total", fmt::format("want 0 ... {}, got {}", kMaxPairs, pairs));
  }
}

std::string check_output_paths(const std::vector<NamedPath>& inputs, const std::vector<NamedPath>& outputs) {
  struct Known {
    const NamedPath* named = nullptr;
    bool exists = false, regular = false;
    dev_t dev = 0;
    ino_t ino = 0;
    std::string where;  // absolute, symlinks followed
  };
  const auto know = [](const NamedPath& p) {
    Known k;
    k.named = &p;
    struct stat st {};
    if (stat(p.path.c_str(), &st) == 0) {
      k.exists = true;
      k.regular = S_ISREG(st.st_mode);
      k.dev = st.st_dev;
      k.ino = st.st_ino;
    }
    std::error_code ec;
    const fs::path t = fs::absolute(final_target(p.path), ec);
    const fs::path c = fs::weakly_canonical(t, ec);
    k.where = (ec ? t.lexically_normal() : c).string();
    return k;
  };
  // One regular file (or one name that does not exist yet) under both names.
  const auto same = [](const Known& a, const Known& b) {
    if (a.exists != b.exists) return false;
    if (a.exists) return a.regular && b.regular && a.dev == b.dev && a.ino == b.ino;
    return a.where == b.where;
  };
  std::vector<Known> seen;
  for (const auto& in : inputs)
    if (!in.path.empty()) seen.push_back(know(in));
  for (const auto& out : outputs) {
    if (out.path.empty()) continue;
    const Known k = know(out);
    for (const Known& other : seen)
      if (same(k, other))
        return fmt::format("{} {} is the same file as {} {}: refused, nothing written", out.label, out.path,
                           other.named->label, other.named->path);
    seen.push_back(k);
    const std::string target = final_target(out.path);  // where the atomic write's temporary goes
    fs::path dir = fs::path(target).parent_path();
    if (dir.empty()) dir = ".";
    if (k.exists) {
      struct stat st {};
      if (stat(out.path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
        return fmt::format("cannot write {} ({}): a directory", out.path, out.label);
      if (access(out.path.c_str(), W_OK) != 0)
        return fmt::format("cannot write {} ({}): {}", out.path, out.label, std::strerror(errno));
      if (!k.regular) continue;  // a device, FIFO or pipe is written straight through
    } else {
      std::error_code ec;
      if (!fs::is_directory(dir, ec)) return fmt::format("cannot write {} ({}): no directory {}", out.path, out.label, dir.string());
      if (access(dir.c_str(), W_OK | X_OK) != 0)
        return fmt::format("cannot write {} ({}): directory {}: {}", out.path, out.label, dir.string(), std::strerror(errno));
    }
    // A regular file is written atomically through a temporary file beside it: make
    // that very file now, so a directory that takes none (/proc, a read-only mount that
    // access() lets root pass) or a name too long for one is refused before the run.
    const std::string probe = temporary_beside(target);
    const int fd = open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
      return fmt::format("cannot write {} ({}): cannot create {}: {}", out.path, out.label, probe,
                         std::strerror(errno));
    close(fd);
    unlink(probe.c_str());
  }
  return "";
}

std::string default_work_dir() {
  if (const char* env = std::getenv("KVCHECK_WORK_DIR"); env && *env) return env;
  return std::string(KVCHECK_SOURCE_DIR) + "/.kvcheck-work";
}

std::string utc_now() {
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::time(nullptr)));
}

std::string make_run_dir(const std::string& work_dir, const std::string& kind) {
  const std::string stamp = fmt::format("{:%Y%m%dT%H%M%SZ}", fmt::gmtime(std::time(nullptr)));
  const fs::path dir = fs::absolute(work_dir) / "runs" / fmt::format("{}-{}-{}", stamp, kind, getpid());
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create run directory " + dir.string() + ": " + ec.message());
  // Only a symlink (ours) is replaced: a file or directory a person put there stays.
  const fs::path latest = fs::absolute(work_dir) / ("latest-" + kind);
  const fs::file_status st = fs::symlink_status(latest, ec);
  if (fs::is_symlink(st) || !fs::exists(st)) {
    fs::remove(latest, ec);
    fs::create_directory_symlink(fs::path("runs") / dir.filename(), latest, ec);  // best effort
  } else {
    fmt::print(stderr, "kvcheck: {} is not a symlink, so it was left as it is and does not point at this run\n",
               latest.string());
  }
  return dir.string();
}

std::string source_commit() {
  if (const char* env = std::getenv("KVCHECK_COMMIT"); env && *env) return env;
  const std::string git = std::string("git -C '") + KVCHECK_SOURCE_DIR + "' ";
  const std::string head = run_command(git + "rev-parse HEAD 2>/dev/null");
  if (head.empty()) return "unknown";
  const std::string dirty = run_command(git + "status --porcelain --untracked-files=no 2>/dev/null");
  return dirty.empty() ? head : head + "-dirty";
}

nlohmann::json summary_header(const std::string& kind, const std::string& start_time) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return {{"schema", "kvcheck-summary"},
          {"schema_version", kSummaryVersion},
          {"kind", kind},
          {"commit", source_commit()},
          {"start_time", start_time},
          {"host", {{"name", host}, {"isa", cpu::use_avx2() ? "avx2" : "baseline"}, {"threads", cpu::max_threads()}}}};
}

bool write_file_atomically(const std::string& path, const std::string& content) {
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISDIR(st.st_mode)) {
      errno = EISDIR;
      return false;
    }
    // A device, FIFO or pipe: written through; a rename would put a file in its place.
    const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return false;
    const bool written = write_all(fd, content);
    const int e = written ? 0 : errno;  // write_all's own errno; close's when only it fails
    const bool closed = close(fd) == 0;
    if (!written) errno = e;
    return written && closed;
  }
  // A symlink stays a symlink: the file it names is the one replaced.
  const std::string target = final_target(path);
  const std::string tmp = temporary_beside(target);
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return false;
    f << content;
    f.flush();
    if (!f) {
      const int e = errno;  // the failed write's: closing and removing may change errno
      f.close();
      std::remove(tmp.c_str());
      errno = e;
      return false;
    }
  }
  if (std::rename(tmp.c_str(), target.c_str()) != 0) {
    const int e = errno;
    std::remove(tmp.c_str());
    errno = e;
    return false;
  }
  return true;
}

void write_junit(const nlohmann::json& summary, std::ostream& out) {
  const std::string kind = string_or(summary, "kind", "run");
  const auto& results = summary.contains("results") ? summary["results"] : nlohmann::json::array();
  int failures = 0, skipped = 0, passes = 0;
  for (const auto& r : results) {
    const std::string v = string_or(r, "verdict", "");
    failures += v == "fail";
    skipped += v == "not_run";
    passes += v == "pass";
  }
  // A verdict other than pass that no failing row says, or a pass that the rows
  // contradict, is a failing testcase of its own.
  const std::string verdict_failed = verdict_failure(summary, failures, passes);
  const size_t tests = results.size() + !verdict_failed.empty();
  failures += !verdict_failed.empty();
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out << fmt::format("<testsuites name=\"kvcheck {}\" tests=\"{}\" failures=\"{}\" skipped=\"{}\" time=\"{:.3f}\">\n",
                     xml(kind), tests, failures, skipped, number_or(summary, "seconds", 0));
  out << fmt::format(
      "  <testsuite name=\"kvcheck {}\" tests=\"{}\" failures=\"{}\" skipped=\"{}\" time=\"{:.3f}\" "
      "timestamp=\"{}\">\n",
      xml(kind), tests, failures, skipped, number_or(summary, "seconds", 0),
      xml(string_or(summary, "start_time", "")));
  // The campaign's seed (kvcheck run) on the suite; a fuzz run has one per target.
  const std::string seed = seed_of(summary);
  out << fmt::format("    <properties><property name=\"commit\" value=\"{}\"/><property name=\"verdict\" "
                     "value=\"{}\"/>{}</properties>\n",
                     xml(string_or(summary, "commit", "")), xml(string_or(summary, "verdict", "")),
                     seed.empty() ? "" : fmt::format("<property name=\"seed\" value=\"{}\"/>", xml(seed)));
  for (const auto& r : results) {
    const std::string classname = kind == "fuzz" ? "fuzz" : string_or(r, "op", "kvcheck");
    out << fmt::format("    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3f}\"", xml(classname),
                       xml(string_or(r, "name", "?")), number_or(r, "seconds", 0));
    const std::string verdict = string_or(r, "verdict", "");
    const std::string case_seed = seed_of(r);
    if (verdict != "fail" && verdict != "not_run" && case_seed.empty()) {
      out << "/>\n";
      continue;
    }
    out << ">\n";
    if (!case_seed.empty())
      out << fmt::format("      <properties><property name=\"seed\" value=\"{}\"/></properties>\n", xml(case_seed));
    if (verdict == "not_run") {
      out << fmt::format("      <skipped message=\"{}\"/>\n", xml(string_or(r, "why", "not run")));
    } else if (verdict == "fail") {
      std::ostringstream text;
      std::string first;
      if (r.contains("failures"))
        for (const auto& f : r["failures"]) {
          const std::string msg = string_or(f, "message", "");
          if (first.empty()) first = msg.substr(0, msg.find('\n'));
          text << msg << "\n";
          if (const std::string s = seed_of(f); !s.empty()) text << "seed: " << s << "\n";
          if (f.contains("reproduce")) text << "reproduce: " << string_or(f, "reproduce", "") << "\n";
          if (f.contains("regression_file")) text << "regression file: " << string_or(f, "regression_file", "") << "\n";
        }
      out << fmt::format("      <failure message=\"{}\">{}</failure>\n", xml(first.empty() ? "failed" : first),
                         xml(text.str()));
    }
    out << "    </testcase>\n";
  }
  if (!verdict_failed.empty()) {
    out << fmt::format(
        "    <testcase classname=\"kvcheck\" name=\"kvcheck verdict\" time=\"0.000\">\n"
        "      <failure message=\"{}\" type=\"verdict\">{}\n</failure>\n    </testcase>\n",
        xml(verdict_failed), xml(verdict_failed));
  }
  out << "  </testsuite>\n</testsuites>\n";
}

int junit_file(const std::string& summary_path, const std::string& out_path, std::ostream& err) {
  if (const std::string bad = check_output_paths({{"SUMMARY", summary_path}}, {{"OUT", out_path}}); !bad.empty()) {
    err << "kvcheck junit: " << bad << "\n";
    return 2;
  }
  nlohmann::json summary;
  try {
    std::ifstream in(summary_path);
    if (!in) throw std::runtime_error(std::strerror(errno));
    summary = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    err << "kvcheck junit: cannot read " << summary_path << ": " << e.what() << "\n";
    return 2;
  }
  try {
    check_summary(summary, summary_path);
  } catch (const std::exception& e) {
    err << "kvcheck junit: " << e.what() << "\n";
    return 2;
  }
  if (const std::string bad = write_summary_files(summary, {}, out_path); !bad.empty()) {
    err << "kvcheck junit: cannot write " << bad << "\n";
    return 2;
  }
  return 0;
}

int record_start(const std::string& kind, const std::string& work_dir, std::ostream& out, std::ostream& err) {
  try {
    const std::string dir = make_run_dir(work_dir.empty() ? default_work_dir() : work_dir, kind);
    nlohmann::json s = summary_header(kind, utc_now());
    s["run_dir"] = dir;
    s["verdict"] = "running";
    s["end_time"] = nullptr;
    s["seconds"] = 0;
    s["results"] = nlohmann::json::array();
    s["start_epoch"] = static_cast<int64_t>(std::time(nullptr));
    if (!write_file_atomically(dir + "/summary.json", s.dump(2) + "\n"))
      throw std::runtime_error("cannot write " + dir + "/summary.json");
    out << dir << "\n";
    return 0;
  } catch (const std::exception& e) {
    err << "kvcheck record: " << e.what() << "\n";
    return 2;
  }
}

int record_finish(const std::string& run_dir, const std::string& verdict, const std::string& junit_path,
                  std::ostream& err) {
  const std::string summary_path = run_dir + "/summary.json", results_path = run_dir + "/results.jsonl";
  const auto refuse = [&](const std::string& what) {
    err << "kvcheck record: " << what << "\n";
    return 2;
  };
  if (verdict != "pass" && verdict != "fail" && verdict != "interrupted" && verdict != "running")
    return refuse("verdict '" + verdict + "': want pass, fail, interrupted or running");
  if (const std::string bad =
          check_output_paths({{"results", results_path}}, {{"the summary", summary_path}, {"--junit", junit_path}});
      !bad.empty())
    return refuse(bad);
  nlohmann::json s;
  {
    std::ifstream in(summary_path);
    if (!in)
      return refuse(fmt::format("cannot read {}: {}", summary_path,
                                errno == ENOENT ? std::string("no such file") : std::strerror(errno)));
    try {
      s = nlohmann::json::parse(in);
      check_summary(s, summary_path);
    } catch (const std::exception& e) {
      return refuse(fmt::format("cannot read the run in {}: {}", run_dir, e.what()));
    }
  }
  // Only a run this command began and that has not finished: never a `kvcheck run`'s.
  if (s["kind"] != "fuzz" || s["verdict"] != "running" || !s.contains("start_epoch"))
    return refuse(fmt::format("{} is not a run that `kvcheck record start fuzz` began and that still runs (kind {}, "
                              "verdict {}{}): left as it is",
                              summary_path, s["kind"].dump(), s["verdict"].dump(),
                              s.contains("start_epoch") ? "" : ", no start_epoch"));
  nlohmann::json results = nlohmann::json::array();
  {
    std::ifstream lines(results_path);
    if (!lines && errno != ENOENT) return refuse(fmt::format("cannot read {}: {}", results_path, std::strerror(errno)));
    std::string line;
    for (int n = 1; std::getline(lines, line); ++n) {
      if (line.empty()) continue;
      try {
        nlohmann::json r = nlohmann::json::parse(line);
        check_result(r, "fuzz", fmt::format("{} line {}", results_path, n), "");
        results.push_back(std::move(r));
      } catch (const nlohmann::json::exception& e) {
        return refuse(fmt::format("{} line {}: {}", results_path, n, e.what()));
      } catch (const std::exception& e) {
        return refuse(e.what());
      }
    }
  }
  int64_t failures = 0, execs = 0, passed = 0;
  std::string first_failed;
  for (auto& r : results) {
    // A target that passed without one execution ran nothing: not a pass (the run's pass
    // rule then counts it apart). Unknown execs (null) stay as the driver said.
    if (r["verdict"] == "pass" && r.contains("execs") && r["execs"].is_number() && r["execs"] == 0) {
      r["verdict"] = "not_run";
      r["why"] = "0 executions: the target ran no input";
    }
    if (r["verdict"] == "fail" && failures++ == 0) first_failed = r["name"];
    passed += r["verdict"] == "pass";
    if (r.contains("execs") && !r["execs"].is_null() &&
        __builtin_add_overflow(execs, r["execs"].get<int64_t>(), &execs))
      return refuse(fmt::format("{}: the execs of the results overflow a 64-bit total", results_path));
  }
  // Pass is never written over a failed result, nor when no result passed.
  const std::string written = verdict == "pass" ? finished_verdict(failures, passed) : verdict;
  if (written == "fail" && verdict == "pass") {
    err << fmt::format("kvcheck record: result {} failed ({} of {} failed): verdict fail written, not pass\n",
                       first_failed, failures, results.size());
  } else if (written == "not_exercised") {
    err << fmt::format("kvcheck record: {}: verdict not_exercised written, not pass\n",
                       results.empty() ? "no results in " + results_path
                                       : fmt::format("no result of the {} in {} passed", results.size(), results_path));
  }
  s["results"] = std::move(results);
  s["verdict"] = written;
  s["end_time"] = written == "running" ? nlohmann::json(nullptr) : nlohmann::json(utc_now());
  s["seconds"] = std::max<int64_t>(0, static_cast<int64_t>(std::time(nullptr)) - s["start_epoch"].get<int64_t>());
  s["totals"] = {{"results", s["results"].size()}, {"failures", failures}, {"execs", execs}};
  if (const std::string bad = write_summary_files(s, {summary_path}, junit_path); !bad.empty())
    return refuse(fmt::format("cannot write {}", bad));
  return written == verdict ? 0 : 1;
}

std::string write_summary_files(const nlohmann::json& summary, const std::vector<std::string>& json_paths,
                                const std::string& junit_path) {
  const std::string text = summary.dump(2) + "\n";
  for (const auto& p : json_paths)
    if (!p.empty() && !write_file_atomically(p, text)) return fmt::format("{}: {}", p, std::strerror(errno));
  if (!junit_path.empty()) {
    std::ostringstream x;
    write_junit(summary, x);
    if (!write_file_atomically(junit_path, x.str())) return fmt::format("{}: {}", junit_path, std::strerror(errno));
  }
  return "";
}

}  // namespace kvcheck::tool
