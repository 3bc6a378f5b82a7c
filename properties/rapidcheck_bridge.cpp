// The only file of kvcheck that uses RapidCheck's private namespace rc::detail. Why:
// RapidCheck's public API (rc::check) prints its progress and result to stderr and
// returns a bool; the runner needs the result as data (the shrunk counterexample's
// message, the reproduce token, the success count, gave-up vs. failed), with nothing
// printed, and per-case isolation must catch and re-throw the case result that
// RC_FAIL / RC_DISCARD / RC_SUCCEED throw. Checked against RapidCheck 0~1033-08b5058
// (Debian librapidcheck-dev 0~1033-08b5058-3): rc::detail::checkProperty, toProperty,
// TestListener, TestParams, configuration(), configFromString, configToMinimalString,
// printResultMessage, CaseResult. tests/rapidcheck_bridge_test.cpp pins what kvcheck
// relies on, so an upgrade that changes it fails there first.
#include "properties/rapidcheck_bridge.h"

#include <rapidcheck.h>

#include <cstdlib>
#include <sstream>

namespace kvcheck::props {
namespace {

class QuietListener final : public rc::detail::TestListener {
 public:
  void onTestCaseFinished(const rc::detail::CaseDescription&) override {}
  void onShrinkTried(const rc::detail::CaseDescription&, bool) override {}
  void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}
};

// Whether RC_PARAMS names `key` (RapidCheck's configuration holds defaults otherwise).
bool rc_params_set(const char* key) {
  const char* env = std::getenv("RC_PARAMS");
  return env != nullptr && std::string(env).find(key) != std::string::npos;
}

}  // namespace

std::optional<RcCaseResult> rapidcheck_case_result(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const rc::detail::CaseResult& r) {
    using T = rc::detail::CaseResult::Type;
    return RcCaseResult{r.type == T::Failure   ? RcCaseType::kFailure
                        : r.type == T::Discard ? RcCaseType::kDiscard
                                               : RcCaseType::kSuccess,
                        r.description};
  } catch (...) {
    return std::nullopt;
  }
}

void throw_rapidcheck_case_result(RcCaseType type, std::string description) {
  using T = rc::detail::CaseResult::Type;
  throw rc::detail::CaseResult(type == RcCaseType::kFailure   ? T::Failure
                               : type == RcCaseType::kDiscard ? T::Discard
                                                              : T::Success,
                               std::move(description));
}

RcRunResult run_rapidcheck(const RcRunParams& p, const std::function<void()>& body) {
  rc::detail::TestMetadata metadata;
  metadata.id = p.id;
  metadata.description = p.description;
  rc::detail::TestParams params;
  params.seed = p.seed;
  params.maxSuccess = p.max_success;
  params.maxSize = p.max_size;
  params.maxDiscardRatio = p.max_discard_ratio;
  params.disableShrinking = p.disable_shrinking;
  QuietListener listener;
  const auto reproduce =
      p.rc_params ? rc::detail::configFromString(*p.rc_params).reproduce : rc::detail::configuration().reproduce;
  const auto result = rc::detail::checkProperty(rc::detail::toProperty([&] { body(); }), metadata, params,
                                                listener, reproduce);
  RcRunResult out;
  std::ostringstream msg;
  rc::detail::printResultMessage(result, msg);
  out.message = msg.str();
  rc::detail::SuccessResult ok;
  rc::detail::FailureResult fail;
  rc::detail::GaveUpResult gave_up;
  if (result.match(ok)) {
    out.kind = RcRunResult::Kind::kPassed;
    out.num_success = ok.numSuccess;
  } else if (result.match(fail)) {
    out.kind = RcRunResult::Kind::kFailed;
    out.num_success = fail.numSuccess;
    rc::detail::Configuration config;
    config.reproduce[p.id] = fail.reproduce;
    out.reproduce = rc::detail::configToMinimalString(config);
  } else if (result.match(gave_up)) {
    out.kind = RcRunResult::Kind::kGaveUp;
    out.num_success = gave_up.numSuccess;
  }
  return out;
}

std::optional<uint64_t> rc_params_seed() {
  if (!rc_params_set("seed=")) return std::nullopt;
  return rc::detail::configuration().testParams.seed;
}

std::optional<int> rc_params_max_success() {
  if (!rc_params_set("max_success=")) return std::nullopt;
  return rc::detail::configuration().testParams.maxSuccess;
}

}  // namespace kvcheck::props
