// Crash isolation of `kvcheck run`: each (property, backend) chunk of cases runs in a
// forked child, so a plugin that crashes (a signal) or hangs (the per-call watchdog,
// impl/plugin/watchdog.h, exits 124) fails its row with what happened and how to
// reproduce it while the campaign goes on with the next row. The parent loads the
// plugins but never calls one (and never initialises CUDA: device probes run in
// children too).
#pragma once

#include "properties/runner.h"

namespace kvcheck::tool {

/// props::run_property(p, b, budget) in a child process. A child that dies makes a
/// failed outcome: message "CRASHED: ..." / "HUNG: ...", reproduce "seed=<seed>". After
/// a crash the chunk runs again in a child with per-case isolation
/// (properties/case_isolation.h), and its minimal crashing case — RapidCheck's message
/// with the scenario, the "reproduce=..." token and the scenario for a regression
/// file — replaces the seed (properties without a scenario replay keep the seed).
props::PropertyOutcome run_property_isolated(const props::Property& p, const Backend& b,
                                             const props::CaseBudget& budget);

}  // namespace kvcheck::tool
