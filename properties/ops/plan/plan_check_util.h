// What the two files of the plan check (plan_check.cpp: the builder; plan_batch_check.cpp:
// compressed and SWA plans) share: segment printing, row comparison, segment invariants.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "impl/load_plan.h"
#include "properties/harness.h"
#include "reference/load_plan.h"

namespace kvcheck::props::plan_check {

inline std::string str(int64_t v) { return std::to_string(v); }
/// "[block, begin, end, dst] ..." of at most max_items segments.
std::string show_segments(std::span<const LoadSegment> segs, size_t max_items = 12);
/// "" when equal, else the first differing row.
std::string diff_rows(const std::vector<ref::PlanRow>& want, const std::vector<ref::PlanRow>& got);
/// Segment-level invariants of every plan, cheap enough for huge block sizes: inside one
/// block, zero fill from block -1 at offset 0, dst = running sum (rows are chronological,
/// SPEC §5.3 [decided]), total_k = sum of lengths.
std::string arithmetic_invariants(std::span<const LoadSegment> segs, int32_t total_k, int32_t bs);
/// "returns" / "throws <code> (<message>)".
std::string outcome(const Outcome& o);
/// "" when the plan expands (ref::expand_segments) to `want`, else why not.
std::string rows_match(const LoadPlan& plan, int32_t bs, const std::vector<ref::PlanRow>& want);

}  // namespace kvcheck::props::plan_check
