// Properties of copy_blocks (SPEC §8.1), each stating one invariant of the one
// copy_blocks check (copy_blocks_check.h) on scenarios of the one builder
// (gen/ops/copy_blocks/copy_blocks_gen.h); failures become regression files (regression.h).
#include <rapidcheck.h>

#include "include/kvcheck/backend_abi.h"
#include "properties/ops/copy_blocks/copy_blocks_check.h"
#include "properties/regression.h"
#include "properties/registry.h"

namespace kvcheck::props {
namespace {

CopyBlocksScenario draw_copy_blocks_scenario() { return *gen_copy_blocks_scenario(); }
CopyBlocksScenario draw_copy_blocks_fault_scenario() { return *gen_copy_blocks_fault_scenario(); }

void prop_copy_blocks_matches_reference(const Backend& b, const CopyBlocksScenario& s) {
  require(check_copy_blocks(b, s, kCopyMatchesReference));
}
void prop_copy_blocks_touches_only_destinations(const Backend& b, const CopyBlocksScenario& s) {
  require(check_copy_blocks(b, s, kCopyTouchesOnlyDestinations | kCopyDestinationsAreSources));
}
void prop_copy_blocks_bad_input_is_error(const Backend& b, const CopyBlocksScenario& s) {
  require(check_copy_blocks(b, s, kCopyErrorChangesNothing));
}

}  // namespace

void register_copy_blocks_properties(Registry& r) {
  const auto add = [&r](Property p) {
    p.needs = needs_op(KVCHECK_OP_COPY_BLOCKS, "copy_blocks");
    r.add(std::move(p));
  };
  add(scenario_property("prop_copy_blocks_matches_reference", "copy_blocks",
                        "the whole allocation (every view, the bytes between them, canaries) is bit-identical "
                        "to the reference's",
                        draw_copy_blocks_scenario, prop_copy_blocks_matches_reference));
  add(scenario_property("prop_copy_blocks_touches_only_destinations", "copy_blocks",
                        "each view's destination blocks hold their sources' prior bytes and no other byte "
                        "(other layers, gaps, padding, canaries) changes",
                        draw_copy_blocks_scenario, prop_copy_blocks_touches_only_destinations));
  add(scenario_property("prop_copy_blocks_bad_input_is_error", "copy_blocks",
                        "a block past num_blocks, a duplicate destination, a destination that is a source, a "
                        "view past the allocation or straddling another's blocks throws the rule's error, "
                        "blames its entry and changes no byte",
                        draw_copy_blocks_fault_scenario, prop_copy_blocks_bad_input_is_error));
}

}  // namespace kvcheck::props
