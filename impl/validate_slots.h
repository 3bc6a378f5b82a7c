// The per-row checks of a slot_mapping (SPEC §5.1, §7.4), shared by every store that
// writes rows by slot (store_kv_cache, store_kv) on every host validator.
#pragma once

#include <cstdint>
#include <span>

namespace kvcheck {

/// In index order, the first row whose slot is not -1 and not in [0, num_blocks *
/// block_size) (kSlotOutOfRange) or repeats an earlier row's slot (kDuplicateSlot,
/// naming the earlier row); messages from impl/validate_errors.h. O(n) expected: a
/// bitmap when the slot space is at most ~64 bits per row, else a hash map.
void validate_slot_mapping(std::span<const int32_t> slot_mapping, int64_t num_blocks, int32_t block_size);

}  // namespace kvcheck
