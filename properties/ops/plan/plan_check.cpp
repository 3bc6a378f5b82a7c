// The load plans' one check (SPEC §5.3), builder part: each append against the SPEC
// [decided] error rules and the per-row reference (reference/load_plan.h); compressed and
// SWA plans in plan_batch_check.cpp. See metadata_checks.h for the invariants.
#include <algorithm>
#include <climits>

#include "properties/metadata_checks.h"
#include "properties/ops/plan/plan_check_util.h"

namespace kvcheck::props {
namespace plan_check {

std::string show_segments(std::span<const LoadSegment> segs, size_t max_items) {
  std::string o;
  for (size_t i = 0; i < segs.size() && i < max_items; ++i)
    o += "[" + str(segs[i].src_block_id) + ", " + str(segs[i].src_begin) + ", " + str(segs[i].src_end) + ", " +
         str(segs[i].dst_offset) + "] ";
  if (segs.size() > max_items) o += "... (" + str(static_cast<int64_t>(segs.size())) + ")";
  return o;
}

std::string diff_rows(const std::vector<ref::PlanRow>& want, const std::vector<ref::PlanRow>& got) {
  if (want.size() != got.size())
    return "reference has " + str(static_cast<int64_t>(want.size())) + " rows, plan has " +
           str(static_cast<int64_t>(got.size())) + "\n";
  for (size_t r = 0; r < want.size(); ++r)
    if (want[r] != got[r])
      return "row " + str(static_cast<int64_t>(r)) + ": expected (reference) " + ref::to_string(want[r]) +
             ", actual " + ref::to_string(got[r]) + "\n";
  return "";
}

std::string arithmetic_invariants(std::span<const LoadSegment> segs, int32_t total_k, int32_t bs) {
  int64_t sum = 0;
  for (size_t i = 0; i < segs.size(); ++i) {
    const LoadSegment& g = segs[i];
    const std::string who = "segment " + str(static_cast<int64_t>(i)) + " " + show_segments({&g, 1});
    if (g.src_block_id < -1) return who + "has a block below -1\n";
    if (g.src_begin < 0 || g.src_begin > g.src_end || g.src_end > bs)
      return who + "is not inside one block of " + str(bs) + " tokens\n";
    if (g.src_block_id == -1 && g.src_begin != 0) return who + "zero fill not at offset 0\n";
    if (g.dst_offset != sum) return who + "dst_offset is not the running total " + str(sum) + "\n";
    sum += g.src_end - g.src_begin;
  }
  if (sum != total_k) return "total_k " + str(total_k) + " != sum of lengths " + str(sum) + "\n";
  return "";
}

std::string outcome(const Outcome& o) {
  return o.code ? "throws " + std::string(to_string(*o.code)) + " (" + o.message + ")" : "returns";
}

std::string rows_match(const LoadPlan& plan, int32_t bs, const std::vector<ref::PlanRow>& want) {
  if (auto bad = arithmetic_invariants(plan.segments, plan.total_k, bs); !bad.empty()) return "plan invariant: " + bad;
  std::vector<ref::PlanRow> got;
  if (auto bad = ref::expand_segments(plan.segments, plan.total_k, bs, got); !bad.empty())
    return "plan invariant (ref::expand_segments): " + bad + "\n";
  if (auto d = diff_rows(want, got); !d.empty()) return "rows differ: " + d;
  return "";
}

}  // namespace plan_check

std::string check_batch_plan(const PlanScenario& s, unsigned invariants);  // plan_batch_check.cpp

namespace {

using namespace plan_check;
constexpr int64_t kMaxModelRows = 1 << 16;  // above: arithmetic checks only

// What an append must do (SPEC §5.3 [decided] rules): the error, or its length and
// segment count (and, given `rows`, the rows it adds).
struct Expected {
  Outcome outcome;
  int64_t length = 0, pieces = 0;
};
Expected error(ErrorCode c, std::string m) { return {{c, std::move(m)}, 0, 0}; }

Expected expect_append(const PlanOp& op, int32_t bs, int32_t total_before, std::vector<ref::PlanRow>* rows) {
  Expected e;
  switch (op.kind) {
    case PlanOp::Kind::kSegment:
      if (op.a < -1) return error(ErrorCode::kInvalidArgument, "block < -1");
      if (op.b < 0 || op.b > op.c || op.c > bs) return error(ErrorCode::kSegmentRangeInvalid, "range outside the block");
      e.length = op.c - op.b;
      e.pieces = 1;
      if (rows)
        for (int32_t t = op.b; t < op.c; ++t) rows->push_back({op.a, op.a == -1 ? 0 : t});
      break;
    case PlanOp::Kind::kZeroFill:
      if (op.a < 0) return error(ErrorCode::kInvalidArgument, "negative zero fill");
      e.length = op.a;
      e.pieces = (int64_t{op.a} + bs - 1) / bs;
      if (rows) rows->insert(rows->end(), static_cast<size_t>(op.a), ref::PlanRow{-1, 0});
      break;
    case PlanOp::Kind::kPaged:
      if (op.b < 0 || op.b > op.c) return error(ErrorCode::kInvalidArgument, "bad token range");
      e.length = op.c - op.b;
      if (op.b == op.c) break;
      e.pieces = (int64_t{op.c} - 1) / bs - op.b / bs + 1;  // one segment per block crossed
      if (rows) {  // the reference throws kRangeOutOfTable itself
        const Outcome r = capture([&] {
          const auto add = ref::paged_range_rows(op.table, bs, op.b, op.c);
          rows->insert(rows->end(), add.begin(), add.end());
        });
        if (r.code) return {r, 0, 0};
      } else {
        for (int64_t i = op.b / bs; i <= (int64_t{op.c} - 1) / bs; ++i)
          if (i >= static_cast<int64_t>(op.table.size()) || op.table[static_cast<size_t>(i)] < 0)
            return error(ErrorCode::kRangeOutOfTable, "block_table[" + str(i) + "] missing");
      }
      break;
    case PlanOp::Kind::kRing:
      if (op.a < 0) return error(ErrorCode::kInvalidArgument, "state_id < 0");
      if (op.b < 0 || op.b > op.c) return error(ErrorCode::kInvalidArgument, "bad ring range");
      if (int64_t{op.c} - op.b > bs) return error(ErrorCode::kRangeOutOfTable, "ring range longer than the ring");
      e.length = op.c - op.b;
      e.pieces = e.length == 0 ? 0 : (op.b % bs + e.length > bs ? 2 : 1);  // two across the wrap point
      if (rows) {
        const auto add = ref::ring_range_rows(op.a, bs, op.b, op.c);
        rows->insert(rows->end(), add.begin(), add.end());
      }
      break;
  }
  if (total_before + e.length > INT32_MAX) return error(ErrorCode::kInvalidArgument, "total_k past INT32_MAX");
  return e;
}

void apply(BlockLoadPlanBuilder& b, const PlanOp& op) {
  switch (op.kind) {
    case PlanOp::Kind::kSegment: b.append_segment(op.a, op.b, op.c); break;
    case PlanOp::Kind::kZeroFill: b.append_zero_fill(op.a); break;
    case PlanOp::Kind::kPaged: b.append_paged_range(op.table, op.b, op.c); break;
    case PlanOp::Kind::kRing: b.append_ring_range(op.a, op.b, op.c); break;
  }
}

std::string check_builder(const PlanScenario& s, unsigned inv) {
  const Outcome ctor = capture([&] { BlockLoadPlanBuilder probe(s.block_size); });
  if (ctor.code != (s.block_size < 1 ? std::optional(ErrorCode::kInvalidArgument) : std::nullopt))
    return "BlockLoadPlanBuilder(" + str(s.block_size) + "): expected " +
           (s.block_size < 1 ? "invalid-argument" : "success") + ", got " + outcome(ctor) + "\n";
  if (ctor.code) return "";
  const int32_t bs = s.block_size;
  BlockLoadPlanBuilder b(bs);
  bool model = true;  // per-row reference while the plan stays small
  std::vector<ref::PlanRow> expected;
  for (size_t i = 0; i < s.ops.size(); ++i) {
    const PlanOp& op = s.ops[i];
    const std::string who = "append " + str(static_cast<int64_t>(i)) + ": ";
    const std::vector<LoadSegment> before = b.segments();
    const int32_t total_before = b.total_k();
    std::vector<ref::PlanRow> rows;
    model = model && bs < (1 << 20) && (op.kind != PlanOp::Kind::kZeroFill || op.a < kMaxModelRows);
    const Expected want = expect_append(op, bs, total_before, model ? &rows : nullptr);
    if (op.code && want.outcome.code != op.code)  // the builder's fault and the rules must agree
      return who + "its fault (" + op.note + ") must throw " + std::string(to_string(*op.code)) +
             ", the SPEC rules say it " + outcome(want.outcome) + "\n";
    const Outcome got = capture([&] { apply(b, op); });
    if (want.outcome.code != got.code)
      return who + "expected: " + outcome(want.outcome) + " (SPEC §5.3); builder " + outcome(got) + "\n";
    if (got.code) {
      if ((inv & kPlanErrorChangesNothing) && (b.segments() != before || b.total_k() != total_before))
        return who + "threw (" + got.message + ") but changed the builder: total_k " + str(total_before) + " -> " +
               str(b.total_k()) + ", segments " + str(static_cast<int64_t>(before.size())) + " -> " +
               str(static_cast<int64_t>(b.segments().size())) + "\n";
      continue;
    }
    const auto& segs = b.segments();
    const int64_t added = static_cast<int64_t>(segs.size()) - static_cast<int64_t>(before.size());
    if ((inv & kPlanSegmentCounts) && (added < 0 || !std::equal(before.begin(), before.end(), segs.begin())))
      return who + "changed earlier segments\n";
    if ((inv & kPlanSegmentCounts) && added != want.pieces)
      return who + "appended " + str(added) + " segments, SPEC §5.3 gives " + str(want.pieces) + ": " +
             show_segments(std::span(segs).subspan(before.size())) + "\n";
    if ((inv & kPlanMatchesReference) && int64_t{b.total_k()} != total_before + want.length)
      return who + "total_k " + str(b.total_k()) + ", expected " + str(total_before + want.length) + "\n";
    if (model) expected.insert(expected.end(), rows.begin(), rows.end());
  }
  if (!(inv & kPlanMatchesReference)) return "";
  const LoadPlan plan = b.finish();
  if (!model) {
    const std::string bad = arithmetic_invariants(plan.segments, plan.total_k, bs);
    return bad.empty() ? "" : "plan invariant: " + bad;
  }
  const std::string bad = rows_match(plan, bs, expected);
  return bad.empty() ? "" : "builder " + bad;
}

}  // namespace

Verdict check_plan(const PlanScenario& s, unsigned invariants) {
  std::string fail = s.mode == PlanScenario::Mode::kBuilder ? check_builder(s, invariants)
                                                             : check_batch_plan(s, invariants);
  if (!fail.empty()) fail = "op=plan (host code)\n" + fail;
  return {fail, ""};
}

}  // namespace kvcheck::props
