#include "reference/slot_mapping.h"

namespace kvcheck::ref {

int64_t paged_slot(std::span<const int32_t> block_table, int32_t bs, int64_t t) {
  return int64_t{block_table[static_cast<size_t>(t / bs)]} * bs + t % bs;
}

std::vector<int32_t> paged_slots(std::span<const int32_t> block_table, int32_t bs, int32_t begin,
                                 int32_t end) {
  std::vector<int32_t> slots;
  for (int32_t t = begin; t < end; ++t)
    slots.push_back(static_cast<int32_t>(paged_slot(block_table, bs, t)));
  return slots;
}

std::vector<int32_t> swa_store_slots(int32_t state_id, int32_t ring_size, int32_t seqlen_k,
                                     int32_t seqlen_q) {
  std::vector<int32_t> slots;
  for (int32_t j = 0; j < seqlen_q; ++j) {
    // Token j is overwritten later in the same chunk when ring_size newer tokens follow.
    if (seqlen_q - j > ring_size) {
      slots.push_back(-1);
      continue;
    }
    const int64_t position = int64_t{seqlen_k} - seqlen_q + j;
    slots.push_back(static_cast<int32_t>(int64_t{state_id} * ring_size + position % ring_size));
  }
  return slots;
}

}  // namespace kvcheck::ref
