// The errors of SPEC §5's per-entry checks, built in one place so every backend that
// finds the same bad entry (the cpu validators, the CUDA validation kernels via their
// device status word) throws the same ErrorCode with the same message.
#pragma once

#include <cstdint>
#include <optional>

#include "impl/error.h"
#include "impl/kv_rules.h"

namespace kvcheck {

// store_kv_cache (SPEC §5.1).
Error slot_out_of_range_error(int64_t row, int32_t slot, int64_t num_blocks, int32_t block_size);
Error duplicate_slot_error(int64_t row, int32_t slot, int64_t first_row);
// concat_and_cache_mla's fused RoPE (docs/spec.md §8.4): positions[row] outside [0, max_position).
Error rope_position_error(int64_t row, int64_t position, int64_t max_position);

// load_paged_kv_cache (SPEC §5.2); seg = the segment's 4 int32.
Error segment_block_error(int64_t s, const int32_t* seg, int64_t num_blocks);
Error segment_range_error(int64_t s, const int32_t* seg, int32_t block_size);
Error segment_destination_error(int64_t s, const int32_t* seg, int32_t total_k);
Error segment_null_cache_error(int64_t s, const int32_t* seg);
Error segment_overlap_error(int64_t s, const int32_t* seg, int64_t t, const int32_t* seg_t);

// convert_kv_index (SPEC §5.5).
Error convert_seq_id_error(int64_t q, int64_t seq, int64_t num_seqs);
Error convert_context_len_error(int64_t q, int32_t context_len);
Error convert_topk_negative_error(int64_t q, int64_t c, int32_t x);
/// block = the table entry (ignored when index >= max_blocks).
Error convert_missing_block_error(int64_t q, int64_t c, int32_t x, int64_t seq, int64_t index,
                                  int64_t block, int32_t max_blocks);
Error convert_slot_overflow_error(int64_t q, int64_t c, int64_t block);

// kv_index_cat.
Error cat_right_negative_error(int64_t i, int32_t wr, int32_t x);
Error cat_shift_overflow_error(int64_t i, int32_t wr, int32_t x, int64_t shift);

// expand_swa_index; p = the row's 4 pivots; piece 0 or 2.
Error expand_lengths_error(int64_t q, const int32_t* p, int32_t width);
Error expand_piece_error(int64_t q, const int32_t* p, int piece);

// SWA decode index.
Error swa_decode_len_error(int64_t q, int32_t len, int32_t width, int32_t ring_size);
Error swa_decode_start_error(int64_t q, int32_t start);
Error swa_decode_ring_overflow_error(int64_t q, int32_t start);

// store_kv / gather_kv (SPEC §7.3-§7.5): the checks that read scale values,
// cu_seqlens_k or block_table, which the CUDA entries make on the device.
/// side kKvSideK names k_scale, kKvSideV v_scale.
Error kv_scale_value_error(int side, int64_t h, float value);
Error cu_seqlens_first_error(int32_t first);
/// cu_seqlens_k[i+1] = next < cu_seqlens_k[i] = cur.
Error cu_seqlens_decrease_error(int64_t i, int32_t next, int32_t cur);
/// rule != kOk; side kKvSideK names out_k, kKvSideV out_v.
Error gather_output_error(KvOutRule rule, int side, int64_t rows, int64_t total, int64_t token_stride,
                          int64_t head_stride, int32_t num_kv_heads, int32_t head_dim);
/// seq_starts[i] = value < 0 (kInvalidArgument).
Error gather_seq_start_error(int64_t i, int32_t value);
/// Sequence i's len tokens from table position start pass its row (kRangeOutOfTable);
/// seq_start: its seq_starts entry (none without seq_starts).
Error gather_sequence_too_long_error(int64_t i, int64_t start, int64_t len, int32_t max_blocks, int32_t block_size,
                                     std::optional<int32_t> seq_start);
/// rule != kOk: entry block_table[i][j] = block, of a row whose sequence starts at
/// table position `start`.
Error gather_table_entry_error(KvTableRule rule, int64_t i, int64_t j, int32_t block, int32_t block_size,
                               int64_t num_blocks, int64_t start);

}  // namespace kvcheck
