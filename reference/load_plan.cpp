#include "reference/load_plan.h"

#include "impl/error.h"

namespace kvcheck::ref {

std::string to_string(const PlanRow& row) {
  if (row.block == -1) return "zero";
  return "(block " + std::to_string(row.block) + ", offset " + std::to_string(row.offset) + ")";
}

std::vector<PlanRow> paged_range_rows(std::span<const int32_t> block_table, int32_t bs,
                                      int32_t begin, int32_t end) {
  std::vector<PlanRow> rows;
  for (int32_t t = begin; t < end; ++t) {
    const int64_t logical_block = t / bs;
    if (logical_block >= static_cast<int64_t>(block_table.size()) ||
        block_table[static_cast<size_t>(logical_block)] < 0)
      throw Error(ErrorCode::kRangeOutOfTable,
                  "ref: token " + std::to_string(t) + " has no block in the table");
    rows.push_back({block_table[static_cast<size_t>(logical_block)], t % bs});
  }
  return rows;
}

std::vector<PlanRow> ring_range_rows(int32_t state_id, int32_t ring_size, int32_t begin,
                                     int32_t end) {
  std::vector<PlanRow> rows;
  for (int32_t p = begin; p < end; ++p) rows.push_back({state_id, p % ring_size});
  return rows;
}

std::vector<PlanRow> compressed_plan_rows(std::span<const SeqMeta> seqs, int32_t block_size,
                                          int32_t ratio) {
  std::vector<PlanRow> rows;
  const int32_t tokens_per_block = block_size / ratio;
  for (const SeqMeta& s : seqs) {
    const int32_t n = s.seqlen_k / ratio;
    if (n == 0) rows.push_back({-1, 0});
    for (const PlanRow& r : paged_range_rows(s.block_table, tokens_per_block, 0, n))
      rows.push_back(r);
  }
  return rows;
}

std::vector<PlanRow> swa_plan_rows(std::span<const SeqMeta> seqs, int32_t window,
                                   int32_t ring_size) {
  std::vector<PlanRow> rows;
  for (const SeqMeta& s : seqs) {
    for (int32_t r = 0; r < window; ++r) {
      const int64_t p = int64_t{s.seqlen_k} - s.seqlen_q - window + r;
      if (p < 0 || p < s.swa_valid_start)
        rows.push_back({-1, 0});
      else
        rows.push_back({s.state_id, static_cast<int32_t>(p % ring_size)});
    }
  }
  return rows;
}

std::string expand_segments(std::span<const LoadSegment> segments, int32_t total_k,
                            int32_t block_size, std::vector<PlanRow>& rows) {
  if (total_k < 0) return "total_k " + std::to_string(total_k) + " < 0";
  rows.assign(static_cast<size_t>(total_k), PlanRow{-2, 0});  // -2: not covered yet
  for (size_t i = 0; i < segments.size(); ++i) {
    const LoadSegment& s = segments[i];
    const std::string who = "segment " + std::to_string(i) + " [" + std::to_string(s.src_block_id) +
                            ", " + std::to_string(s.src_begin) + ", " +
                            std::to_string(s.src_end) + ", " + std::to_string(s.dst_offset) + "]";
    if (s.src_block_id < -1) return who + ": block below -1";
    if (s.src_begin < 0 || s.src_begin > s.src_end || s.src_end > block_size)
      return who + ": not inside one block of " + std::to_string(block_size) + " tokens";
    for (int32_t t = s.src_begin; t < s.src_end; ++t) {
      const int64_t dst = int64_t{s.dst_offset} + (t - s.src_begin);
      if (dst < 0 || dst >= total_k)
        return who + ": destination row " + std::to_string(dst) + " outside [0, " +
               std::to_string(total_k) + ")";
      PlanRow& row = rows[static_cast<size_t>(dst)];
      if (row.block != -2) return who + ": destination row " + std::to_string(dst) + " written twice";
      row = s.src_block_id == -1 ? PlanRow{-1, 0} : PlanRow{s.src_block_id, t};
    }
  }
  for (size_t r = 0; r < rows.size(); ++r)
    if (rows[r].block == -2) return "row " + std::to_string(r) + " is covered by no segment";
  return "";
}

}  // namespace kvcheck::ref
