// The prefill-step scenario (SPEC §5.3-§5.6) on named cases, on every available
// backend and on the scalar reference (through a small Backend adapter).
#include <gtest/gtest.h>

#include "impl/load_plan.h"
#include "impl/slot_mapping.h"
#include "properties/ops/prefill/prefill_step.h"
#include "reference/index_transforms.h"
#include "tests/test_util.h"
#include "reference/load.h"
#include "reference/store.h"

namespace kvcheck {
namespace {

using props::PrefillScenario;
using props::run_prefill_step;

// The reference as a Backend, so the scenario can run on it too.
class RefBackend final : public Backend {
 public:
  std::string_view name() const override { return "reference"; }
  void store_kv_cache(const KVInput& kv, std::span<const int32_t> slots,
                      const CacheView& c) const override {
    ref::store_kv_cache(kv, slots, {c.base, bytes(c.base, c.size_bytes)}, c.layout.format, c.layout.num_blocks,
                        c.layout.block_size);
  }
  void load_paged_kv_cache(const ConstCacheView& c, std::span<const int32_t> segs, int32_t total_k,
                           const LoadOutput& out) const override {
    ref::load_paged_kv_cache({c.base, bytes(c.base, c.size_bytes)}, c.layout.format, c.layout.num_blocks,
                             c.layout.block_size, segs,
                             total_k, out);
  }
  void convert_kv_index(const ConvertKvIndexArgs& a, std::span<int32_t> out) const override {
    copy(ref::convert_kv_index(a), out);
  }
  void kv_index_cat(std::span<const int32_t> l, int32_t wl, std::span<const int32_t> r, int32_t wr,
                    int32_t num_q, int32_t cached, int32_t cur, std::span<int32_t> out) const override {
    copy(ref::kv_index_cat(l, wl, r, wr, num_q, cached, cur), out);
  }
  void expand_swa_index(std::span<const int32_t> pivots, int32_t num_q, int32_t width,
                        std::span<int32_t> out) const override {
    copy(ref::expand_swa_index(pivots, num_q, width), out);
  }
  void swa_decode_index(std::span<const int32_t> sl, int32_t num_q, int32_t width, int32_t ring,
                        std::span<int32_t> out) const override {
    copy(ref::swa_decode_index(sl, num_q, width, ring), out);
  }

