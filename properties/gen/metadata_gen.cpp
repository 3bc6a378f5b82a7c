#include "properties/gen/metadata_gen.h"

#include <algorithm>
#include <numeric>

#include "properties/gen/choices.h"
#include "properties/gen/ops/store_load/store_load_gen.h"

namespace kvcheck::props::gen {

rc::Gen<int32_t> block_size() { return gen_block_size(); }  // the one block-size chooser (fitted to the backend)

std::vector<int32_t> build_permutation(Source& src, int32_t n) {
  const uint32_t seed = src.seed();
  if (seed == 0) {  // the simplest: the identity
    std::vector<int32_t> perm(static_cast<size_t>(std::max(n, 0)));
    std::iota(perm.begin(), perm.end(), 0);
    return perm;
  }
  SplitMix64 rng{seed};
  return shuffled(rng, n, n);
}

rc::Gen<std::vector<int32_t>> permutation(int32_t n) {
  return rc::gen::exec([n] {
    RcSource src;
    return build_permutation(src, n);
  });
}

BlockTables build_block_tables(Source& src, const std::vector<int32_t>& blocks_needed, int32_t max_tail) {
  const int32_t needed = std::accumulate(blocks_needed.begin(), blocks_needed.end(), 0);
  const int32_t spare = static_cast<int32_t>(src.range(0, 5));
  const auto pool = build_permutation(src, needed + spare);
  BlockTables out;
  out.num_blocks = std::max(needed + spare, 1);
  size_t next = 0;
  for (int32_t need : blocks_needed) {
    std::vector<int32_t> table;
    for (int32_t i = 0; i < need; ++i) table.push_back(pool[next++]);
    const int64_t tail = src.range(0, max_tail);
    for (int64_t i = 0; i < tail; ++i)  // -1 entries, or a spare block (never one in use)
      table.push_back(spare > 0 && src.coin() ? pool[static_cast<size_t>(needed + src.range(0, spare - 1))] : -1);
    out.tables.push_back(std::move(table));
  }
  return out;
}

rc::Gen<BlockTables> block_tables(std::vector<int32_t> blocks_needed, int32_t max_tail) {
  return rc::gen::exec([blocks_needed, max_tail] {
    RcSource src;
    return build_block_tables(src, blocks_needed, max_tail);
  });
}

SwaBatch build_swa_batch(Source& src) {
  SwaBatch b;
  b.window = static_cast<int32_t>(src.range(1, 16));
  b.ring_size = b.window + static_cast<int32_t>(src.coin() ? src.range(0, 8) : 0);
  // Empty batches are rare (a plain count would give 0 at every small size).
  const int32_t num_seqs = static_cast<int32_t>(src.weighted({1, 24}) == 0 ? 0 : src.count(1, 4, 6));
  b.num_states = num_seqs + static_cast<int32_t>(src.range(0, 2));
  const auto states = build_permutation(src, std::max(b.num_states, 1));
  for (int32_t i = 0; i < num_seqs; ++i) {
    SeqMeta s;
    // Histories that end exactly at the ring's wrap point, or one token past it, are
    // the edges of the two-piece ring range.
    const int32_t lap = static_cast<int32_t>(src.range(1, 2));
    const int32_t history_end = src.pick_weighted<int32_t>({{3, -1}, {1, lap * b.ring_size}, {1, lap * b.ring_size + 1}});
    s.seqlen_q = static_cast<int32_t>(src.range(0, 2 * b.ring_size + 3));
    s.seqlen_k = (history_end < 0 ? static_cast<int32_t>(src.range(0, 3 * b.ring_size)) : history_end) + s.seqlen_q;
    const int32_t he = s.seqlen_k - s.seqlen_q;
    s.swa_valid_start = src.coin() ? static_cast<int32_t>(src.range(0, he)) : 0;
    s.state_id = states[static_cast<size_t>(i)];
    b.seqs.push_back(std::move(s));
  }
  if (b.num_states < 1) b.num_states = 1;
  return b;
}

rc::Gen<SwaBatch> swa_batch() {
  return rc::gen::exec([] {
    RcSource src;
    return build_swa_batch(src);
  });
}

void showValue(const BlockTables& t, std::ostream& os) {
  os << "BlockTables{num_blocks " << t.num_blocks;
  for (const auto& row : t.tables) {
    os << ", [";
    for (size_t i = 0; i < row.size(); ++i) os << (i ? " " : "") << row[i];
    os << "]";
  }
  os << "}";
}

void showValue(const SwaBatch& b, std::ostream& os) {
  os << "SwaBatch{window " << b.window << ", ring_size " << b.ring_size << ", num_states "
     << b.num_states;
  for (const SeqMeta& s : b.seqs)
    os << ", {seqlen_k " << s.seqlen_k << ", seqlen_q " << s.seqlen_q << ", swa_valid_start "
       << s.swa_valid_start << ", state_id " << s.state_id << "}";
  os << "}";
}

}  // namespace kvcheck::props::gen
