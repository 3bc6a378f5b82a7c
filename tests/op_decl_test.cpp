// The operations' declarations (impl/plugin/op_decl.h), on the host: the extents, roles
// and guards the device transport would upload, worked out by hand from SPEC §3 / §7.2
// for small valid calls, the capability gate, and bound()'s refusals. The transport
// itself runs on the GPU (plugin.device_guard_band_hit, plugin.device_read_only_input_written).
#include <gtest/gtest.h>

#include <vector>

#include "impl/error.h"
#include "impl/kv_layout.h"
#include "impl/layout.h"
#include "impl/plugin/abi_convert.h"
#include "impl/plugin/device_memory.h"
#include "impl/plugin/op_decl.h"

namespace kvcheck::plugin {
namespace {

const ArgGroup& group(const ArgDecl& d, const std::string& what) {
  for (const ArgGroup& g : d.groups())
    if (what == g.what) return g;
  ADD_FAILURE() << "no group " << what;
  static const ArgGroup none{"", false, 0, {}};
  return none;
}

TEST(OpDecl, StoreKvCacheDeclaresRowsSlotsAndTheWholeCache) {
  // BF16(64), 2 blocks of 4 tokens: a token record is 128 bytes, a block 512 (SPEC §3).
  const CacheLayout layout = CacheLayout::make(KVCacheFormat::BF16(64), 2, 4);
  ASSERT_EQ(layout.block_stride, 512);
  std::vector<uint16_t> kv(3 * 80);  // 3 rows, 80 elements apart
  std::vector<int32_t> slots = {5, -1, 0};
  std::vector<uint8_t> cache(1024 + 100);  // the host buffer holds more than the layout
  kvcheck_store_args a{};
  a.kv = kv.data();
  a.kv_rows = 3;
  a.kv_row_stride = 80;
  a.slot_mapping = slots.data();
  a.num_tokens = 3;
  a.cache = to_abi(layout, cache.data(), static_cast<int64_t>(cache.size()));
  const BackendCapabilities caps;
  ArgDecl d(caps, "b", "store_kv_cache", true);
  declare(a, d);
  ASSERT_FALSE(d.nothing_to_do());
  ASSERT_EQ(d.groups().size(), 3u);
  const ArgGroup& rows = group(d, "kv");
  EXPECT_FALSE(rows.written);
  EXPECT_EQ(rows.guard, 0u);
  ASSERT_EQ(rows.views.size(), 1u);
  EXPECT_EQ(rows.views[0].bytes, size_t{2 * 160 + 128});  // two strides of 160 bytes, then one row
  EXPECT_EQ(group(d, "slot_mapping").views[0].bytes, 12u);
  const ArgGroup& c = group(d, "the cache");
  EXPECT_TRUE(c.written);
  EXPECT_EQ(c.views[0].bytes, 1024u);  // num_blocks * block_stride, not the host's 1124
  EXPECT_EQ(c.guard, 4096u);           // guard_for(512): at least 4 KiB
  EXPECT_EQ(a.cache.size_bytes, 1024);  // what travels is what the plugin is told
  // The setter points the argument at the device copy.
  uint8_t device[16];
  c.views[0].set(device);
  EXPECT_EQ(a.cache.base, device);
}

TEST(OpDecl, NothingToDoAndHostPluginsDeclareNoBuffers) {
  const CacheLayout layout = CacheLayout::make(KVCacheFormat::BF16(64), 2, 4);
  std::vector<uint8_t> cache(1024);
  kvcheck_store_args a{};
  a.cache = to_abi(layout, cache.data(), 1024);
  const BackendCapabilities caps;
  ArgDecl device(caps, "b", "store_kv_cache", true);
  declare(a, device);  // no token: the plugin is not called
  EXPECT_TRUE(device.nothing_to_do());
  EXPECT_TRUE(device.groups().empty());
  a.num_tokens = 1000;  // invalid (kv has no row): a host plugin still gets the call
  ArgDecl host(caps, "b", "store_kv_cache", false);
  declare(a, host);
  EXPECT_FALSE(host.nothing_to_do());
  EXPECT_TRUE(host.groups().empty());
}

TEST(OpDecl, BoundRefusesWithTheReferenceCodeBeforeDeclaringBuffers) {
  const CacheLayout layout = CacheLayout::make(KVCacheFormat::BF16(64), 2, 4);
  std::vector<uint16_t> kv(64);
  std::vector<int32_t> slots = {0, 1};
  std::vector<uint8_t> cache(1024);
  kvcheck_store_args a{};
  a.kv = kv.data();
  a.kv_rows = 1;  // fewer rows than slot_mapping: kShapeMismatch (SPEC §5.1)
  a.kv_row_stride = 64;
  a.slot_mapping = slots.data();
  a.num_tokens = 2;
  a.cache = to_abi(layout, cache.data(), 1024);
  const BackendCapabilities caps;
  ArgDecl d(caps, "b", "store_kv_cache", true);
  try {
    declare(a, d);
    FAIL() << "bound() accepted kv.rows < num_tokens";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kShapeMismatch) << e.what();
  }
  EXPECT_TRUE(d.groups().empty());
}

TEST(OpDecl, TheCapabilityGateComesFirstOnBothPaths) {
  const CacheLayout layout = CacheLayout::make(KVCacheFormat::BF16(64), 2, 4);
  kvcheck_store_args a{};
  a.cache = to_abi(layout, nullptr, 0);
  BackendCapabilities caps;
  caps.formats = KVCHECK_FORMAT_BIT(KVCHECK_FORMAT_V41);
  for (bool device : {false, true}) {
    ArgDecl d(caps, "my-kernels", "store_kv_cache", device);
    try {
      declare(a, d);
      FAIL() << "a BF16 cache passed a V41-only gate";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
      EXPECT_NE(std::string(e.what()).find("my-kernels store_kv_cache: format"), std::string::npos) << e.what();
    }
  }
}

TEST(OpDecl, GatherKvWritesOnlyTheRowsCuSeqlensAddresses) {
  // NHD bf16, H = 2, D = 8, 3 blocks of 4 tokens: token stride 16, page stride 64 elements.
  const KvCacheLayout l = kv_dense_layout(KvDtype::kBF16, KvHeadLayout::kNHD, 3, 4, 2, 8);
  ASSERT_EQ(l.stride_page, 64);
  std::vector<uint8_t> k(3 * 64 * 2), v(3 * 64 * 2);
  std::vector<int32_t> table = {0, 1, 2, -1}, cu = {0, 2, 5};
  std::vector<uint8_t> out_k(10 * 16 * 2), out_v(10 * 16 * 2);  // 10 rows held, 5 addressed
  ConstKvCacheView view{k.data(), 3 * 64, v.data(), 3 * 64, l, {}, nullptr, 0, nullptr, 0, {}};
  kvcheck_gather_kv_args a{};
  a.cache = to_abi(view, nullptr, nullptr);
  a.block_table = table.data();
  a.block_table_entries = 4;
  a.max_blocks = 2;
  a.cu_seqlens_k = cu.data();
  a.cu_seqlens_entries = 3;
  a.out_k = to_abi(KvTokensIn{out_k.data(), KvDtype::kBF16, 10, 16, 8});
  a.out_v = to_abi(KvTokensIn{out_v.data(), KvDtype::kBF16, 10, 16, 8});
  const BackendCapabilities caps;
  ArgDecl d(caps, "b", "gather_kv", true);
  declare(a, d);
  const ArgGroup& caches = group(d, "the K/V caches");
  EXPECT_FALSE(caches.written);  // gather only reads them: they must come back unchanged
  ASSERT_EQ(caches.views.size(), 2u);
  EXPECT_EQ(caches.views[0].bytes, size_t{3 * 64 * 2});
  const ArgGroup& outs = group(d, "out_k/out_v");
  EXPECT_TRUE(outs.written);
  ASSERT_EQ(outs.views.size(), 2u);
  // Rows 0..4: 4 token strides, then one token's heads: (4*16 + 1*8 + 8) * 2 bytes.
  EXPECT_EQ(outs.views[0].bytes, size_t{(4 * 16 + 8 + 8) * 2});
  EXPECT_EQ(outs.views[1].bytes, outs.views[0].bytes);
  EXPECT_EQ(outs.guard, cuda::guard_for(2 * 8 * 2));
  EXPECT_EQ(group(d, "block_table").views[0].bytes, 16u);
  EXPECT_EQ(group(d, "cu_seqlens_k").views[0].bytes, 12u);
  EXPECT_EQ(group(d, "k_scale").views[0].bytes, 0u);  // bf16: no scales travel
}

}  // namespace
}  // namespace kvcheck::plugin