 private:
  // A view's buffer as the reference takes it (a null base is a null cache).
  static size_t bytes(const void* base, int64_t size_bytes) {
    return base == nullptr || size_bytes < 0 ? 0 : static_cast<size_t>(size_bytes);
  }
  static void copy(const std::vector<int64_t>& v, std::span<int32_t> out) {
    ASSERT_EQ(v.size(), out.size());
    for (size_t i = 0; i < v.size(); ++i) out[i] = static_cast<int32_t>(v[i]);
  }
};

std::vector<std::shared_ptr<const Backend>> backends_and_reference() {
  auto all = available_backends();
  all.push_back(std::make_shared<RefBackend>());
  return all;
}

class PrefillStep : public testing::TestWithParam<std::shared_ptr<const Backend>> {};

// One sequence per call, state 0 of one ring, blocks 0..n-1 of the compressed cache
// in reverse order (non-contiguous mapping). topk row j: compressed tokens j % n
// and (7j + 1) % n (distinct unless n == 1).
PrefillScenario one_sequence(int32_t seqlen_k, int32_t seqlen_q, int32_t window, int32_t ring,
                             int32_t block_size, int32_t ratio, int32_t swa_valid_start = 0) {
  PrefillScenario s;
  s.window = window;
  s.ring_size = ring;
  s.block_size = block_size;
  s.ratio = ratio;
  s.topk_width = 2;
  SeqMeta q;
  q.seqlen_k = seqlen_k;
  q.seqlen_q = seqlen_q;
  q.swa_valid_start = swa_valid_start;
  const int32_t n = seqlen_k / ratio, per_block = block_size / ratio;
  const int32_t blocks = (n + per_block - 1) / per_block;
  for (int32_t b = blocks - 1; b >= 0; --b) q.block_table.push_back(b);
  s.num_compressed_blocks = std::max(blocks, 1);
  std::vector<int32_t> topk;
  for (int32_t j = 0; j < seqlen_q; ++j) {
    const int32_t a = n == 0 ? -1 : j % n, b = n == 0 ? -1 : (7 * j + 1) % n;
    topk.push_back(a);
    topk.push_back(a == b ? -1 : b);
  }
  s.seqs.push_back(q);
  s.topk.push_back(topk);
  return s;
}

// SPEC §5.6, run end to end: 157 compressed segments / 2500 rows, 4096 SWA rows,
// buffer [0,4096) history, [4096,5120) chunk, [5120,7620) compressed, store slots
// [784, 1808). The host pieces are checked here, the pipeline by run_prefill_step.
TEST_P(PrefillStep, WorkedPrefillOfSpec) {
  for (const auto& format : {KVCacheFormat::BF16(8), KVCacheFormat::V41()}) {
    PrefillScenario s = one_sequence(10000, 1024, 4096, 4096, 64, 4);
    s.format = format;
    const LoadPlan comp = build_compressed_plan(s.seqs, 64, 4);
    const LoadPlan swa = build_swa_plan(s.seqs, 4096, 4096);
    EXPECT_EQ(comp.segments.size(), 157u);
    EXPECT_EQ(comp.total_k, 2500);
    EXPECT_EQ(swa.total_k, 4096);
    const int32_t main_offset = swa.total_k + s.seqs[0].seqlen_q;
    EXPECT_EQ(main_offset, 5120);
    EXPECT_EQ(main_offset + comp.total_k, 7620);
    std::vector<int32_t> slots;
    append_swa_store_slots(slots, 0, 4096, 10000, 1024);
    EXPECT_EQ(slots.front(), 784);
    EXPECT_EQ(slots.back(), 1807);
    EXPECT_EQ(run_prefill_step(s, *GetParam()), "") << format.name;
  }
}

// history_end 3 < window 8: the history is padded with 5 zero rows.
TEST_P(PrefillStep, HistoryShorterThanWindow) {
  EXPECT_EQ(run_prefill_step(one_sequence(7, 4, 8, 8, 4, 2), *GetParam()), "");
  // And a valid start inside the history: positions 0..4 are stale in the ring.
  EXPECT_EQ(run_prefill_step(one_sequence(30, 6, 8, 10, 4, 2, 19), *GetParam()), "");
}

// seqlen_k 3 < ratio 4: one zero compressed row, no compressed token given.
TEST_P(PrefillStep, SeqlenKBelowRatio) {
  PrefillScenario s = one_sequence(3, 3, 4, 4, 16, 4);
  EXPECT_EQ(build_compressed_plan(s.seqs, 16, 4).total_k, 1);
  EXPECT_EQ(run_prefill_step(s, *GetParam()), "");
}

// history [13, 21) on ring 8: offsets [5, 8) then [0, 5).
TEST_P(PrefillStep, RingRangeWraps) {
  PrefillScenario s = one_sequence(24, 3, 8, 8, 2, 1);
  EXPECT_EQ(build_swa_plan(s.seqs, 8, 8).segments.size(), 2u);
  EXPECT_EQ(run_prefill_step(s, *GetParam()), "");
}

// A chunk of 11 on a ring of 4: the first 7 rows are never stored (slot -1).
TEST_P(PrefillStep, ChunkLongerThanRing) {
  EXPECT_EQ(run_prefill_step(one_sequence(16, 11, 3, 4, 133, 7), *GetParam()), "");
}

TEST_P(PrefillStep, MultiSequenceBatch) {
  PrefillScenario s = one_sequence(40, 5, 6, 8, 4, 2);
  const PrefillScenario b = one_sequence(9, 9, 6, 8, 4, 2), c = one_sequence(2, 1, 6, 8, 4, 2);
  s.num_swa_states = 4;
  s.seqs[0].state_id = 3;
  for (const PrefillScenario* o : {&b, &c}) {  // other sequences: rings 0/1, blocks after ours
    SeqMeta q = o->seqs[0];
    q.state_id = static_cast<int32_t>(s.seqs.size()) - 1;
    for (int32_t& blk : q.block_table) blk += s.num_compressed_blocks;
    s.num_compressed_blocks += static_cast<int32_t>(q.block_table.size());
    s.seqs.push_back(q);
    s.topk.push_back(o->topk[0]);
  }
  EXPECT_EQ(run_prefill_step(s, *GetParam()), "");
}

// The order rule (SPEC §5.4): ring == window, so the chunk's first stored token
// (position 20, slot 20%8 = 4) lands on history position 12 ... and position 21 on
// 13, which chunk row 0 (p = 20, window [13, 20]) must see: storing first corrupts it.
TEST_P(PrefillStep, StoreBeforeLoadIsCaught) {
  PrefillScenario s = one_sequence(24, 4, 8, 8, 4, 2);
  ASSERT_TRUE(props::store_overlaps_visible_history(s));
  s.store_before_load = true;
  const std::string msg = run_prefill_step(s, *GetParam());
  EXPECT_NE(msg.find("must not see"), std::string::npos) << msg;
  // A ring larger than window + chunk never overlaps: the wrong order is harmless there.
  PrefillScenario wide = one_sequence(24, 4, 8, 12, 4, 2);
  wide.store_before_load = true;
  EXPECT_FALSE(props::store_overlaps_visible_history(wide));
  EXPECT_EQ(run_prefill_step(wide, *GetParam()), "");
}

TEST(PrefillStepScenario, InvalidScenarioIsReported) {
  PrefillScenario s = one_sequence(8, 2, 4, 4, 4, 1);
  s.topk.clear();
  EXPECT_NE(run_prefill_step(s, *available_backends()[0]).find("invalid scenario"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Backends, PrefillStep, testing::ValuesIn(backends_and_reference()),
                         [](const auto& info) { return std::string(info.param->name()); });

}  // namespace
}  // namespace kvcheck
