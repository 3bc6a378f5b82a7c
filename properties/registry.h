// The property registry: every RapidCheck property of kvcheck, each stating one
// invariant, run by the GoogleTest suite (label `property`) and by `kvcheck run`.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "impl/backend.h"
#include "properties/classes.h"

namespace kvcheck::props {

/// A property body draws its scenario with `*gen` and checks with RC_ASSERT /
/// RC_FAIL (never gtest EXPECT_*: RapidCheck would not see the failure).
/// Backend properties run once per available backend; host properties test host
/// code in impl/ (plans, slot mappings) and run once, under the backend name "host".
struct Property {
  std::string name;       // prop_store_matches_reference
  std::string op;         // store | load | round_trip | layout | format | numerics | plan | slot_mapping | index | prefill |
                          // kv_layout | kv_slot_mapping | store_kv | gather_kv | kv_step
  std::string invariant;  // one sentence, shown in reports
  bool per_backend = true;
  std::function<void(const Backend&)> body;  // host properties ignore the argument
  /// Set by scenario_property() (properties/regression.h): re-checks a scenario read
  /// from a regression file, outside RapidCheck. Empty: no regression files.
  std::function<void(const Backend&, const nlohmann::json&)> replay = {};
  /// Optional: "" when a backend's capabilities let this property run, else why not
  /// (e.g. it needs a UE8M0 format); the run is then reported as not exercised.
  std::function<std::string(const BackendCapabilities&)> needs = nullptr;
  /// Bounds on the fraction of cases in each class the body notes (classes.h): the
  /// property suite fails when a run of the CI budget leaves one.
  std::vector<ClassBound> class_bounds = {};
  /// When > 0, at most this many cases per run (CTest, `kvcheck run --cases`, a whole
  /// campaign), and a failure is not shrunk: for properties whose one case costs
  /// seconds (far offsets), where every case is as small as the fault allows.
  int max_cases_per_run = 0;
  /// When > 0, what one case costs (seconds, on a 2-core VM): a timed `kvcheck run`
  /// starts a case only when the budget left fits it, else the row is not exercised.
  double seconds_per_case = 0;
  /// Set with replay: refuses a scenario whose fields do not all take effect
  /// (check_scenario_fields); run by check_regression_document, whether or not the
  /// case then runs on a backend.
  std::function<void(const nlohmann::json&)> check_scenario = {};
};

/// Property::needs of a property that calls one operation: "" when `ops` has `bit`,
/// else "no <name>" (an index property needs its one transform, not all four).
std::function<std::string(const BackendCapabilities&)> needs_op(uint32_t bit, std::string name);

class Registry {
 public:
  void add(Property p) { properties_.push_back(std::move(p)); }
  const std::vector<Property>& all() const { return properties_; }

 private:
  std::vector<Property> properties_;
};

/// All properties, registered once in a fixed order (properties/registry.cpp).
const Registry& registry();

// One registration function per properties/*_props.cpp file.
void register_layout_properties(Registry& r);  // layout and format
void register_numerics_properties(Registry& r);
void register_store_properties(Registry& r);
void register_load_properties(Registry& r);
void register_round_trip_properties(Registry& r);
void register_plan_properties(Registry& r);
void register_slot_mapping_properties(Registry& r);
void register_index_properties(Registry& r);
void register_copy_blocks_properties(Registry& r);
void register_swap_blocks_properties(Registry& r);
void register_concat_and_cache_mla_properties(Registry& r);
void register_prefill_properties(Registry& r);
void register_kv_layout_properties(Registry& r);
void register_store_kv_properties(Registry& r);
void register_gather_kv_properties(Registry& r);
void register_kv_step_properties(Registry& r);
void register_far_offset_properties(Registry& r);

}  // namespace kvcheck::props
