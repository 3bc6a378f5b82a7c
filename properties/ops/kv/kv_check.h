// The one check of each K/V family operation (SPEC §7.4, §7.5): the properties call it
// for the invariant they state; the fuzz targets, their replays and `kvcheck explain`
// for all of them, so a case means the same thing to both engines.
#pragma once

#include "impl/backend.h"
#include "properties/gen/ops/kv/kv_gen.h"
#include "properties/harness.h"

namespace kvcheck::props {

/// Invariants of store_kv. Always checked: the outcome (s.fault "" — both return; a
/// fault with s.code — both throw it, blaming the same entry; raw values — the
/// reference's outcome) and the canary bands around the buffer.
enum StoreKvInvariant : unsigned {
  kStoreKvMatchesReference = 1u << 0,    // the whole K/V buffer (padding, gaps, layers) = the reference's
  kStoreKvTouchesOnlyRecords = 1u << 1,  // only the K/V records of valid slots change
  kStoreKvErrorChangesNothing = 1u << 2, // a side that threw left every byte unchanged
  kStoreKvAll = 0x7u,
};
Verdict check_store_kv(const Backend& b, const StoreKvScenario& s, unsigned invariants = kStoreKvAll);
/// A valid store_kv call outside the backend's declared contract (kv_undeclared.h: a
/// head_dim, row limit, dtype pair or alignment): the backend must refuse it with
/// kUnsupported and change no byte.
Verdict check_store_kv_refuses_undeclared(const Backend& b, const StoreKvScenario& s);

/// Invariants of gather_kv. Always: the outcome, and the cache is never written.
enum GatherKvInvariant : unsigned {
  kGatherKvMatchesReference = 1u << 0,    // both outputs (rows, padding, rows past cu_seqlens_k[b], tail) bit-identical
  kGatherKvTouchesOnlyRows = 1u << 1,     // only the elements of rows [0, cu_seqlens_k[b]) change
  kGatherKvErrorChangesNothing = 1u << 2, // a side that threw left both outputs unchanged
  kGatherKvAll = 0x7u,
};
Verdict check_gather_kv(const Backend& b, const GatherKvScenario& s, unsigned invariants = kGatherKvAll);
/// A valid gather_kv call outside the backend's declared contract (kv_undeclared.h): it
/// must refuse it with kUnsupported and write nothing.
Verdict check_gather_kv_refuses_undeclared(const Backend& b, const GatherKvScenario& s);

}  // namespace kvcheck::props
