// kvcheck::Error — the one exception type every checked entry point throws.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace kvcheck {

/// Why a checked entry point refused its input. Stable names (to_string) appear in
/// reports, JSON and regression files; append new codes, never renumber.
enum class ErrorCode {
  kInvalidFormat,           // KVCacheFormat fails validation (SPEC §2)
  kUnknownFormat,           // no supported format has this dtype/shape
  kAmbiguousFormat,         // several formats match (the 132-byte case, SPEC §2)
  kInvalidArgument,         // a size, count or pointer argument is unusable
  kShapeMismatch,           // a buffer is smaller than the metadata requires
  kSlotOutOfRange,          // slot_mapping entry not -1 and not in [0, num_slots)
  kDuplicateSlot,           // two rows store to the same slot (SPEC §5.1)
  kSegmentBlockOutOfRange,  // load segment block not -1 and not in [0, num_blocks)
  kSegmentRangeInvalid,     // not 0 <= src_begin <= src_end <= block_size
  kSegmentDestinationOutOfRange,  // destination rows outside [0, total_k)
  kSegmentOverlap,          // two segments write the same output row
  kRangeOutOfTable,         // a token range or index needs a block the table lacks
  kUnsupported,             // valid, but this backend cannot run it
  kBlockOutOfRange,         // a block_table entry a token needs is not in [0, num_blocks) (SPEC §7.5)
  kBlockConflict,           // copy_blocks: a destination written twice, or also a source (SPEC §8.1)
};
/// The last code: the ABI's statuses are the codes plus one up to it.
inline constexpr ErrorCode kLastErrorCode = ErrorCode::kBlockConflict;

/// Stable kebab-case name of a code, e.g. "slot-out-of-range".
std::string_view to_string(ErrorCode code);

/// Thrown by every checked entry point before it writes anything.
class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message)
      : std::runtime_error(std::string(to_string(code)) + ": " + message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace kvcheck
