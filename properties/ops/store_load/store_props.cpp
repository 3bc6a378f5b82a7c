// Properties of store_kv_cache (SPEC §5.1), each stating one invariant of the one store
// check (op_checks.h) on scenarios of the one store generator.
#include <rapidcheck.h>

#include <vector>

#include "properties/class_bounds.h"
#include "properties/gen/gen_caps.h"
#include "properties/ops/store_load/op_checks.h"
#include "properties/regression.h"
#include "properties/registry.h"

namespace kvcheck::props {
namespace {

// Each property checks one drawn scenario: the draw is separate so that a failing case
// can be saved as a regression file and replayed (regression.h).
StoreScenario draw_store_scenario() { return *gen_store_scenario(); }

void prop_store_matches_reference(const Backend& b, const StoreScenario& s) {
  require(check_store(b, {s, "", std::nullopt}, kStoreMatchesReference));
}

void prop_store_touches_only_written_records(const Backend& b, const StoreScenario& s) {
  require(check_store(b, {s, "", std::nullopt}, kStoreTouchesOnlyRecords));
}

// The UE8M0 formats a backend supports (the ones prop_store_ue8m0_never_ff draws).
std::vector<KVCacheFormat> ue8m0_formats(const BackendCapabilities& caps) {
  std::vector<KVCacheFormat> out;
  for (const auto& f : supported_formats())  // the SPEC §2 table, one place
    if (f.sf_format == SfFormat::kUE8M0 && caps.supports_format(f)) out.push_back(f);
  return out;
}

StoreScenario draw_ue8m0_store_scenario() {
  const auto f = *rc::gen::elementOf(ue8m0_formats(generator_caps()));
  const auto shape = CacheShape{f, *gen_block_size(), *rc::gen::inRange(1, 4), 0};
  return *gen_store_scenario(shape);
}

void prop_store_ue8m0_never_ff(const Backend& b, const StoreScenario& s) {
  require(check_store(b, {s, "", std::nullopt}, kStoreUe8m0NeverFF));
}

StoreFaultScenario draw_store_fault_scenario() { return *gen_store_fault_scenario(); }

void prop_store_invalid_metadata_throws_and_writes_nothing(const Backend& b, const StoreFaultScenario& c) {
  require(check_store(b, c, kStoreErrorChangesNothing));
}

}  // namespace

void register_store_properties(Registry& r) {
  r.add(scenario_property("prop_store_matches_reference", "store",
                          "the whole cache (records, block padding, canaries) is bit-identical to the reference",
                          draw_store_scenario, prop_store_matches_reference, bounds::store()));
  r.add(scenario_property(
      "prop_store_touches_only_written_records", "store",
      "bytes outside the records of valid rows (padding rows, other slots, block padding) are unchanged",
      draw_store_scenario, prop_store_touches_only_written_records, bounds::store()));
  Property ue8m0 = scenario_property("prop_store_ue8m0_never_ff", "store", "no stored UE8M0 scale byte is 0xFF",
                                     draw_ue8m0_store_scenario, prop_store_ue8m0_never_ff);
  ue8m0.needs = [](const BackendCapabilities& c) {
    return ue8m0_formats(c).empty() ? std::string("supports none of the UE8M0 formats V41, FP4_INDEX, MXFP8_INDEX")
                                    : std::string();
  };
  r.add(std::move(ue8m0));
  r.add(scenario_property(
      "prop_store_invalid_metadata_throws_and_writes_nothing", "store",
      "bad slot_mapping/kv throws the right kvcheck::Error and leaves every cache byte unchanged",
      draw_store_fault_scenario, prop_store_invalid_metadata_throws_and_writes_nothing, bounds::store_fault()));
}

}  // namespace kvcheck::props
