// The prefill step's one builder (SPEC §5.3-§5.6): gen_prefill_scenario() is it on an
// RcSource (the properties), fuzz::decode_prefill on a ByteSource (the fuzz target).
#pragma once

#include <rapidcheck.h>

#include <string>

#include "properties/gen/source.h"
#include "properties/prefill_step.h"

namespace kvcheck::props {

/// A valid batch of 0-4 sequences (none 1 in 25): BF16(8) or V41 (BF16(16), BF16(64)
/// less often); window 1-16, ring = window + 0-8; histories shorter than the window, at
/// the ring's wrap point or one past it, wrapping rings, chunks longer than the ring,
/// swa_valid_start inside the history; compressed blocks of the shared sizes (or 1-300)
/// with every divisor as ratio (so seqlen_k < ratio), disjoint shuffled block tables
/// with -1 or spare-block tails, and 0-4 distinct top-k per chunk row. The simplest:
/// BF16(8), window 1, no sequence. store_before_load is false (the callers set it).
PrefillScenario build_prefill_scenario(Source& src);
rc::Gen<PrefillScenario> gen_prefill_scenario();

/// The scenario as readable lines (showValue), for fuzz reports and explain.
std::string describe(const PrefillScenario& s);

}  // namespace kvcheck::props
