// Scalar reference copy_blocks (SPEC §8.1): every rule checked by brute force (each
// byte's owner, every pair against every other), then one byte at a time from a
// snapshot, so the result cannot depend on the order of the copies.
#pragma once

#include "impl/op_args.h"  // CopyBlocksArgs (plain type)

namespace kvcheck::ref {

/// SPEC §8.1 on host memory: validates in the spec's order (kvcheck::Error naming the
/// entry: "views[1] = [2, 4]", "block_mapping[3][1] = 7"), writing nothing on error;
/// then copies every view's block src to its block dst for each non-padding pair.
void copy_blocks(const CopyBlocksArgs& args);

}  // namespace kvcheck::ref
