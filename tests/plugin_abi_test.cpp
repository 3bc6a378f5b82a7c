// The plugin ABI's C++ side (impl/plugin/abi_convert.h, BackendCapabilities, the
// generators' capability scope, the loader's errors) by known answers (label: unit).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include "impl/capabilities.h"
#include "impl/contract_backend.h"
#include "impl/error.h"
#include "impl/kv_cache.h"
#include "impl/layout.h"
#include "impl/plugin/abi_convert.h"
#include "impl/cpu/cpu_backend.h"
#include "impl/plugin/loader.h"
#include "plugins/guard.h"
#include "properties/gen/gen_caps.h"
#include "properties/runner.h"
#include "tests/test_util.h"

namespace kvcheck {
namespace {

TEST(PluginAbi, StatusCodesAreErrorCodesPlusOne) {
  // Every ErrorCode, by name: a renumbering or a new code without a status fails here.
  const std::pair<ErrorCode, int> table[] = {
      {ErrorCode::kInvalidFormat, KVCHECK_STATUS_INVALID_FORMAT},
      {ErrorCode::kUnknownFormat, KVCHECK_STATUS_UNKNOWN_FORMAT},
      {ErrorCode::kAmbiguousFormat, KVCHECK_STATUS_AMBIGUOUS_FORMAT},
      {ErrorCode::kInvalidArgument, KVCHECK_STATUS_INVALID_ARGUMENT},
      {ErrorCode::kShapeMismatch, KVCHECK_STATUS_SHAPE_MISMATCH},
      {ErrorCode::kSlotOutOfRange, KVCHECK_STATUS_SLOT_OUT_OF_RANGE},
      {ErrorCode::kDuplicateSlot, KVCHECK_STATUS_DUPLICATE_SLOT},
      {ErrorCode::kSegmentBlockOutOfRange, KVCHECK_STATUS_SEGMENT_BLOCK_OUT_OF_RANGE},
      {ErrorCode::kSegmentRangeInvalid, KVCHECK_STATUS_SEGMENT_RANGE_INVALID},
      {ErrorCode::kSegmentDestinationOutOfRange, KVCHECK_STATUS_SEGMENT_DESTINATION_OUT_OF_RANGE},
      {ErrorCode::kSegmentOverlap, KVCHECK_STATUS_SEGMENT_OVERLAP},
      {ErrorCode::kRangeOutOfTable, KVCHECK_STATUS_RANGE_OUT_OF_TABLE},
      {ErrorCode::kUnsupported, KVCHECK_STATUS_UNSUPPORTED},
      {ErrorCode::kBlockOutOfRange, KVCHECK_STATUS_BLOCK_OUT_OF_RANGE},
      {ErrorCode::kBlockConflict, KVCHECK_STATUS_BLOCK_CONFLICT},
  };
  EXPECT_EQ(std::size(table), static_cast<size_t>(kLastErrorCode) + 1);
  for (const auto& [code, status] : table) {
    EXPECT_EQ(plugin::to_status(code), status) << to_string(code);
    ErrorCode back{};
    ASSERT_TRUE(plugin::to_error_code(status, &back));
    EXPECT_EQ(back, code);
  }
  ErrorCode ignored{};
  EXPECT_FALSE(plugin::to_error_code(KVCHECK_STATUS_OK, &ignored));
  EXPECT_FALSE(plugin::to_error_code(KVCHECK_STATUS_INTERNAL, &ignored));
  EXPECT_FALSE(plugin::to_error_code(plugin::to_status(kLastErrorCode) + 1, &ignored));
}

TEST(PluginAbi, FormatIdsAndLayoutRoundTrip) {
  EXPECT_EQ(abi_format(KVCacheFormat::V41()), KVCHECK_FORMAT_V41);
  EXPECT_EQ(abi_format(KVCacheFormat::MXFP8_INDEX()), KVCHECK_FORMAT_MXFP8_INDEX);
  EXPECT_EQ(abi_format(KVCacheFormat::BF16(8)), KVCHECK_FORMAT_BF16);
  KVCacheFormat odd = KVCacheFormat::V41();
  odd.elements_per_sf = 16;
  EXPECT_EQ(abi_format(odd), KVCHECK_FORMAT_OTHER);
  for (const auto& f : supported_formats()) {
    const CacheLayout l = CacheLayout::make(f, 3, 133);
    uint8_t base = 0;
    const kvcheck_paged_cache c = plugin::to_abi(l, &base, l.size_bytes() + 7);
    EXPECT_EQ(c.size_bytes, l.size_bytes() + 7);  // the buffer's size, not the layout's
    EXPECT_EQ(c.data_token_stride, l.data_token_stride()) << f.name;
    if (f.is_quantized()) {
      EXPECT_EQ(c.block_stride + c.scale_region + 5 * c.scale_token_stride, l.scale_offset(1, 5)) << f.name;
    }
    const CacheLayout back = plugin::from_abi(c);  // same fields, name included
    EXPECT_EQ(back.format, l.format) << f.name;
    EXPECT_EQ(back.num_blocks, l.num_blocks);
    EXPECT_EQ(back.block_size, l.block_size);
    EXPECT_EQ(back.block_stride, l.block_stride);
  }
}

TEST(PluginAbi, CapabilitiesGateFormatsAndBlockSizes) {
  BackendCapabilities c;
  c.formats = KVCHECK_FORMAT_BIT(KVCHECK_FORMAT_BF16);
  c.block_size_multiple = 16;
  c.max_block_size = 64;
  EXPECT_TRUE(c.supports_format(KVCacheFormat::BF16(512)));
  EXPECT_FALSE(c.supports_format(KVCacheFormat::V41()));
  KVCacheFormat valid_unnamed = KVCacheFormat::V41();
  valid_unnamed.elements_per_sf = 16;
  valid_unnamed.validate();
  EXPECT_FALSE(c.supports_format(valid_unnamed));  // valid, outside the named formats
  KVCacheFormat invalid = KVCacheFormat::V41();
  invalid.elements = 0;
  EXPECT_TRUE(c.supports_format(invalid));  // invalid input reaches the backend's validation
  EXPECT_TRUE(c.supports_block_size(48));
  EXPECT_FALSE(c.supports_block_size(40));
  EXPECT_FALSE(c.supports_block_size(80));
  EXPECT_TRUE(c.supports_block_size(0));
  {
    const props::ScopedGeneratorCaps scope(c);
    EXPECT_EQ(props::fit_block_size(1), 16);
    EXPECT_EQ(props::fit_block_size(47), 32);
    EXPECT_EQ(props::fit_block_size(133), 64);
  }
  EXPECT_EQ(props::fit_block_size(133), 133);  // scope restored
  c.ops = KVCHECK_OP_STORE_KV_CACHE;
  std::string why;
  EXPECT_TRUE(c.supports_property_op("store", &why));
  EXPECT_FALSE(c.supports_property_op("round_trip", &why));
  EXPECT_EQ(why, "no load_paged_kv_cache");
  EXPECT_NE(c.restrictions().find("formats: BF16 only\nblock_size: multiples of 16\nblock_size: at most 64\n"),
            std::string::npos)
      << c.restrictions();
}

// The OTHER bit alone never meant custom records (backend_abi.h: formats ~0u only); a
// writer x reader contract scoped to OTHER keeps them where both sides take every format
// (`kvcheck contract --format OTHER` drew named formats and passed: "formats: none").
TEST(PluginAbi, ACustomRecordScopeKeepsCustomRecordsOnly) {
  KVCacheFormat custom = KVCacheFormat::V41();
  custom.elements_per_sf = 16;
  custom.validate();
  BackendCapabilities other_bit;
  other_bit.formats = KVCHECK_FORMAT_BIT(KVCHECK_FORMAT_OTHER);
  EXPECT_FALSE(other_bit.supports_format(custom));
  const auto cpu_backend = std::make_shared<cpu::CpuBackend>();
  ContractScope other;
  other.formats = KVCHECK_FORMAT_BIT(KVCHECK_FORMAT_OTHER);
  const BackendCapabilities c = ContractBackend(cpu_backend, cpu_backend, other).capabilities();
  EXPECT_TRUE(c.supports_format(custom));
  EXPECT_FALSE(c.supports_format(KVCacheFormat::V41()));
  EXPECT_FALSE(c.supports_format(KVCacheFormat::BF16(512)));
  EXPECT_TRUE(c.ops & KVCHECK_OP_LOAD_PAGED_KV_CACHE);
  EXPECT_NE(c.restrictions().find("formats: custom records (OTHER) only\n"), std::string::npos) << c.restrictions();
}

// A recipe is an FP8 cache's: a plugin never sent one is not described by it.
TEST(PluginAbi, AnFp8RecipeIsListedOnlyForABackendSentFp8Caches) {
  BackendCapabilities c;
  c.ops = KVCHECK_OP_STORE_KV;
  c.kv_recipes = 1u << static_cast<int>(KvRecipe::kSglang);
  c.kv_dtypes = 1u << static_cast<int>(KvDtype::kBF16);
  EXPECT_EQ(c.restrictions().find("FP8 K/V recipe"), std::string::npos) << c.restrictions();
  c.kv_dtypes |= 1u << static_cast<int>(KvDtype::kE4M3);
  EXPECT_NE(c.restrictions().find("FP8 K/V recipe: sglang (declared)"), std::string::npos) << c.restrictions();
}

// A host plugin with gather_kv but not KVCHECK_OP_GATHER_KV_SEQ_STARTS (built before
// seq_starts: it would ignore them and gather from position 0). It counts the calls
// that carry a seq_starts unit, and gathers with the cpu backend.
int g_calls_with_starts = 0, g_calls = 0;
int gather_without_starts(void*, const kvcheck_gather_kv_args* a, void*, char* msg, size_t size) {
  ++g_calls;
  if (a->seq_starts_unit != 0) ++g_calls_with_starts;
  static const cpu::CpuBackend cpu;
  return plugin::guarded(msg, size, [&] { cpu.gather_kv(plugin::from_abi(*a)); });
}

// A backend over the in-process table `t` (its entries set by the caller), named
// `name`, with capabilities `caps`: a plugin without a .so file.
std::shared_ptr<const Backend> in_process(kvcheck_backend_v1_t& t, const char* name, kvcheck_capabilities caps) {
  t.abi_version = KVCHECK_ABI_VERSION;
  t.struct_size = sizeof t;
  t.name = name;
  t.memory_space = KVCHECK_MEMORY_HOST;
  t.capabilities = caps;
  auto lib = std::make_shared<plugin::Library>();
  lib->path = "(in process)";
  lib->table = &t;
  return plugin::make_backend(lib);
}

TEST(PluginAbi, GatherWithoutTheSeqStartsBitNeverGetsSeqStarts) {
  static kvcheck_backend_v1_t t{};
  t.gather_kv = gather_without_starts;
  const auto b = in_process(t, "gather-before-seq-starts", {KVCHECK_OP_GATHER_KV, ~0u, ~0u, 1, 0});
  // The seq_starts rows are not exercised, and say why.
  for (const char* name : {"prop_gather_kv_seq_starts_match_reference", "prop_gather_kv_seq_starts_bad_input_is_error"}) {
    const auto o = props::run_property(property(name), *b, {1, 50, 50});
    EXPECT_NE(o.not_exercised.find("no gather_kv seq_starts"), std::string::npos) << name << ": " << o.not_exercised;
  }
  EXPECT_EQ(g_calls, 0);
  // The plain gather properties run, drawing no seq_starts for it.
  for (const char* name : {"prop_gather_kv_matches_reference", "prop_gather_kv_invalid_input_throws_and_writes_nothing"}) {
    const auto o = props::run_property(property(name), *b, {1, 200, 100});
    EXPECT_FALSE(o.failed) << name << ": " << o.message;
    EXPECT_TRUE(o.not_exercised.empty()) << name << ": " << o.not_exercised;
  }
  EXPECT_GT(g_calls, 300);
  EXPECT_EQ(g_calls_with_starts, 0);
  // A direct call with seq_starts is refused before the plugin is called.
  const int32_t cu[] = {0, 0}, starts[] = {0};
  GatherKvArgs a;
  a.cu_seqlens_k = cu;
  a.seq_starts = starts;
  const int before = g_calls;
  expect_error(ErrorCode::kUnsupported, [&] { b->gather_kv(a); }, "takes no seq_starts");
  EXPECT_EQ(g_calls, before);
}

// A host plugin with store_kv_cache and every format (~0u) but not KVCHECK_OP_RECORD_FLAGS
// (built before NVFP4_DS_MLA: it would store an e4m3 tail as BF16 and the scales in
// group order). It counts the calls whose record has flags, and stores with the cpu backend.
int g_store_calls = 0, g_flagged_calls = 0;
int store_without_flags(void*, const kvcheck_store_args* a, void*, char* msg, size_t size) {
  ++g_store_calls;
  if (a->cache.record_flags != 0) ++g_flagged_calls;
  static const cpu::CpuBackend cpu;
  return plugin::guarded(msg, size, [&] {
    cpu.store_kv_cache({a->kv, a->kv_rows, a->kv_row_stride},
                       {a->slot_mapping, static_cast<size_t>(std::max<int64_t>(a->num_tokens, 0))},
                       {a->cache.base, plugin::from_abi(a->cache), a->cache.size_bytes});
  });
}

TEST(PluginAbi, StoreWithoutTheRecordFlagsBitNeverGetsAFlaggedRecord) {
  static kvcheck_backend_v1_t t{};
  t.store_kv_cache = store_without_flags;
  const auto b = in_process(t, "store-before-record-flags", {KVCHECK_OP_STORE_KV_CACHE, ~0u, ~0u, 1, 0});
  EXPECT_FALSE(b->capabilities().supports_format(KVCacheFormat::NVFP4_DS_MLA()));
  for (const char* name : {"prop_store_matches_reference", "prop_store_invalid_metadata_throws_and_writes_nothing"}) {
    const auto o = props::run_property(property(name), *b, {1, 400, 100});
    EXPECT_FALSE(o.failed) << name << ": " << o.message;
  }
  EXPECT_GT(g_store_calls, 300);
  EXPECT_EQ(g_flagged_calls, 0);
  // A direct call with NVFP4_DS_MLA is refused before the plugin is called.
  const CacheLayout layout = CacheLayout::make(KVCacheFormat::NVFP4_DS_MLA(), 1, 1);
  KVCache cache(layout, 0);
  const std::vector<bf16_bits> kv(576, 0);
  const std::vector<int32_t> slots = {0};
  const int before = g_store_calls;
  expect_error(ErrorCode::kUnsupported, [&] { b->store_kv_cache({kv.data(), 1, 576}, slots, cache.view()); },
               "outside the plugin's capabilities");
  EXPECT_EQ(g_store_calls, before);
}

TEST(PluginLoader, MissingFileAndNotALibrary) {
  try {
    plugin::load_library("/nonexistent/libnothing.so");
    FAIL() << "loaded a missing file";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_STREQ(e.what(), "invalid-argument: plugin /nonexistent/libnothing.so: no such file");
  }
  try {
    plugin::load_library("/etc/hostname");
    FAIL() << "loaded a text file";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dlopen failed"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kvcheck
