// Properties of swap_blocks (docs/spec.md §8.3), each stating one invariant of the one
// swap_blocks check (swap_blocks_check.h) on scenarios of the one builder
// (gen/ops/swap_blocks/swap_blocks_gen.h); failures become regression files (regression.h).
#include <rapidcheck.h>

#include "include/kvcheck/backend_abi.h"
#include "properties/regression.h"
#include "properties/registry.h"
#include "properties/ops/swap_blocks/swap_blocks_check.h"

namespace kvcheck::props {
namespace {

SwapBlocksScenario draw_swap_blocks_scenario() { return *gen_swap_blocks_scenario(); }
SwapBlocksScenario draw_swap_blocks_fault_scenario() { return *gen_swap_blocks_fault_scenario(); }

void prop_swap_blocks_matches_reference(const Backend& b, const SwapBlocksScenario& s) {
  require(check_swap_blocks(b, s, kSwapMatchesReference));
}
void prop_swap_blocks_touches_only_destinations(const Backend& b, const SwapBlocksScenario& s) {
  require(check_swap_blocks(b, s, kSwapTouchesOnlyDestinations | kSwapDestinationsAreSources));
}
void prop_swap_blocks_bad_input_is_error(const Backend& b, const SwapBlocksScenario& s) {
  require(check_swap_blocks(b, s, kSwapErrorChangesNothing));
}

}  // namespace

void register_swap_blocks_properties(Registry& r) {
  const auto add = [&r](Property p) {
    p.needs = needs_op(KVCHECK_OP_SWAP_BLOCKS, "swap_blocks");
    r.add(std::move(p));
  };
  add(scenario_property("prop_swap_blocks_matches_reference", "swap_blocks",
                        "dst (every view in its own layout, the bytes between them, canaries) is bit-identical to "
                        "the reference's and src comes back unchanged, device<->device and host<->device",
                        draw_swap_blocks_scenario, prop_swap_blocks_matches_reference));
  add(scenario_property("prop_swap_blocks_touches_only_destinations", "swap_blocks",
                        "each view's dst blocks hold their src blocks' bytes and no other byte of dst (other layers, "
                        "gaps, padding, canaries) or src changes",
                        draw_swap_blocks_scenario, prop_swap_blocks_touches_only_destinations));
  add(scenario_property("prop_swap_blocks_bad_input_is_error", "swap_blocks",
                        "a block past its pool's num_blocks, a duplicate destination, a view past either allocation "
                        "or straddling another's dst blocks, two views filling one dst byte from different src "
                        "bytes, overlapping allocations throw the rule's error, blame its entry and change no byte",
                        draw_swap_blocks_fault_scenario, prop_swap_blocks_bad_input_is_error));
}

}  // namespace kvcheck::props
