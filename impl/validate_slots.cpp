#include "impl/validate_slots.h"

#include <unordered_map>
#include <vector>

#include "impl/slot_mapping.h"
#include "impl/validate_errors.h"

namespace kvcheck {

void validate_slot_mapping(std::span<const int32_t> slot_mapping, int64_t num_blocks, int32_t block_size) {
  const int64_t n = static_cast<int64_t>(slot_mapping.size());
  const int64_t num_slots = num_blocks * block_size;
  const bool use_bitmap = num_slots <= slot_bitmap_max_slots(n);
  std::vector<uint64_t> seen(use_bitmap ? static_cast<size_t>((num_slots + 63) / 64) : 0);
  std::unordered_map<int32_t, int64_t> first_row;
  if (!use_bitmap) first_row.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int32_t slot = slot_mapping[static_cast<size_t>(i)];
    if (slot == -1) continue;
    if (slot < -1 || slot >= num_slots) throw slot_out_of_range_error(i, slot, num_blocks, block_size);
    bool duplicate = false;
    if (use_bitmap) {
      uint64_t& word = seen[static_cast<size_t>(slot >> 6)];
      const uint64_t bit = uint64_t{1} << (slot & 63);
      duplicate = (word & bit) != 0;
      word |= bit;
    } else {
      duplicate = !first_row.emplace(slot, i).second;
    }
    if (duplicate) {
      int64_t j = 0;
      while (slot_mapping[static_cast<size_t>(j)] != slot) ++j;
      throw duplicate_slot_error(i, slot, j);
    }
  }
}

}  // namespace kvcheck
