// The one check of the format/layout operation (SPEC §2, §3): the format and layout
// properties (layout_props.cpp) call it for the invariant each states; the format fuzz
// target, its replay and `kvcheck explain` for all of them.
#pragma once

#include "properties/gen/ops/format/format_gen.h"
#include "properties/harness.h"

namespace kvcheck::props {

/// Invariants of one FormatScenario. Those on sizes and layout apply to valid formats
/// only (a format validate() rejects has none).
enum FormatInvariant : unsigned {
  kFormatValidation = 1u << 0,          // validate() returns or throws kInvalidFormat; a table name is its entry
  kFormatSizesMatchSpec = 1u << 1,      // quantized_bytes .. token_alignment = the SPEC §2 formulas
  kLayoutMatchesReference = 1u << 2,    // block_stride, data/scale offsets (64-bit) = reference/layout; SPEC §3 strides
  kLayoutRecordsInsideBlock = 1u << 3,  // records fit the block, stride a multiple of 32 (interleaved: of bpt), aligned
  kResolveMatchesTable = 1u << 4,       // resolve_format = the SPEC §2 table (132 bytes ambiguous without sf)
  kFormatAll = 0x1Fu,
};
/// "" in Verdict::failure when every selected invariant holds, else "op=format (host)"
/// and one line per violation. Host code only: nothing is ever skipped.
Verdict check_format(const FormatScenario& s, unsigned invariants = kFormatAll);

}  // namespace kvcheck::props
