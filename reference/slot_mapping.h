// Reference slot mappings (SPEC §5.4), one token at a time.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace kvcheck::ref {

/// Slot of logical token t: T[t / bs]*bs + t % bs (int64, no validation: callers
/// pass tokens the table covers).
int64_t paged_slot(std::span<const int32_t> block_table, int32_t bs, int64_t t);

/// Slots of tokens [begin, end) of one sequence.
std::vector<int32_t> paged_slots(std::span<const int32_t> block_table, int32_t bs, int32_t begin,
                                 int32_t end);

/// SPEC §5.4 SWA store slots of one chunk: row j -> -1 when j < seqlen_q - ring_size,
/// else state_id*ring_size + (seqlen_k - seqlen_q + j) % ring_size.
std::vector<int32_t> swa_store_slots(int32_t state_id, int32_t ring_size, int32_t seqlen_k,
                                     int32_t seqlen_q);

}  // namespace kvcheck::ref
