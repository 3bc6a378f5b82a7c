// Properties of store_kv (SPEC §7.4), each stating one invariant of the one store_kv
// check (kv_check.h) on scenarios of the one store_kv builder (gen/ops/kv/kv_gen.h).
#include <rapidcheck.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "properties/class_bounds.h"
#include "properties/gen/gen_caps.h"
#include "properties/ops/kv/kv_check.h"
#include "properties/ops/kv/kv_undeclared.h"
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

// A valid case whose shape, dtype pair or alignment the backend's contract leaves out
// (kv_undeclared.h): a head_dim outside its head_dims, a declared head_dim one head past
// a row limit, rows of an undeclared dtype, or one stride half the declared
// kv_alignment off (the cache's page, inner or outer stride, or the key's or value's
// outer stride); everything else inside the contract. Each declared kind alike.
StoreKvScenario draw_store_kv_undeclared_scenario() {
  const BackendCapabilities c = generator_caps();
  const KvLimit limit = draw_kv_limit(c);
  const int64_t a = c.kv_alignment;
  // A row to store: with none a kernel launches nothing and has nothing to refuse (the
  // device transport does not even call it).
  const auto stores = [](const StoreKvScenario& s) {
    return std::any_of(s.slot_mapping.begin(), s.slot_mapping.end(), [](int32_t slot) { return slot >= 0; });
  };
  if (limit != KvLimit::kAlignment) {
    const ScopedGeneratorCaps scope(caps_breaking(c, limit));
    StoreKvScenario s = *gen_store_kv_scenario();
    RC_PRE(stores(s));
    return s;
  }
  // One generator (drawn under the backend's own capabilities), so a failure report
  // prints the case as the backend got it.
  const StoreKvScenario s = *rc::gen::exec([a] {
    StoreKvScenario s = *gen_store_kv_scenario();
    // Strides a kernel uses (axes of extent > 1): the cache's (0-2), the key's or the
    // value's outer one (3, 4: token for NHD rows, head for head-major ones).
    std::vector<int> more;
    const auto outer_used = [&](const KvRows& r) {
      return r.token_stride >= r.head_stride ? r.rows > 1 : s.cache.num_kv_heads > 1;
    };
    if (a / 2 >= kv_dtype_bytes(s.key.dtype)) {
      if (outer_used(s.key)) more.push_back(3);
      if (outer_used(s.value)) more.push_back(4);
    }
    const int target = misalign_one(s.cache, a, std::move(more));
    if (target < 3) return s;  // done, or none (alignment 2 on 2-byte elements: discarded below)
    // More padding between rows or heads, never an overlap.
    KvRows& r = target == 3 ? s.key : s.value;
    int64_t ts = r.token_stride, hs = r.head_stride;
    (ts >= hs ? ts : hs) += a / 2 / kv_dtype_bytes(r.dtype);
    r = make_kv_rows(r.dtype, r.rows, ts, hs, s.cache.num_kv_heads, s.cache.head_dim, *rc::gen::arbitrary<uint64_t>());
    return s;
  });
  RC_PRE(a / 2 >= kv_dtype_bytes(s.cache.dtype));
  RC_PRE(stores(s));
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
    p.needs = [op = needs_op(KVCHECK_OP_STORE_KV | KVCHECK_OP_STORE_KV_ROPE,
                             "store_kv's fused RoPE (KVCHECK_OP_STORE_KV_ROPE)")](const BackendCapabilities& c) {
      if (std::string why = op(c); !why.empty()) return why;
      // A rotation turns pairs of elements: a contract whose head_dims are all 1 has none,
      // nor one whose row limits leave no whole head of a head_dim of 2 or more (the
      // generator would draw head_dim 1 and a rope that does not fit it).
      const bool pair = c.head_dims.empty() ? c.kv_head_dim_fits_rows(2)
                                            : std::any_of(c.head_dims.begin(), c.head_dims.end(), [&c](int32_t d) {
                                                return d >= 2 && c.kv_head_dim_fits_rows(d);
                                              });
      return pair ? std::string() : "no declared head_dim of 2 or more (RoPE rotates pairs): " + c.describe_kv_shapes();
    };
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
  p.needs = needs_declared_kv_limit(KVCHECK_OP_STORE_KV, "no store_kv");
  r.add(std::move(p));
}

}  // namespace kvcheck::props
