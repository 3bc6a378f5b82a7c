// The one check of the index transforms (SPEC §5.5), of the host load plans (SPEC
// §5.3) and of the host slot mappings (SPEC §5.4), like op_checks.h for store/load: each property calls it for the invariant it
// states, the fuzz targets, their replays and `kvcheck explain` for all of them.
#pragma once

#include "impl/backend.h"
#include "properties/gen/ops/index/index_gen.h"
#include "properties/gen/ops/plan/plan_gen.h"
#include "properties/gen/ops/slot_mapping/slot_mapping_gen.h"
#include "properties/harness.h"

namespace kvcheck::props {

/// Invariants of the index transforms. Always checked: the outcome — a valid input
/// returns; a fault throws its code (raw values: the code of the SPEC §5.5 rules), and
/// when the rules blame an entry ("topk[1][0] = -2") the backend's message blames it.
enum IndexInvariant : unsigned {
  kIndexMatchesReference = 1u << 0,    // out equals the reference (int64), nothing written past it
  kIndexSlotsInStartRing = 1u << 1,    // swa_decode_index: slots distinct, inside the start slot's ring
  kIndexErrorChangesNothing = 1u << 2, // a call that threw left every out entry unchanged
  kIndexAll = 0x7u,
};
/// kUnsupported (or no KVCHECK_OP_* bit for the op) is a skip.
Verdict check_index(const Backend& b, const IndexScenario& s, unsigned invariants = kIndexAll);

/// Invariants of the load plans (host code: no backend). Always checked: each call
/// throws exactly what the SPEC §5.3 [decided] rules say (the reference's own
/// kRangeOutOfTable for tables), or returns.
enum PlanInvariant : unsigned {
  kPlanMatchesReference = 1u << 0,     // plan expands (ref::expand_segments) to the per-token rows; total_k = sum
  kPlanSegmentCounts = 1u << 1,        // each append adds the SPEC's pieces; SWA: exactly its pieces, <= 3 per sequence
  kPlanRowStarts = 1u << 2,            // row_starts: window rows (SWA), max(seqlen_k / ratio, 1) (compressed)
  kPlanErrorChangesNothing = 1u << 3,  // a throwing append leaves the builder's segments and total_k unchanged
  kPlanAll = 0xFu,
};
Verdict check_plan(const PlanScenario& s, unsigned invariants = kPlanAll);

/// Invariants of the slot mappings and the K/V step metadata (host code: no backend). Always checked: the
/// outcome — a valid input returns; a fault throws its code (raw values: the code of
/// the SPEC §5.4 rules, first error in sequence and token order), and when the rules
/// blame an entry ("block_table[2] = -1") the message blames it.
enum SlotMappingInvariant : unsigned {
  kSlotMatchesReference = 1u << 0,     // slots equal reference/slot_mapping (window: SPEC §5.5 formula, int64)
  kSlotDistinctInRing = 1u << 1,       // valid prefill: distinct slots; SWA store: -1 exactly for the rows
                                       // before the last ring_size, the rest distinct in the state's ring;
                                       // window: start slot in the state's ring, valid_len <= window
  kSlotErrorChangesNothing = 1u << 2,  // SWA store appends after `out`'s entries, and not at all when it throws
  kSlotMetadata = 1u << 3,             // prepare_* (SPEC §7.6): cu_seqlens_q/k, prefix_cache_hit, context_lens,
                                       // -1-padded block tables and max_blocks, graph padding rows (slot -1)
  kSlotAll = 0xFu,
};
Verdict check_slot_mapping(const SlotMappingScenario& s, unsigned invariants = kSlotAll);

}  // namespace kvcheck::props
