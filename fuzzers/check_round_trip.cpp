// round_trip target (SPEC §5.1 then §5.2): a valid store followed by a load of whole
// blocks. Backend store+load must equal reference store+load bit for bit (cache and
// output), and a BF16 row stored then loaded must come back unchanged.
#include <fuzzer/FuzzedDataProvider.h>

#include <utility>

#include "fuzzers/checks.h"
#include "properties/harness.h"
#include "fuzzers/fuzz_data.h"
#include "impl/kv_cache.h"
#include "properties/diff.h"
#include "reference/load.h"
#include "reference/store.h"

namespace kvcheck::fuzz {
namespace {

// BF16: output row of every stored slot whose block was loaded equals the input row.
std::string check_bf16_identity(const RoundTripScenario& rt, const LoadOutput& out) {
  const StoreScenario& s = rt.store;
  const int32_t bs = s.shape.block_size;
  std::vector<int64_t> row_of_block(static_cast<size_t>(s.shape.num_blocks), -1);
  for (size_t i = 0; i + 3 < rt.load.segments.size(); i += 4)
    if (rt.load.segments[i] >= 0) row_of_block[static_cast<size_t>(rt.load.segments[i])] = rt.load.segments[i + 3];
  for (size_t r = 0; r < s.slot_mapping.size(); ++r) {
    const int32_t slot = s.slot_mapping[r];
    if (slot < 0 || row_of_block[static_cast<size_t>(slot / bs)] < 0) continue;
    const int64_t orow = row_of_block[static_cast<size_t>(slot / bs)] + slot % bs;
    const uint8_t* got = out.data + orow * out.data_row_stride;
    for (int64_t e = 0; e < s.shape.format.elements; ++e) {
      const uint16_t v = static_cast<uint16_t>(got[2 * e] | (got[2 * e + 1] << 8));
      const bf16_bits want = s.kv[static_cast<size_t>(static_cast<int64_t>(r) * s.row_stride + e)];
      if (v != want)
        return "BF16 round trip: kv row " + std::to_string(r) + " (slot " + std::to_string(slot) +
               ") element " + std::to_string(e) + " stored " + std::to_string(want) +
               ", loaded back " + std::to_string(v) + " at output row " + std::to_string(orow) + "\n";
    }
  }
  return "";
}

}  // namespace

CheckResult check_round_trip(const uint8_t* data, size_t size, const Backend& backend) {
  FuzzedDataProvider fdp(data, size);
  const RoundTripScenario rt = decode_round_trip(fdp);
  CheckResult result{describe(rt), "", ""};
  const StoreScenario& s = rt.store;
  const CacheShape& sh = s.shape;
  const CacheLayout layout = CacheLayout::make(sh.format, sh.num_blocks, sh.block_size);
  // Zeroed, as alloc_kv_cache.
  KVCache ref_cache = KVCache::with_canaries(layout), be_cache = KVCache::with_canaries(layout);
  const KVInput kv{s.kv.empty() ? nullptr : s.kv.data(), s.kv_rows, s.row_stride};
  OutBuffers ref_out(rt.load), be_out(rt.load);

  const Outcome ref = capture([&] {
    ref::store_kv_cache(kv, s.slot_mapping, ref_cache.bytes(), sh.format, sh.num_blocks,
                        sh.block_size);
    ref::load_paged_kv_cache(ref_cache.bytes(), sh.format, sh.num_blocks, sh.block_size,
                             rt.load.segments, rt.load.total_k, ref_out.out);
  });
  std::string& fail = result.failure;
  if (ref.code) fail += "reference rejected a valid round trip: " + ref.message + "\n";
  const Outcome be_store = capture(
      [&] { backend.store_kv_cache(kv, s.slot_mapping, be_cache.view()); });
  if (be_store.code == ErrorCode::kUnsupported) {
    result.skipped = "store: " + be_store.message;
    return result;
  }
  const Outcome be_load = capture([&] {
    if (!be_store.code)
      backend.load_paged_kv_cache(std::as_const(be_cache).view(), rt.load.segments,
                                  rt.load.total_k, be_out.out);
  });
  if (be_store.code) fail += "backend store rejected a valid input: " + be_store.message + "\n";
  if (be_load.code == ErrorCode::kUnsupported) result.skipped = "load: " + be_load.message;
  else if (be_load.code) fail += "backend load rejected a valid plan: " + be_load.message + "\n";
  if (const std::string c = ref_cache.canary_report(); !c.empty()) fail += "reference wrote into the " + c + "\n";
  if (const std::string c = be_cache.canary_report(); !c.empty()) fail += "backend wrote into the " + c + "\n";
  if (!ref.code && !be_store.code) {
    const std::string d = props::diff_cache(layout, ref_cache.bytes(), be_cache.bytes());
    if (!d.empty()) fail += "cache after store differs (expected = reference):\n" + d;
  }
  if (!ref.code && sh.format.is_bf16()) fail += check_bf16_identity(rt, ref_out.out);
  if (!ref.code && !be_store.code && !be_load.code && !(ref_out == be_out)) {
    const std::string d = props::diff_load_output(sh.format, rt.load.out_rows, ref_out.out, be_out.out);
    fail += "load output differs (expected = reference):\n" +
            (d.empty() ? std::string("  in row padding or the tail band\n") : d + "\n");
  }
  if (!fail.empty()) fail = "op=round_trip backend=" + std::string(backend.name()) + "\n" + fail;
  return result;
}

}  // namespace kvcheck::fuzz
