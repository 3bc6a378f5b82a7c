#include "impl/validate_errors.h"

#include <optional>
#include <string>

namespace kvcheck {
namespace {

std::string str(int64_t v) { return std::to_string(v); }

std::string seg_str(int64_t s, const int32_t* g) {
  return "load_segments[" + str(s) + "] = [" + str(g[0]) + ", " + str(g[1]) + ", " + str(g[2]) +
         ", " + str(g[3]) + "]";
}

std::string cat_pos(int64_t i, int32_t wr) { return "right[" + str(i / wr) + "][" + str(i % wr) + "]"; }

}  // namespace

Error slot_out_of_range_error(int64_t row, int32_t slot, int64_t num_blocks, int32_t block_size) {
  return Error(ErrorCode::kSlotOutOfRange,
               "slot_mapping[" + str(row) + "] = " + str(slot) + " is outside [0, " +
                   str(num_blocks * block_size) + ") (num_blocks " + str(num_blocks) +
                   " * block_size " + str(block_size) + ") and is not -1");
}

Error rope_position_error(int64_t row, int64_t position, int64_t max_position) {
  return Error(ErrorCode::kInvalidArgument, "positions[" + str(row) + "] = " + str(position) +
                                                " is outside [0, " + str(max_position) +
                                                ") (the rows of cos_sin_cache)");
}

Error duplicate_slot_error(int64_t row, int32_t slot, int64_t first_row) {
  return Error(ErrorCode::kDuplicateSlot, "slot_mapping[" + str(row) + "] = " + str(slot) +
                                              " repeats slot_mapping[" + str(first_row) + "]");
}

Error segment_block_error(int64_t s, const int32_t* seg, int64_t num_blocks) {
  return Error(ErrorCode::kSegmentBlockOutOfRange,
               seg_str(s, seg) + ": block " + str(seg[0]) + " is not -1 and not in [0, " +
                   str(num_blocks) + ")");
}

Error segment_range_error(int64_t s, const int32_t* seg, int32_t block_size) {
  return Error(ErrorCode::kSegmentRangeInvalid,
               seg_str(s, seg) + ": need 0 <= src_begin <= src_end <= block_size " + str(block_size));
}

Error segment_destination_error(int64_t s, const int32_t* seg, int32_t total_k) {
  const int64_t dst = seg[3], len = int64_t{seg[2]} - seg[1];
  return Error(ErrorCode::kSegmentDestinationOutOfRange,
               seg_str(s, seg) + ": rows [" + str(dst) + ", " + str(dst + len) +
                   ") are not inside [0, total_k = " + str(total_k) + ")");
}

Error segment_null_cache_error(int64_t s, const int32_t* seg) {
  return Error(ErrorCode::kShapeMismatch, seg_str(s, seg) + " reads a null cache");
}

Error segment_overlap_error(int64_t s, const int32_t* seg, int64_t t, const int32_t* seg_t) {
  return Error(ErrorCode::kSegmentOverlap, seg_str(s, seg) + ": output rows overlap " + seg_str(t, seg_t));
}

Error convert_seq_id_error(int64_t q, int64_t seq, int64_t num_seqs) {
  return Error(ErrorCode::kInvalidArgument, "seq_ids[" + str(q) + "] = " + str(seq) +
                                                ", block_table has " + str(num_seqs) + " rows");
}

Error convert_context_len_error(int64_t q, int32_t context_len) {
  return Error(ErrorCode::kInvalidArgument, "context_lens[" + str(q) + "] = " + str(context_len));
}

Error convert_topk_negative_error(int64_t q, int64_t c, int32_t x) {
  return Error(ErrorCode::kInvalidArgument, "topk[" + str(q) + "][" + str(c) + "] = " + str(x) +
                                                " (only -1 may be negative)");
}

Error convert_missing_block_error(int64_t q, int64_t c, int32_t x, int64_t seq, int64_t index,
                                  int64_t block, int32_t max_blocks) {
  return Error(ErrorCode::kRangeOutOfTable,
               "topk[" + str(q) + "][" + str(c) + "] = " + str(x) + " needs block_table[" + str(seq) +
                   "][" + str(index) + "]" +
                   (index < max_blocks ? " = " + str(block) : " past max_blocks " + str(max_blocks)));
}

Error convert_slot_overflow_error(int64_t q, int64_t c, int64_t block) {
  return Error(ErrorCode::kInvalidArgument, "topk[" + str(q) + "][" + str(c) + "]: slot of block " +
                                                str(block) + " overflows int32");
}

Error cat_right_negative_error(int64_t i, int32_t wr, int32_t x) {
  return Error(ErrorCode::kInvalidArgument,
               cat_pos(i, wr) + " = " + str(x) + " (only -1 may be negative)");
}

Error cat_shift_overflow_error(int64_t i, int32_t wr, int32_t x, int64_t shift) {
  return Error(ErrorCode::kInvalidArgument,
               cat_pos(i, wr) + " = " + str(x) + " + " + str(shift) + " overflows int32");
}

Error expand_lengths_error(int64_t q, const int32_t* p, int32_t width) {
  return Error(ErrorCode::kInvalidArgument,
               "pivots[" + str(q) + "]: need len1, len2 >= 0 and len1 + len2 <= width " + str(width) +
                   ", got len1 " + str(p[1]) + ", len2 " + str(p[3]));
}

Error expand_piece_error(int64_t q, const int32_t* p, int piece) {
  return Error(ErrorCode::kInvalidArgument, "pivots[" + str(q) + "]: piece at offset " + str(p[piece]) +
                                                " of length " + str(p[piece + 1]) +
                                                " leaves [0, INT32_MAX]");
}

Error swa_decode_len_error(int64_t q, int32_t len, int32_t width, int32_t ring_size) {
  return Error(ErrorCode::kInvalidArgument, "start_len[" + str(q) + "]: valid_len " + str(len) +
                                                " not in [0, min(width " + str(width) +
                                                ", ring_size " + str(ring_size) + ")]");
}

Error swa_decode_start_error(int64_t q, int32_t start) {
  return Error(ErrorCode::kInvalidArgument,
               "start_len[" + str(q) + "]: start_slot " + str(start) + " < 0");
}

Error swa_decode_ring_overflow_error(int64_t q, int32_t start) {
  return Error(ErrorCode::kInvalidArgument,
               "start_len[" + str(q) + "]: ring of start_slot " + str(start) + " overflows int32");
}

Error kv_scale_value_error(int side, int64_t h, float value) {
  return Error(ErrorCode::kInvalidArgument, std::string(side == kKvSideV ? "v_scale" : "k_scale") + "[" + str(h) +
                                                "] = " + std::to_string(value) +
                                                ": a scale must be positive and finite");
}

Error cu_seqlens_first_error(int32_t first) {
  return Error(ErrorCode::kInvalidArgument, "cu_seqlens_k[0] = " + str(first) + ", not 0");
}

Error cu_seqlens_decrease_error(int64_t i, int32_t next, int32_t cur) {
  return Error(ErrorCode::kInvalidArgument, "cu_seqlens_k decreases: cu_seqlens_k[" + str(i + 1) + "] = " +
                                                str(next) + " < cu_seqlens_k[" + str(i) + "] = " + str(cur));
}

Error gather_output_error(KvOutRule rule, int side, int64_t rows, int64_t total, int64_t token_stride,
                          int64_t head_stride, int32_t num_kv_heads, int32_t head_dim) {
  const std::string name = side == kKvSideV ? "out_v" : "out_k";
  switch (rule) {
    case KvOutRule::kRows:
      return Error(ErrorCode::kShapeMismatch,
                   name + " has " + str(rows) + " rows but cu_seqlens_k ends at " + str(total));
    case KvOutRule::kNull: return Error(ErrorCode::kShapeMismatch, name + " data is null");
    case KvOutRule::kMisaligned:
      return Error(ErrorCode::kInvalidArgument, name + " data is not aligned to its 2-byte elements");
    case KvOutRule::kOverlap:
    case KvOutRule::kOk: break;
  }
  return Error(ErrorCode::kInvalidArgument, name + " rows overlap (token_stride " + str(token_stride) +
                                                ", head_stride " + str(head_stride) + ", " + str(num_kv_heads) +
                                                " heads x " + str(head_dim) + ")");
}

Error gather_seq_start_error(int64_t i, int32_t value) {
  return Error(ErrorCode::kInvalidArgument, "seq_starts[" + str(i) + "] = " + str(value) + " is negative");
}

Error gather_sequence_too_long_error(int64_t i, int64_t start, int64_t len, int32_t max_blocks, int32_t block_size,
                                     std::optional<int32_t> seq_start) {
  // Without seq_starts the message is the length alone; with them, the entry and the
  // positions it reaches: the bound an engine's unchecked offset read past.
  const std::string holds = "its table row holds " + str(max_blocks) + " blocks of " + str(block_size);
  if (!seq_start)
    return Error(ErrorCode::kRangeOutOfTable, "sequence " + str(i) + " has " + str(len) + " tokens but " + holds);
  return Error(ErrorCode::kRangeOutOfTable,
               "sequence " + str(i) + " has " + str(len) + " tokens from table position " + str(start) +
                   " (seq_starts[" + str(i) + "] = " + str(*seq_start) + "), reaching position " +
                   str(start + len - 1) + ", but " + holds + " (" + str(int64_t{max_blocks} * block_size) +
                   " positions)");
}

Error gather_table_entry_error(KvTableRule rule, int64_t i, int64_t j, int32_t block, int32_t block_size,
                               int64_t num_blocks, int64_t start) {
  const std::string where = "block_table[" + str(i) + "][" + str(j) + "] = " + str(block) + " (needed by token " +
                            str(kv_column_token(j, start, block_size)) + " of sequence " + str(i) + ")";
  if (rule == KvTableRule::kMissing) return Error(ErrorCode::kRangeOutOfTable, where + " is -1");
  return Error(ErrorCode::kBlockOutOfRange, where + " is not in [0, num_blocks = " + str(num_blocks) + ")");
}

}  // namespace kvcheck
