// Properties of gather_kv (SPEC §7.5), each stating one invariant of the one gather_kv
// check (kv_check.h) on scenarios of the one gather_kv builder (gen/kv_gen.h).
#include <rapidcheck.h>

#include "properties/class_bounds.h"
#include "properties/kv_check.h"
#include "properties/regression.h"
#include "properties/registry.h"

namespace kvcheck::props {
namespace {

// Each property checks one drawn scenario: the draw is separate so that a failing case
// can be saved as a regression file and replayed (regression.h).
GatherKvScenario draw_gather_kv_scenario() { return *gen_gather_kv_scenario(); }
GatherKvScenario draw_gather_kv_fault_scenario() { return *gen_gather_kv_fault_scenario(); }
GatherKvScenario draw_seq_starts_scenario() { return *gen_gather_kv_seq_starts_scenario(); }
GatherKvScenario draw_seq_starts_fault_scenario() { return *gen_gather_kv_seq_starts_fault_scenario(); }

void prop_gather_kv_matches_reference(const Backend& b, const GatherKvScenario& s) {
  require(check_gather_kv(b, s, kGatherKvMatchesReference | kGatherKvTouchesOnlyRows));
}

void prop_gather_kv_invalid_input_throws_and_writes_nothing(const Backend& b, const GatherKvScenario& s) {
  require(check_gather_kv(b, s, kGatherKvErrorChangesNothing));
}

}  // namespace

void register_gather_kv_properties(Registry& r) {
  r.add(scenario_property(
      "prop_gather_kv_matches_reference", "gather_kv",
      "both outputs (rows, row padding, rows past cu_seqlens_k[b], tail) are bit-identical to the reference, "
      "and only the gathered rows' elements changed",
      draw_gather_kv_scenario, prop_gather_kv_matches_reference, bounds::gather_kv()));
  r.add(scenario_property(
      "prop_gather_kv_invalid_input_throws_and_writes_nothing", "gather_kv",
      "a bad table entry, cu_seqlens_k, output or scale throws the right kvcheck::Error and writes nothing",
      draw_gather_kv_fault_scenario, prop_gather_kv_invalid_input_throws_and_writes_nothing,
      bounds::gather_kv_fault()));
  // seq_starts: only backends with the feature bit (KVCHECK_OP_GATHER_KV_SEQ_STARTS);
  // on the others these rows are not exercised.
  const auto add = [&r](Property p) {
    p.needs = needs_op(KVCHECK_OP_GATHER_KV_SEQ_STARTS, "gather_kv seq_starts (KVCHECK_OP_GATHER_KV_SEQ_STARTS)");
    r.add(std::move(p));
  };
  add(scenario_property(
      "prop_gather_kv_seq_starts_match_reference", "gather_kv",
      "with seq_starts in tokens or blocks (starts mid-block, at the row's end), both outputs are bit-identical "
      "to the reference and only the gathered rows changed",
      draw_seq_starts_scenario, prop_gather_kv_matches_reference, bounds::gather_kv_seq_starts()));
  add(scenario_property(
      "prop_gather_kv_seq_starts_bad_input_is_error", "gather_kv",
      "a negative start, a start whose sequence passes its table row (vLLM #27909) or a seq_starts of the wrong "
      "length throws the rule's kvcheck::Error and writes nothing",
      draw_seq_starts_fault_scenario, prop_gather_kv_invalid_input_throws_and_writes_nothing));
}

}  // namespace kvcheck::props
