// Runs one registered property on one backend for a case budget through
// RapidCheck, honouring RC_PARAMS="reproduce=..." for replaying a failure.
#pragma once

#include <cstdint>
#include <string>

#include "impl/backend.h"
#include "properties/registry.h"

namespace kvcheck::props {

struct CaseBudget {
  uint64_t seed = 0;
  int cases = 100;
  int max_size = 100;
};

struct PropertyOutcome {
  std::string property, op, backend;
  int cases = 0;          // successful cases run
  bool failed = false;
  std::string message;    // RapidCheck's minimal counterexample and our decoded report
  std::string reproduce;  // RC_PARAMS value that replays the minimal failing case
  std::string scenario;   // minimal failing scenario as JSON (regression.h); "" if none
  double seconds = 0;
  std::string not_exercised;  // non-empty: the backend lacks an operation, or no case called it
  int64_t backend_calls = 0;  // calls into the backend under test (per-backend properties)
  ClassCounts classes;        // case classes of the successful cases (classes.h)
  ClassBoundContext class_context;  // what the backend offered the generators
};

/// One line per class bound of p that o breaks; "" when they hold or when o ran fewer
/// than kClassBoundMinCases cases (or failed).
std::string class_bound_failures(const Property& p, const PropertyOutcome& o);

/// Backend name a property runs under: the backend's, or "host" for host properties.
std::string backend_label(const Property& p, const Backend& b);
/// "<property>/<backend label>": RapidCheck's test id, the key of reproduce strings.
std::string test_id(const Property& p, const Backend& b);

/// Why p cannot run on b ("<backend> has no load_paged_kv_cache", "<backend>: supports
/// none of the UE8M0 formats ..."), "" when it can: the op and Property::needs checks of
/// the backend's capabilities, shared by run_property and replay_regression.
std::string why_not_exercised(const Property& p, const Backend& b);

/// "" unless p runs per backend and `cases` cases (> 0) made no call into b: such a row
/// is not exercised, never passed. Judged on a row's totals (a campaign's rounds).
std::string no_calls_reason(const Property& p, const Backend& b, int64_t cases, int64_t calls);

/// Runs p on b (host properties ignore b) for budget.cases cases from budget.seed.
PropertyOutcome run_property(const Property& p, const Backend& b, const CaseBudget& budget);

/// The seed for reproducible runs: RC_PARAMS's seed when given, else `fallback`.
uint64_t configured_seed(uint64_t fallback);

}  // namespace kvcheck::props
