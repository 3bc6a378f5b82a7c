// A cache view carries its buffer's size, and every backend and the reference reject a
// view whose layout does not fit in it (docs/spec.md §5.2 validation order, step 1)
// before reading or writing a byte. The CUDA device API's checked entries get the same
// check (tests/cuda/device_api_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "impl/backends.h"
#include "impl/kv_cache.h"
#include "reference/load.h"
#include "reference/store.h"
#include "tests/test_util.h"

namespace kvcheck {
namespace {

constexpr uint8_t kFill = 0x5A;

bool all_fill(std::span<const uint8_t> bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](uint8_t b) { return b == kFill; });
}

// The allocation: 2 blocks of 16 V41 tokens (2 x 8448 bytes). The views below claim
// more blocks, or larger blocks, than that.
struct Oversized {
  CacheLayout real = CacheLayout::make(KVCacheFormat::V41(), 2, 16);
  std::vector<std::pair<std::string, CacheLayout>> claims{
      {"num_blocks 3", CacheLayout::make(KVCacheFormat::V41(), 3, 16)},
      {"block_size 32", CacheLayout::make(KVCacheFormat::V41(), 2, 32)},
      {"block_size 17", CacheLayout::make(KVCacheFormat::V41(), 2, 17)},
  };
  std::vector<bf16_bits> kv = std::vector<bf16_bits>(2 * 512, 0x3F80);
};

// Every backend built here (cpu; cuda on a GPU machine) refuses the view before it
// reads or writes a byte: the slot past the allocation, and slot 0 inside it, alike.
TEST(CacheViewSize, BackendsRejectAViewClaimingMoreThanItsBuffer) {
  const Oversized o;
  for (const auto& backend : available_backends()) {
    for (const auto& [what, claimed] : o.claims) {
      const CacheLayout& claim = claimed;  // lambdas cannot capture a structured binding in clang 14
      SCOPED_TRACE(std::string(backend->name()) + ", view claims " + what);
      KVCache cache = KVCache::with_canaries(o.real, kFill);
      const CacheView view{cache.data(), claim, cache.size_bytes()};
      const int32_t past = static_cast<int32_t>(claim.num_slots() - 1);  // outside the allocation
      for (const std::vector<int32_t>& slots : {std::vector<int32_t>{past}, std::vector<int32_t>{0, -1},
                                                std::vector<int32_t>{}}) {
        expect_error([&] { backend->store_kv_cache({o.kv.data(), 2, 512}, slots, view); },
                     ErrorCode::kShapeMismatch, {"cache view claims", "its buffer holds 16896 bytes"});
        EXPECT_TRUE(all_fill(cache.bytes())) << "store changed the cache";
        EXPECT_EQ(cache.canary_report(), "");
      }
      std::vector<uint8_t> out(2 * 1024, kFill);
      const LoadOutput lo{out.data(), 1024, nullptr, 0, 2};
      const ConstCacheView cview{cache.data(), claim, cache.size_bytes()};
      for (const std::vector<int32_t>& segs : {std::vector<int32_t>{static_cast<int32_t>(claim.num_blocks - 1), 0, 2, 0},
                                               std::vector<int32_t>{0, 0, 1, 0, -1, 0, 1, 1}}) {
        expect_error([&] { backend->load_paged_kv_cache(cview, segs, 2, lo); }, ErrorCode::kShapeMismatch,
                     {"cache view claims"});
        EXPECT_TRUE(all_fill(out)) << "load wrote its output";
      }
    }
  }
}

TEST(CacheViewSize, ReferenceRejectsABufferSmallerThanItsGeometry) {
  const Oversized o;
  for (const auto& [what, claimed] : o.claims) {
    const CacheLayout& claim = claimed;  // lambdas cannot capture a structured binding in clang 14
    SCOPED_TRACE("reference, buffer for " + what);
    KVCache cache = KVCache::with_canaries(o.real, kFill);
    const int32_t past = static_cast<int32_t>(claim.num_slots() - 1);
    for (const std::vector<int32_t>& slots : {std::vector<int32_t>{past}, std::vector<int32_t>{0}}) {
      expect_error([&] {
        ref::store_kv_cache({o.kv.data(), 2, 512}, slots, cache.bytes(), claim.format, claim.num_blocks,
                            claim.block_size);
      }, ErrorCode::kShapeMismatch, {"the buffer has 16896"});
      EXPECT_TRUE(all_fill(cache.bytes()));
      EXPECT_EQ(cache.canary_report(), "");
    }
    std::vector<uint8_t> out(1024, kFill);
    const std::vector<int32_t> segs{0, 0, 1, 0};
    expect_error([&] {
      ref::load_paged_kv_cache(cache.bytes(), claim.format, claim.num_blocks, claim.block_size,
                               segs, 1, {out.data(), 1024, nullptr, 0, 1});
    }, ErrorCode::kShapeMismatch, {"the buffer has 16896"});
    EXPECT_TRUE(all_fill(out));
  }
}

// The check's place in the order: after the geometry, before the row and output
// checks; a null cache is still the null-cache rule's; a buffer at least as large as
// the layout passes (so the tests above fail for the right reason).
TEST(CacheViewSize, OrderAndTheViewsThatPass) {
  const Oversized o;
  const auto cpu = available_backends().front();
  KVCache cache = KVCache::with_canaries(o.real, kFill);
  const CacheLayout& big = o.claims[0].second;
  const std::vector<int32_t> one{0};
  // kv.rows 0 < n: the view is reported first.
  expect_error([&] { cpu->store_kv_cache({o.kv.data(), 0, 512}, one, {cache.data(), big, cache.size_bytes()}); },
               ErrorCode::kShapeMismatch, {"cache view claims"});
  // A layout that is not SPEC §3's (a stride off the 32-byte grid): kInvalidArgument first.
  CacheLayout wrong = big;
  wrong.block_stride += 16;
  expect_error([&] { cpu->store_kv_cache({o.kv.data(), 2, 512}, one, {cache.data(), wrong, 1}); },
               ErrorCode::kInvalidArgument, {"block_stride"});
  // Null cache, no size: the null-cache rules as before.
  expect_error([&] { cpu->store_kv_cache({o.kv.data(), 2, 512}, one, {nullptr, big, 0}); },
               ErrorCode::kShapeMismatch, {"cache base is null"});
  EXPECT_NO_THROW(cpu->store_kv_cache({nullptr, 0, 0}, {}, {nullptr, big, 0}));
  EXPECT_NO_THROW(ref::store_kv_cache({nullptr, 0, 0}, {}, {}, big.format, big.num_blocks, big.block_size));
  // Exactly the layout's size, or more (a view of the front of a larger buffer): fine.
  EXPECT_NO_THROW(cpu->store_kv_cache({o.kv.data(), 2, 512}, one, cache.view()));
  const CacheLayout small = CacheLayout::make(KVCacheFormat::V41(), 1, 16);
  EXPECT_NO_THROW(cpu->store_kv_cache({o.kv.data(), 2, 512}, one, {cache.data(), small, cache.size_bytes()}));
  EXPECT_NO_THROW(ref::store_kv_cache({o.kv.data(), 2, 512}, one, cache.bytes(), small.format, 1, 16));
  EXPECT_EQ(cache.canary_report(), "");
}

}  // namespace
}  // namespace kvcheck
