// The load plans' one check (SPEC §5.3), batch part: build_compressed_plan and
// build_swa_plan against the SPEC [decided] argument rules and the per-row reference.
#include <algorithm>

#include "properties/metadata_checks.h"
#include "properties/ops/plan/plan_check_util.h"

namespace kvcheck::props {
namespace {

using namespace plan_check;

Outcome error(ErrorCode c, std::string m) { return {c, std::move(m)}; }

// row_starts: num_seqs+1 entries from 0 to total_k, sequence i spanning rows_of(i).
template <typename RowsOf>
std::string check_row_starts(const LoadPlan& plan, size_t num_seqs, RowsOf rows_of) {
  if (plan.row_starts.size() != num_seqs + 1)
    return "row_starts has " + str(static_cast<int64_t>(plan.row_starts.size())) + " entries for " +
           str(static_cast<int64_t>(num_seqs)) + " sequences\n";
  if (plan.row_starts.front() != 0 || plan.row_starts.back() != plan.total_k)
    return "row_starts does not run from 0 to total_k\n";
  for (size_t i = 0; i < num_seqs; ++i)
    if (int64_t{plan.row_starts[i + 1]} - plan.row_starts[i] != rows_of(i))
      return "sequence " + str(static_cast<int64_t>(i)) + " has " +
             str(int64_t{plan.row_starts[i + 1]} - plan.row_starts[i]) + " rows, expected " + str(rows_of(i)) + "\n";
  return "";
}

std::string check_compressed(const PlanScenario& s, unsigned inv) {
  // Argument rules, then per sequence in order seqlen_k >= 0 and the reference's own
  // kRangeOutOfTable for its table.
  Outcome want;
  if (s.block_size < 1 || s.ratio < 1 || s.block_size % s.ratio != 0) {
    want = error(ErrorCode::kInvalidArgument, "block_size/ratio");
  } else {
    for (const SeqMeta& q : s.seqs) {
      want = q.seqlen_k < 0 ? error(ErrorCode::kInvalidArgument, "seqlen_k < 0")
                            : capture([&] { ref::compressed_plan_rows({&q, 1}, s.block_size, s.ratio); });
      if (want.code) break;
    }
  }
  LoadPlan plan;
  const Outcome got = capture([&] { plan = build_compressed_plan(s.seqs, s.block_size, s.ratio); });
  if (want.code != got.code) return "build_compressed_plan: expected: " + outcome(want) + "; got: " + outcome(got) + "\n";
  if (got.code) return "";
  if (inv & kPlanMatchesReference)
    if (auto bad = rows_match(plan, s.block_size / s.ratio, ref::compressed_plan_rows(s.seqs, s.block_size, s.ratio));
        !bad.empty())
      return "compressed " + bad;
  if (inv & kPlanRowStarts)
    if (auto bad = check_row_starts(plan, s.seqs.size(),
                                    [&](size_t i) { return std::max<int64_t>(s.seqs[i].seqlen_k / s.ratio, 1); });
        !bad.empty())
      return "compressed plan: " + bad;
  return "";
}

// The segments SPEC §5.3 gives sequence q of an SWA plan: a zero fill of at most window
// <= ring_size rows (one piece), then the ring range (one piece, two across the wrap).
int64_t swa_pieces(const SeqMeta& q, int32_t window, int32_t ring) {
  const int64_t history_end = int64_t{q.seqlen_k} - q.seqlen_q, history_begin = history_end - window;
  const int64_t pad = std::clamp<int64_t>(q.swa_valid_start - history_begin, 0, window);
  const int64_t len = history_end - (history_begin + pad), first = (history_begin + pad) % ring;
  return (pad > 0) + (len > 0) + (len > 0 && first + len > ring);
}

std::string check_swa(const PlanScenario& s, unsigned inv) {
  Outcome want;
  if (s.window < 1 || s.ring_size < s.window) want = error(ErrorCode::kInvalidArgument, "window/ring");
  for (const SeqMeta& q : s.seqs)
    if (!want.code && (q.seqlen_q < 0 || q.seqlen_k < q.seqlen_q || q.swa_valid_start < 0 || q.state_id < 0))
      want = error(ErrorCode::kInvalidArgument, "sequence arguments");
  LoadPlan plan;
  const Outcome got = capture([&] { plan = build_swa_plan(s.seqs, s.window, s.ring_size); });
  if (want.code != got.code) return "build_swa_plan: expected: " + outcome(want) + "; got: " + outcome(got) + "\n";
  if (got.code) return "";
  if (inv & kPlanMatchesReference)
    if (auto bad = rows_match(plan, s.ring_size, ref::swa_plan_rows(s.seqs, s.window, s.ring_size)); !bad.empty())
      return "SWA " + bad;
  if (inv & kPlanRowStarts)
    if (auto bad = check_row_starts(plan, s.seqs.size(), [&](size_t) { return int64_t{s.window}; }); !bad.empty())
      return "SWA plan: " + bad;
  if (!(inv & kPlanSegmentCounts)) return "";
  int64_t pieces = 0;
  for (const SeqMeta& q : s.seqs) pieces += swa_pieces(q, s.window, s.ring_size);
  if (static_cast<int64_t>(plan.segments.size()) != pieces)
    return "the SWA plan has " + str(static_cast<int64_t>(plan.segments.size())) + " segments, SPEC §5.3 gives " +
           str(pieces) + " (a zero fill and one ring piece, two across the wrap, per sequence): " +
           show_segments(plan.segments) + "\n";
  for (size_t i = 0; i + 1 < plan.row_starts.size(); ++i) {
    int count = 0;
    for (const LoadSegment& g : plan.segments)
      count += g.dst_offset >= plan.row_starts[i] && g.dst_offset < plan.row_starts[i + 1];
    if (count > 3)
      return "SWA plan: sequence " + str(static_cast<int64_t>(i)) + " has " + str(count) +
             " segments (at most 3): " + show_segments(plan.segments) + "\n";
  }
  return "";
}

}  // namespace

std::string check_batch_plan(const PlanScenario& s, unsigned invariants) {
  return s.mode == PlanScenario::Mode::kCompressed ? check_compressed(s, invariants) : check_swa(s, invariants);
}

}  // namespace kvcheck::props
