#include "properties/runner.h"

#include "properties/gen/gen_caps.h"

#include <rapidcheck.h>

#include "properties/regression.h"

#include <algorithm>
#include <chrono>
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

}  // namespace

std::string backend_label(const Property& p, const Backend& b) {
  return p.per_backend ? std::string(b.name()) : std::string("host");
}

std::string test_id(const Property& p, const Backend& b) { return p.name + "/" + backend_label(p, b); }

uint64_t configured_seed(uint64_t fallback) {
  const char* env = std::getenv("RC_PARAMS");
  if (env != nullptr && std::string(env).find("seed=") != std::string::npos)
    return rc::detail::configuration().testParams.seed;
  return fallback;
}

std::string class_bound_failures(const Property& p, const PropertyOutcome& o) {
  if (o.failed || o.cases < kClassBoundMinCases) return "";
  return check_class_bounds(p.class_bounds, o.classes, o.cases, o.class_context);
}

std::string why_not_exercised(const Property& p, const Backend& b) {
  if (!p.per_backend) return "";
  std::string missing_op;
  if (!b.capabilities().supports_property_op(p.op, &missing_op)) return std::string(b.name()) + " has " + missing_op;
  if (p.needs)
    if (const std::string why = p.needs(b.capabilities()); !why.empty()) return std::string(b.name()) + ": " + why;
  return "";
}

PropertyOutcome run_property(const Property& p, const Backend& b, const CaseBudget& budget) {
  PropertyOutcome o;
  o.property = p.name;
  o.op = p.op;
  o.backend = backend_label(p, b);
  rc::detail::TestMetadata metadata;
  metadata.id = test_id(p, b);
  metadata.description = p.name;
  rc::detail::TestParams params;
  params.seed = budget.seed;
  params.maxSuccess = p.max_cases_per_run > 0 ? std::min(budget.cases, p.max_cases_per_run) : budget.cases;
  params.maxSize = budget.max_size;
  params.disableShrinking = p.max_cases_per_run > 0;
  params.maxDiscardRatio = 10;
  QuietListener listener;
  if (o.not_exercised = why_not_exercised(p, b); !o.not_exercised.empty()) return o;  // nothing to run
  // Generators draw only what the backend supports (plugin capabilities).
  const BackendCapabilities backend_caps = p.per_backend ? b.capabilities() : BackendCapabilities{};
  const ScopedGeneratorCaps caps(backend_caps);
  o.class_context = {backend_caps.restrictions().empty(), !p.per_backend || b.set_test_parallelism(0, 0),
                     backend_caps.host_memory};
  take_failing_scenario();  // recorded by scenario_property bodies on failure
  take_class_counts();
  const auto start = std::chrono::steady_clock::now();
  const auto result = rc::detail::checkProperty(
      rc::detail::toProperty([&] {
        begin_case();
        p.body(b);
        end_case();  // only cases that held are counted
      }),
      metadata, params, listener, rc::detail::configuration().reproduce);
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  o.classes = take_class_counts();
  rc::detail::SuccessResult ok;
  if (result.match(ok)) {
    o.cases = ok.numSuccess;
    return o;
  }
  o.failed = true;
  if (auto scenario = take_failing_scenario()) o.scenario = scenario->dump();
  std::ostringstream msg;
  rc::detail::printResultMessage(result, msg);
  o.message = msg.str();
  rc::detail::FailureResult fail;
  rc::detail::GaveUpResult gave_up;
  if (result.match(fail)) {
    o.cases = fail.numSuccess;
    rc::detail::Configuration config;
    config.reproduce[metadata.id] = fail.reproduce;
    o.reproduce = rc::detail::configToMinimalString(config);
  } else if (result.match(gave_up)) {
    o.cases = gave_up.numSuccess;
  }
  return o;
}

}  // namespace kvcheck::props
