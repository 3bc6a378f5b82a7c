#include "impl/load_plan.h"

#include <algorithm>
#include <limits>
#include <string>

#include "impl/error.h"

namespace kvcheck {
namespace {

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
std::string str(int64_t v) { return std::to_string(v); }

void check_seq(const SeqMeta& s, size_t i) {
  const std::string who = "sequence " + str(static_cast<int64_t>(i)) + ": ";
  if (s.seqlen_q < 0 || s.seqlen_k < s.seqlen_q)
    throw Error(ErrorCode::kInvalidArgument, who + "need 0 <= seqlen_q <= seqlen_k, got seqlen_q " +
                                                 str(s.seqlen_q) + ", seqlen_k " + str(s.seqlen_k));
  if (s.swa_valid_start < 0)
    throw Error(ErrorCode::kInvalidArgument,
                who + "swa_valid_start must be >= 0, got " + str(s.swa_valid_start));
  if (s.state_id < 0)
    throw Error(ErrorCode::kInvalidArgument, who + "state_id must be >= 0, got " + str(s.state_id));
}

void check_window(int32_t window, int32_t ring_size) {
  if (window < 1 || ring_size < window)
    throw Error(ErrorCode::kInvalidArgument, "need 1 <= window <= ring_size, got window " +
                                                 str(window) + ", ring_size " + str(ring_size));
}

}  // namespace

std::vector<int32_t> flatten_segments(std::span<const LoadSegment> segments) {
  std::vector<int32_t> flat;
  flat.reserve(segments.size() * 4);
  for (const LoadSegment& s : segments)
    flat.insert(flat.end(), {s.src_block_id, s.src_begin, s.src_end, s.dst_offset});
  return flat;
}

BlockLoadPlanBuilder::BlockLoadPlanBuilder(int32_t source_block_size)
    : source_block_size_(source_block_size) {
  if (source_block_size < 1)
    throw Error(ErrorCode::kInvalidArgument,
                "source_block_size must be >= 1, got " + str(source_block_size));
}

void BlockLoadPlanBuilder::commit(std::span<const LoadSegment> pieces) {
  int64_t total = total_k_;
  for (const LoadSegment& p : pieces) total += p.src_end - p.src_begin;
  if (total > kInt32Max)
    throw Error(ErrorCode::kInvalidArgument, "total_k " + str(total) + " exceeds INT32_MAX");
  segments_.reserve(segments_.size() + pieces.size());  // may throw: nothing changed yet
  for (LoadSegment p : pieces) {
    p.dst_offset = total_k_;
    total_k_ += p.src_end - p.src_begin;
    segments_.push_back(p);
  }
}

void BlockLoadPlanBuilder::append_segment(int32_t src_block_id, int32_t src_begin,
                                          int32_t src_end) {
  if (src_block_id < -1)
    throw Error(ErrorCode::kInvalidArgument,
                "src_block_id must be -1 (zeros) or >= 0, got " + str(src_block_id));
  if (src_begin < 0 || src_begin > src_end || src_end > source_block_size_)
    throw Error(ErrorCode::kSegmentRangeInvalid,
                "need 0 <= src_begin <= src_end <= " + str(source_block_size_) + ", got [" +
                    str(src_begin) + ", " + str(src_end) + ")");
  const LoadSegment piece{src_block_id, src_begin, src_end, 0};
  commit({&piece, 1});
}

void BlockLoadPlanBuilder::append_zero_fill(int32_t num_tokens) {
  if (num_tokens < 0)
    throw Error(ErrorCode::kInvalidArgument, "zero fill of " + str(num_tokens) + " tokens");
  if (int64_t{total_k_} + num_tokens > kInt32Max)  // before building up to 2^31 pieces
    throw Error(ErrorCode::kInvalidArgument,
                "total_k " + str(int64_t{total_k_} + num_tokens) + " exceeds INT32_MAX");
  std::vector<LoadSegment> pieces;
  for (int32_t left = num_tokens; left > 0;) {
    const int32_t len = std::min(left, source_block_size_);
    pieces.push_back({-1, 0, len, 0});
    left -= len;
  }
  commit(pieces);
}

void BlockLoadPlanBuilder::append_paged_range(std::span<const int32_t> block_table,
                                              int32_t token_begin, int32_t token_end) {
  if (token_begin < 0 || token_begin > token_end)
    throw Error(ErrorCode::kInvalidArgument, "need 0 <= token_begin <= token_end, got [" +
                                                 str(token_begin) + ", " + str(token_end) + ")");
  if (token_begin == token_end) return;  // an empty range needs no block
  const int64_t capacity = static_cast<int64_t>(block_table.size()) * source_block_size_;
  if (token_end > capacity)
    throw Error(ErrorCode::kRangeOutOfTable,
                "token range [" + str(token_begin) + ", " + str(token_end) + ") needs block " +
                    str((token_end - 1) / source_block_size_) + " but the block_table has " +
                    str(static_cast<int64_t>(block_table.size())) + " blocks");
  std::vector<LoadSegment> pieces;
  for (int32_t t = token_begin; t < token_end;) {
    const int32_t index = t / source_block_size_;
    const int32_t block = block_table[static_cast<size_t>(index)];
    if (block < 0)
      throw Error(ErrorCode::kRangeOutOfTable, "token " + str(t) + " needs block_table[" +
                                                   str(index) + "] = " + str(block));
    const int32_t begin = t % source_block_size_;
    const int32_t len = std::min(token_end - t, source_block_size_ - begin);
    pieces.push_back({block, begin, begin + len, 0});
    t += len;
  }
  commit(pieces);
}

void BlockLoadPlanBuilder::append_ring_range(int32_t state_id, int32_t begin, int32_t end) {
  if (state_id < 0)
    throw Error(ErrorCode::kInvalidArgument, "state_id must be >= 0, got " + str(state_id));
  if (begin < 0 || begin > end)
    throw Error(ErrorCode::kInvalidArgument,
                "need 0 <= begin <= end, got [" + str(begin) + ", " + str(end) + ")");
  const int32_t ring = source_block_size_;
  if (end - begin > ring)
    throw Error(ErrorCode::kRangeOutOfTable, "ring range [" + str(begin) + ", " + str(end) +
                                                 ") is longer than the ring of " + str(ring));
  std::vector<LoadSegment> pieces;
  if (begin < end) {
    const int32_t first = begin % ring;
    const int32_t len1 = std::min(end - begin, ring - first);
    pieces.push_back({state_id, first, first + len1, 0});
    if (len1 < end - begin) pieces.push_back({state_id, 0, end - begin - len1, 0});
  }
  commit(pieces);
}

LoadPlan build_compressed_plan(std::span<const SeqMeta> seqs, int32_t block_size, int32_t ratio) {
  if (block_size < 1 || ratio < 1 || block_size % ratio != 0)
    throw Error(ErrorCode::kInvalidArgument,
                "need block_size >= 1 and ratio >= 1 dividing it, got block_size " +
                    str(block_size) + ", ratio " + str(ratio));
  BlockLoadPlanBuilder builder(block_size / ratio);
  std::vector<int32_t> starts;
  for (size_t i = 0; i < seqs.size(); ++i) {
    if (seqs[i].seqlen_k < 0)
      throw Error(ErrorCode::kInvalidArgument, "sequence " + str(static_cast<int64_t>(i)) +
                                                   ": seqlen_k " + str(seqs[i].seqlen_k));
    starts.push_back(builder.total_k());
    const int32_t n = seqs[i].seqlen_k / ratio;
    if (n == 0)
      builder.append_zero_fill(1);  // the seed's shape patch: never an empty sequence
    else
      builder.append_paged_range(seqs[i].block_table, 0, n);
  }
  starts.push_back(builder.total_k());
  LoadPlan plan = builder.finish();
  plan.row_starts = std::move(starts);
  return plan;
}

LoadPlan build_swa_plan(std::span<const SeqMeta> seqs, int32_t window, int32_t ring_size) {
  check_window(window, ring_size);
  BlockLoadPlanBuilder builder(ring_size);
  std::vector<int32_t> starts;
  for (size_t i = 0; i < seqs.size(); ++i) {
    const SeqMeta& s = seqs[i];
    check_seq(s, i);
    starts.push_back(builder.total_k());
    const int32_t history_end = s.seqlen_k - s.seqlen_q;
    const int64_t history_begin = int64_t{history_end} - window;
    const int32_t pad = static_cast<int32_t>(
        std::clamp<int64_t>(s.swa_valid_start - history_begin, 0, window));
    builder.append_zero_fill(pad);
    builder.append_ring_range(s.state_id, static_cast<int32_t>(history_begin + pad), history_end);
  }
  starts.push_back(builder.total_k());
  LoadPlan plan = builder.finish();
  plan.row_starts = std::move(starts);
  return plan;
}

std::vector<int32_t> build_swa_prefill_pivots(std::span<const SeqMeta> seqs, int32_t window,
                                              int32_t ring_size) {
  check_window(window, ring_size);
  int64_t total_q = 0;
  for (size_t i = 0; i < seqs.size(); ++i) {
    check_seq(seqs[i], i);
    total_q += seqs[i].seqlen_q;
  }
  const int64_t total_k_swa = static_cast<int64_t>(seqs.size()) * window;
  if (total_k_swa + total_q > kInt32Max)
    throw Error(ErrorCode::kInvalidArgument, "KV buffer of " + str(total_k_swa + total_q) +
                                                 " rows exceeds INT32_MAX");
  std::vector<int32_t> pivots;
  pivots.reserve(static_cast<size_t>(total_q) * 4);
  int64_t chunk_row = total_k_swa;  // first buffer row of this sequence's chunk
  for (size_t i = 0; i < seqs.size(); ++i) {
    const SeqMeta& s = seqs[i];
    const int64_t history_end = s.seqlen_k - s.seqlen_q;
    const int64_t history_begin = history_end - window;  // buffer row i*window
    for (int32_t j = 0; j < s.seqlen_q; ++j) {
      const int64_t p = history_end + j;
      const int64_t first = std::max<int64_t>(p - window + 1, s.swa_valid_start);
      const int64_t len1 = std::max<int64_t>(history_end - first, 0);
      const int64_t off1 = len1 > 0 ? static_cast<int64_t>(i) * window + (first - history_begin) : 0;
      // The chunk's own rows are always visible: swa_valid_start masks history only.
      const int64_t first_chunk = std::max(p - window + 1, history_end);
      const int64_t len2 = p - first_chunk + 1;
      const int64_t off2 = chunk_row + (first_chunk - history_end);
      pivots.insert(pivots.end(), {static_cast<int32_t>(off1), static_cast<int32_t>(len1),
                                   static_cast<int32_t>(off2), static_cast<int32_t>(len2)});
    }
    chunk_row += s.seqlen_q;
  }
  return pivots;
}

}  // namespace kvcheck
