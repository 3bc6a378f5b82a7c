#include "properties/gen/metadata_gen.h"

#include <algorithm>
#include <numeric>

#include "properties/gen/store_load_gen.h"

namespace kvcheck::props::gen {

rc::Gen<int32_t> block_size() { return gen_block_size(); }  // the one block-size chooser (fitted to the backend)

rc::Gen<std::vector<int32_t>> permutation(int32_t n) {
  return rc::gen::exec([n] {
    // Sort indices by random keys: all-zero keys (the shrink target) give identity.
    const auto keys = *rc::gen::container<std::vector<int32_t>>(
        static_cast<size_t>(n), rc::gen::inRange<int32_t>(0, 1 << 20));
    std::vector<int32_t> perm(static_cast<size_t>(n));
    std::iota(perm.begin(), perm.end(), 0);
    std::stable_sort(perm.begin(), perm.end(), [&](int32_t a, int32_t b) {
      return keys[static_cast<size_t>(a)] < keys[static_cast<size_t>(b)];
    });
    return perm;
  });
}

rc::Gen<BlockTables> block_tables(std::vector<int32_t> blocks_needed, int32_t max_tail) {
  return rc::gen::exec([blocks_needed, max_tail] {
    const int32_t needed = std::accumulate(blocks_needed.begin(), blocks_needed.end(), 0);
    const int32_t spare = *rc::gen::inRange<int32_t>(0, 6);
    const auto pool = *permutation(needed + spare);
    BlockTables out;
    out.num_blocks = std::max(needed + spare, 1);
    size_t next = 0;
    for (int32_t need : blocks_needed) {
      std::vector<int32_t> table;
      for (int32_t i = 0; i < need; ++i) table.push_back(pool[next++]);
      const int32_t tail = *rc::gen::inRange<int32_t>(0, max_tail + 1);
      for (int32_t i = 0; i < tail; ++i)  // -1 entries, or a spare block (never one in use)
        table.push_back(spare > 0 && *rc::gen::arbitrary<bool>()
                            ? pool[static_cast<size_t>(needed) +
                                   static_cast<size_t>(*rc::gen::inRange<int32_t>(0, spare))]
                            : -1);
      out.tables.push_back(std::move(table));
    }
    return out;
  });
}

rc::Gen<SwaBatch> swa_batch() {
  return rc::gen::exec([] {
    SwaBatch b;
    b.window = *rc::gen::inRange<int32_t>(1, 17);
    b.ring_size = b.window + *rc::gen::oneOf(rc::gen::just<int32_t>(0), rc::gen::inRange<int32_t>(0, 9));
    // Empty batches are rare (at small sizes inRange would give 0 every time).
    const int32_t num_seqs =
        *rc::gen::weightedOneOf<int32_t>({{1, rc::gen::just<int32_t>(0)}, {24, rc::gen::inRange<int32_t>(1, 5)}});
    b.num_states = num_seqs + *rc::gen::inRange<int32_t>(0, 3);
    const auto states = *permutation(std::max(b.num_states, 1));
    for (int32_t i = 0; i < num_seqs; ++i) {
      SeqMeta s;
      // Histories that end exactly at the ring's wrap point, or one token past it, are
      // the edges of the two-piece ring range.
      const int32_t lap = *rc::gen::inRange<int32_t>(1, 3);
      const int32_t history_end = *rc::gen::weightedOneOf<int32_t>({
          {3, rc::gen::inRange<int32_t>(0, 3 * b.ring_size + 1)},
          {1, rc::gen::just<int32_t>(lap * b.ring_size)},
          {1, rc::gen::just<int32_t>(lap * b.ring_size + 1)},
      });
      s.seqlen_q = *rc::gen::inRange<int32_t>(0, 2 * b.ring_size + 4);
      s.seqlen_k = history_end + s.seqlen_q;
      s.swa_valid_start =
          *rc::gen::oneOf(rc::gen::just<int32_t>(0), rc::gen::inRange<int32_t>(0, history_end + 1));
      s.state_id = states[static_cast<size_t>(i)];
      b.seqs.push_back(std::move(s));
    }
    if (b.num_states < 1) b.num_states = 1;
    return b;
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
