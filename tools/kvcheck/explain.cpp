#include "tools/kvcheck/explain.h"

#include "properties/case_isolation.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <sys/wait.h>

#include "fuzzers/checks.h"
#include "impl/backends.h"
#include "impl/error.h"
#include "properties/gen/ops/kv/kv_gen.h"
#include "properties/gen/ops/store_load/store_load_gen.h"
#include "properties/regression.h"

namespace kvcheck {
namespace {

std::string guess_target(const std::filesystem::path& path) {
  std::string prev;
  for (const auto& part : std::filesystem::absolute(path).lexically_normal()) {
    if (prev == "corpus" && fuzz::target_by_name(part.string())) return part.string();
    prev = part.string();
  }
  const std::string name = path.filename().string();
  for (const auto& t : fuzz::targets())
    if (name.rfind(t.name + "-", 0) == 0 || name.rfind("fuzz_" + t.name, 0) == 0) return t.name;
  return "";
}

// Values shown of a long array or of a long row string ("4943 c609 ..."); the file has them all.
constexpr size_t kShownValues = 16;
// Rows shown of an array of row strings (kv).
constexpr size_t kShownRows = 8;

// A row string of space-separated values, the first kShownValues of them.
std::string abbreviate_row(const std::string& row) {
  std::istringstream in(row);
  std::string word, shown;
  size_t n = 0;
  while (in >> word)
    if (n++ < kShownValues) shown += (shown.empty() ? "" : " ") + word;
  return n > kShownValues ? shown + " ... (" + std::to_string(n) + " values)" : shown;
}

// A value on one line: scalars as JSON, arrays of scalars abbreviated to kShownValues,
// objects of scalars as {key value, ...}; "" when the value needs lines of its own.
std::string inline_value(const nlohmann::json& v) {
  if (v.is_string()) {  // "" (or blanks) as JSON: the caller takes "" for a value of lines
    const std::string r = abbreviate_row(v.get<std::string>());
    return r.empty() ? v.dump() : r;
  }
  if (!v.is_structured()) return v.dump();
  std::string r;
  size_t i = 0;
  for (auto it = v.begin(); it != v.end(); ++it, ++i) {
    if (it->is_structured() || (v.is_array() && it->is_string())) return "";
    if (v.is_array() && i == kShownValues) return r + ", ... (" + std::to_string(v.size()) + " values)]";
    r += (i ? ", " : (v.is_array() ? "[" : "{")) + (v.is_object() ? it.key() + " " : "") + it->dump();
  }
  return i == 0 ? (v.is_array() ? "[]" : "{}") : r + (v.is_array() ? "]" : "}");
}

// A regression file's scenario readably: one field a line, nested fields indented,
// long arrays and kv rows abbreviated (the file itself has every value).
void print_fields(const nlohmann::json& v, int indent, std::ostream& out) {
  const std::string pad(indent, ' ');
  for (auto it = v.begin(); it != v.end(); ++it) {
    const std::string line = inline_value(*it);
    if (!line.empty()) {
      out << pad << it.key() << ": " << line << "\n";
    } else if (it->is_object()) {
      out << pad << it.key() << ":\n";
      print_fields(*it, indent + 2, out);
    } else {  // an array of rows (kv) or of structures (segments)
      out << pad << it.key() << ": " << it->size() << " row(s)\n";
      for (size_t i = 0; i < it->size() && i < kShownRows; ++i) {
        const std::string row = inline_value((*it)[i]);
        out << pad << "  [" << i << "] " << (row.empty() ? (*it)[i].dump() : row) << "\n";
      }
      if (it->size() > kShownRows) out << pad << "  ... (" << it->size() - kShownRows << " more rows)\n";
    }
  }
}

// The project's one printer of the scenario type (store_load_show.cpp, kv_show.cpp), as RapidCheck
// and the fuzz targets show it; "" for a type it does not know or a bad scenario.
std::string decoded_scenario(const nlohmann::json& s) {
  std::ostringstream o;
  try {
    const std::string type = s.value("type", "");
    if (type == "store") props::showValue(s.get<props::StoreScenario>(), o);
    else if (type == "load") props::showValue(s.get<props::LoadScenario>(), o);
    else if (type == "store_fault") props::showValue(s.get<props::StoreFaultScenario>(), o);
    else if (type == "load_fault") props::showValue(s.get<props::LoadFaultScenario>(), o);
    else if (type == "store_kv") props::showValue(s.get<props::StoreKvScenario>(), o);
    else if (type == "gather_kv") props::showValue(s.get<props::GatherKvScenario>(), o);
    else if (type == "copy_blocks") props::showValue(s.get<props::CopyBlocksScenario>(), o);
    else if (type == "swap_blocks") props::showValue(s.get<props::SwapBlocksScenario>(), o);
  } catch (const std::exception&) {
    return "";  // the replay below says what is wrong with it
  }
  return o.str();
}

// How a forked check's process ended when it did not report: its crash, hang or exit.
std::string death_text(int status) {
  if (WIFEXITED(status) && WEXITSTATUS(status) == 3)  // run_forked's: its pipe to kvcheck broke
    return "the check's process lost its pipe to kvcheck (the backend closed a file descriptor it does not own?)";
  return props::died_how(status);
}

// t->run on `backend` in a forked child, as the .json branch runs its case: its result
// as JSON (scenario, skipped, failure, exception), or {"died": why} when the child
// crashed, hung or exited; in this process when no child could be made.
nlohmann::json run_isolated(const fuzz::Target& t, const std::vector<uint8_t>& bytes, const Backend& backend) {
  const auto body = [&]() -> std::string {
    try {
      const fuzz::CheckResult r = t.run(bytes.data(), bytes.size(), backend);
      // A plugin's message is raw bytes (maybe cut inside a UTF-8 sequence): replaced, never thrown on.
      return nlohmann::json{{"scenario", r.scenario}, {"skipped", r.skipped}, {"failure", r.failure}}.dump(
          -1, ' ', false, nlohmann::json::error_handler_t::replace);
    } catch (const std::exception& e) {  // a crash the fuzzer would report as one
      return nlohmann::json{{"exception", e.what()}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
  };
  std::string got;
  int status = 0;
  if (!props::run_forked(body, &got, &status)) return nlohmann::json::parse(body());
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && !got.empty()) return nlohmann::json::parse(got);
  return {{"died", death_text(status)}};
}

std::string target_names() {
  std::string names;
  for (const auto& t : fuzz::targets()) names += (names.empty() ? "" : ", ") + t.name;
  return names;
}

}  // namespace

int explain_file(const std::string& path, const std::string& target, std::ostream& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    out << "explain: cannot read " << path << "\n";
    return 2;
  }
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
  if (std::filesystem::path(path).extension() == ".json") {
    // A property regression file (regression.h): its scenario replayed through its property.
    try {
      const nlohmann::json doc = props::parse_regression_text(std::string(bytes.begin(), bytes.end()));
      if (props::is_regression_document(doc)) {
        // Before it is printed: a file replayed as written, or why not.
        const props::Property& property = props::check_regression_document(doc);
        // A writer-to-reader pair's failure on that pair (on cpu alone it read PASS); not
        // exercised where a side is not loaded. A pass elsewhere says where it failed.
        const std::string failed_on = doc.value("failed_on", "");
        std::string pair_missing;
        const Backend* const pair = fuzz::regression_backend(failed_on, &pair_missing);
        const std::string on = pair ? std::string(pair->name()) : failed_on;
        const bool elsewhere = !failed_on.empty() && failed_on != on;
        out << "file: " << path << ", property " << doc.value("property", "?") << " (op " << doc.value("op", "?")
            << "), failed on " << (failed_on.empty() ? "?" : failed_on) << ", backend " << on << "\n"
            << "invariant: " << doc.value("invariant", "") << "\n";
        const nlohmann::json& scenario = doc.at("scenario");
        out << "scenario (" << scenario.value("type", "?") << "):\n";
        print_fields(scenario, 2, out);
        if (const std::string d = decoded_scenario(scenario); !d.empty()) out << "decoded: " << d << "\n";
        if (pair == nullptr) {  // one rule with the replays: not a pass; exit 1 as "no input ran"
          out << "result: NOT SUPPORTED here (not exercised): " << pair_missing << "\n";
          return 1;
        }
        std::string unsupported;
        out.flush();  // what is decoded so far reaches the file even if the backend dies
        // Each case in its own process: a backend that crashes or exits is reported, not fatal.
        const props::ScopedCaseIsolation per_case;
        const std::string failure = props::replay_checked_regression(property, doc, *pair, &unsupported);
        if (!unsupported.empty()) {
          out << "result: NOT SUPPORTED by " << on << " (not exercised): " << unsupported << "\n";
          return 1;
        }
        if (failure.empty()) {
          out << "result: PASS" << (elsewhere ? fmt::format(" on {} (it failed on {})", on, failed_on) : std::string())
              << "\n";
          return 0;
        }
        out << "result: FAIL\n" << failure << "\n";
        return 1;
      }
    } catch (const std::exception& e) {
      out << "explain: " << path << " is not a usable regression file: " << e.what() << "\n";
      return 2;
    }
  }
  const std::string name = target.empty() ? guess_target(path) : target;
  const fuzz::Target* t = fuzz::target_by_name(name);
  if (t == nullptr) {
    out << "explain: " << (name.empty() ? "cannot tell the target of " + path
                                        : "no fuzz target '" + name + "'")
        << "; pass --target, one of: " << target_names() << "\n";
    return 2;
  }
  const Backend& backend = fuzz::fuzz_backend();
  out << "file: " << path << " (" << bytes.size() << " bytes), target " << t->name << ", backend " << backend.name()
      << "\n";
  out.flush();
  // In its own process: a backend that crashes, hangs or exits is reported, not fatal.
  const nlohmann::json r = run_isolated(*t, bytes, backend);
  std::string scenario = r.value("scenario", "");
  if (r.contains("died")) {  // the scenario depends on the bytes only: decoded again on cpu, in a child too
    try {
      scenario = run_isolated(*t, bytes, *backend_by_name("cpu")).value("scenario", "");
    } catch (const std::exception&) {
    }
  }
  out << scenario << (scenario.empty() || scenario.back() == '\n' ? "" : "\n");
  if (r.contains("died")) {
    out << "result: FAIL\n" << r["died"].get<std::string>() << " (this input ran in its own process)\n";
    return 1;
  }
  if (r.contains("exception")) {
    out << "result: FAIL (exception escaped the check: " << r["exception"].get<std::string>() << ")\n";
    return 1;
  }
  const std::string skipped = r.value("skipped", ""), failure = r.value("failure", "");
  if (!skipped.empty() && failure.empty()) {  // the replays' rule: not a pass; exit 1 as "no input ran"
    out << "result: NOT SUPPORTED by " << backend.name() << " (not exercised): " << skipped << "\n";
    return 1;
  }
  if (failure.empty()) {
    out << "result: PASS\n";
    return 0;
  }
  out << "result: FAIL\n" << failure;
  return 1;
}

}  // namespace kvcheck
