#include "impl/error.h"

namespace kvcheck {

std::string_view to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidFormat: return "invalid-format";
    case ErrorCode::kUnknownFormat: return "unknown-format";
    case ErrorCode::kAmbiguousFormat: return "ambiguous-format";
    case ErrorCode::kInvalidArgument: return "invalid-argument";
    case ErrorCode::kShapeMismatch: return "shape-mismatch";
    case ErrorCode::kSlotOutOfRange: return "slot-out-of-range";
    case ErrorCode::kDuplicateSlot: return "duplicate-slot";
    case ErrorCode::kSegmentBlockOutOfRange: return "segment-block-out-of-range";
    case ErrorCode::kSegmentRangeInvalid: return "segment-range-invalid";
    case ErrorCode::kSegmentDestinationOutOfRange: return "segment-destination-out-of-range";
    case ErrorCode::kSegmentOverlap: return "segment-overlap";
    case ErrorCode::kRangeOutOfTable: return "range-out-of-table";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kBlockOutOfRange: return "block-out-of-range";
    case ErrorCode::kBlockConflict: return "block-conflict";
  }
  return "unknown-error-code";
}

}  // namespace kvcheck
