// Generators for host metadata (block tables, sequences, plans, index inputs) and the
// prefill-step scenario. Each builds on earlier draws (no RC_PRE filtering) and
// shrinks toward small batches, identity block tables and short sequences. Each is a
// builder on a Source (gen/source.h: RapidCheck and the fuzz decoders share it); the
// rc::Gen forms are the builders on an RcSource.
#pragma once

#include <cstdint>
#include <ostream>
#include <vector>

#include <rapidcheck.h>

#include "impl/load_plan.h"
#include "properties/gen/source.h"

namespace kvcheck::props::gen {

/// gen_block_size(): the one block-size chooser (gen/choices.h).
rc::Gen<int32_t> block_size();
/// A shuffled permutation of 0..n-1 (seed 0, the simplest: the identity).
std::vector<int32_t> build_permutation(Source& src, int32_t n);
rc::Gen<std::vector<int32_t>> permutation(int32_t n);
/// One block table per entry of `blocks_needed`: distinct physical blocks taken from
/// a shuffled pool (non-contiguous), each table followed by up to `max_tail` extra
/// entries, -1 or unused blocks. Returns {tables, num_physical_blocks}.
struct BlockTables {
  std::vector<std::vector<int32_t>> tables;
  int32_t num_blocks = 0;
};
BlockTables build_block_tables(Source& src, const std::vector<int32_t>& blocks_needed, int32_t max_tail);
rc::Gen<BlockTables> block_tables(std::vector<int32_t> blocks_needed, int32_t max_tail);

/// A batch of 0..4 sequences for SWA plans / the prefill step: histories shorter
/// and longer than the window, chunks longer than the ring, swa_valid_start inside
/// the history, distinct state ids below the returned num_states. block_table empty.
/// Histories end anywhere, exactly at a wrap point of the ring or one token past it.
struct SwaBatch {
  std::vector<SeqMeta> seqs;
  int32_t window = 1, ring_size = 1, num_states = 1;
};
SwaBatch build_swa_batch(Source& src);
rc::Gen<SwaBatch> swa_batch();

void showValue(const BlockTables& t, std::ostream& os);
void showValue(const SwaBatch& b, std::ostream& os);

/// Ceil division for block counts.
inline int32_t blocks_for(int32_t tokens, int32_t block_size) {
  return (tokens + block_size - 1) / block_size;
}

}  // namespace kvcheck::props::gen
