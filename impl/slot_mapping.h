// Slot mappings (SPEC §5.4): host code that says where store_kv_cache writes each
// row. slot = block_id*block_size + offset; -1 = padding (nothing written).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace kvcheck {

/// The largest slot space (num_blocks * block_size) in which validate_slot_mapping
/// checks a batch of n rows with a bitmap; a larger one goes through a hash map. The
/// generators draw caches on both sides of it (properties/gen/choices.h).
constexpr int64_t slot_bitmap_max_slots(int64_t n) { return 64 * n + (int64_t{1} << 16); }

/// A sequence of a paged (vLLM-style) batch: tokens [0, num_cached) are already in
/// the cache (prefix cache or earlier chunks); this step stores [num_cached, num_tokens).
struct PagedSeq {
  std::span<const int32_t> block_table;  // physical block of logical block i
  int32_t num_cached = 0;
  int32_t num_tokens = 0;
};

/// The one helper for slot = block*block_size + offset of logical token t:
/// block_table[t / block_size]*block_size + t % block_size. Throws
/// kRangeOutOfTable when t needs a block past the table or a negative entry,
/// kInvalidArgument when t < 0, block_size < 1 or the slot overflows int32.
int32_t paged_slot(std::span<const int32_t> block_table, int32_t block_size, int32_t t);

/// Prefill (chunked, prefix-cached): for each sequence in order, the slots of tokens
/// [num_cached, num_tokens). 0 <= num_cached <= num_tokens else kInvalidArgument.
/// Validates every sequence before returning; errors as paged_slot.
std::vector<int32_t> paged_prefill_slot_mapping(std::span<const PagedSeq> seqs,
                                                int32_t block_size);

/// Decode: one slot per sequence, that of its last token num_tokens - 1
/// (num_tokens >= 1 else kInvalidArgument; num_cached is ignored).
std::vector<int32_t> paged_decode_slot_mapping(std::span<const PagedSeq> seqs, int32_t block_size);

/// SWA store (SPEC §5.4) of one chunk: row j -> state_id*ring_size + (seqlen_k -
/// seqlen_q + j) % ring_size, or -1 when j < seqlen_q - ring_size (the token leaves
/// the window before the chunk ends). Appends seqlen_q entries to `out`. Needs
/// ring_size >= 1, state_id >= 0, 0 <= seqlen_q <= seqlen_k and slots within int32,
/// else kInvalidArgument (out unchanged).
void append_swa_store_slots(std::vector<int32_t>& out, int32_t state_id, int32_t ring_size,
                            int32_t seqlen_k, int32_t seqlen_q);

/// SWA decode window of one query (input of swa_decode_index, SPEC §5.5): the query
/// at position p = seqlen_k - 1 sees positions [first, p] with first =
/// max(p - window + 1, swa_valid_start); start_slot = state_id*ring_size + first %
/// ring_size, valid_len = p - first + 1 (0 and start_slot = state_id*ring_size when
/// first > p). Needs seqlen_k >= 1, 1 <= window <= ring_size, state_id >= 0,
/// swa_valid_start >= 0, else kInvalidArgument.
struct SwaDecodeWindow {
  int32_t start_slot = 0;
  int32_t valid_len = 0;
};
SwaDecodeWindow swa_decode_window(int32_t state_id, int32_t ring_size, int32_t window,
                                  int32_t seqlen_k, int32_t swa_valid_start);

}  // namespace kvcheck
