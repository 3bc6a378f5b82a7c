// Load-plan properties (SPEC §5.3): host code in impl/load_plan against the per-row
// model in reference/load_plan.
#include <algorithm>
#include <functional>

#include <rapidcheck.h>

#include "impl/error.h"
#include "impl/load_plan.h"
#include "properties/class_bounds.h"
#include "properties/classes.h"
#include "properties/gen/metadata_gen.h"
#include "properties/registry.h"
#include "reference/load_plan.h"

namespace kvcheck::props {
namespace {

// "" when equal, else the first differing row.
std::string diff_rows(const std::vector<ref::PlanRow>& expected,
                      const std::vector<ref::PlanRow>& actual) {
  if (expected.size() != actual.size())
    return "expected " + std::to_string(expected.size()) + " rows, plan has " +
           std::to_string(actual.size());
  for (size_t r = 0; r < expected.size(); ++r)
    if (expected[r] != actual[r])
      return "row " + std::to_string(r) + ": expected " + ref::to_string(expected[r]) +
             ", actual " + ref::to_string(actual[r]);
  return "";
}

// Expands a production plan (checking the SPEC §5.2/§5.3 invariants on the way).
std::vector<ref::PlanRow> rows_of(const LoadPlan& plan, int32_t block_size) {
  std::vector<ref::PlanRow> rows;
  const std::string bad = ref::expand_segments(plan.segments, plan.total_k, block_size, rows);
  if (!bad.empty()) RC_FAIL("plan invariant broken: " + bad);
  return rows;
}

// A random sequence of appends applied to the builder and to the per-row model.
void prop_builder_appends_match_reference() {
  const int32_t bs = *gen::block_size();
  BlockLoadPlanBuilder builder(bs);
  std::vector<ref::PlanRow> expected;
  // Every kind of append at every case size (inRange would stay at 0 for small sizes).
  const int num_ops = *rc::gen::weightedOneOf<int>({{1, rc::gen::just(0)}, {8, rc::gen::inRange(1, 7)}});
  for (int op = 0; op < num_ops; ++op) {
    switch (*rc::gen::element(0, 1, 2, 3, 3)) {
      case 0: {  // append_segment
        const int32_t block = *rc::gen::inRange(-1, 50);
        const int32_t begin = block == -1 ? 0 : *rc::gen::inRange(0, bs + 1);
        const int32_t end = *rc::gen::inRange(begin, bs + 1);
        builder.append_segment(block, begin, end);
        for (int32_t t = begin; t < end; ++t) expected.push_back({block, block == -1 ? 0 : t});
        break;
      }
      case 1: {  // append_zero_fill, sometimes several blocks long
        const int32_t n = *rc::gen::inRange(0, 3 * bs + 2);
        const size_t before = builder.segments().size();
        builder.append_zero_fill(n);
        RC_ASSERT(builder.segments().size() - before == static_cast<size_t>(gen::blocks_for(n, bs)));
        expected.insert(expected.end(), static_cast<size_t>(n), ref::PlanRow{-1, 0});
        break;
      }
      case 2: {  // append_paged_range over a shuffled table
        const int32_t tokens = *rc::gen::inRange(0, 4 * bs + 3);
        const auto t = *gen::block_tables({gen::blocks_for(tokens, bs)}, 2);
        const int32_t begin = *rc::gen::inRange(0, tokens + 1);
        const size_t before = builder.segments().size();
        builder.append_paged_range(t.tables[0], begin, tokens);
        // One segment per block crossed (SPEC §5.3), none for an empty range.
        const size_t blocks = begin == tokens ? 0 : static_cast<size_t>((tokens - 1) / bs - begin / bs + 1);
        if (builder.segments().size() - before != blocks)
          RC_FAIL("append_paged_range(" + std::to_string(begin) + ", " + std::to_string(tokens) + ") gave " +
                  std::to_string(builder.segments().size() - before) + " segments, crosses " +
                  std::to_string(blocks) + " blocks");
        const auto rows = ref::paged_range_rows(t.tables[0], bs, begin, tokens);
        expected.insert(expected.end(), rows.begin(), rows.end());
        break;
      }
      default: {  // append_ring_range: wrapping or not, and the edges of the wrap point
        const int32_t state = *rc::gen::inRange(0, 8);
        const int32_t lap = *rc::gen::inRange(0, 4);  // ring positions repeat every bs tokens
        int32_t first = 0, len = 0;
        switch (*rc::gen::element(0, 0, 1, 1, 2, 2, 3)) {
          case 0:  // anywhere
            first = *rc::gen::inRange(0, bs);
            len = *rc::gen::inRange(0, bs + 1);
            break;
          case 1:  // ends exactly at the wrap point: the second piece would be empty
            first = *rc::gen::inRange(0, bs);
            len = bs - first;
            break;
          case 2:  // wraps by one token (a ring of 1 cannot)
            first = bs > 1 ? *rc::gen::inRange(1, bs) : 0;
            len = bs > 1 ? bs - first + 1 : 1;
            break;
          default:  // empty
            first = *rc::gen::inRange(0, bs);
        }
        const int32_t begin = lap * bs + first;
        const size_t before = builder.segments().size();
        builder.append_ring_range(state, begin, begin + len);
        // One segment, two when the range crosses the wrap point, none when empty (SPEC §5.3).
        const size_t pieces = len == 0 ? 0 : first + len <= bs ? 1 : 2;
        if (len > 0 && first + len == bs) note_class("ring range ends at the wrap point");
        if (first + len > bs) note_class("ring range wraps");
        if (first + len == bs + 1) note_class("ring range wraps by one token");
        if (builder.segments().size() - before != pieces)
          RC_FAIL("append_ring_range(" + std::to_string(begin) + ", " + std::to_string(begin + len) + ") on a ring of " +
                  std::to_string(bs) + " gave " + std::to_string(builder.segments().size() - before) +
                  " segments, must give " + std::to_string(pieces));
        const auto rows = ref::ring_range_rows(state, bs, begin, begin + len);
        expected.insert(expected.end(), rows.begin(), rows.end());
      }
    }
  }
  const LoadPlan plan = builder.finish();
  const std::string msg = diff_rows(expected, rows_of(plan, bs));
  if (!msg.empty()) RC_FAIL(msg);
}

void prop_compressed_plan_matches_reference() {
  const int32_t bs = *gen::block_size();
  // ratio: a divisor of bs (1 and bs included).
  std::vector<int32_t> divisors;
  for (int32_t d = 1; d <= bs; ++d)
    if (bs % d == 0) divisors.push_back(d);
  const int32_t ratio = *rc::gen::elementOf(divisors);
  const int32_t num_seqs = *rc::gen::inRange(0, 5);
  std::vector<SeqMeta> seqs(static_cast<size_t>(num_seqs));
  std::vector<int32_t> need;
  for (SeqMeta& s : seqs) {  // seqlen_k < ratio reachable: n == 0
    s.seqlen_k = *rc::gen::oneOf(rc::gen::inRange(0, ratio + 1), rc::gen::inRange(0, 5 * bs + 1));
    need.push_back(gen::blocks_for(s.seqlen_k / ratio, bs / ratio));
  }
  const auto t = *gen::block_tables(need, 2);
  for (size_t i = 0; i < seqs.size(); ++i) seqs[i].block_table = t.tables[i];

  const LoadPlan plan = build_compressed_plan(seqs, bs, ratio);
  const std::string msg = diff_rows(ref::compressed_plan_rows(seqs, bs, ratio),
                                    rows_of(plan, bs / ratio));
  if (!msg.empty()) RC_FAIL(msg);
  RC_ASSERT(plan.row_starts.size() == seqs.size() + 1);
  for (size_t i = 0; i < seqs.size(); ++i) {
    const int32_t n = std::max(seqs[i].seqlen_k / ratio, 1);
    RC_ASSERT(plan.row_starts[i + 1] - plan.row_starts[i] == n);
  }
}

void prop_swa_plan_matches_reference() {
  const auto b = *gen::swa_batch();
  const LoadPlan plan = build_swa_plan(b.seqs, b.window, b.ring_size);
  const std::string msg = diff_rows(ref::swa_plan_rows(b.seqs, b.window, b.ring_size),
                                    rows_of(plan, b.ring_size));
  if (!msg.empty()) RC_FAIL(msg);
  RC_ASSERT(plan.total_k == static_cast<int32_t>(b.seqs.size()) * b.window);
  // Exactly the pieces SPEC §5.3 gives: a zero fill of at most window <= ring_size rows
  // (one piece), then the ring range (one piece, two across the wrap point).
  size_t pieces = 0;
  if (b.seqs.empty()) note_class("no sequence");
  for (const SeqMeta& q : b.seqs) {
    const int64_t history_end = q.seqlen_k - q.seqlen_q, history_begin = history_end - b.window;
    const int64_t pad = std::clamp<int64_t>(q.swa_valid_start - history_begin, 0, b.window);
    const int64_t begin = history_begin + pad, len = history_end - begin;
    const int64_t first = begin % b.ring_size;
    pieces += (pad > 0) + (len > 0) + (len > 0 && first + len > b.ring_size);
    if (len > 0 && first + len == b.ring_size) note_class("ring range ends at the wrap point");
    if (len > 0 && first + len > b.ring_size) note_class("ring range wraps");
    if (pad > 0) note_class("zero pad");
  }
  if (plan.segments.size() != pieces)
    RC_FAIL("the SWA plan has " + std::to_string(plan.segments.size()) + " segments, SPEC §5.3 gives " +
            std::to_string(pieces) + " (a zero fill and one ring piece, two across the wrap, per sequence)");
  // Segments per sequence: dst ranges inside [row_starts[i], row_starts[i+1]).
  for (size_t i = 0; i < b.seqs.size(); ++i) {
    RC_ASSERT(plan.row_starts[i + 1] - plan.row_starts[i] == b.window);
    int count = 0;
    for (const LoadSegment& s : plan.segments)
      if (s.dst_offset >= plan.row_starts[i] && s.dst_offset < plan.row_starts[i + 1]) ++count;
    if (count > 3) RC_FAIL("sequence " + std::to_string(i) + " has " + std::to_string(count) +
                           " SWA segments (at most 3)");
  }
}

// A throwing append leaves the builder exactly as it was.
void prop_failed_append_changes_nothing() {
  const int32_t bs = *gen::block_size();
  BlockLoadPlanBuilder builder(bs);
  builder.append_zero_fill(*rc::gen::inRange(0, 2 * bs));
  builder.append_ring_range(0, 0, *rc::gen::inRange(0, bs + 1));
  const auto before = builder.segments();
  const int32_t total_before = builder.total_k();
  const int32_t tokens = *rc::gen::inRange(1, 3 * bs + 1);
  const auto t = *gen::block_tables({gen::blocks_for(tokens, bs)}, 0);
  std::vector<int32_t> table = t.tables[0];
  ErrorCode want = ErrorCode::kInvalidArgument;
  std::function<void()> bad;
  switch (*rc::gen::inRange(0, 7)) {
    case 0:  // range past the table
      want = ErrorCode::kRangeOutOfTable;
      bad = [&] { builder.append_paged_range(table, 0, static_cast<int32_t>(table.size()) * bs + 1); };
      break;
    case 1: {  // a -1 entry inside the range (its segments before it are not kept)
      want = ErrorCode::kRangeOutOfTable;
      table.back() = -1;
      bad = [&] { builder.append_paged_range(table, 0, tokens); };
      break;
    }
    case 2:  // ring range longer than the ring
      want = ErrorCode::kRangeOutOfTable;
      bad = [&] { builder.append_ring_range(1, 5, 5 + bs + *rc::gen::inRange(1, 4)); };
      break;
    case 3:  // negative zero fill
      bad = [&] { builder.append_zero_fill(-*rc::gen::inRange(1, 10)); };
      break;
    case 4:  // segment past its block
      want = ErrorCode::kSegmentRangeInvalid;
      bad = [&] { builder.append_segment(0, 0, bs + 1); };
      break;
    case 5:  // reversed range
      bad = [&] { builder.append_paged_range(table, 1, 0); };
      break;
    default:  // reversed ring range
      bad = [&] { builder.append_ring_range(0, 3, 2); };
  }
  try {
    bad();
    RC_FAIL("no error thrown");
  } catch (const Error& e) {
    RC_ASSERT(e.code() == want);
  }
  RC_ASSERT(builder.total_k() == total_before);
  RC_ASSERT(builder.segments() == before);
}

}  // namespace

void register_plan_properties(Registry& r) {
  auto host = [&r](std::string name, std::string invariant, void (*body)(), std::vector<ClassBound> bounds = {}) {
    r.add({std::move(name), "plan", std::move(invariant), false, [body](const Backend&) { body(); }, {}, nullptr,
           std::move(bounds)});
  };
  host("prop_builder_appends_match_reference",
       "any sequence of appends gives disjoint, in-range, in-block segments whose rows equal "
       "the per-token model and whose total_k is the sum of lengths",
       prop_builder_appends_match_reference, bounds::plan_builder());
  host("prop_compressed_plan_matches_reference",
       "the compressed plan's rows are the compressed tokens of each sequence (one zero row when "
       "seqlen_k < ratio)",
       prop_compressed_plan_matches_reference);
  host("prop_swa_plan_matches_reference",
       "the SWA plan gives every sequence exactly window rows (zero before swa_valid_start, else "
       "its ring slot) in at most three segments",
       prop_swa_plan_matches_reference, bounds::swa_plan());
  host("prop_failed_append_changes_nothing",
       "an append that throws names the right error and leaves the builder unchanged",
       prop_failed_append_changes_nothing);
}

}  // namespace kvcheck::props
