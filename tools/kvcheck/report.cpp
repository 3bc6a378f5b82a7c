#include "tools/kvcheck/report.h"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>
#include <stdexcept>

#include "impl/cpu/isa.h"
#include "impl/cpu/parallel.h"

#ifndef KVCHECK_SOURCE_DIR
#define KVCHECK_SOURCE_DIR "."
#endif

namespace kvcheck::tool {
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

}  // namespace

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
  const fs::path latest = fs::absolute(work_dir) / ("latest-" + kind);
  fs::remove(latest, ec);
  fs::create_directory_symlink(fs::path("runs") / dir.filename(), latest, ec);  // best effort
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
  const std::string tmp = fmt::format("{}.tmp-{}", path, getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return false;
    f << content;
    f.flush();
    if (!f) {
      std::remove(tmp.c_str());
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
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
  int failures = 0, skipped = 0;
  for (const auto& r : results) {
    const std::string v = string_or(r, "verdict", "");
    failures += v == "fail";
    skipped += v == "not_run";
  }
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out << fmt::format("<testsuites name=\"kvcheck {}\" tests=\"{}\" failures=\"{}\" skipped=\"{}\" time=\"{:.3f}\">\n",
                     xml(kind), results.size(), failures, skipped, number_or(summary, "seconds", 0));
  out << fmt::format(
      "  <testsuite name=\"kvcheck {}\" tests=\"{}\" failures=\"{}\" skipped=\"{}\" time=\"{:.3f}\" "
      "timestamp=\"{}\">\n",
      xml(kind), results.size(), failures, skipped, number_or(summary, "seconds", 0),
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
  out << "  </testsuite>\n</testsuites>\n";
}

int junit_file(const std::string& summary_path, const std::string& out_path, std::ostream& err) {
  nlohmann::json summary;
  try {
    std::ifstream in(summary_path);
    summary = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    err << "kvcheck junit: cannot read " << summary_path << ": " << e.what() << "\n";
    return 2;
  }
  std::ostringstream x;
  write_junit(summary, x);
  if (!write_file_atomically(out_path, x.str())) {
    err << "kvcheck junit: cannot write " << out_path << "\n";
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
  nlohmann::json s;
  try {
    std::ifstream in(run_dir + "/summary.json");
    s = nlohmann::json::parse(in);
    s["results"] = nlohmann::json::array();
    std::ifstream lines(run_dir + "/results.jsonl");
    std::string line;
    while (std::getline(lines, line))
      if (!line.empty()) s["results"].push_back(nlohmann::json::parse(line));
  } catch (const std::exception& e) {
    err << "kvcheck record: cannot read the run in " << run_dir << ": " << e.what() << "\n";
    return 2;
  }
  int failures = 0;
  int64_t execs = 0;
  for (const auto& r : s["results"]) {
    failures += r.value("verdict", "") == "fail";
    if (r.contains("execs") && r["execs"].is_number()) execs += r["execs"].get<int64_t>();
  }
  s["verdict"] = verdict;
  s["end_time"] = verdict == "running" ? nlohmann::json(nullptr) : nlohmann::json(utc_now());
  s["seconds"] = static_cast<int64_t>(std::time(nullptr)) - s.value("start_epoch", static_cast<int64_t>(0));
  s["totals"] = {{"results", s["results"].size()}, {"failures", failures}, {"execs", execs}};
  if (const std::string bad = write_summary_files(s, {run_dir + "/summary.json"}, junit_path); !bad.empty()) {
    err << "kvcheck record: cannot write " << bad << "\n";
    return 2;
  }
  return 0;
}

std::string write_summary_files(const nlohmann::json& summary, const std::vector<std::string>& json_paths,
                                const std::string& junit_path) {
  const std::string text = summary.dump(2) + "\n";
  for (const auto& p : json_paths)
    if (!p.empty() && !write_file_atomically(p, text)) return p;
  if (!junit_path.empty()) {
    std::ostringstream x;
    write_junit(summary, x);
    if (!write_file_atomically(junit_path, x.str())) return junit_path;
  }
  return "";
}

}  // namespace kvcheck::tool
