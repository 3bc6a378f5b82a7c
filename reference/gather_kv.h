// Scalar reference gather_kv (SPEC §7.5), one element at a time.
#pragma once

#include <cstdint>
#include <span>

#include "impl/kv_format.h"

namespace kvcheck::ref {

/// SPEC §7.5: sequence i's tokens through block_table[i][*] ([num_seqs][max_blocks],
/// -1 padded), from table position seq_starts[i] (token unit, or rounded down to its
/// block; 0 without seq_starts), to rows [cu_seqlens_k[i], cu_seqlens_k[i+1]) of
/// out_k / out_v, FP8 dequantised to the outputs' model dtype. Validates everything
/// first in the spec's order and writes nothing on error.
void gather_kv(const GatherKvArgs& a);

}  // namespace kvcheck::ref
