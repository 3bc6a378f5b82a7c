// The prefill-step properties (SPEC §5.3-§5.6): the whole pipeline on a batch of the
// one prefill builder (gen/ops/prefill/prefill_gen.h), each stating one invariant of the one
// prefill check (prefill_step.h).
#include <rapidcheck.h>

#include "properties/class_bounds.h"
#include "properties/classes.h"
#include "properties/gen/ops/prefill/prefill_gen.h"
#include "properties/ops/prefill/prefill_step.h"
#include "properties/registry.h"

namespace kvcheck::props {
namespace {

void prop_prefill_step_sees_exactly_its_window(const Backend& b) {
  const PrefillScenario s = *gen_prefill_scenario();
  if (s.seqs.empty()) note_class("no sequence");
  RC_TAG(store_overlaps_visible_history(s) ? "store overlaps loaded history" : "no overlap");
  require_isolated([&] { return check_prefill(b, s, kPrefillSeesExactlyItsWindow); });
}

void prop_prefill_store_before_load_fails_iff_overlap(const Backend& b) {
  PrefillScenario s = *gen_prefill_scenario();
  if (s.seqs.empty()) note_class("no sequence");
  s.store_before_load = true;
  RC_TAG(store_overlaps_visible_history(s) ? "overlap" : "no overlap");
  require_isolated([&] { return check_prefill(b, s, kPrefillStoreBeforeLoadFailsIffOverlap); });
}

}  // namespace

void register_prefill_properties(Registry& r) {
  r.add({"prop_prefill_step_sees_exactly_its_window", "prefill",
         "after plans, loads, chunk copy, ring store and index concatenation, every query row "
         "selects exactly its SWA window and its compressed tokens, each with that token's value",
         true, prop_prefill_step_sees_exactly_its_window, {}, nullptr, bounds::prefill()});
  r.add({"prop_prefill_store_before_load_fails_iff_overlap", "prefill",
         "storing the chunk before loading the history breaks the check exactly when a stored "
         "slot holds a visible history token",
         true, prop_prefill_store_before_load_fails_iff_overlap, {}, nullptr, bounds::prefill()});
}

}  // namespace kvcheck::props
