// The prefill-step scenario (SPEC §5.3-§5.6): runs the whole pipeline of one prefill
// step on a multi-sequence batch through a Backend and checks one end-to-end
// invariant. Reusable by properties, fuzzers and tests.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "impl/backend.h"
#include "impl/load_plan.h"
#include "properties/gen/ops/prefill/prefill_gen.h"  // PrefillScenario
#include "properties/harness.h"  // Verdict

namespace kvcheck::props {

/// Runs the step on `backend`:
///  1. the caches before the step: ring slot r of sequence s holds the newest
///     position h < history_end with h % ring_size == r (a stale marker when there
///     is none or h < swa_valid_start); compressed token c sits at its paged slot;
///  2. plans (build_compressed_plan, build_swa_plan), load of the SWA history into
///     kv[0, total_k_swa), of the compressed cache into kv[main_offset, ...), copy of
///     the chunk's KV into kv[total_k_swa, main_offset), store of the chunk into the
///     ring (append_swa_store_slots) — after the loads unless store_before_load;
///  3. indices: expand_swa_index(build_swa_prefill_pivots) and kv_index_cat with
///     the compressed top-k shifted to their buffer rows.
/// Every token's KV encodes (kind, sequence, position) exactly, so the check reads
/// identities back: for every chunk row, the rows its final index selects are exactly
/// its SWA window [max(p-window+1, swa_valid_start), p] and its given compressed
/// tokens; the ring afterwards holds the newest position of every slot. Returns ""
/// or a readable report of the first violation (sequence, row, expected, actual).
/// Invalid scenarios (or a backend Error) are reported as failures too.
std::string run_prefill_step(const PrefillScenario& s, const Backend& backend);

/// True when storing before loading must corrupt a visible history row: some history
/// position the first chunk row sees shares a ring slot with a stored chunk token.
bool store_overlaps_visible_history(const PrefillScenario& s);

/// Invariants of the prefill step: the one check (prefill_check.cpp) the properties,
/// the fuzz target, its replay and `kvcheck explain` run.
enum PrefillInvariant : unsigned {
  /// In the right order (s.store_before_load false): run_prefill_step reports nothing.
  kPrefillSeesExactlyItsWindow = 1u << 0,
  /// In the wrong order: run_prefill_step fails exactly when store_overlaps_visible_history.
  kPrefillStoreBeforeLoadFailsIffOverlap = 1u << 1,
  kPrefillAll = 0x3u,
};
/// Checks the invariant of s's order among `invariants`; skipped when the backend lacks
/// store/load or the index transforms.
Verdict check_prefill(const Backend& backend, const PrefillScenario& s, unsigned invariants = kPrefillAll);

}  // namespace kvcheck::props
