// FlashInfer's paged-KV metadata (SPEC §7.8) as host metadata ops: the CSR page table
// (indptr, indices, last_page_len) of a batch, the per-token append positions
// (batch_indices, positions) of get_batch_indices_positions, and the slots they
// address, which store_kv takes as its slot_mapping. Every slot comes from paged_slot
// (impl/slot_mapping.h), the one slot formula.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "impl/slot_mapping.h"

namespace kvcheck {

/// A batch's pages, FlashInfer's paged_kv_t: sequence i holds pages
/// indices[indptr[i] .. indptr[i+1]) (page ids = block ids), the last one filled to
/// last_page_len[i] tokens, so its length is (pages - 1) * page_size + last_page_len[i]
/// (a sequence of no page has last_page_len 0).
struct PageTable {
  std::vector<int32_t> indptr;         // [b + 1], indptr[0] = 0
  std::vector<int32_t> indices;        // [indptr[b]]
  std::vector<int32_t> last_page_len;  // [b], in [1, page_size] (0 for no page)
};

/// The page table of every sequence's num_tokens tokens: its first ceil(num_tokens /
/// page_size) block-table entries. Validated as paged_prefill_slot_mapping validates
/// (0 <= num_cached <= num_tokens, kInvalidArgument), then every token of every page
/// as paged_slot does (a page past the table or negative: kRangeOutOfTable; a slot past
/// int32, page_size < 1: kInvalidArgument), sequence by sequence.
PageTable page_table_from_seqs(std::span<const PagedSeq> seqs, int32_t page_size);

/// get_batch_indices_positions: for each sequence b the append_indptr[b+1] -
/// append_indptr[b] new tokens are the last ones of its seq_lens[b] tokens, so entry j
/// of the ragged batch has batch_indices[j] = b and positions[j] = seq_lens[b] -
/// append_len[b] + (j - append_indptr[b]). kShapeMismatch unless append_indptr has
/// seq_lens.size() + 1 entries; kInvalidArgument when append_indptr[0] != 0, it
/// decreases, or a sequence appends more tokens than it has (names b).
struct AppendPositions {
  std::vector<int32_t> batch_indices, positions;  // [append_indptr[b]]
};
AppendPositions batch_indices_positions(std::span<const int32_t> append_indptr, std::span<const int32_t> seq_lens);

/// The slot of every appended token (FlashInfer's append_paged_kv_cache addressing):
/// page indices[indptr[b] + p / page_size], entry p % page_size, for b = batch_indices[j],
/// p = positions[j]. Checks first, in order: page_size >= 1 (kInvalidArgument); the
/// table: indptr non-empty (kShapeMismatch), indptr[0] == 0 and never decreasing
/// (kInvalidArgument), indptr[b] == indices.size() and last_page_len of b entries
/// (kShapeMismatch), each last_page_len in [1, page_size] (0 with no page;
/// kInvalidArgument); batch_indices and positions of one size (kShapeMismatch); then
/// each entry j: batch index in [0, b) (kInvalidArgument), 0 <= p < the sequence's
/// length (kRangeOutOfTable), its page in [0, num_blocks) (kBlockOutOfRange), its slot
/// within int32 (kInvalidArgument). Messages name the entry and its value.
std::vector<int32_t> page_table_slot_mapping(const PageTable& table, std::span<const int32_t> batch_indices,
                                             std::span<const int32_t> positions, int32_t page_size,
                                             int64_t num_blocks);

}  // namespace kvcheck
