// Properties of store_kv_cache (SPEC §5.1), each stating one invariant.
#include <fmt/format.h>
#include <rapidcheck.h>

#include <climits>
#include <vector>

#include "properties/blame.h"
#include "properties/class_bounds.h"
#include "properties/diff.h"
#include "properties/gen/gen_caps.h"
#include "properties/harness.h"
#include "properties/regression.h"
#include "properties/registry.h"
#include "reference/layout.h"

namespace kvcheck::props {
namespace {

// Every store property checks one drawn scenario: the draw is separate so that a
// failing case can be saved as a regression file and replayed (regression.h).
StoreScenario draw_store_scenario() { return *gen_store_scenario(); }

void prop_store_matches_reference(const Backend& b, const StoreScenario& s) {
  KVCache expected = make_cache(s.shape), actual = make_cache(s.shape);
  const auto ref_err = run_store(nullptr, s, expected);
  const auto err = run_store(&b, s, actual);
  if (ref_err || err)
    RC_FAIL(fmt::format("{}\nvalid scenario: reference {}, backend {}", context("store", s.shape, b.name()),
                        show_error(ref_err), show_error(err)));
  const std::string diff = diff_cache(actual.layout(), expected.bytes(), actual.bytes());
  if (!diff.empty()) RC_FAIL(context("store", s.shape, b.name()) + "\n" + diff);
  if (const std::string c = actual.canary_report(); !c.empty())
    RC_FAIL(context("store", s.shape, b.name()) + "\nwrote into the " + c);
}

// Marks the bytes of each valid row's record: data and scales (SPEC §3 via reference/layout.h).
std::vector<bool> written_bytes(const StoreScenario& s, int64_t size) {
  const KVCacheFormat& f = s.shape.format;
  std::vector<bool> mask(static_cast<size_t>(size), false);
  auto mark = [&](int64_t off, int64_t n) {
    for (int64_t i = 0; i < n; ++i) mask[static_cast<size_t>(off + i)] = true;
  };
  for (int32_t slot : s.slot_mapping) {
    if (slot < 0) continue;
    const int64_t block = slot / s.shape.block_size, token = slot % s.shape.block_size;
    mark(ref::data_offset(f, s.shape.block_size, block, token), f.quantized_bytes());
    if (f.is_quantized()) mark(ref::scale_offset(f, s.shape.block_size, block, token), f.sf_bytes());
  }
  return mask;
}

void prop_store_touches_only_written_records(const Backend& b, const StoreScenario& s) {
  KVCache before = make_cache(s.shape), cache = make_cache(s.shape);
  RC_ASSERT(!run_store(&b, s, cache));
  const auto mask = written_bytes(s, cache.layout().size_bytes());
  for (size_t i = 0; i < mask.size(); ++i) {
    if (mask[i] || cache.bytes()[i] == before.bytes()[i]) continue;
    const auto loc = locate_cache_byte(s.shape.format, s.shape.block_size, static_cast<int64_t>(i));
    RC_FAIL(fmt::format("{}\nbyte {} changed but no valid row stores there (block {}, token {}, {}): "
                        "0x{:02X} -> 0x{:02X}",
                        context("store", s.shape, b.name()), i, loc.block, loc.token,
                        loc.kind == CacheByteLocation::Kind::kPadding ? "block padding" : "record of a -1 or absent row",
                        before.bytes()[i], cache.bytes()[i]));
  }
  if (const std::string c = cache.canary_report(); !c.empty())
    RC_FAIL(context("store", s.shape, b.name()) + "\nwrote into the " + c);
}

// The UE8M0 formats a backend supports (the ones prop_store_ue8m0_never_ff draws).
std::vector<KVCacheFormat> ue8m0_formats(const BackendCapabilities& caps) {
  std::vector<KVCacheFormat> out;
  for (const auto& f : {KVCacheFormat::V41(), KVCacheFormat::FP4_INDEX(), KVCacheFormat::MXFP8_INDEX()})
    if (caps.supports_format(f)) out.push_back(f);
  return out;
}

StoreScenario draw_ue8m0_store_scenario() {
  const auto f = *rc::gen::elementOf(ue8m0_formats(generator_caps()));
  const auto shape = CacheShape{f, *gen_block_size(), *rc::gen::inRange(1, 4), 0};
  return *gen_store_scenario(shape);
}

void prop_store_ue8m0_never_ff(const Backend& b, const StoreScenario& s) {
  const KVCacheFormat& f = s.shape.format;
  KVCache cache = make_cache(s.shape);
  RC_ASSERT(!run_store(&b, s, cache));
  for (size_t r = 0; r < s.slot_mapping.size(); ++r) {
    const int32_t slot = s.slot_mapping[r];
    if (slot < 0) continue;
    const int64_t off = ref::scale_offset(f, s.shape.block_size, slot / s.shape.block_size, slot % s.shape.block_size);
    for (int64_t g = 0; g < f.num_scales(); ++g)
      if (cache.data()[off + g] == 0xFF)
        RC_FAIL(fmt::format("{}\nrow {} (slot {}) scale group {} is 0xFF (E8M0 NaN; SPEC §4 clamps k to [-126, 126])",
                            context("store", s.shape, b.name()), r, slot, g));
  }
}

// One metadata fault of SPEC §5.1 and the code it must raise.
struct StoreFault {
  std::string what;
  ErrorCode code;
};

StoreFault inject_store_fault(StoreScenario& s) {
  const int64_t num_slots = int64_t{s.shape.num_blocks} * s.shape.block_size;
  const int64_t n = static_cast<int64_t>(s.slot_mapping.size());
  std::vector<int> kinds{0, 1};
  if (n > 0) kinds.push_back(2);
  for (int64_t i = 0; i < n; ++i)
    if (s.slot_mapping[static_cast<size_t>(i)] >= 0 && n >= 2) { kinds.push_back(3); break; }
  const int kind = *rc::gen::elementOf(kinds);
  switch (kind) {
    case 0: {  // an out-of-range slot: awkward values of SPEC §6
      if (n == 0) { s.slot_mapping.push_back(-1); s.kv.resize(s.kv.size() + static_cast<size_t>(s.row_stride), 0); }
      const auto row = static_cast<size_t>(*rc::gen::inRange<int64_t>(0, static_cast<int64_t>(s.slot_mapping.size())));
      const int32_t bad = *rc::gen::elementOf(std::vector<int32_t>{
          -2, INT32_MIN, INT32_MAX, static_cast<int32_t>(num_slots), static_cast<int32_t>(num_slots + 7), -1000});
      s.slot_mapping[row] = bad;
      return {fmt::format("slot_mapping[{}] = {}", row, bad), ErrorCode::kSlotOutOfRange};
    }
    case 1:  // kv holds fewer rows than slot_mapping: the count comes from slot_mapping
      s.kv.resize(static_cast<size_t>(n * s.row_stride));  // CUDA-graph rows gone
      s.slot_tail.clear();
      s.slot_mapping.push_back(-1);
      return {"kv has one row fewer than slot_mapping", ErrorCode::kShapeMismatch};
    case 2:
      s.row_stride = s.shape.format.elements - 1;
      s.kv.resize(static_cast<size_t>(n * s.row_stride));
      s.far_row_stride = 0;  // the op sees row_stride itself
      return {"kv row stride smaller than E", ErrorCode::kInvalidArgument};
    default: {
      size_t src = 0;
      while (s.slot_mapping[src] < 0) ++src;
      size_t dst = static_cast<size_t>(*rc::gen::inRange<int64_t>(0, n - 1));
      if (dst >= src) ++dst;
      s.slot_mapping[dst] = s.slot_mapping[src];
      return {fmt::format("rows {} and {} both store slot {}", src, dst, s.slot_mapping[src]),
              ErrorCode::kDuplicateSlot};
    }
  }
}

StoreFaultScenario draw_store_fault_scenario() {
  StoreFaultScenario c{*gen_store_scenario(), "", ErrorCode::kUnsupported};
  const StoreFault fault = inject_store_fault(c.scenario);
  c.fault = fault.what;
  c.code = fault.code;
  return c;
}

void prop_store_invalid_metadata_throws_and_writes_nothing(const Backend& b, const StoreFaultScenario& c) {
  const StoreScenario& s = c.scenario;
  const StoreFault fault{c.fault, c.code};
  KVCache pristine = make_cache(s.shape), ref_cache = make_cache(s.shape), cache = make_cache(s.shape);
  std::string ref_what, what;
  const auto ref_err = run_store(nullptr, s, ref_cache, &ref_what);
  const auto err = run_store(&b, s, cache, &what);
  const std::string ctx = context("store", s.shape, b.name()) + "\nfault: " + fault.what;
  if (const std::string bad = compare_errors(fault.code, ref_err, ref_what, err, what); !bad.empty())
    RC_FAIL(ctx + "\n" + bad);
  const std::string diff = diff_cache(cache.layout(), pristine.bytes(), cache.bytes());
  if (!diff.empty()) RC_FAIL(ctx + "\nthe cache changed although the store threw:\n" + diff);
  if (const std::string c = cache.canary_report(); !c.empty()) RC_FAIL(ctx + "\nwrote into the " + c);
}

}  // namespace

void register_store_properties(Registry& r) {
  r.add(scenario_property("prop_store_matches_reference", "store",
                          "the whole cache (records, block padding, canaries) is bit-identical to the reference",
                          draw_store_scenario, prop_store_matches_reference, bounds::store()));
  r.add(scenario_property(
      "prop_store_touches_only_written_records", "store",
      "bytes outside the records of valid rows (padding rows, other slots, block padding) are unchanged",
      draw_store_scenario, prop_store_touches_only_written_records, bounds::store()));
  Property ue8m0 = scenario_property("prop_store_ue8m0_never_ff", "store", "no stored UE8M0 scale byte is 0xFF",
                                     draw_ue8m0_store_scenario, prop_store_ue8m0_never_ff);
  ue8m0.needs = [](const BackendCapabilities& c) {
    return ue8m0_formats(c).empty() ? std::string("supports none of the UE8M0 formats V41, FP4_INDEX, MXFP8_INDEX")
                                    : std::string();
  };
  r.add(std::move(ue8m0));
  r.add(scenario_property(
      "prop_store_invalid_metadata_throws_and_writes_nothing", "store",
      "bad slot_mapping/kv throws the right kvcheck::Error and leaves every cache byte unchanged",
      draw_store_fault_scenario, prop_store_invalid_metadata_throws_and_writes_nothing, bounds::store_fault()));
}

}  // namespace kvcheck::props
