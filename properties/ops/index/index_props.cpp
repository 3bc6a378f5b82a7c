// Index-transform properties (SPEC §5.5): every backend against reference/index_transforms,
// each stating invariants of the one index check (metadata_checks.h) on scenarios of the
// one index builder (gen/ops/index/index_gen.h).
#include <rapidcheck.h>

#include "properties/metadata_checks.h"
#include "properties/registry.h"

namespace kvcheck::props {
namespace {

using Op = IndexScenario::Op;

// A property's scenario is one the backend must run: a backend without index transforms
// is not exercised (needs below), and a skip fails like a failure (require).
void check(const Backend& b, Op op, unsigned invariants) {
  const IndexScenario s = *gen_index_scenario(op);
  require_isolated([&] { return check_index(b, s, invariants); });
}

void prop_convert_kv_index_matches_reference(const Backend& b) { check(b, Op::kConvert, kIndexMatchesReference); }

void prop_convert_kv_index_bad_input_is_error(const Backend& b) {
  const IndexScenario s = *gen_convert_fault_scenario();
  require_isolated([&] { return check_index(b, s, kIndexErrorChangesNothing); });
}

void prop_kv_index_cat_matches_reference(const Backend& b) { check(b, Op::kCat, kIndexMatchesReference); }
void prop_expand_swa_index_matches_reference(const Backend& b) { check(b, Op::kExpand, kIndexMatchesReference); }
void prop_swa_decode_index_matches_reference(const Backend& b) {
  check(b, Op::kSwaDecode, kIndexMatchesReference | kIndexSlotsInStartRing);
}

}  // namespace

void register_index_properties(Registry& r) {
  // Each property needs the one transform it calls, not all four.
  auto add = [&r](Op op, std::string name, std::string invariant, void (*body)(const Backend&)) {
    Property p{std::move(name), "index", std::move(invariant), true, body};
    p.needs = needs_op(index_op_info(op).bit, index_op_info(op).name);
    r.add(std::move(p));
  };
  add(Op::kConvert, "prop_convert_kv_index_matches_reference",
      "convert_kv_index maps in-context indices through the block table and everything else "
      "to -1, like the reference (also in place)",
      prop_convert_kv_index_matches_reference);
  add(Op::kConvert, "prop_convert_kv_index_bad_input_is_error",
      "an index needing a missing block is kRangeOutOfTable, a negative index other than -1 "
      "kInvalidArgument, the message blames that entry, and nothing is written",
      prop_convert_kv_index_bad_input_is_error);
  add(Op::kCat, "prop_kv_index_cat_matches_reference",
      "kv_index_cat copies L and shifts every non -1 entry of R by cached + cur",
      prop_kv_index_cat_matches_reference);
  add(Op::kExpand, "prop_expand_swa_index_matches_reference", "expand_swa_index expands two pieces per row and -1 after them",
      prop_expand_swa_index_matches_reference);
  add(Op::kSwaDecode, "prop_swa_decode_index_matches_reference",
      "swa_decode_index walks valid_len distinct slots along the start slot's ring (wrapping), "
      "-1 after",
      prop_swa_decode_index_matches_reference);
}

}  // namespace kvcheck::props
