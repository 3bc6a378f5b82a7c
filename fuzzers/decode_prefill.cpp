// Decoder of the prefill target (SPEC §5.3-5.6): a small valid batch for
// props::run_prefill_step.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <climits>
#include <sstream>

#include "fuzzers/decoders.h"

namespace kvcheck::fuzz {

PrefillFuzzScenario decode_prefill(FuzzedDataProvider& fdp) {
  PrefillFuzzScenario out;
  props::PrefillScenario& s = out.step;
  SplitMix64 rng{fdp.ConsumeIntegral<uint64_t>()};
  const int fmt = fdp.ConsumeIntegralInRange<int>(0, 3);
  s.format = fmt == 0 ? KVCacheFormat::V41() : KVCacheFormat::BF16(fmt == 1 ? 8 : fmt == 2 ? 16 : 64);
  s.window = fdp.ConsumeIntegralInRange<int32_t>(1, 16);
  s.ring_size = s.window + (fdp.ConsumeBool() ? 0 : fdp.ConsumeIntegralInRange<int32_t>(0, 8));
  const int32_t num_seqs = fdp.ConsumeIntegralInRange<int32_t>(0, 4);
  s.num_swa_states = std::max(num_seqs + fdp.ConsumeIntegralInRange<int32_t>(0, 2), 1);
  const auto states = props::shuffled(rng, s.num_swa_states, s.num_swa_states);
  constexpr int32_t kBlockSizes[] = {1, 2, 4, 16, 64, 133};
  s.block_size = fdp.ConsumeBool() ? fdp.PickValueInArray(kBlockSizes)
                                   : fdp.ConsumeIntegralInRange<int32_t>(1, 300);
  std::vector<int32_t> divisors;
  for (int32_t d = 1; d <= s.block_size; ++d)
    if (s.block_size % d == 0) divisors.push_back(d);
  s.ratio = divisors[fdp.ConsumeIntegralInRange<size_t>(0, divisors.size() - 1)];
  const int32_t per_block = s.block_size / s.ratio;
  int32_t needed = 0;
  for (int32_t i = 0; i < num_seqs; ++i) {
    SeqMeta q;
    const int hist_mode = fdp.ConsumeIntegralInRange<int>(0, 3);
    const int32_t history_end = hist_mode == 0 ? fdp.ConsumeIntegralInRange<int32_t>(0, s.window - 1)
                                               : fdp.ConsumeIntegralInRange<int32_t>(0, 3 * s.ring_size);
    q.seqlen_q = fdp.ConsumeIntegralInRange<int32_t>(0, 2 * s.ring_size + 3);
    q.seqlen_k = history_end + q.seqlen_q;
    q.swa_valid_start = fdp.ConsumeBool() ? 0 : fdp.ConsumeIntegralInRange<int32_t>(0, history_end);
    q.state_id = states[static_cast<size_t>(i)];
    needed += (q.seqlen_k / s.ratio + per_block - 1) / per_block;
    s.seqs.push_back(std::move(q));
  }
  // Disjoint block tables from one shuffled pool; tails of -1 or spare blocks.
  const int32_t spare = fdp.ConsumeIntegralInRange<int32_t>(0, 4);
  const auto pool = props::shuffled(rng, needed + spare, needed + spare);
  s.num_compressed_blocks = std::max(needed + spare, 1);
  size_t next = 0;
  for (SeqMeta& q : s.seqs) {
    const int32_t need = (q.seqlen_k / s.ratio + per_block - 1) / per_block;
    for (int32_t b = 0; b < need; ++b) q.block_table.push_back(pool[next++]);
    for (int32_t t = fdp.ConsumeIntegralInRange<int32_t>(0, 1); t > 0; --t)
      q.block_table.push_back(spare > 0 && fdp.ConsumeBool()
                                  ? pool[static_cast<size_t>(needed + static_cast<int32_t>(rng.next() % static_cast<uint64_t>(spare)))]
                                  : -1);
  }
  s.topk_width = fdp.ConsumeIntegralInRange<int32_t>(0, 5);
  for (const SeqMeta& q : s.seqs) {
    const int32_t n = q.seqlen_k / s.ratio;
    std::vector<int32_t> topk;
    for (int32_t j = 0; j < q.seqlen_q; ++j) {
      const size_t row_begin = topk.size();
      for (int32_t c = 0; c < s.topk_width; ++c) {
        const int32_t x = n == 0 ? -1 : static_cast<int32_t>(rng.next() % static_cast<uint64_t>(n + 1)) - 1;
        topk.push_back(std::find(topk.begin() + static_cast<ptrdiff_t>(row_begin), topk.end(), x) == topk.end() ? x : -1);
      }
    }
    s.topk.push_back(std::move(topk));
  }
  s.store_before_load = fdp.ConsumeIntegralInRange<int>(0, 7) == 0;
  return out;
}

std::string describe(const PrefillFuzzScenario& s) {
  std::ostringstream o;
  o << "prefill scenario\n  ";
  props::showValue(s.step, o);
  o << "\n";
  return o.str();
}

}  // namespace kvcheck::fuzz
