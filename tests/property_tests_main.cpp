// The property suite under GoogleTest (CTest label `property`): one test per
// (property, backend), registered from the property registry, fixed seed and case
// budget so CI is reproducible. RC_PARAMS (seed=, max_success=, reproduce=) and
// KVCHECK_PROPERTY_CASES override the budget.
#include <gtest/gtest.h>

#include <cctype>
#include <map>
#include <set>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "impl/backends.h"
#include "properties/rapidcheck_bridge.h"
#include "properties/registry.h"
#include "properties/runner.h"
#include "tests/ctest_gpu.h"

namespace {

constexpr uint64_t kCiSeed = 0x6B76636865636Bull;  // "kvcheck"

int case_budget() {
  if (const char* env = std::getenv("KVCHECK_PROPERTY_CASES")) return std::atoi(env);
  return kvcheck::props::rc_params_max_success().value_or(300);
}

class PropertyTest : public testing::Test {
 public:
  PropertyTest(const kvcheck::props::Property* p, std::shared_ptr<const kvcheck::Backend> b)
      : property_(p), backend_(std::move(b)) {}
  void TestBody() override {
    const auto o = kvcheck::props::run_property(
        *property_, *backend_, {kvcheck::props::configured_seed(kCiSeed), case_budget(), 100});
    // A row that ran no case, or whose cases never called the backend, is not a pass.
    if (!o.failed && !o.not_exercised.empty()) GTEST_SKIP() << "not exercised: " << o.not_exercised;
    if (const std::string why = kvcheck::props::no_calls_reason(*property_, *backend_, o.cases, o.backend_calls);
        !o.failed && !why.empty())
      FAIL() << property_->name << " on " << o.backend << ": " << why << " (a property that can run must reach the backend)";
    if (!o.failed && o.cases == 0)
      FAIL() << property_->name << " on " << o.backend << " ran no case (case budget " << case_budget() << ")";
    if (o.failed)
      FAIL() << property_->name << " on " << o.backend << " (" << property_->invariant << ")\n"
             << o.message << "\nreproduce: RC_PARAMS=\"" << o.reproduce << "\" ctest -R '"
             << property_->name << "'  or  ./kvcheck run --property " << property_->name << " --backend "
             << backend_->name();
    // The generators still reach what they must (properties/classes.h), at the CI budget.
    if (const std::string broken = kvcheck::props::class_bound_failures(*property_, o); !broken.empty())
      FAIL() << property_->name << " on " << o.backend << ": its cases left their class bounds (" << o.cases
             << " cases):\n" << broken << "(a generator stopped reaching a path, or wastes cases; see "
             << "./kvcheck run --property " << property_->name << " --cases 300)";
  }

 private:
  const kvcheck::props::Property* property_;
  std::shared_ptr<const kvcheck::Backend> backend_;
};

// A GoogleTest name for a backend label: '-' starts the negative patterns of
// --gtest_filter (and CTest's gtest_discover_tests builds such filters from the names),
// so "my-kernels" is registered as "my_kernels".
std::string gtest_name(std::string label) {
  for (char& c : label)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  return label;
}

}  // namespace

int main(int argc, char** argv) {
  kvcheck::test::pin_ctest_gpu();  // a cuda row's GPU under ctest --resource-spec-file
  testing::InitGoogleTest(&argc, argv);
  // The suite runs with kCiSeed unless RC_PARAMS names a seed; put it in RC_PARAMS so
  // RapidCheck's own "Using configuration: seed=..." echo shows the seed really used.
  const char* rc_params = std::getenv("RC_PARAMS");
  const std::string params = rc_params ? rc_params : "";
  if (params.find("seed=") == std::string::npos)
    setenv("RC_PARAMS", (params + (params.empty() ? "" : " ") + "seed=" + std::to_string(kCiSeed)).c_str(), 1);
  std::printf("kvcheck property suite: seed %llu, %d cases per (property, backend)\n",
              static_cast<unsigned long long>(kvcheck::props::configured_seed(kCiSeed)), case_budget());
  std::vector<std::string> missing;
  const auto backends = kvcheck::available_backends(&missing);
  // One GoogleTest name per backend: "my-kernels" and "my_kernels" must not collide.
  std::map<std::string, std::string> test_name;  // backend label -> gtest name
  std::set<std::string> taken{"host"};
  for (const auto& b : backends) {
    std::string n = gtest_name(std::string(b->name()));
    for (int k = 2; taken.count(n); ++k) n = gtest_name(std::string(b->name())) + "_" + std::to_string(k);
    taken.insert(n);
    test_name[std::string(b->name())] = n;
  }
  for (const auto& p : kvcheck::props::registry().all()) {
    for (const auto& b : backends) {
      if (!p.per_backend && b != backends.front()) continue;  // host properties run once
      const std::string label = p.per_backend ? std::string(b->name()) : "host";
      testing::RegisterTest(
          ("Property/" + p.op).c_str(), (p.name + "/" + (p.per_backend ? test_name[label] : label)).c_str(), nullptr, nullptr, __FILE__,
          __LINE__, [p = &p, b]() -> testing::Test* { return new PropertyTest(p, b); });
    }
  }
  return RUN_ALL_TESTS();
}
