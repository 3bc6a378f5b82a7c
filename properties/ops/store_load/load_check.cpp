// load_paged_kv_cache's one check (SPEC §5.2): reference and backend load from the same
// pattern-filled cache into output buffers holding a pattern (padded rows, a tail band).
// See op_checks.h for the invariants.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "properties/diff.h"
#include "properties/ops/store_load/op_checks.h"
#include "reference/layout.h"

namespace kvcheck::props {
namespace {

// "" when equal; else the first difference, decoded when it is in a row.
std::string diff_buffers(const LoadScenario& s, const LoadBuffers& expected, const LoadBuffers& actual) {
  std::string d = diff_load_output(s.shape.format, std::max<int64_t>(s.out_rows, 0), expected.out, actual.out);
  if (!d.empty()) return d;
  const int64_t offset = expected.offset();  // bytes before row 0
  const auto raw = [offset](const char* what, const Buffer& eb, const Buffer& ab, int64_t stride) {
    const std::span<const uint8_t> e = eb.span(), a = ab.span();
    const ByteDiff bd = byte_diff(e, a);
    if (bd.count == 0) return std::string();
    const int64_t i = static_cast<int64_t>(bd.first) - offset;
    if (i < 0)
      return fmt::format("output {} byte {} before row 0 (the base is {} bytes in) changed: expected 0x{:02X}, "
                         "actual 0x{:02X}",
                         what, i, offset, e[bd.first], a[bd.first]);
    return fmt::format("output {} byte {} (row {}, byte {} of the row stride: row padding or the tail band) "
                       "changed: expected 0x{:02X}, actual 0x{:02X}",
                       what, i, stride > 0 ? i / stride : 0, stride > 0 ? i % stride : i, e[bd.first], a[bd.first]);
  };
  d = raw("data", expected.data, actual.data, expected.out.data_row_stride);
  return d.empty() ? raw("scale", expected.scales, actual.scales, expected.out.scale_row_stride) : d;
}

// Row checks against the segments alone (independent of both implementations' loops):
// uncovered rows keep their bytes, zero-fill rows are zero, BF16 / index rows equal
// their cache record. Only for segments the reference accepted.
std::string row_violation(const char* who, const LoadScenario& s, const uint8_t* cache, const LoadBuffers& before,
                          const LoadBuffers& after, unsigned which) {
  const KVCacheFormat& f = s.shape.format;
  const int32_t bs = s.shape.block_size;
  const int64_t row_bytes = f.load_row_bytes(), sf_bytes = after.out.scales ? f.load_scale_row_bytes() : 0;
  std::vector<int32_t> block(static_cast<size_t>(s.out_rows), -2), token(block.size(), 0);  // -2: uncovered
  for (size_t i = 0; i + 3 < s.load_segments.size(); i += 4)
    for (int32_t t = s.load_segments[i + 1]; t < s.load_segments[i + 2]; ++t) {
      const size_t row = static_cast<size_t>(s.load_segments[i + 3] + t - s.load_segments[i + 1]);
      block[row] = s.load_segments[i];
      token[row] = t;
    }
  const std::vector<uint8_t> zeros(static_cast<size_t>(std::max(row_bytes, sf_bytes)), 0);
  const LoadOutput& o = after.out;
  for (size_t r = 0; r < block.size(); ++r) {
    const int64_t ri = static_cast<int64_t>(r);
    const bool uncovered = block[r] == -2, zero = block[r] == -1;
    const bool raw = !uncovered && !zero && (f.is_bf16() || f.is_index());
    if (!((uncovered && (which & kLoadKeepsUncoveredRows)) || (zero && (which & kLoadZeroFillRowsAreZero)) ||
          (raw && (which & kLoadRawRowsEqualCache))))
      continue;
    const uint8_t* got = o.data + ri * o.data_row_stride;
    const uint8_t* want = uncovered ? before.out.data + ri * o.data_row_stride
                          : zero    ? zeros.data()
                                    : cache + ref::data_offset(f, bs, block[r], token[r], s.shape.block_stride);
    const int64_t n = uncovered ? o.data_row_stride : row_bytes;
    const char* what = uncovered ? "is covered by no segment but changed"
                       : zero    ? "is a zero-fill row but not zero"
                                 : "differs from its cache record";
    if (std::memcmp(got, want, static_cast<size_t>(n)) != 0)
      return fmt::format("{}: output row {} {} (segments cover total_k {})\n", who, r, what, s.total_k);
    if (sf_bytes == 0) continue;
    const uint8_t* sgot = o.scales + ri * o.scale_row_stride;
    const uint8_t* swant = uncovered ? before.out.scales + ri * o.scale_row_stride
                           : zero    ? zeros.data()
                                     : cache + ref::scale_offset(f, bs, block[r], token[r], s.shape.block_stride);
    if (std::memcmp(sgot, swant, static_cast<size_t>(uncovered ? o.scale_row_stride : sf_bytes)) != 0)
      return fmt::format("{}: the scales of output row {} {}\n", who, r, what);
  }
  return "";
}

}  // namespace

Verdict check_load(const Backend& b, const LoadFaultScenario& c, unsigned which) {
  const LoadScenario& s = c.scenario;
  const CacheShape& sh = s.shape;
  const Cache cache = make_cache(sh);
  Buffer cache_before(cache.bytes().size());
  std::memcpy(cache_before.data(), cache.data(), cache_before.size());
  const LoadBuffers before(s);
  LoadBuffers ref_out(before), be_out(before);
  const Outcome ref = run_load(nullptr, s, cache, ref_out);
  const Outcome be = run_load(&b, s, cache, be_out);
  Verdict v;
  if (judge_unsupported(be, outside_paged(b.capabilities(), KVCHECK_OP_LOAD_PAGED_KV_CACHE, sh),
                        be_out == before, "load", b.name(), v))
    return v;
  std::string& fail = v.failure;
  fail += expect_outcomes(c.fault, c.code, ref, be, b.name());
  if (const std::string r = cache.canary_report(); !r.empty()) fail += "the load wrote into the " + r + "\n";
  if (std::memcmp(cache_before.data(), cache.data(), cache_before.size()) != 0) fail += "the cache changed during load\n";
  if (which & kLoadErrorChangesNothing) {
    if (ref.code && !(ref_out == before)) fail += "reference wrote output although it threw\n";
    if (be.code && !(be_out == before))
      fail += "the output changed although the load threw:\n" + diff_buffers(s, before, be_out) + "\n";
  }
  if (!ref.code) fail += row_violation("reference", s, cache.data(), before, ref_out, which);
  if (!ref.code && !be.code) fail += row_violation("backend", s, cache.data(), before, be_out, which);
  if ((which & kLoadMatchesReference) && !ref.code && !be.code && !(ref_out == be_out))
    fail += "load output differs (expected = reference):\n" + diff_buffers(s, ref_out, be_out) + "\n";
  if (!fail.empty())
    fail = context("load", sh, b.name()) + (c.fault.empty() ? "" : "\nfault: " + c.fault) + "\n" + fail;
  return v;
}

}  // namespace kvcheck::props
