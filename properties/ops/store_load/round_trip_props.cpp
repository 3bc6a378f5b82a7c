// Store-then-load properties (SPEC §4, §5.1-5.2): invariants of the one round-trip
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

// Drawn separately so a failing case can be saved as a regression file and replayed.
StoreScenario draw_round_trip_scenario() { return *gen_store_scenario(); }

void prop_round_trip_matches_reference(const Backend& b, const StoreScenario& s) {
  require(check_round_trip(b, s, kRoundTripMatchesRecipe));
}

// The quantised named formats a backend supports (the error bound has nothing to
// bound for BF16): a backend with none leaves the property not exercised.
std::vector<KVCacheFormat> quantised_formats(const BackendCapabilities& caps) {
  std::vector<KVCacheFormat> out;
  for (const auto& f : supported_formats())  // the SPEC §2 table, one place
    if (f.is_quantized() && caps.supports_format(f)) out.push_back(f);
  return out;
}

StoreScenario draw_quantised_round_trip_scenario() {
  const std::vector<KVCacheFormat> quantised = quantised_formats(generator_caps());
  // Custom records (run-time group kernels) where the backend takes them; only those
  // where it takes no named quantised format (a contract scoped to OTHER).
  const bool custom = generator_caps().takes_custom_records();
  const KVCacheFormat f = quantised.empty() ? *gen_custom_format()
                          : custom ? *rc::gen::weightedOneOf<KVCacheFormat>({{5, rc::gen::elementOf(quantised)}, {2, gen_custom_format()}})
                                   : *rc::gen::elementOf(quantised);
  return *gen_store_scenario(CacheShape{f, *gen_block_size(), *rc::gen::inRange(1, 3), 0});
}

void prop_round_trip_error_within_bound(const Backend& b, const StoreScenario& s) {
  require(check_round_trip(b, s, kRoundTripErrorWithinBound));
}

}  // namespace

void register_round_trip_properties(Registry& r) {
  r.add(scenario_property("prop_round_trip_matches_reference", "round_trip",
                          "store then load equals the reference quantise-dequantise (bit-exact; identity for BF16)",
                          draw_round_trip_scenario, prop_round_trip_matches_reference, bounds::store()));
  Property bound = scenario_property(
      "prop_round_trip_error_within_bound", "round_trip",
      "per group, |round trip - x| <= half a code step (relative and scale-absolute) for finite groups",
      draw_quantised_round_trip_scenario, prop_round_trip_error_within_bound, bounds::round_trip_bound());
  bound.needs = [](const BackendCapabilities& c) {
    return quantised_formats(c).empty() && !c.takes_custom_records()
               ? std::string("supports no quantised format (BF16 only: no error to bound)")
               : std::string();
  };
  r.add(std::move(bound));
}

}  // namespace kvcheck::props
