// Checked-entry validation of the SPEC §5.5 index transforms, shared by every
// production backend (cpu, cuda) so all report the same code and message. Each
// function checks everything an operation reads and throws kvcheck::Error before
// the caller writes any output entry.
#pragma once

#include <cstdint>
#include <span>

#include "impl/op_args.h"

namespace kvcheck {

/// convert_kv_index: kInvalidArgument (negative counts, block_size < 1, bad
/// seq_ids / context_lens, topk entry < -1, slot past INT32_MAX), kShapeMismatch
/// (span sizes), kRangeOutOfTable (a valid index needing a missing block).
/// `out_size` = out.size().
void validate_convert_kv_index(const ConvertKvIndexArgs& args, size_t out_size);

/// kv_index_cat: kInvalidArgument (negative widths/totals, right entry < -1, shift
/// past INT32_MAX), kShapeMismatch (span sizes). Returns the shift
/// total_k_swa_cached + total_k_swa_cur.
int32_t validate_kv_index_cat(std::span<const int32_t> left, int32_t wl,
                              std::span<const int32_t> right, int32_t wr, int32_t num_q,
                              int32_t total_k_swa_cached, int32_t total_k_swa_cur,
                              size_t out_size);

/// expand_swa_index: kInvalidArgument (negative counts, len1/len2 < 0, len1+len2 >
/// width, a piece leaving [0, INT32_MAX]), kShapeMismatch (span sizes).
void validate_expand_swa_index(std::span<const int32_t> pivots, int32_t num_q, int32_t width,
                               size_t out_size);

/// SWA decode index: kInvalidArgument (negative counts, ring_size < 1, valid_len
/// outside [0, min(width, ring_size)], start_slot < 0 or its ring past INT32_MAX),
/// kShapeMismatch (span sizes).
void validate_swa_decode_index(std::span<const int32_t> start_len, int32_t num_q, int32_t width,
                               int32_t ring_size, size_t out_size);


// The checks above that read no entry (counts, sizes): for backends that check the
// entries elsewhere (the CUDA validation kernels). Same codes and messages.
/// Returns the number of block_table rows.
int64_t validate_convert_kv_index_shape(const ConvertKvIndexArgs& args, size_t out_size);
/// Returns the shift.
int32_t validate_kv_index_cat_shape(size_t left_size, int32_t wl, size_t right_size, int32_t wr,
                                    int32_t num_q, int32_t total_k_swa_cached,
                                    int32_t total_k_swa_cur, size_t out_size);
void validate_expand_swa_index_shape(size_t pivots_size, int32_t num_q, int32_t width,
                                     size_t out_size);
void validate_swa_decode_index_shape(size_t start_len_size, int32_t num_q, int32_t width,
                                     int32_t ring_size, size_t out_size);

}  // namespace kvcheck
