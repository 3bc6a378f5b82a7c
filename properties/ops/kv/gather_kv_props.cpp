// Properties of gather_kv (SPEC §7.5), each stating one invariant of the one gather_kv
// check (kv_check.h) on scenarios of the one gather_kv builder (gen/ops/kv/kv_gen.h).
#include <rapidcheck.h>

#include <string>

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
GatherKvScenario draw_gather_kv_scenario() { return *gen_gather_kv_scenario(); }
GatherKvScenario draw_gather_kv_fault_scenario() { return *gen_gather_kv_fault_scenario(); }
GatherKvScenario draw_seq_starts_scenario() { return *gen_gather_kv_seq_starts_scenario(); }
GatherKvScenario draw_seq_starts_fault_scenario() { return *gen_gather_kv_seq_starts_fault_scenario(); }

// A valid gather that reads something, outside the backend's contract in one declared
// limit (kv_undeclared.h): a head_dim or row limit, an undeclared output dtype, or one
// stride half the declared kv_alignment off (the cache's, or the outputs' offset or
// token stride); everything else inside.
GatherKvScenario draw_gather_kv_undeclared_scenario() {
  const BackendCapabilities c = generator_caps();
  const KvLimit limit = draw_kv_limit(c);
  const int64_t a = c.kv_alignment;
  const auto gathers = [](const GatherKvScenario& s) { return !s.cu_seqlens_k.empty() && s.cu_seqlens_k.back() > 0; };
  if (limit != KvLimit::kAlignment) {
    const ScopedGeneratorCaps scope(caps_breaking(c, limit));
    GatherKvScenario s = *gen_gather_kv_scenario();
    RC_PRE(gathers(s));  // a call that gathers nothing has nothing to refuse
    return s;
  }
  // One generator (drawn under the backend's own capabilities), so a failure report
  // prints the case as the backend got it.
  const GatherKvScenario s = *rc::gen::exec([a] {
    GatherKvScenario s = *gen_gather_kv_scenario();
    // Strides and addresses a kernel uses: the cache's (0-2, axes of extent > 1), the
    // outputs' offset (3) and token stride (4, when two rows or more are gathered).
    std::vector<int> more;
    if (a >= 4) {
      more.push_back(3);
      if (!s.cu_seqlens_k.empty() && s.cu_seqlens_k.back() > 1) more.push_back(4);
    }
    const int target = misalign_one(s.cache, a, std::move(more));
    if (target < 3) return s;  // done, or none (alignment 2 on 2-byte elements: discarded below)
    const auto off = static_cast<int32_t>(a / 4);  // a/2 bytes of the 2-byte outputs
    (target == 3 ? s.out_offset : s.out_pad_token) += off;
    return s;
  });
  RC_PRE(a >= 4 || a / 2 >= kv_dtype_bytes(s.cache.dtype));
  RC_PRE(gathers(s));
  return s;
}

void prop_gather_kv_undeclared_is_refused(const Backend& b, const GatherKvScenario& s) {
  require(check_gather_kv_refuses_undeclared(b, s));
}

void prop_gather_kv_matches_reference(const Backend& b, const GatherKvScenario& s) {
  require(check_gather_kv(b, s, kGatherKvMatchesReference | kGatherKvTouchesOnlyRows));
}

void prop_gather_kv_invalid_input_throws_and_writes_nothing(const Backend& b, const GatherKvScenario& s) {
  require(check_gather_kv(b, s, kGatherKvErrorChangesNothing));
}

}  // namespace

void register_gather_kv_properties(Registry& r) {
  r.add(scenario_property(
      "prop_gather_kv_matches_reference", "gather_kv",
      "both outputs (rows, row padding, rows past cu_seqlens_k[b], tail) are bit-identical to the reference, "
      "and only the gathered rows' elements changed",
      draw_gather_kv_scenario, prop_gather_kv_matches_reference, bounds::gather_kv()));
  r.add(scenario_property(
      "prop_gather_kv_invalid_input_throws_and_writes_nothing", "gather_kv",
      "a bad table entry, cu_seqlens_k, output or scale throws the right kvcheck::Error and writes nothing",
      draw_gather_kv_fault_scenario, prop_gather_kv_invalid_input_throws_and_writes_nothing,
      bounds::gather_kv_fault()));
  // Only for a backend whose contract limits the K/V calls; the others have nothing to refuse.
  Property p = scenario_property(
      "prop_gather_kv_undeclared_is_refused", "gather_kv",
      "a valid gather with a head_dim, a num_kv_heads x head_dim, an output dtype or a stride off the alignment "
      "that the backend's contract leaves out is refused with kUnsupported, nothing written",
      draw_gather_kv_undeclared_scenario, prop_gather_kv_undeclared_is_refused);
  p.needs = needs_declared_kv_limit(KVCHECK_OP_GATHER_KV, "no gather_kv");
  r.add(std::move(p));
  // seq_starts: only backends with the feature bit (KVCHECK_OP_GATHER_KV_SEQ_STARTS);
  // on the others these rows are not exercised.
  const auto add = [&r](Property p) {
    p.needs = needs_op(KVCHECK_OP_GATHER_KV_SEQ_STARTS, "gather_kv seq_starts (KVCHECK_OP_GATHER_KV_SEQ_STARTS)");
    r.add(std::move(p));
  };
  add(scenario_property(
      "prop_gather_kv_seq_starts_match_reference", "gather_kv",
      "with seq_starts in tokens or blocks (starts mid-block, at the row's end), both outputs are bit-identical "
      "to the reference and only the gathered rows changed",
      draw_seq_starts_scenario, prop_gather_kv_matches_reference, bounds::gather_kv_seq_starts()));
  add(scenario_property(
      "prop_gather_kv_seq_starts_bad_input_is_error", "gather_kv",
      "a negative start, a start whose sequence passes its table row (vLLM #27909) or a seq_starts of the wrong "
      "length throws the rule's kvcheck::Error and writes nothing",
      draw_seq_starts_fault_scenario, prop_gather_kv_invalid_input_throws_and_writes_nothing));
}

}  // namespace kvcheck::props
