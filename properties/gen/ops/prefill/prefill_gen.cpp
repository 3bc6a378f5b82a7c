#include "properties/gen/ops/prefill/prefill_gen.h"

#include <algorithm>
#include <sstream>

#include "properties/gen/choices.h"
#include "properties/gen/metadata_gen.h"
#include "properties/gen/splitmix.h"

namespace kvcheck::props {
namespace {

// One sequence of the batch; its state id is set by the caller. Histories that end
// exactly at the ring's wrap point, or one token past it, are the edges of the
// two-piece ring range.
SeqMeta choose_sequence(Source& src, const PrefillScenario& s) {
  SeqMeta q;
  const int64_t lap = src.range(1, 2);
  int64_t history_end = 0;
  switch (src.weighted({3, 1, 1})) {
    case 0: history_end = src.range(0, 3 * int64_t{s.ring_size}); break;
    case 1: history_end = lap * s.ring_size; break;
    default: history_end = lap * s.ring_size + 1; break;
  }
  q.seqlen_q = static_cast<int32_t>(src.count(0, 2 * int64_t{s.ring_size} + 3, 1 + s.topk_width));
  q.seqlen_k = static_cast<int32_t>(history_end) + q.seqlen_q;
  q.swa_valid_start = src.coin() ? static_cast<int32_t>(src.range(0, history_end)) : 0;
  return q;
}

}  // namespace

PrefillScenario build_prefill_scenario(Source& src) {
  PrefillScenario s;
  s.format = src.pick_weighted<KVCacheFormat>(
      {{3, KVCacheFormat::BF16(8)}, {3, KVCacheFormat::V41()}, {1, KVCacheFormat::BF16(16)}, {1, KVCacheFormat::BF16(64)}});
  s.window = static_cast<int32_t>(src.range(1, 16));
  s.ring_size = s.window + (src.coin() ? static_cast<int32_t>(src.range(0, 8)) : 0);
  s.topk_width = static_cast<int32_t>(src.range(0, 4));
  // Empty batches are rare (at small sizes a count would give 0 every time).
  const int64_t num_seqs = src.weighted({1, 24}) == 0 ? 0 : src.range(1, 4);
  s.num_swa_states = std::max<int32_t>(static_cast<int32_t>(num_seqs + src.range(0, 2)), 1);
  SplitMix64 rng{src.seed()};
  const std::vector<int32_t> states = shuffled(rng, s.num_swa_states, s.num_swa_states);
  for (int64_t i = 0; i < num_seqs; ++i) {
    s.seqs.push_back(choose_sequence(src, s));
    s.seqs.back().state_id = states[static_cast<size_t>(i)];
  }
  // Compressed cache: block sizes of the spec (or random), every divisor as the ratio.
  s.block_size = src.weighted({3, 1}) == 0 ? src.pick<int32_t>({1, 2, 4, 16, 64, 133})
                                           : static_cast<int32_t>(src.range(1, 300));
  std::vector<int32_t> divisors;
  for (int32_t d = 1; d <= s.block_size; ++d)
    if (s.block_size % d == 0) divisors.push_back(d);
  s.ratio = src.pick(std::span<const int32_t>(divisors));
  const int32_t per_block = s.block_size / s.ratio;
  // Disjoint block tables from one shuffled pool; a tail of -1 or a spare block.
  int32_t needed = 0;
  for (const SeqMeta& q : s.seqs) needed += gen::blocks_for(q.seqlen_k / s.ratio, per_block);
  const auto spare = static_cast<int32_t>(src.range(0, 5));
  const std::vector<int32_t> pool = shuffled(rng, needed + spare, needed + spare);
  s.num_compressed_blocks = std::max(needed + spare, 1);
  size_t next = 0;
  for (SeqMeta& q : s.seqs) {
    for (int32_t b = gen::blocks_for(q.seqlen_k / s.ratio, per_block); b > 0; --b) q.block_table.push_back(pool[next++]);
    if (src.coin())  // never a block in use
      q.block_table.push_back(spare > 0 && src.coin() ? pool[static_cast<size_t>(needed + src.range(0, spare - 1))] : -1);
  }
  // Per chunk row: topk_width compressed tokens, distinct (a repeat becomes -1).
  for (const SeqMeta& q : s.seqs) {
    const int32_t n = q.seqlen_k / s.ratio;
    std::vector<int32_t> topk;
    for (int32_t j = 0; j < q.seqlen_q; ++j) {
      const auto row = static_cast<std::ptrdiff_t>(topk.size());
      for (int32_t c = 0; c < s.topk_width; ++c) {
        const auto x = n == 0 ? -1 : static_cast<int32_t>(src.range(-1, n - 1));
        topk.push_back(std::find(topk.begin() + row, topk.end(), x) == topk.end() ? x : -1);
      }
    }
    s.topk.push_back(std::move(topk));
  }
  return s;
}

rc::Gen<PrefillScenario> gen_prefill_scenario() {
  return rc::gen::exec([] {
    RcSource src;
    return build_prefill_scenario(src);
  });
}

void showValue(const PrefillScenario& s, std::ostream& os) {
  os << "PrefillScenario{format " << s.format.name << ", window " << s.window << ", ring_size "
     << s.ring_size << ", num_swa_states " << s.num_swa_states << ", block_size " << s.block_size
     << ", ratio " << s.ratio << ", num_compressed_blocks " << s.num_compressed_blocks
     << ", topk_width " << s.topk_width << (s.store_before_load ? ", STORE BEFORE LOAD" : "")
     << "\n";
  for (size_t i = 0; i < s.seqs.size(); ++i) {
    const SeqMeta& q = s.seqs[i];
    os << "  seq " << i << ": seqlen_k " << q.seqlen_k << ", seqlen_q " << q.seqlen_q
       << ", swa_valid_start " << q.swa_valid_start << ", state_id " << q.state_id
       << ", block_table [";
    for (size_t b = 0; b < q.block_table.size(); ++b) os << (b ? " " : "") << q.block_table[b];
    os << "], topk [";
    if (i < s.topk.size())
      for (size_t k = 0; k < s.topk[i].size(); ++k) os << (k ? " " : "") << s.topk[i][k];
    os << "]\n";
  }
  os << "}";
}

std::string describe(const PrefillScenario& s) {
  std::ostringstream o;
  o << "prefill scenario\n  ";
  showValue(s, o);
  o << "\n";
  return o.str();
}

}  // namespace kvcheck::props
