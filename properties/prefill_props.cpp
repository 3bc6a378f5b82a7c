// The prefill-step properties (SPEC §5.3-§5.6): the whole pipeline on a random batch.
#include <rapidcheck.h>

#include <algorithm>

#include "properties/class_bounds.h"
#include "properties/classes.h"
#include "properties/gen/metadata_gen.h"
#include "properties/prefill_step.h"
#include "properties/registry.h"

namespace kvcheck::props {
namespace {

// A batch from gen::swa_batch plus compressed-cache geometry, disjoint shuffled
// block tables and per-row top-k of distinct compressed tokens.
PrefillScenario draw_scenario() {
  const auto batch = *gen::swa_batch();
  PrefillScenario s;
  s.format = *rc::gen::arbitrary<bool>() ? KVCacheFormat::V41() : KVCacheFormat::BF16(8);
  s.window = batch.window;
  s.ring_size = batch.ring_size;
  s.num_swa_states = batch.num_states;
  s.seqs = batch.seqs;
  s.block_size = *rc::gen::element<int32_t>(1, 2, 4, 16, 64, 133);
  std::vector<int32_t> divisors;
  for (int32_t d = 1; d <= s.block_size; ++d)
    if (s.block_size % d == 0) divisors.push_back(d);
  s.ratio = *rc::gen::elementOf(divisors);
  const int32_t per_block = s.block_size / s.ratio;
  std::vector<int32_t> need;
  for (const SeqMeta& q : s.seqs) need.push_back(gen::blocks_for(q.seqlen_k / s.ratio, per_block));
  const auto tables = *gen::block_tables(need, 1);
  s.num_compressed_blocks = tables.num_blocks;
  for (size_t i = 0; i < s.seqs.size(); ++i) s.seqs[i].block_table = tables.tables[i];
  s.topk_width = *rc::gen::inRange(0, 5);
  for (const SeqMeta& q : s.seqs) {
    const int32_t n = q.seqlen_k / s.ratio;
    std::vector<int32_t> topk;
    for (int32_t j = 0; j < q.seqlen_q; ++j) {
      std::vector<int32_t> row;
      for (int32_t c = 0; c < s.topk_width; ++c) {
        const int32_t x = n == 0 ? -1 : *rc::gen::inRange(-1, n);
        row.push_back(std::find(row.begin(), row.end(), x) == row.end() ? x : -1);
      }
      topk.insert(topk.end(), row.begin(), row.end());
    }
    s.topk.push_back(std::move(topk));
  }
  return s;
}

bool skip(const Backend& b) {
  const auto caps = b.capabilities();
  return !caps.store_load || !caps.index_transforms;
}

void prop_prefill_step_sees_exactly_its_window(const Backend& b) {
  RC_SUCCEED_IF(skip(b));
  const PrefillScenario s = *rc::gen::exec(draw_scenario);
  if (s.seqs.empty()) note_class("no sequence");
  RC_TAG(store_overlaps_visible_history(s) ? "store overlaps loaded history" : "no overlap");
  const std::string msg = run_prefill_step(s, b);
  if (!msg.empty()) RC_FAIL(msg);
}

// The order rule made observable: the wrong order fails exactly when it must.
void prop_prefill_store_before_load_fails_iff_overlap(const Backend& b) {
  RC_SUCCEED_IF(skip(b));
  PrefillScenario s = *rc::gen::exec(draw_scenario);
  if (s.seqs.empty()) note_class("no sequence");
  s.store_before_load = true;
  const bool overlap = store_overlaps_visible_history(s);
  RC_TAG(overlap ? "overlap" : "no overlap");
  const std::string msg = run_prefill_step(s, b);
  if (overlap && msg.empty()) RC_FAIL("store before load overlapped the history but passed");
  if (!overlap && !msg.empty()) RC_FAIL("no overlap, yet: " + msg);
}

}  // namespace

void register_prefill_properties(Registry& r) {
  r.add({"prop_prefill_step_sees_exactly_its_window", "prefill",
         "after plans, loads, chunk copy, ring store and index concatenation, every query row "
         "selects exactly its SWA window and its compressed tokens, each with that token's value",
         true, prop_prefill_step_sees_exactly_its_window, {}, nullptr, bounds::prefill()});
  r.add({"prop_prefill_store_before_load_fails_iff_overlap", "prefill",
         "storing the chunk before loading the history breaks the check exactly when a stored "
         "slot holds a visible history token",
         true, prop_prefill_store_before_load_fails_iff_overlap, {}, nullptr, bounds::prefill()});
}

}  // namespace kvcheck::props
