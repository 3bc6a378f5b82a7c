// store target (SPEC §5.1): reference and backend store into identical caches holding a
// sentinel pattern inside canary bands; the whole buffers must agree bit for bit, an
// error must carry the same code on both sides and leave every byte unchanged, and
// only the records of valid slots may change (BF16 records must equal the input row).
#include <fuzzer/FuzzedDataProvider.h>

#include <cstring>

#include "fuzzers/checks.h"
#include "properties/harness.h"
#include "fuzzers/fuzz_data.h"
#include "impl/kv_cache.h"
#include "properties/diff.h"
#include "reference/layout.h"
#include "reference/store.h"

namespace kvcheck::fuzz {
namespace {

// Independent of both sides: which bytes may a store write, and (BF16) what must
// they hold. Returns "" or the first violation.
std::string check_written_bytes(const StoreScenario& s, const std::vector<uint8_t>& before,
                                const uint8_t* after, int64_t size) {
  const KVCacheFormat& f = s.shape.format;
  const int32_t bs = s.shape.block_size;
  std::vector<uint8_t> may_write(static_cast<size_t>(size), 0);
  for (size_t r = 0; r < s.slot_mapping.size(); ++r) {
    const int32_t slot = s.slot_mapping[r];
    if (slot < 0) continue;
    const int64_t b = slot / bs, t = slot % bs;
    const int64_t d = ref::data_offset(f, bs, b, t);
    std::memset(&may_write[static_cast<size_t>(d)], 1, static_cast<size_t>(f.quantized_bytes()));
    if (f.is_quantized())
      std::memset(&may_write[static_cast<size_t>(ref::scale_offset(f, bs, b, t))], 1,
                  static_cast<size_t>(f.sf_bytes()));
    if (f.is_bf16()) {
      const bf16_bits* row = s.kv.data() + static_cast<int64_t>(r) * s.row_stride;
      for (int64_t e = 0; e < f.elements; ++e) {
        const uint16_t got = static_cast<uint16_t>(after[d + 2 * e] | (after[d + 2 * e + 1] << 8));
        if (got != row[e])
          return "reference: BF16 record of row " + std::to_string(r) + " (slot " +
                 std::to_string(slot) + ") element " + std::to_string(e) + " is " +
                 std::to_string(got) + ", input is " + std::to_string(row[e]) + "\n";
      }
    }
  }
  for (int64_t i = 0; i < size; ++i)
    if (!may_write[static_cast<size_t>(i)] && after[i] != before[static_cast<size_t>(i)]) {
      const auto loc = props::locate_cache_byte(f, bs, i);
      return "reference wrote byte " + std::to_string(i) + " (block " + std::to_string(loc.block) +
             ", token " + std::to_string(loc.token) + ") that no valid slot owns\n";
    }
  return "";
}

}  // namespace

CheckResult check_store(const uint8_t* data, size_t size, const Backend& backend) {
  FuzzedDataProvider fdp(data, size);
  const StoreScenario s = decode_store(fdp);
  CheckResult result{describe(s), "", ""};
  const CacheShape& sh = s.shape;
  const CacheLayout layout = CacheLayout::make(sh.format, sh.num_blocks, sh.block_size);
  const int64_t bytes = layout.size_bytes();
  KVCache ref_cache = KVCache::with_canaries(layout), be_cache = KVCache::with_canaries(layout);
  props::fill_pattern({ref_cache.data(), static_cast<size_t>(bytes)}, s.cache_seed);
  std::memcpy(be_cache.data(), ref_cache.data(), static_cast<size_t>(bytes));
  const std::vector<uint8_t> before(ref_cache.data(), ref_cache.data() + bytes);

  const KVInput kv{s.kv.empty() ? nullptr : s.kv.data(), s.kv_rows, s.row_stride};
  const Outcome ref = capture([&] {
    ref::store_kv_cache(kv, s.slot_mapping, ref_cache.bytes(), sh.format, sh.num_blocks,
                        sh.block_size);
  });
  const Outcome be = capture(
      [&] { backend.store_kv_cache(kv, s.slot_mapping, be_cache.view()); });
  if (be.code == ErrorCode::kUnsupported) {
    result.skipped = "store: " + be.message;
    return result;
  }

  std::string& fail = result.failure;
  fail += compare_outcomes(ref, be, backend.name());
  if (const std::string c = ref_cache.canary_report(); !c.empty()) fail += "reference wrote into the " + c + "\n";
  if (const std::string c = be_cache.canary_report(); !c.empty()) fail += "backend wrote into the " + c + "\n";
  const std::span<const uint8_t> unchanged(before);
  if (ref.code) {
    const std::string d = props::diff_cache(layout, unchanged, ref_cache.bytes());
    if (!d.empty()) fail += "reference changed the cache although it threw:\n" + d;
  }
  if (be.code) {
    const std::string d = props::diff_cache(layout, unchanged, be_cache.bytes());
    if (!d.empty()) fail += "backend changed the cache although it threw:\n" + d;
  }
  if (!ref.code) fail += check_written_bytes(s, before, ref_cache.data(), bytes);
  if (!ref.code && !be.code) {
    const std::string d = props::diff_cache(layout, ref_cache.bytes(), be_cache.bytes());
    if (!d.empty()) fail += "cache after store differs (expected = reference):\n" + d;
  }
  if (!fail.empty()) fail = "op=store backend=" + std::string(backend.name()) + "\n" + fail;
  return result;
}

}  // namespace kvcheck::fuzz
