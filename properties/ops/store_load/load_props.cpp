// Properties of load_paged_kv_cache (SPEC §5.2), each stating one invariant of the one
// load check (op_checks.h) on scenarios of the one load generator.
#include <rapidcheck.h>

#include "properties/class_bounds.h"
#include "properties/ops/store_load/op_checks.h"
#include "properties/regression.h"
#include "properties/registry.h"

namespace kvcheck::props {
namespace {

// Drawn separately so a failing case can be saved as a regression file and replayed.
LoadScenario draw_load_scenario() { return *gen_load_scenario(); }

void prop_load_matches_reference(const Backend& b, const LoadScenario& s) {
  require(check_load(b, {s, "", std::nullopt}, kLoadMatchesReference));
}

void prop_load_keeps_uncovered_rows(const Backend& b, const LoadScenario& s) {
  require(check_load(b, {s, "", std::nullopt}, kLoadKeepsUncoveredRows));
}

void prop_load_zero_fill_rows_are_zero(const Backend& b, const LoadScenario& s) {
  require(check_load(b, {s, "", std::nullopt}, kLoadZeroFillRowsAreZero));
}

LoadFaultScenario draw_load_fault_scenario() { return *gen_load_fault_scenario(); }

void prop_load_invalid_metadata_throws_and_writes_nothing(const Backend& b, const LoadFaultScenario& c) {
  require(check_load(b, c, kLoadErrorChangesNothing));
}

}  // namespace

void register_load_properties(Registry& r) {
  r.add(scenario_property(
      "prop_load_matches_reference", "load",
      "the whole output (rows, scales, uncovered rows, row padding) is bit-identical to the reference",
      draw_load_scenario, prop_load_matches_reference, bounds::load()));
  r.add(scenario_property("prop_load_keeps_uncovered_rows", "load", "rows no segment covers keep their prior bytes",
                          draw_load_scenario, prop_load_keeps_uncovered_rows, bounds::load()));
  r.add(scenario_property("prop_load_zero_fill_rows_are_zero", "load",
                          "rows from block -1 are zero in data and scales", draw_load_scenario,
                          prop_load_zero_fill_rows_are_zero, bounds::load()));
  r.add(scenario_property("prop_load_invalid_metadata_throws_and_writes_nothing", "load",
                          "a bad plan throws the right kvcheck::Error and leaves every output byte unchanged",
                          draw_load_fault_scenario, prop_load_invalid_metadata_throws_and_writes_nothing,
                          bounds::load_fault()));
}

}  // namespace kvcheck::props
