// The one door to what RapidCheck offers only in its private namespace (detail):
// running a property quietly and getting its result as data (the shrunk counterexample,
// the reproduce token), RC_PARAMS's settings, and RapidCheck's per-case result object
// (what RC_FAIL / RC_DISCARD / RC_SUCCEED throw), which per-case isolation carries
// across a fork. Everything else in kvcheck uses RapidCheck's public API only; these
// are kvcheck's own types, so no file but rapidcheck_bridge.cpp names that namespace.
// tests/rapidcheck_bridge_test.cpp pins the behaviour relied on here.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <string>

namespace kvcheck::props {

/// How a RapidCheck case ended, as RapidCheck's case result says (RC_SUCCEED,
/// RC_FAIL / RC_ASSERT, RC_DISCARD / RC_PRE).
enum class RcCaseType { kSuccess, kFailure, kDiscard };

struct RcCaseResult {
  RcCaseType type = RcCaseType::kFailure;
  std::string description;
};

/// The RcCaseResult of RapidCheck's case result object in `e`; nullopt when `e` holds
/// anything else (a kvcheck::Error, a std::exception, ...). For a catch (...) handler.
std::optional<RcCaseResult> rapidcheck_case_result(std::exception_ptr e);
/// Throws RapidCheck's case result of `type` with `description` verbatim (RC_FAIL and
/// friends prefix the file and line; a result relayed from a case's process must not
/// change).
[[noreturn]] void throw_rapidcheck_case_result(RcCaseType type, std::string description);

/// One RapidCheck run: RapidCheck's TestParams and the test id that keys reproduce
/// tokens in RC_PARAMS.
struct RcRunParams {
  std::string id, description;
  uint64_t seed = 0;
  int max_success = 100;
  int max_size = 100;
  int max_discard_ratio = 10;
  bool disable_shrinking = false;
  /// Replays this RC_PARAMS text's reproduce tokens ("reproduce=..."); nullopt: the
  /// ones of the process's RC_PARAMS (RapidCheck's configuration).
  std::optional<std::string> rc_params;
};

struct RcRunResult {
  enum class Kind { kPassed, kFailed, kGaveUp, kError };
  Kind kind = Kind::kError;
  int num_success = 0;    // successful cases before the end
  std::string message;    // RapidCheck's result message (the minimal counterexample when kFailed)
  std::string reproduce;  // kFailed: the RC_PARAMS value that replays the minimal case ("reproduce=...")
};

/// Runs `body` as a RapidCheck property with `params`, printing nothing (no listener
/// output), replaying a reproduce token for params.id when RC_PARAMS (or
/// params.rc_params) has one; failures shrink unless disable_shrinking.
RcRunResult run_rapidcheck(const RcRunParams& params, const std::function<void()>& body);

/// RC_PARAMS's seed / max_success, when RC_PARAMS sets them; else nullopt.
std::optional<uint64_t> rc_params_seed();
std::optional<int> rc_params_max_success();

}  // namespace kvcheck::props
