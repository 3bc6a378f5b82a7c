// Property regression files (SPEC §6 "a failure anywhere becomes a regression case"):
// the minimal counterexample of a failing property, written as a readable JSON
// scenario that the test run replays forever without RapidCheck (no reproduce token,
// no generator internals). A property opts in by being built with scenario_property().
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>

#include "impl/backend.h"
#include "impl/error.h"
#include "properties/case_isolation.h"
#include "properties/gen/scenario_json.h"
#include "properties/gen/ops/kv/kv_gen.h"
#include "properties/gen/ops/store_load/store_load_gen.h"
#include "properties/registry.h"

namespace kvcheck::props {

/// Version of the regression file layout ("kvcheck_regression" key).
inline constexpr int kRegressionVersion = 1;

// The scenario types' JSON forms (to_json / from_json) are declared with the types:
// gen/ops/store_load/store_load_gen.h, gen/ops/kv/kv_gen.h.

/// Notes the case classes (classes.h) a scenario exercises: "padding rows", "kv longer
/// than slot_mapping", "custom format", "odd stride", "error", ... (scenario_classes.cpp).
void note_scenario_classes(const StoreScenario& s);
void note_scenario_classes(const LoadScenario& s);
void note_scenario_classes(const StoreFaultScenario& s);
void note_scenario_classes(const LoadFaultScenario& s);
/// K/V family: "error" for a scenario with a fault, else note_kv_classes (kv_harness.h).
void note_scenario_classes(const StoreKvScenario& s);
void note_scenario_classes(const GatherKvScenario& s);

/// Records the scenario of the case that just failed on this thread (the last one
/// recorded during a RapidCheck run is its minimal case: RapidCheck re-runs it last).
void note_failing_scenario(nlohmann::json scenario);
/// Returns and clears the recorded scenario.
std::optional<nlohmann::json> take_failing_scenario();

/// A backend property whose case is one scenario of type S: the body draws it with
/// `draw` and checks it with `check` (through run_case: in its own process under
/// per-case isolation); on failure the scenario is recorded for a regression file, and
/// `replay` runs `check` on a scenario read back from JSON.
template <class S>
Property scenario_property(std::string name, std::string op, std::string invariant, S (*draw)(),
                           void (*check)(const Backend&, const S&), std::vector<ClassBound> class_bounds = {}) {
  Property p;
  p.class_bounds = std::move(class_bounds);
  p.name = std::move(name);
  p.op = std::move(op);
  p.invariant = std::move(invariant);
  p.per_backend = true;
  p.body = [draw, check](const Backend& b) {
    const S s = draw();
    note_scenario_classes(s);
    try {
      run_case([&] { check(b, s); });
    } catch (...) {
      note_failing_scenario(nlohmann::json(s));
      throw;
    }
  };
  p.check_scenario = [](const nlohmann::json& scenario) {
    check_scenario_fields(scenario, [](const nlohmann::json& j) { return nlohmann::json(j.get<S>()); });
  };
  p.replay = [check](const Backend& b, const nlohmann::json& scenario) {
    const S s = scenario.get<S>();
    run_case([&] { check(b, s); });
  };
  return p;
}

/// The regression file of a failing property: version, engine, property, op, the
/// backend it failed on, how it was found (seed, reproduce, commit) and the scenario.
nlohmann::json regression_document(const Property& p, const std::string& backend, const nlohmann::json& scenario,
                                   const nlohmann::json& found, const std::string& failure);
/// "<property without prop_>-<16 hex of a hash of the scenario>.json": the same
/// counterexample never gets two names.
std::string regression_file_name(const nlohmann::json& document);

/// True when `j` is a property regression document (has "kvcheck_regression").
bool is_regression_document(const nlohmann::json& j);

/// Parses a regression file's text (JSON) as nlohmann::json::parse does, but throws
/// std::runtime_error on an object holding one key twice (a hand edit's second
/// "threads" would silently win), naming the key. Throws nlohmann's parse_error on
/// malformed JSON.
nlohmann::json parse_regression_text(const std::string& text);

/// Throws std::runtime_error when `document` (is_regression_document) cannot be
/// replayed as written: another version, an unknown property or one without replay, an
/// op at odds with the property's, a top-level field regression_document never writes
/// ("faild_on" read as no pair), JSON nested deeper than 32 levels, or a scenario field
/// that changes nothing (Property::check_scenario). Returns the property.
const Property& check_regression_document(const nlohmann::json& document);

/// Replays a regression document on `b`: "" when the property holds for its
/// scenario, else the failure report. A case `b` does not support — its capabilities
/// exclude the property (why_not_exercised) or it refuses the scenario with
/// kUnsupported — is "not supported by this backend": with `unsupported` given, the
/// reason goes there and the result is ""; without, it is the failure "not supported
/// by <backend>: <reason>". Throws std::runtime_error when the document is unusable
/// (unknown property, property without replay, bad scenario).
std::string replay_regression(const nlohmann::json& document, const Backend& b, std::string* unsupported = nullptr);
/// replay_regression of a document check_regression_document already passed, returning
/// `p` (a caller that checks first, before choosing the backend, checks once).
std::string replay_checked_regression(const Property& p, const nlohmann::json& document, const Backend& b,
                                      std::string* unsupported = nullptr);

}  // namespace kvcheck::props
