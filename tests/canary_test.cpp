// The harness's canary bands are at least one block stride wide (KVCache::
// canary_bytes_for), so a write past either end of a cache lands in a band and is
// reported decoded — which band, how many bytes, the first changed byte's offset and
// value — instead of corrupting the heap; the store properties and the prefill step
// report it so.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "impl/backends.h"
#include "tests/test_util.h"
#include "impl/kv_cache.h"
#include "properties/harness.h"
#include "properties/ops/prefill/prefill_step.h"
#include "properties/registry.h"
#include "properties/runner.h"

namespace kvcheck {
namespace {

constexpr uint8_t kFill = 0x5A;

TEST(Canaries, BandsAreAtLeastOneBlockStride) {
  for (const KVCacheFormat& f : supported_formats())
    for (int32_t bs : {1, 16, 133, 256}) {
      const CacheLayout layout = CacheLayout::make(f, 2, bs);
      const KVCache cache = KVCache::with_canaries(layout);
      SCOPED_TRACE(f.name + " block_size " + std::to_string(bs));
      EXPECT_GE(cache.guard_bytes(), layout.block_stride);
      EXPECT_GE(cache.guard_bytes(), 4096);
      EXPECT_EQ(cache.guard_bytes() % 256, 0);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(cache.data()) % 256, 0u);
      EXPECT_EQ(props::make_cache({f, bs, 2, 7}).guard_bytes(), cache.guard_bytes());
    }
  // V41, block 256: a block stride of 135168 bytes, and so is the band.
  EXPECT_EQ(KVCache::canary_bytes_for(CacheLayout::make(KVCacheFormat::V41(), 1, 256)), 135168);
}

TEST(Canaries, WritesPastEitherEndAreDecoded) {
  const CacheLayout layout = CacheLayout::make(KVCacheFormat::V41(), 2, 16);  // 2 x 8448 bytes
  KVCache cache = KVCache::with_canaries(layout, kFill);                       // bands of 8448
  ASSERT_EQ(cache.guard_bytes(), 8448);
  EXPECT_TRUE(cache.guards_intact());
  EXPECT_EQ(cache.canary_report(), "");
  // One V41 record (528 bytes) where slot num_slots would be: just past the data.
  std::fill(cache.data() + cache.size_bytes(), cache.data() + cache.size_bytes() + 528, uint8_t{0x00});
  cache.data()[-3] = 0x7E;
  const auto hits = cache.canary_hits();
  ASSERT_EQ(hits.size(), 2u);
  EXPECT_EQ(hits[0].band, KVCache::CanaryHit::Band::kBefore);
  EXPECT_EQ(hits[0].first_offset, -3);
  EXPECT_EQ(hits[0].changed, 1);
  EXPECT_EQ(hits[0].value, 0x7E);
  EXPECT_EQ(hits[1].band, KVCache::CanaryHit::Band::kAfter);
  EXPECT_EQ(hits[1].first_offset, 16896);
  EXPECT_EQ(hits[1].changed, 528);
  EXPECT_FALSE(cache.guards_intact());
  EXPECT_EQ(cache.canary_report(),
            "canary band before the cache: 1 of its 8448 bytes changed, the first at band byte 8445 "
            "(cache offset -3) = 0x7E, expected 0xA5\n"
            "canary band after the cache: 528 of its 8448 bytes changed, the first at band byte 0 "
            "(cache offset 16896) = 0x00, expected 0xA5");
}

// The cpu backend with a planted bug: after a correct store it writes one record
// where slot num_blocks*block_size would be, just past the cache's data area (what
// an off-by-one slot bound does). Everything else forwards to cpu.
class PastTheEndBackend final : public PlantedStoreBackend {
 public:
  std::string_view name() const override { return "past-the-end"; }
  void store_kv_cache(const KVInput& kv, std::span<const int32_t> slots, const CacheView& cache) const override {
    cpu().store_kv_cache(kv, slots, cache);
    uint8_t* end = cache.base + cache.layout.size_bytes();
    std::fill(end, end + cache.layout.format.bytes_per_token(), uint8_t{0x00});
  }
};

TEST(Canaries, StorePropertyReportsAWritePastTheEnd) {
  const PastTheEndBackend bad;
  for (const char* name : {"prop_store_matches_reference", "prop_store_touches_only_written_records"}) {
    const auto o = props::run_property(property(name), bad, {0x6B76, 20, 100});
    ASSERT_TRUE(o.failed) << name;
    EXPECT_NE(o.message.find("wrote into the canary band after the cache: "), std::string::npos) << o.message;
    EXPECT_NE(o.message.find("the first at band byte 0 (cache offset "), std::string::npos) << o.message;
    EXPECT_EQ(o.message.find("canary band before"), std::string::npos) << o.message;
  }
}

TEST(Canaries, PrefillStepReportsAWritePastTheEnd) {
  props::PrefillScenario s;  // one sequence, BF16(8): ring of 4, compressed blocks of 4
  s.window = s.ring_size = 4;
  s.block_size = 4;
  s.num_compressed_blocks = 2;
  SeqMeta q;
  q.seqlen_k = 6;
  q.seqlen_q = 2;
  q.block_table = {1, 0};
  s.seqs = {q};
  s.topk = {{}};
  ASSERT_EQ(props::run_prefill_step(s, *available_backends().front()), "");
  const std::string got = props::run_prefill_step(s, PastTheEndBackend());
  EXPECT_NE(got.find("SWA cache: canary band after the cache: 16 of its 4096 bytes changed, the first at band "
                     "byte 0 (cache offset 64)"),
            std::string::npos)
      << got;
}

}  // namespace
}  // namespace kvcheck
