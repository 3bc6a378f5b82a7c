// Properties of load_paged_kv_cache (SPEC §5.2), each stating one invariant.
#include <fmt/format.h>
#include <rapidcheck.h>

#include <climits>
#include <cstring>
#include <vector>

#include "properties/blame.h"
#include "properties/class_bounds.h"
#include "properties/diff.h"
#include "properties/harness.h"
#include "properties/regression.h"
#include "properties/registry.h"

namespace kvcheck::props {
namespace {

// Compares whole buffers, row-stride padding included: "" when equal.
std::string diff_buffers(const LoadScenario& s, const LoadBuffers& expected, const LoadBuffers& actual) {
  std::string d = diff_load_output(s.shape.format, s.out_rows, expected.out, actual.out);
  if (!d.empty()) return d;
  const int64_t offset = expected.out.data - expected.data.data();  // bytes before row 0
  for (size_t i = 0; i < expected.data.size(); ++i)
    if (expected.data[i] != actual.data[i]) {
      const int64_t at = static_cast<int64_t>(i) - offset;
      if (at < 0) return fmt::format("output data byte {} before row 0 (the base is {} bytes in) changed", at, offset);
      return fmt::format("output data byte {} (row {}, byte {} of the row stride, past the row) changed", at,
                         at / expected.out.data_row_stride, at % expected.out.data_row_stride);
    }
  for (size_t i = 0; i < expected.scales.size(); ++i)
    if (expected.scales[i] != actual.scales[i])
      return fmt::format("output scale byte {} (past the scale row) changed", i);
  return "";
}

// Every load property checks one drawn scenario, drawn separately so a failing case
// can be saved as a regression file and replayed (regression.h).
LoadScenario draw_load_scenario() { return *gen_load_scenario(); }

void prop_load_matches_reference(const Backend& b, const LoadScenario& s) {
  const KVCache cache = make_cache(s.shape);
  LoadBuffers expected(s), actual(s);
  const auto ref_err = run_load(nullptr, s, cache, expected);
  const auto err = run_load(&b, s, cache, actual);
  if (ref_err || err)
    RC_FAIL(fmt::format("{}\nvalid plan: reference {}, backend {}", context("load", s.shape, b.name()),
                        show_error(ref_err), show_error(err)));
  const std::string diff = diff_buffers(s, expected, actual);
  if (!diff.empty()) RC_FAIL(context("load", s.shape, b.name()) + "\n" + diff);
  if (const std::string c = cache.canary_report(); !c.empty())
    RC_FAIL(context("load", s.shape, b.name()) + "\nwrote into the " + c);
}

// Output rows each segment writes, and whether from block -1.
std::vector<int> row_sources(const LoadScenario& s) {
  std::vector<int> src(static_cast<size_t>(s.out_rows), 0);  // 0 uncovered, 1 cache, 2 zero fill
  for (size_t i = 0; i + 3 < s.load_segments.size(); i += 4)
    for (int32_t t = s.load_segments[i + 1]; t < s.load_segments[i + 2]; ++t)
      src[static_cast<size_t>(s.load_segments[i + 3] + t - s.load_segments[i + 1])] =
          s.load_segments[i] == -1 ? 2 : 1;
  return src;
}

void prop_load_keeps_uncovered_rows(const Backend& b, const LoadScenario& s) {
  const KVCache cache = make_cache(s.shape);
  LoadBuffers before(s), out(s);
  RC_ASSERT(!run_load(&b, s, cache, out));
  const auto src = row_sources(s);
  for (int64_t r = 0; r < s.out_rows; ++r) {
    if (src[static_cast<size_t>(r)] != 0) continue;
    const int64_t off = r * out.out.data_row_stride, sf_off = r * out.out.scale_row_stride;
    if (std::memcmp(before.out.data + off, out.out.data + off, static_cast<size_t>(out.out.data_row_stride)) != 0 ||
        (out.out.scales && std::memcmp(before.out.scales + sf_off, out.out.scales + sf_off,
                                       static_cast<size_t>(out.out.scale_row_stride)) != 0))
      RC_FAIL(fmt::format("{}\noutput row {} is covered by no segment (total_k {}) but changed",
                          context("load", s.shape, b.name()), r, s.total_k));
  }
}

void prop_load_zero_fill_rows_are_zero(const Backend& b, const LoadScenario& s) {
  const KVCache cache = make_cache(s.shape);
  LoadBuffers out(s);
  RC_ASSERT(!run_load(&b, s, cache, out));
  const auto src = row_sources(s);
  const KVCacheFormat& f = s.shape.format;
  for (int64_t r = 0; r < s.out_rows; ++r) {
    if (src[static_cast<size_t>(r)] != 2) continue;
    for (int64_t i = 0; i < f.load_row_bytes(); ++i)
      if (out.out.data[r * out.out.data_row_stride + i] != 0)
        RC_FAIL(fmt::format("{}\nzero-fill output row {} has data byte {} = 0x{:02X}", context("load", s.shape, b.name()),
                            r, i, out.out.data[r * out.out.data_row_stride + i]));
    for (int64_t i = 0; i < f.load_scale_row_bytes(); ++i)
      if (out.out.scales[r * out.out.scale_row_stride + i] != 0)
        RC_FAIL(fmt::format("{}\nzero-fill output row {} has scale byte {} non-zero", context("load", s.shape, b.name()),
                            r, i));
  }
}

struct LoadFault {
  std::string what;
  ErrorCode code;
};

LoadFault inject_load_fault(LoadScenario& s) {
  const int32_t bs = s.shape.block_size;
  const size_t num_segments = s.load_segments.size() / 4;
  std::vector<int> kinds{0, 1, 2};
  if (num_segments > 0) kinds.insert(kinds.end(), {3, 4, 5, 6});
  bool has_nonempty = false;
  for (size_t i = 0; i < num_segments; ++i) has_nonempty |= s.load_segments[4 * i + 2] > s.load_segments[4 * i + 1];
  if (has_nonempty) kinds.insert(kinds.end(), {7, 8});
  const int kind = *rc::gen::elementOf(kinds);
  const size_t seg = num_segments ? static_cast<size_t>(*rc::gen::inRange<size_t>(0, num_segments)) : 0;
  int32_t* g = num_segments ? &s.load_segments[4 * seg] : nullptr;
  // Range faults may lengthen a segment: grow total_k so only the intended check fires.
  auto grow = [&] {
    s.total_k += 2 * bs + 2;
    s.out_rows += 2 * bs + 2;
  };
  switch (kind) {
    case 0:
      s.total_k = -1;
      return {"total_k = -1", ErrorCode::kInvalidArgument};
    case 1:
      s.load_segments.push_back(0);
      return {"load_segments size is not a multiple of 4", ErrorCode::kInvalidArgument};
    case 2:
      s.total_k += 1;
      s.out_rows = s.total_k - 1;
      return {"output holds total_k - 1 rows", ErrorCode::kShapeMismatch};
    case 3: {
      const int32_t bad = *rc::gen::elementOf(std::vector<int32_t>{-2, INT32_MIN, INT32_MAX, s.shape.num_blocks});
      g[0] = bad;
      return {fmt::format("segment {} src_block_id = {}", seg, bad), ErrorCode::kSegmentBlockOutOfRange};
    }
    case 4:
      grow();
      g[2] = bs + 1;
      return {fmt::format("segment {} src_end = block_size + 1", seg), ErrorCode::kSegmentRangeInvalid};
    case 5:
      g[1] = g[2] + 1;
      return {fmt::format("segment {} src_begin > src_end", seg), ErrorCode::kSegmentRangeInvalid};
    case 6:
      grow();
      g[1] = *rc::gen::elementOf(std::vector<int32_t>{-1, INT32_MIN});
      return {fmt::format("segment {} src_begin = {}", seg, g[1]), ErrorCode::kSegmentRangeInvalid};
    case 7: {
      size_t k = seg;
      while (s.load_segments[4 * k + 2] == s.load_segments[4 * k + 1]) k = (k + 1) % num_segments;
      int32_t* h = &s.load_segments[4 * k];
      const int32_t bad = *rc::gen::elementOf(std::vector<int32_t>{-1, INT32_MIN, INT32_MAX, s.total_k - (h[2] - h[1]) + 1});
      h[3] = bad;
      return {fmt::format("segment {} dst_offset = {} (total_k {})", k, bad, s.total_k),
              ErrorCode::kSegmentDestinationOutOfRange};
    }
    default: {
      size_t k = seg;
      while (s.load_segments[4 * k + 2] == s.load_segments[4 * k + 1]) k = (k + 1) % num_segments;
      const std::vector<int32_t> copy(s.load_segments.begin() + static_cast<std::ptrdiff_t>(4 * k),
                                      s.load_segments.begin() + static_cast<std::ptrdiff_t>(4 * k + 4));
      s.load_segments.insert(s.load_segments.end(), copy.begin(), copy.end());
      return {fmt::format("segment {} repeated at the end (same destination rows)", k), ErrorCode::kSegmentOverlap};
    }
  }
}

LoadFaultScenario draw_load_fault_scenario() {
  LoadFaultScenario c{*gen_load_scenario(), "", ErrorCode::kUnsupported};
  const LoadFault fault = inject_load_fault(c.scenario);
  c.fault = fault.what;
  c.code = fault.code;
  return c;
}

void prop_load_invalid_metadata_throws_and_writes_nothing(const Backend& b, const LoadFaultScenario& c) {
  const LoadScenario& s = c.scenario;
  const LoadFault fault{c.fault, c.code};
  const KVCache cache = make_cache(s.shape);
  LoadBuffers pristine(s), ref_out(s), out(s);
  std::string ref_what, what;
  const auto ref_err = run_load(nullptr, s, cache, ref_out, &ref_what);
  const auto err = run_load(&b, s, cache, out, &what);
  const std::string ctx = context("load", s.shape, b.name()) + "\nfault: " + fault.what;
  if (const std::string bad = compare_errors(fault.code, ref_err, ref_what, err, what); !bad.empty())
    RC_FAIL(ctx + "\n" + bad);
  if (pristine.data != out.data || pristine.scales != out.scales)
    RC_FAIL(ctx + "\nthe output changed although the load threw:\n" + diff_buffers(s, pristine, out));
}

}  // namespace

void register_load_properties(Registry& r) {
  r.add(scenario_property(
      "prop_load_matches_reference", "load",
      "the whole output (rows, scales, uncovered rows, row padding) is bit-identical to the reference",
      draw_load_scenario, prop_load_matches_reference, bounds::load()));
  r.add(scenario_property("prop_load_keeps_uncovered_rows", "load", "rows no segment covers keep their prior bytes",
                          draw_load_scenario, prop_load_keeps_uncovered_rows, bounds::load()));
  r.add(scenario_property("prop_load_zero_fill_rows_are_zero", "load",
                          "rows from block -1 are zero in data and scales", draw_load_scenario,
                          prop_load_zero_fill_rows_are_zero, bounds::load()));
  r.add(scenario_property("prop_load_invalid_metadata_throws_and_writes_nothing", "load",
                          "a bad plan throws the right kvcheck::Error and leaves every output byte unchanged",
                          draw_load_fault_scenario, prop_load_invalid_metadata_throws_and_writes_nothing,
                          bounds::load_fault()));
}

}  // namespace kvcheck::props
