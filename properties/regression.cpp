#include "properties/regression.h"

#include <cstdio>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "properties/gen/scenario_json.h"
#include "properties/harness.h"
#include "properties/rapidcheck_bridge.h"
#include "properties/runner.h"

namespace kvcheck::props {
namespace {

thread_local std::optional<nlohmann::json> failing_scenario;

// FNV-1a 64: a stable content hash for file names (same on every machine).
uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001B3ull;
  return h;
}

const Property& property_named(const std::string& name) {
  for (const auto& p : registry().all())
    if (p.name == name) return p;
  throw std::runtime_error("no property named '" + name + "' (renamed? see ./kvcheck run --list)");
}

}  // namespace

void note_failing_scenario(nlohmann::json scenario) { failing_scenario = std::move(scenario); }

std::optional<nlohmann::json> take_failing_scenario() {
  auto s = std::move(failing_scenario);
  failing_scenario.reset();
  return s;
}

nlohmann::json regression_document(const Property& p, const std::string& backend, const nlohmann::json& scenario,
                                   const nlohmann::json& found, const std::string& failure) {
  return {{"kvcheck_regression", kRegressionVersion},
          {"engine", "rapidcheck"},
          {"property", p.name},
          {"op", p.op},
          {"invariant", p.invariant},
          {"failed_on", backend},
          {"found", found},
          {"failure", failure},
          {"scenario", scenario}};
}

std::string regression_file_name(const nlohmann::json& document) {
  std::string name = document.at("property").get<std::string>();
  if (name.rfind("prop_", 0) == 0) name = name.substr(5);
  char hash[24];
  std::snprintf(hash, sizeof hash, "%016llx",
                static_cast<unsigned long long>(fnv1a(document.at("property").get<std::string>() +
                                                      document.at("scenario").dump())));
  return name + "-" + hash + ".json";
}

bool is_regression_document(const nlohmann::json& j) { return j.is_object() && j.contains("kvcheck_regression"); }

nlohmann::json parse_regression_text(const std::string& text) {
  std::vector<std::set<std::string>> keys;  // one set per object being read
  const nlohmann::json::parser_callback_t seen = [&](int, nlohmann::json::parse_event_t event, nlohmann::json& v) {
    if (event == nlohmann::json::parse_event_t::object_start) {
      keys.emplace_back();
    } else if (event == nlohmann::json::parse_event_t::object_end) {
      keys.pop_back();
    } else if (event == nlohmann::json::parse_event_t::key && !keys.empty() &&
               !keys.back().insert(v.get<std::string>()).second) {
      throw std::runtime_error("field '" + v.get<std::string>() + "' appears twice in one object (the last would win)");
    }
    return true;
  };
  return nlohmann::json::parse(text, seen);
}

const Property& check_regression_document(const nlohmann::json& document) {
  if (!is_regression_document(document)) throw std::runtime_error("not a kvcheck regression file");
  // Before anything copies, dumps or prints it: nlohmann's copy recurses (a field nested
  // 100,000 arrays deep overflowed the stack); no writer nests deeper than a few levels.
  check_json_depth(document, 32);
  if (int_at<int>(document, "kvcheck_regression") != kRegressionVersion)
    throw std::runtime_error("regression file version " + document.at("kvcheck_regression").dump() +
                             " (this build reads " + std::to_string(kRegressionVersion) + ")");
  // regression_document's fields: its own output's keys.
  const nlohmann::json fields = regression_document(Property{}, "", nullptr, nullptr, "");
  for (auto it = document.begin(); it != document.end(); ++it)
    if (!fields.contains(it.key())) {
      std::string known;
      for (auto f = fields.begin(); f != fields.end(); ++f) known += (known.empty() ? "" : ", ") + f.key();
      throw std::runtime_error("field '" + it.key() + "' is not one of a regression file's (" + known + ")");
    }
  const std::string name = document.at("property").get<std::string>();  // named: g++ 13 -Wdangling-reference
  const Property& p = property_named(name);
  if (!p.replay) throw std::runtime_error(p.name + " has no scenario replay");
  // The file's op is what explain and the reports say: one at odds with the property's
  // is a hand edit gone wrong, not a case to replay under the wrong name.
  if (document.contains("op") && document.at("op") != p.op)
    throw std::runtime_error("op " + document.at("op").dump() + " is not " + p.name + "'s (\"" + p.op + "\")");
  if (p.check_scenario) p.check_scenario(document.at("scenario"));
  return p;
}

std::string replay_regression(const nlohmann::json& document, const Backend& b, std::string* unsupported) {
  return replay_checked_regression(check_regression_document(document), document, b, unsupported);
}

std::string replay_checked_regression(const Property& p, const nlohmann::json& document, const Backend& b,
                                      std::string* unsupported) {
  std::string why = why_not_exercised(p, b);  // the capabilities exclude it: not called
  if (why.empty()) {
    try {
      p.replay(b, document.at("scenario"));
    } catch (const UnsupportedCase& r) {  // the backend refused it with kUnsupported
      why = r.description;
    } catch (const Error& e) {
      return std::string("unexpected kvcheck::Error: ") + e.what();
    } catch (...) {
      // RC_ASSERT / RC_FAIL outside RapidCheck throw the case result itself.
      const auto r = rapidcheck_case_result(std::current_exception());
      if (!r) throw;
      return r->description;
    }
  }
  if (why.empty()) return "";
  if (unsupported == nullptr) return "not supported by " + std::string(b.name()) + ": " + why;
  *unsupported = why;
  return "";
}

}  // namespace kvcheck::props
