// Load plans (SPEC §5.3): host code that turns block tables and SWA rings into the
// load_segments of load_paged_kv_cache (SPEC §5.2).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "impl/op_args.h"  // LoadSegment

namespace kvcheck {

/// One sequence of a prefill step. Positions are token indices of the sequence.
struct SeqMeta {
  int32_t seqlen_k = 0;         // tokens after this step (history + chunk)
  int32_t seqlen_q = 0;         // tokens in this step's chunk, <= seqlen_k
  int32_t swa_valid_start = 0;  // first position whose SWA KV the ring holds, >= 0
  int32_t state_id = 0;         // the sequence's SWA ring = block state_id of the SWA cache
  std::vector<int32_t> block_table;  // compressed-cache blocks (block_size/ratio tokens each)
};

/// A finished plan: segments in append order, dst_offset running from 0.
struct LoadPlan {
  std::vector<LoadSegment> segments;
  int32_t total_k = 0;
  /// Row where each sequence's rows start, plus total_k at the end (num_seqs+1
  /// entries; the seed's cu_*_seqlens). Empty for plans built by hand.
  std::vector<int32_t> row_starts;
};

/// segments as the S*4 int32 array load_paged_kv_cache takes.
std::vector<int32_t> flatten_segments(std::span<const LoadSegment> segments);

/// Builds load_segments over source blocks of `source_block_size` tokens. Every
/// append validates first and either appends completely or throws and leaves the
/// builder unchanged (strong guarantee).
class BlockLoadPlanBuilder {
 public:
  /// source_block_size >= 1 (tokens) else Error(kInvalidArgument).
  explicit BlockLoadPlanBuilder(int32_t source_block_size);

  /// One segment, dst_offset = total_k(). src_block_id -1 (zeros) or >= 0, else
  /// kInvalidArgument; 0 <= src_begin <= src_end <= source_block_size, else
  /// kSegmentRangeInvalid; total_k past INT32_MAX -> kInvalidArgument.
  void append_segment(int32_t src_block_id, int32_t src_begin, int32_t src_end);
  /// num_tokens zero rows in pieces of at most source_block_size. num_tokens < 0 ->
  /// kInvalidArgument.
  void append_zero_fill(int32_t num_tokens);
  /// Tokens [token_begin, token_end) of a sequence whose token t lives in block
  /// block_table[t / source_block_size]: one segment per block crossed.
  /// 0 <= begin <= end else kInvalidArgument; a token past the table or a negative
  /// table entry it needs -> kRangeOutOfTable (index and value named).
  void append_paged_range(std::span<const int32_t> block_table, int32_t token_begin,
                          int32_t token_end);
  /// Positions [begin, end) of the ring in block state_id (ring_size =
  /// source_block_size tokens; position p at offset p % ring_size): one segment, or
  /// two when the range crosses the wrap point. state_id < 0 or 0 <= begin <= end
  /// violated -> kInvalidArgument; end - begin > ring_size -> kRangeOutOfTable.
  void append_ring_range(int32_t state_id, int32_t begin, int32_t end);

  int32_t source_block_size() const { return source_block_size_; }
  int32_t total_k() const { return total_k_; }
  const std::vector<LoadSegment>& segments() const { return segments_; }
  LoadPlan finish() const { return {segments_, total_k_, {}}; }

 private:
  // Appends `pieces` (dst_offset ignored and recomputed) after validating the sum.
  void commit(std::span<const LoadSegment> pieces);
  int32_t source_block_size_;
  int32_t total_k_ = 0;
  std::vector<LoadSegment> segments_;
};

/// SPEC §5.3 compressed plan for a batch: per sequence n = seqlen_k / ratio
/// compressed tokens; n == 0 -> one zero row, else paged range [0, n) over
/// block_table with block_size/ratio tokens per block. block_size, ratio >= 1 and
/// ratio dividing block_size, seqlen_k >= 0, else kInvalidArgument; a table too
/// short -> kRangeOutOfTable. row_starts filled.
LoadPlan build_compressed_plan(std::span<const SeqMeta> seqs, int32_t block_size, int32_t ratio);

/// SPEC §5.3 SWA plan for a batch: per sequence zero fill pad, then ring range
/// [history_begin + pad, history_end) of ring state_id: exactly `window` rows,
/// at most three segments, row r <-> position history_end - window + r.
/// 1 <= window <= ring_size; 0 <= seqlen_q <= seqlen_k; swa_valid_start >= 0;
/// state_id >= 0; else kInvalidArgument. row_starts filled.
LoadPlan build_swa_plan(std::span<const SeqMeta> seqs, int32_t window, int32_t ring_size);

/// Pivots for expand_swa_index (SPEC §5.5) of a prefill step whose KV buffer is
/// [SWA history (build_swa_plan rows) | chunk KV (seqlen_q rows per sequence, in
/// order) | ...]. Chunk row j of a sequence, at position p = seqlen_k - seqlen_q + j,
/// sees positions [max(p - window + 1, swa_valid_start), p] (decided, docs/spec.md
/// §5.5): (off1, len1) its history rows, (off2, len2) its chunk rows. Returns
/// [total_q][4]. Same validation as build_swa_plan; sizes past INT32_MAX ->
/// kInvalidArgument.
std::vector<int32_t> build_swa_prefill_pivots(std::span<const SeqMeta> seqs, int32_t window,
                                              int32_t ring_size);

}  // namespace kvcheck
