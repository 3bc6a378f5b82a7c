// The one check of copy_blocks (SPEC §8.1): properties call it for the invariant they
// state; the fuzz target, its replays and `kvcheck explain` for all of them.
#pragma once

#include "impl/backend.h"
#include "properties/gen/ops/copy_blocks/copy_blocks_gen.h"
#include "properties/harness.h"

namespace kvcheck::props {

/// Invariants of copy_blocks. The outcome (the fault's code and blamed entry on both
/// sides, or what the rules decide) and the canary bands (kGuardBytes on each side of
/// the allocation) are always checked.
enum CopyBlocksInvariant : unsigned {
  kCopyMatchesReference = 1u << 0,    // the whole allocation is bit-identical to the reference's
  kCopyTouchesOnlyDestinations = 1u << 1,  // every byte outside the views' destination blocks is unchanged
  kCopyDestinationsAreSources = 1u << 2,   // each view's block dst holds its block src's prior bytes
  kCopyErrorChangesNothing = 1u << 3,      // a side that threw left every byte unchanged
  kCopyAll = 0xFu,
};
/// Notes the case classes (classes.h) a scenario exercises: its layout, padding pairs,
/// several views, the 16-byte or byte path, "error" (scenario_property's hook).
void note_scenario_classes(const CopyBlocksScenario& s);

Verdict check_copy_blocks(const Backend& b, const CopyBlocksScenario& s, unsigned invariants = kCopyAll);

}  // namespace kvcheck::props
