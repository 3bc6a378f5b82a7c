#include "impl/validate_index.h"

#include <limits>
#include <string>

#include "impl/error.h"
#include "impl/validate_errors.h"

namespace kvcheck {
namespace {

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
std::string str(int64_t v) { return std::to_string(v); }

void check_size(const char* what, size_t actual, int64_t expected) {
  if (static_cast<int64_t>(actual) != expected)
    throw Error(ErrorCode::kShapeMismatch, std::string(what) + " has " +
                                               str(static_cast<int64_t>(actual)) +
                                               " entries, expected " + str(expected));
}

void check_non_negative(const char* what, int64_t v) {
  if (v < 0) throw Error(ErrorCode::kInvalidArgument, std::string(what) + " = " + str(v) + " < 0");
}

}  // namespace

int64_t validate_convert_kv_index_shape(const ConvertKvIndexArgs& a, size_t out_size) {
  check_non_negative("num_q", a.num_q);
  check_non_negative("k", a.k);
  check_non_negative("max_blocks", a.max_blocks);
  if (a.block_size < 1)
    throw Error(ErrorCode::kInvalidArgument, "block_size must be >= 1, got " + str(a.block_size));
  const int64_t n = int64_t{a.num_q} * a.k;
  check_size("topk", a.topk.size(), n);
  check_size("out", out_size, n);
  check_size("context_lens", a.context_lens.size(), a.num_q);
  if (!a.seq_ids.empty()) check_size("seq_ids", a.seq_ids.size(), a.num_q);
  const int64_t num_seqs =
      a.max_blocks == 0 ? 0 : static_cast<int64_t>(a.block_table.size()) / a.max_blocks;
  if (a.max_blocks != 0 && num_seqs * a.max_blocks != static_cast<int64_t>(a.block_table.size()))
    throw Error(ErrorCode::kShapeMismatch,
                "block_table has " + str(static_cast<int64_t>(a.block_table.size())) +
                    " entries, not a multiple of max_blocks " + str(a.max_blocks));
  return num_seqs;
}

void validate_convert_kv_index(const ConvertKvIndexArgs& a, size_t out_size) {
  const int64_t num_seqs = validate_convert_kv_index_shape(a, out_size);
  // Validate every entry before writing (out may alias topk).
  for (int32_t q = 0; q < a.num_q; ++q) {
    const int64_t seq = a.seq_ids.empty() ? q : a.seq_ids[static_cast<size_t>(q)];
    // With max_blocks == 0 the table has no rows to count; any index then misses it.
    if (seq < 0 || (a.max_blocks > 0 && seq >= num_seqs))
      throw convert_seq_id_error(q, seq, num_seqs);
    const int32_t ctx = a.context_lens[static_cast<size_t>(q)];
    if (ctx < 0)
      throw convert_context_len_error(q, ctx);
    const int32_t* row = a.topk.data() + int64_t{q} * a.k;
    const int32_t* table = a.block_table.data() + seq * a.max_blocks;
    for (int32_t c = 0; c < a.k; ++c) {
      const int32_t x = row[c];
      if (x < -1)
        throw convert_topk_negative_error(q, c, x);
      if (x < 0 || x >= ctx) continue;
      const int64_t index = x / a.block_size;
      const int64_t block = index < a.max_blocks ? table[index] : -1;
      if (index >= a.max_blocks || block < 0)
        throw convert_missing_block_error(q, c, x, seq, index, block, a.max_blocks);
      if (block * a.block_size + x % a.block_size > kInt32Max)
        throw convert_slot_overflow_error(q, c, block);
    }
  }
}

int32_t validate_kv_index_cat_shape(size_t left_size, int32_t wl, size_t right_size, int32_t wr,
                                    int32_t num_q, int32_t total_k_swa_cached,
                                    int32_t total_k_swa_cur, size_t out_size) {
  check_non_negative("wl", wl);
  check_non_negative("wr", wr);
  check_non_negative("num_q", num_q);
  check_non_negative("total_k_swa_cached", total_k_swa_cached);
  check_non_negative("total_k_swa_cur", total_k_swa_cur);
  check_size("left", left_size, int64_t{num_q} * wl);
  check_size("right", right_size, int64_t{num_q} * wr);
  check_size("out", out_size, int64_t{num_q} * (int64_t{wl} + wr));
  return static_cast<int32_t>(int64_t{total_k_swa_cached} + total_k_swa_cur);
}

int32_t validate_kv_index_cat(std::span<const int32_t> left, int32_t wl,
                              std::span<const int32_t> right, int32_t wr, int32_t num_q,
                              int32_t total_k_swa_cached, int32_t total_k_swa_cur,
                              size_t out_size) {
  validate_kv_index_cat_shape(left.size(), wl, right.size(), wr, num_q, total_k_swa_cached, total_k_swa_cur,
                              out_size);
  // The shift itself may pass INT32_MAX (entries >= 0 then overflow): check in int64.
  const int64_t shift = int64_t{total_k_swa_cached} + total_k_swa_cur;
  for (size_t i = 0; i < right.size(); ++i) {
    const int32_t x = right[i];
    if (x < -1)
      throw cat_right_negative_error(static_cast<int64_t>(i), wr, x);
    if (x >= 0 && x + shift > kInt32Max)
      throw cat_shift_overflow_error(static_cast<int64_t>(i), wr, x, shift);
  }
  return static_cast<int32_t>(shift);
}

void validate_expand_swa_index_shape(size_t pivots_size, int32_t num_q, int32_t width,
                                     size_t out_size) {
  check_non_negative("num_q", num_q);
  check_non_negative("width", width);
  check_size("pivots", pivots_size, int64_t{num_q} * 4);
  check_size("out", out_size, int64_t{num_q} * width);
}

void validate_expand_swa_index(std::span<const int32_t> pivots, int32_t num_q, int32_t width,
                               size_t out_size) {
  validate_expand_swa_index_shape(pivots.size(), num_q, width, out_size);
  for (int32_t q = 0; q < num_q; ++q) {
    const int32_t* p = pivots.data() + int64_t{q} * 4;
    if (p[1] < 0 || p[3] < 0 || int64_t{p[1]} + p[3] > width) throw expand_lengths_error(q, p, width);
    for (int k : {0, 2}) {
      if (p[k + 1] == 0) continue;
      if (p[k] < 0 || int64_t{p[k]} + p[k + 1] - 1 > kInt32Max) throw expand_piece_error(q, p, k);
    }
  }
}

void validate_swa_decode_index_shape(size_t start_len_size, int32_t num_q, int32_t width,
                                     int32_t ring_size, size_t out_size) {
  check_non_negative("num_q", num_q);
  check_non_negative("width", width);
  if (ring_size < 1)
    throw Error(ErrorCode::kInvalidArgument, "ring_size must be >= 1, got " + str(ring_size));
  check_size("start_len", start_len_size, int64_t{num_q} * 2);
  check_size("out", out_size, int64_t{num_q} * width);
}

void validate_swa_decode_index(std::span<const int32_t> start_len, int32_t num_q, int32_t width,
                               int32_t ring_size, size_t out_size) {
  validate_swa_decode_index_shape(start_len.size(), num_q, width, ring_size, out_size);
  for (int32_t q = 0; q < num_q; ++q) {
    const int32_t start = start_len[static_cast<size_t>(q) * 2];
    const int32_t len = start_len[static_cast<size_t>(q) * 2 + 1];
    if (len < 0 || len > width || len > ring_size)
      throw swa_decode_len_error(q, len, width, ring_size);
    if (len > 0 && start < 0)
      throw swa_decode_start_error(q, start);
    if (len > 0 && (int64_t{start} / ring_size + 1) * ring_size - 1 > kInt32Max)
      throw swa_decode_ring_overflow_error(q, start);
  }
}

}  // namespace kvcheck
