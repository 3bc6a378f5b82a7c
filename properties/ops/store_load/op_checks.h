// The one check of each store/load operation (SPEC §5.1, §5.2, §4): properties call it
// for the invariant they state, the fuzz targets, their replays and `kvcheck explain`
// for all of them, so a case means the same thing to both engines.
#pragma once

#include "impl/backend.h"
#include "properties/gen/ops/store_load/store_load_gen.h"
#include "properties/harness.h"

namespace kvcheck::props {

/// Invariants of store_kv_cache. The outcome (what the case's fault requires, the same
/// code and blamed entry on both sides) and the canary bands are always checked.
enum StoreInvariant : unsigned {
  kStoreMatchesReference = 1u << 0,      // the whole cache is bit-identical to the reference's
  kStoreTouchesOnlyRecords = 1u << 1,    // only records of valid rows change; BF16 records = input rows
  kStoreUe8m0NeverFF = 1u << 2,          // no stored UE8M0 scale byte is 0xFF
  kStoreErrorChangesNothing = 1u << 3,   // a side that threw left every byte unchanged
  kStoreAll = 0xFu,
};
Verdict check_store(const Backend& b, const StoreFaultScenario& c, unsigned invariants = kStoreAll);

/// Invariants of load_paged_kv_cache. Always: the outcome, and the cache is never written.
enum LoadInvariant : unsigned {
  kLoadMatchesReference = 1u << 0,     // whole outputs (rows, scales, row padding, tail) bit-identical
  kLoadKeepsUncoveredRows = 1u << 1,   // rows no segment covers keep their prior bytes
  kLoadZeroFillRowsAreZero = 1u << 2,  // rows from block -1 are zero in data and scales
  kLoadRawRowsEqualCache = 1u << 3,    // BF16 / index rows equal their cache record's bytes
  kLoadErrorChangesNothing = 1u << 4,  // a side that threw left every output byte unchanged
  kLoadAll = 0x1Fu,
};
Verdict check_load(const Backend& b, const LoadFaultScenario& c, unsigned invariants = kLoadAll);

/// Invariants of a valid store followed by a load of every stored row (one segment per
/// row, in row order) on the backend.
enum RoundTripInvariant : unsigned {
  kRoundTripMatchesRecipe = 1u << 0,     // each row = the SPEC §4 quantise-dequantise (BF16: identity)
  kRoundTripMatchesReference = 1u << 1,  // whole load output = reference store + load
  kRoundTripErrorWithinBound = 1u << 2,  // quantised formats: per group |error| <= half a code step
  kRoundTripAll = 0x7u,
};
Verdict check_round_trip(const Backend& b, const StoreScenario& s, unsigned invariants = kRoundTripAll);

}  // namespace kvcheck::props
