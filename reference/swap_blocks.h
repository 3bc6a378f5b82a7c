// Scalar reference swap_blocks (docs/spec.md §8.3): every rule checked by brute force
// (each dst byte's owner, every pair against every earlier one), then one byte at a
// time.
#pragma once

#include "impl/op_args.h"  // SwapBlocksArgs (plain type)

namespace kvcheck::ref {

/// docs/spec.md §8.3 on host memory (the pools' `host` flags do not matter here):
/// validates in the spec's order (kvcheck::Error naming the entry: "views[1] = [0, 8,
/// 4]", "block_mapping[3][0] = 9"), writing nothing on error; then copies every view's
/// src block s to its dst block d for each non-padding pair (s, d).
void swap_blocks(const SwapBlocksArgs& args);

}  // namespace kvcheck::ref
