// plan target (SPEC §5.3): host load plans. A sequence of BlockLoadPlanBuilder appends,
// or one build_compressed_plan / build_swa_plan call, against the per-row reference
// (reference/load_plan.h) and the SPEC [decided] error rules:
//  - each append either throws the expected ErrorCode and leaves the builder unchanged,
//    or appends the expected number of segments at dst = the running total_k;
//  - the final plan expands (ref::expand_segments: each segment inside one block, zero
//    fill only from block -1, destinations disjoint and covering [0, total_k)) to
//    exactly the reference rows; total_k = sum of lengths;
//  - SWA: exactly `window` rows and at most three segments per sequence; compressed:
//    max(seqlen_k/ratio, 1) rows per sequence; row_starts consistent.
// The backend is not involved (host code); it is accepted for the common signature.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <climits>

#include "fuzzers/checks.h"
#include "fuzzers/decoders.h"
#include "impl/load_plan.h"
#include "reference/load_plan.h"

namespace kvcheck::fuzz {
namespace {

constexpr int64_t kMaxModelRows = 1 << 16;  // above: arithmetic checks only

std::string str(int64_t v) { return std::to_string(v); }

std::string show_segments(std::span<const LoadSegment> segs, size_t max_items = 12) {
  std::string o;
  for (size_t i = 0; i < segs.size() && i < max_items; ++i)
    o += "[" + str(segs[i].src_block_id) + ", " + str(segs[i].src_begin) + ", " +
         str(segs[i].src_end) + ", " + str(segs[i].dst_offset) + "] ";
  if (segs.size() > max_items) o += "... (" + str(static_cast<int64_t>(segs.size())) + ")";
  return o;
}

std::string diff_rows(const std::vector<ref::PlanRow>& want, const std::vector<ref::PlanRow>& got) {
  if (want.size() != got.size())
    return "reference has " + str(static_cast<int64_t>(want.size())) + " rows, plan has " +
           str(static_cast<int64_t>(got.size())) + "\n";
  for (size_t r = 0; r < want.size(); ++r)
    if (want[r] != got[r])
      return "row " + str(static_cast<int64_t>(r)) + ": expected (reference) " +
             ref::to_string(want[r]) + ", actual " + ref::to_string(got[r]) + "\n";
  return "";
}

// Segment-level invariants every plan has, cheap enough for huge block sizes:
// inside one block, zero fill from block -1 at offset 0, dst = running sum (rows are
// chronological, SPEC §5.3 [decided]), total_k = sum of lengths.
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

// What an append must do (SPEC §5.3 [decided] rules): the error, or the rows it adds
// (when `rows` is given) and its segment count.
struct Expected {
  Outcome outcome;
  int64_t length = 0;
  int64_t pieces = 0;
};

Outcome error(ErrorCode c, std::string m) { return {c, std::move(m)}; }

// "throws kRangeOutOfTable (message)" / "returns": both the code and the message.
std::string outcome(const Outcome& o) {
  if (!o.code) return "returns";
  return "throws " + std::string(to_string(*o.code)) + " (" + o.message + ")";
}

Expected expect_append(const PlanOp& op, int32_t bs, int32_t total_before,
                       std::vector<ref::PlanRow>* rows) {
  Expected e;
  switch (op.kind) {
    case PlanOp::Kind::kSegment:
      if (op.a < -1) return {error(ErrorCode::kInvalidArgument, "block < -1"), 0, 0};
      if (op.b < 0 || op.b > op.c || op.c > bs)
        return {error(ErrorCode::kSegmentRangeInvalid, "range outside the block"), 0, 0};
      e.length = op.c - op.b;
      e.pieces = 1;
      if (rows)
        for (int32_t t = op.b; t < op.c; ++t) rows->push_back({op.a, op.a == -1 ? 0 : t});
      break;
    case PlanOp::Kind::kZeroFill:
      if (op.a < 0) return {error(ErrorCode::kInvalidArgument, "negative zero fill"), 0, 0};
      e.length = op.a;
      e.pieces = (int64_t{op.a} + bs - 1) / bs;
      if (rows) rows->insert(rows->end(), static_cast<size_t>(op.a), ref::PlanRow{-1, 0});
      break;
    case PlanOp::Kind::kPaged: {
      if (op.b < 0 || op.b > op.c) return {error(ErrorCode::kInvalidArgument, "bad token range"), 0, 0};
      e.length = op.c - op.b;
      if (op.b < op.c) {
        const int64_t first = op.b / bs, last = (int64_t{op.c} - 1) / bs;
        e.pieces = last - first + 1;
        if (rows) {  // the reference throws kRangeOutOfTable itself
          Outcome r = capture([&] {
            const auto add = ref::paged_range_rows(op.table, bs, op.b, op.c);
            rows->insert(rows->end(), add.begin(), add.end());
          });
          if (r.code) return {r, 0, 0};
        } else {
          for (int64_t i = first; i <= last; ++i)
            if (i >= static_cast<int64_t>(op.table.size()) || op.table[static_cast<size_t>(i)] < 0)
              return {error(ErrorCode::kRangeOutOfTable, "block_table[" + str(i) + "] missing"), 0, 0};
        }
      }
      break;
    }
    case PlanOp::Kind::kRing:
      if (op.a < 0) return {error(ErrorCode::kInvalidArgument, "state_id < 0"), 0, 0};
      if (op.b < 0 || op.b > op.c) return {error(ErrorCode::kInvalidArgument, "bad ring range"), 0, 0};
      if (int64_t{op.c} - op.b > bs)
        return {error(ErrorCode::kRangeOutOfTable, "ring range longer than the ring"), 0, 0};
      e.length = op.c - op.b;
      e.pieces = e.length == 0 ? 0 : (op.b % bs + e.length > bs ? 2 : 1);
      if (rows) {
        const auto add = ref::ring_range_rows(op.a, bs, op.b, op.c);
        rows->insert(rows->end(), add.begin(), add.end());
      }
      break;
  }
  if (total_before + e.length > INT32_MAX)
    return {error(ErrorCode::kInvalidArgument, "total_k past INT32_MAX"), 0, 0};
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

std::string check_builder(const PlanScenario& s) {
  const Outcome ctor = capture([&] { BlockLoadPlanBuilder probe(s.block_size); });
  const std::optional<ErrorCode> want_ctor =
      s.block_size < 1 ? std::optional(ErrorCode::kInvalidArgument) : std::nullopt;
  if (ctor.code != want_ctor)
    return "BlockLoadPlanBuilder(" + str(s.block_size) + "): expected " +
           (want_ctor ? std::string(to_string(*want_ctor)) : std::string("success")) + ", got " +
           outcome(ctor) + "\n";
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
    // Row model only for small appends (a huge zero fill or range is checked by count).
    const bool small = bs < (1 << 20) && (op.kind != PlanOp::Kind::kZeroFill || op.a < kMaxModelRows);
    model = model && small;
    const Expected want = expect_append(op, bs, total_before, model ? &rows : nullptr);
    const Outcome got = capture([&] { apply(b, op); });
    if (want.outcome.code != got.code)
      return who + "expected: " + outcome(want.outcome) + " (SPEC §5.3); builder " + outcome(got) + "\n";
    if (got.code) {
      if (b.segments() != before || b.total_k() != total_before)
        return who + "threw (" + got.message + ") but changed the builder: total_k " +
               str(total_before) + " -> " + str(b.total_k()) + ", segments " +
               str(static_cast<int64_t>(before.size())) + " -> " +
               str(static_cast<int64_t>(b.segments().size())) + "\n";
      continue;
    }
    const auto& segs = b.segments();
    if (!std::equal(before.begin(), before.end(), segs.begin()))
      return who + "changed earlier segments\n";
    const int64_t added = static_cast<int64_t>(segs.size() - before.size());
    if (added != want.pieces)
      return who + "appended " + str(added) + " segments, expected " + str(want.pieces) + ": " +
             show_segments(std::span(segs).subspan(before.size())) + "\n";
    if (int64_t{b.total_k()} != total_before + want.length)
      return who + "total_k " + str(b.total_k()) + ", expected " + str(total_before + want.length) + "\n";
    if (model) expected.insert(expected.end(), rows.begin(), rows.end());
  }
  const LoadPlan plan = b.finish();
  if (auto bad = arithmetic_invariants(plan.segments, plan.total_k, bs); !bad.empty())
    return "plan invariant: " + bad;
  if (!model) return "";
  std::vector<ref::PlanRow> got;
  if (auto bad = ref::expand_segments(plan.segments, plan.total_k, bs, got); !bad.empty())
    return "plan invariant (ref::expand_segments): " + bad + "\n";
  if (auto d = diff_rows(expected, got); !d.empty()) return "builder rows differ: " + d;
  return "";
}

// row_starts: num_seqs+1 entries from 0 to total_k, sequence i spanning `rows(i)`.
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
             str(int64_t{plan.row_starts[i + 1]} - plan.row_starts[i]) + " rows, expected " +
             str(rows_of(i)) + "\n";
  return "";
}

std::string check_compressed(const PlanScenario& s) {
  // Expected outcome: argument rules, then per sequence in order seqlen_k >= 0 and
  // the reference's own kRangeOutOfTable for its table.
  Outcome want;
  if (s.block_size < 1 || s.ratio < 1 || s.block_size % s.ratio != 0) {
    want = error(ErrorCode::kInvalidArgument, "block_size/ratio");
  } else {
    for (const SeqMeta& q : s.seqs) {
      if (q.seqlen_k < 0) {
        want = error(ErrorCode::kInvalidArgument, "seqlen_k < 0");
        break;
      }
      want = capture([&] { ref::compressed_plan_rows({&q, 1}, s.block_size, s.ratio); });
      if (want.code) break;
    }
  }
  LoadPlan plan;
  const Outcome got = capture([&] { plan = build_compressed_plan(s.seqs, s.block_size, s.ratio); });
  if (want.code != got.code)
    return "build_compressed_plan: expected: " + outcome(want) + "; got: " + outcome(got) + "\n";
  if (got.code) return "";
  const int32_t per_block = s.block_size / s.ratio;
  if (auto bad = arithmetic_invariants(plan.segments, plan.total_k, per_block); !bad.empty())
    return "compressed plan invariant: " + bad;
  std::vector<ref::PlanRow> rows;
  if (auto bad = ref::expand_segments(plan.segments, plan.total_k, per_block, rows); !bad.empty())
    return "compressed plan invariant (ref::expand_segments): " + bad + "\n";
  if (auto d = diff_rows(ref::compressed_plan_rows(s.seqs, s.block_size, s.ratio), rows); !d.empty())
    return "compressed plan rows differ: " + d;
  return check_row_starts(plan, s.seqs.size(), [&](size_t i) {
    return std::max<int64_t>(s.seqs[i].seqlen_k / s.ratio, 1);
  });
}

std::string check_swa(const PlanScenario& s) {
  Outcome want;
  if (s.window < 1 || s.ring_size < s.window) want = error(ErrorCode::kInvalidArgument, "window/ring");
  for (const SeqMeta& q : s.seqs)
    if (!want.code && (q.seqlen_q < 0 || q.seqlen_k < q.seqlen_q || q.swa_valid_start < 0 || q.state_id < 0))
      want = error(ErrorCode::kInvalidArgument, "sequence arguments");
  LoadPlan plan;
  const Outcome got = capture([&] { plan = build_swa_plan(s.seqs, s.window, s.ring_size); });
  if (want.code != got.code) return "build_swa_plan: expected: " + outcome(want) + "; got: " + outcome(got) + "\n";
  if (got.code) return "";
  if (auto bad = arithmetic_invariants(plan.segments, plan.total_k, s.ring_size); !bad.empty())
    return "SWA plan invariant: " + bad;
  std::vector<ref::PlanRow> rows;
  if (auto bad = ref::expand_segments(plan.segments, plan.total_k, s.ring_size, rows); !bad.empty())
    return "SWA plan invariant (ref::expand_segments): " + bad + "\n";
  if (auto d = diff_rows(ref::swa_plan_rows(s.seqs, s.window, s.ring_size), rows); !d.empty())
    return "SWA plan rows differ: " + d;
  if (auto bad = check_row_starts(plan, s.seqs.size(), [&](size_t) { return int64_t{s.window}; });
      !bad.empty())
    return "SWA plan: " + bad;
  for (size_t i = 0; i < s.seqs.size(); ++i) {
    int count = 0;
    for (const LoadSegment& g : plan.segments)
      if (g.dst_offset >= plan.row_starts[i] && g.dst_offset < plan.row_starts[i + 1]) ++count;
    if (count > 3)
      return "SWA plan: sequence " + str(static_cast<int64_t>(i)) + " has " + str(count) +
             " segments (at most 3): " + show_segments(plan.segments) + "\n";
  }
  return "";
}

}  // namespace

CheckResult check_plan(const uint8_t* data, size_t size, const Backend& /*backend*/) {
  FuzzedDataProvider fdp(data, size);
  const PlanScenario s = decode_plan(fdp);
  CheckResult result{describe(s), "", ""};
  switch (s.mode) {
    case PlanScenario::Mode::kBuilder: result.failure = check_builder(s); break;
    case PlanScenario::Mode::kCompressed: result.failure = check_compressed(s); break;
    case PlanScenario::Mode::kSwa: result.failure = check_swa(s); break;
  }
  if (!result.failure.empty()) result.failure = "op=plan (host code)\n" + result.failure;
  return result;
}

}  // namespace kvcheck::fuzz
