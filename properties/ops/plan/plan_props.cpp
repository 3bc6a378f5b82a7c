// Load-plan properties (SPEC §5.3): host code in impl/load_plan against the per-row
// model in reference/load_plan, each stating invariants of the one plan check
// (metadata_checks.h) on scenarios of the one plan builder (gen/ops/plan/plan_gen.h).
#include <rapidcheck.h>

#include <algorithm>

#include "properties/class_bounds.h"
#include "properties/classes.h"
#include "properties/metadata_checks.h"
#include "properties/registry.h"

namespace kvcheck::props {
namespace {

using Mode = PlanScenario::Mode;

// The edges of the ring's wrap point a ring range of `len` from ring position `first` reaches.
void note_ring_classes(int64_t first, int64_t len, int64_t ring) {
  if (len > 0 && first + len == ring) note_class("ring range ends at the wrap point");
  if (len > 0 && first + len > ring) note_class("ring range wraps");
  if (first + len == ring + 1) note_class("ring range wraps by one token");
}

void prop_builder_appends_match_reference() {
  const PlanScenario s = *gen_plan_scenario(Mode::kBuilder);
  for (const PlanOp& op : s.ops)
    if (op.kind == PlanOp::Kind::kRing) note_ring_classes(op.b % s.block_size, int64_t{op.c} - op.b, s.block_size);
  require(check_plan(s, kPlanMatchesReference | kPlanSegmentCounts));
}

void prop_compressed_plan_matches_reference() {
  require(check_plan(*gen_plan_scenario(Mode::kCompressed), kPlanMatchesReference | kPlanRowStarts));
}

void prop_swa_plan_matches_reference() {
  const PlanScenario s = *gen_plan_scenario(Mode::kSwa);
  if (s.seqs.empty()) note_class("no sequence");
  for (const SeqMeta& q : s.seqs) {
    const int64_t history_end = int64_t{q.seqlen_k} - q.seqlen_q, history_begin = history_end - s.window;
    const int64_t pad = std::clamp<int64_t>(q.swa_valid_start - history_begin, 0, s.window);
    if (pad > 0) note_class("zero pad");
    const int64_t len = history_end - (history_begin + pad);
    if (len > 0) note_ring_classes((history_begin + pad) % s.ring_size, len, s.ring_size);
  }
  require(check_plan(s, kPlanMatchesReference | kPlanSegmentCounts | kPlanRowStarts));
}

void prop_failed_append_changes_nothing() {
  require(check_plan(*gen_failed_append_scenario(), kPlanErrorChangesNothing));
}

}  // namespace

void register_plan_properties(Registry& r) {
  auto host = [&r](std::string name, std::string invariant, void (*body)(), std::vector<ClassBound> bounds = {}) {
    r.add({std::move(name), "plan", std::move(invariant), false, [body](const Backend&) { body(); }, {}, nullptr,
           std::move(bounds)});
  };
  host("prop_builder_appends_match_reference",
       "any sequence of appends gives disjoint, in-range, in-block segments whose rows equal "
       "the per-token model and whose total_k is the sum of lengths",
       prop_builder_appends_match_reference, bounds::plan_builder());
  host("prop_compressed_plan_matches_reference",
       "the compressed plan's rows are the compressed tokens of each sequence (one zero row when "
       "seqlen_k < ratio)",
       prop_compressed_plan_matches_reference);
  host("prop_swa_plan_matches_reference",
       "the SWA plan gives every sequence exactly window rows (zero before swa_valid_start, else "
       "its ring slot) in at most three segments",
       prop_swa_plan_matches_reference, bounds::swa_plan());
  host("prop_failed_append_changes_nothing",
       "an append that throws names the right error and leaves the builder unchanged",
       prop_failed_append_changes_nothing);
}

}  // namespace kvcheck::props
