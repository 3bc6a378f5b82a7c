// The one check of swap_blocks (docs/spec.md §8.3): properties call it for the
// invariant they state; the fuzz target, its replays and `kvcheck explain` for all.
#pragma once

#include "impl/backend.h"
#include "properties/gen/ops/swap_blocks/swap_blocks_gen.h"
#include "properties/harness.h"

namespace kvcheck::props {

/// Invariants of swap_blocks. The outcome (the fault's code and blamed entry on both
/// sides, or what the rules decide), the canary bands (kGuardBytes on each side of each
/// allocation) and src coming back unchanged are always checked.
enum SwapBlocksInvariant : unsigned {
  kSwapMatchesReference = 1u << 0,       // dst is bit-identical to the reference's
  kSwapTouchesOnlyDestinations = 1u << 1,  // every dst byte outside the views' dst blocks is unchanged
  kSwapDestinationsAreSources = 1u << 2,   // each view's dst block d holds its src block s's bytes
  kSwapErrorChangesNothing = 1u << 3,      // a side that threw left every byte unchanged
  kSwapAll = 0xFu,
};
/// Notes the case classes (classes.h) a scenario exercises: its direction, both pools'
/// layouts (and whether they differ), padding pairs, the 16-byte or byte path, "error".
void note_scenario_classes(const SwapBlocksScenario& s);

Verdict check_swap_blocks(const Backend& b, const SwapBlocksScenario& s, unsigned invariants = kSwapAll);

}  // namespace kvcheck::props
