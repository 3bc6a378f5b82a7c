// Properties of store_kv (SPEC §7.4), each stating one invariant of the one store_kv
// check (kv_check.h) on scenarios of the one store_kv builder (gen/kv_gen.h).
#include <rapidcheck.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "properties/class_bounds.h"
#include "properties/gen/gen_caps.h"
#include "properties/kv_check.h"
#include "properties/regression.h"
#include "properties/registry.h"

namespace kvcheck::props {
namespace {

// Each property checks one drawn scenario: the draw is separate so that a failing case
// can be saved as a regression file and replayed (regression.h).
StoreKvScenario draw_store_kv_scenario() { return *gen_store_kv_scenario(); }
StoreKvScenario draw_store_kv_fault_scenario() { return *gen_store_kv_fault_scenario(); }
StoreKvScenario draw_store_kv_rope_scenario() { return *gen_store_kv_rope_scenario(); }
StoreKvScenario draw_store_kv_rope_fault_scenario() { return *gen_store_kv_rope_fault_scenario(); }

// A row to store: with none a kernel launches nothing and has nothing to refuse (the
// device transport does not even call it).
void require_a_stored_row(const StoreKvScenario& s) {
  RC_PRE(std::any_of(s.slot_mapping.begin(), s.slot_mapping.end(), [](int32_t slot) { return slot >= 0; }));
}

// A valid case inside the declared shapes with one stride half the declared
// kv_alignment off (kvcheck_contract): the cache's page stride, its inner or outer
// per-token/per-head stride, or the outer stride of the key or value rows. The other
// addresses and strides stay aligned, so the one that is off is what must be refused.
StoreKvScenario draw_store_kv_misaligned_scenario() {
  const int64_t a = generator_caps().kv_alignment;
  // One generator, so a failure report prints the case as the backend got it.
  const StoreKvScenario s = *rc::gen::exec([a] {
    StoreKvScenario s = *gen_store_kv_scenario();
    const int64_t cache_eb = kv_dtype_bytes(s.cache.dtype), row_eb = kv_dtype_bytes(s.key.dtype);
    // Elements that make a/2 bytes; none when a/2 is less than one element (every count
    // is then aligned: alignment 2 on 2-byte elements).
    std::vector<int> targets;
    if (a / 2 >= cache_eb) targets.insert(targets.end(), {0, 1, 2});
    if (a / 2 >= row_eb) targets.insert(targets.end(), {3, 4});
    if (targets.empty()) return s;  // discarded below
    const int32_t cache_off = static_cast<int32_t>(a / 2 / cache_eb);
    const bool nhd = s.cache.order == KvHeadLayout::kNHD;
    switch (*rc::gen::elementOf(targets)) {
      case 0: s.cache.pad_page += cache_off; break;
      case 1: (nhd ? s.cache.pad_head : s.cache.pad_token) += cache_off; break;
      case 2: (nhd ? s.cache.pad_token : s.cache.pad_head) += cache_off; break;
      default: {
        // The rows' outer stride (token for NHD rows, head for head-major ones) grows: more
        // padding between rows or heads, never an overlap.
        KvRows& r = *rc::gen::arbitrary<bool>() ? s.key : s.value;
        int64_t ts = r.token_stride, hs = r.head_stride;
        (ts >= hs ? ts : hs) += a / 2 / row_eb;
        r = make_kv_rows(r.dtype, r.rows, ts, hs, s.cache.num_kv_heads, s.cache.head_dim,
                         *rc::gen::arbitrary<uint64_t>());
      }
    }
    return s;
  });
  RC_PRE(a / 2 >= kv_dtype_bytes(s.cache.dtype) || a / 2 >= kv_dtype_bytes(s.key.dtype));
  require_a_stored_row(s);
  return s;
}

// The (cache, rows) pairs the spec allows and the contract leaves out, for the cache
// dtypes the backend takes.
std::vector<std::pair<KvDtype, KvDtype>> undeclared_dtype_pairs(const BackendCapabilities& c) {
  std::vector<std::pair<KvDtype, KvDtype>> out;
  for (KvDtype cache : kv_dtypes())
    for (KvDtype rows : kv_dtypes())
      if (c.supports_kv_dtype(cache) && is_kv_dtype_pair(cache, rows) && !c.supports_kv_dtype_pair(cache, rows))
        out.emplace_back(cache, rows);
  return out;
}

// A valid case inside the declared shapes with rows of a dtype the contract does not
// pair with the cache's (kvcheck_contract.kv_dtype_pairs): fp16 rows for a kernel
// instantiated for bf16 only.
StoreKvScenario draw_store_kv_undeclared_pair_scenario() {
  BackendCapabilities c = generator_caps();
  const auto pairs = undeclared_dtype_pairs(c);
  const auto [cache, rows] = pairs[*rc::gen::inRange<size_t>(0, pairs.size())];
  c.kv_dtypes = 1u << static_cast<int>(cache);
  c.kv_dtype_pairs = kv_dtype_pair_bit(cache, rows);  // the generator draws this pair only
  const ScopedGeneratorCaps scope(c);
  StoreKvScenario s = *gen_store_kv_scenario();
  require_a_stored_row(s);
  return s;
}

// A valid case whose shape, dtype pair or alignment the backend's contract leaves out
// (SPEC §7.3.1, kvcheck_contract): a head_dim outside its head_dims, a declared
// head_dim with num_kv_heads x head_dim one head past a row limit, rows of an undeclared
// dtype, or one stride off the declared kv_alignment; everything else inside the
// contract. Each declared kind of limit is drawn alike.
std::vector<int> undeclared_kinds(const BackendCapabilities& c) {
  std::vector<int> kinds;  // 0: shape, 1: alignment, 2: dtype pair
  if (c.limits_kv_shapes()) kinds.push_back(0);
  if (c.kv_alignment > 1) kinds.push_back(1);
  if (!undeclared_dtype_pairs(c).empty()) kinds.push_back(2);
  return kinds;
}

StoreKvScenario draw_store_kv_undeclared_shape_scenario();
StoreKvScenario draw_store_kv_undeclared_scenario() {
  const std::vector<int> kinds = undeclared_kinds(generator_caps());
  RC_PRE(!kinds.empty());
  const int kind = kinds.size() == 1 ? kinds[0] : kinds[*rc::gen::inRange<size_t>(0, kinds.size())];
  if (kind == 1) return draw_store_kv_misaligned_scenario();
  if (kind == 2) return draw_store_kv_undeclared_pair_scenario();
  return draw_store_kv_undeclared_shape_scenario();
}

// A head_dim outside the declared ones, or one head past a row limit.
StoreKvScenario draw_store_kv_undeclared_shape_scenario() {
  BackendCapabilities c = generator_caps();
  const bool rows = c.min_heads_x_head_dim > 0 || c.max_heads_x_head_dim > 0;
  // (head_dim, num_kv_heads) one head past a row limit, for the head_dims it takes.
  std::vector<std::pair<int64_t, int64_t>> past;
  if (rows) {
    std::vector<int32_t> dims = c.head_dims;
    if (dims.empty()) dims = {1, 8, 64, 128};
    for (int64_t d : dims) {
      if (c.max_heads_x_head_dim > 0) past.emplace_back(d, c.max_heads_x_head_dim / d + 1);
      if (c.min_heads_x_head_dim > d) past.emplace_back(d, (c.min_heads_x_head_dim - 1) / d);
    }
  }
  RC_PRE(!past.empty() || !c.head_dims.empty());
  if (!past.empty() && (c.head_dims.empty() || *rc::gen::arbitrary<bool>())) {
    const auto [d, h] = *rc::gen::elementOf(past);
    // The generator draws num_kv_heads in [min/d, max/d]: pinned to h.
    c.head_dims = {static_cast<int32_t>(d)};
    c.min_heads_x_head_dim = c.max_heads_x_head_dim = h * d;
  } else {
    std::vector<int32_t> outside;
    for (int32_t d : {64, 80, 96, 128, 256, 576, 1, 2, 3, 8, 16})
      if (!c.supports_head_dim(d)) outside.push_back(d);
    for (int32_t d = 1; outside.empty(); ++d)
      if (!c.supports_head_dim(d)) outside.push_back(d);
    c.head_dims = {*rc::gen::elementOf(outside)};
    c.min_heads_x_head_dim = c.max_heads_x_head_dim = 0;  // any num_kv_heads: the head_dim is what is outside
  }
  const ScopedGeneratorCaps scope(c);
  StoreKvScenario s = *gen_store_kv_scenario();
  require_a_stored_row(s);
  return s;
}

void prop_store_kv_undeclared_shape_is_refused(const Backend& b, const StoreKvScenario& s) {
  require(check_store_kv_refuses_undeclared(b, s));
}

void prop_store_kv_matches_reference(const Backend& b, const StoreKvScenario& s) {
  require(check_store_kv(b, s, kStoreKvMatchesReference));
}

void prop_store_kv_touches_only_written_records(const Backend& b, const StoreKvScenario& s) {
  require(check_store_kv(b, s, kStoreKvTouchesOnlyRecords));
}

void prop_store_kv_invalid_input_throws_and_writes_nothing(const Backend& b, const StoreKvScenario& s) {
  require(check_store_kv(b, s, kStoreKvErrorChangesNothing));
}

void prop_store_kv_rope_matches_reference(const Backend& b, const StoreKvScenario& s) {
  require(check_store_kv(b, s, kStoreKvMatchesReference | kStoreKvTouchesOnlyRecords));
}

}  // namespace

void register_store_kv_properties(Registry& r) {
  r.add(scenario_property(
      "prop_store_kv_matches_reference", "store_kv",
      "the whole K/V buffer (records, stride padding, gaps, canaries) is bit-identical to the reference",
      draw_store_kv_scenario, prop_store_kv_matches_reference, bounds::store_kv()));
  r.add(scenario_property(
      "prop_store_kv_touches_only_written_records", "store_kv",
      "bytes outside the K/V records of valid slots (-1 rows, other slots, padding, other layers) are unchanged",
      draw_store_kv_scenario, prop_store_kv_touches_only_written_records, bounds::store_kv()));
  r.add(scenario_property(
      "prop_store_kv_invalid_input_throws_and_writes_nothing", "store_kv",
      "a bad slot, row shape, dtype, scale or view throws the right kvcheck::Error and changes no byte",
      draw_store_kv_fault_scenario, prop_store_kv_invalid_input_throws_and_writes_nothing,
      bounds::store_kv_fault()));
  // Fused RoPE (docs/spec.md §8.4): only backends with KVCHECK_OP_STORE_KV_ROPE.
  const auto add_rope = [&r](Property p) {
    p.needs = needs_op(KVCHECK_OP_STORE_KV | KVCHECK_OP_STORE_KV_ROPE, "store_kv's fused RoPE (KVCHECK_OP_STORE_KV_ROPE)");
    r.add(std::move(p));
  };
  add_rope(scenario_property("prop_store_kv_rope_matches_reference", "store_kv",
                             "every head of the key rows rotated (NeoX or GPT-J, whole or a sub-range, fp32 without "
                             "FMA, rounded to the key's dtype) then stored leaves the whole K/V buffer bit-identical "
                             "to the reference's; key and value rows are only read",
                             draw_store_kv_rope_scenario, prop_store_kv_rope_matches_reference,
                             bounds::store_kv_rope()));
  add_rope(scenario_property("prop_store_kv_rope_bad_input_is_error", "store_kv",
                             "an odd, zero or negative rot_dim, a rotated range outside the head, max_position < 1, "
                             "positions short or outside the table (before any slot), or any store_kv rule broken "
                             "throws the rule's error and changes no byte",
                             draw_store_kv_rope_fault_scenario, prop_store_kv_invalid_input_throws_and_writes_nothing,
                             bounds::store_kv_fault()));
  // Only for a backend whose contract limits the K/V shapes; the others have nothing to refuse.
  Property p = scenario_property(
      "prop_store_kv_undeclared_shape_is_refused", "store_kv",
      "a valid case with a head_dim, a num_kv_heads x head_dim, a dtype pair or a stride off the alignment that the "
      "backend's contract leaves out is refused with kUnsupported, no byte changed",
      draw_store_kv_undeclared_scenario, prop_store_kv_undeclared_shape_is_refused);
  p.needs = [](const BackendCapabilities& c) -> std::string {
    if (!(c.ops & KVCHECK_OP_STORE_KV)) return "no store_kv";
    return !undeclared_kinds(c).empty() ? ""
                               : "declares no K/V shape, dtype pair or alignment limit (kvcheck_contract "
                                 "head_dims, min/max_heads_x_head_dim, kv_dtype_pairs, kv_alignment)";
  };
  r.add(std::move(p));
}

}  // namespace kvcheck::props
