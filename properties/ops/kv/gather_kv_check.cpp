// gather_kv's one check (SPEC §7.5): reference and backend gather from the same K/V
// buffers (arbitrary prior bytes: every FP8 code, NaN and Inf included) into identical
// pattern-filled outputs. See kv_check.h for the invariants.
#include <fmt/format.h>

#include <vector>

#include "properties/ops/kv/kv_check.h"
#include "properties/ops/kv/kv_harness.h"
#include "properties/ops/kv/kv_undeclared.h"

namespace kvcheck::props {
namespace {

// "" or the decoded first difference of both outputs from row 0 on, and of the bytes
// before row 0 (a misaligned base).
std::string diff_outputs(const GatherKvScenario& s, const KvOutBuffers& want, const KvOutBuffers& got) {
  const auto from = static_cast<size_t>(got.offset_bytes);
  const std::span<const uint8_t> wk = want.k.span(), wv = want.v.span(), gk = got.k.span(), gv = got.v.span();
  std::string d = diff_kv_out("out_k", got.out_k, s.cache.num_kv_heads, s.cache.head_dim, wk.subspan(from),
                              gk.subspan(from));
  const std::string dv = diff_kv_out("out_v", got.out_v, s.cache.num_kv_heads, s.cache.head_dim, wv.subspan(from),
                                     gv.subspan(from));
  d += (d.empty() || dv.empty() ? "" : "\n") + dv;
  if (!std::equal(wk.begin(), wk.begin() + from, gk.begin()) || !std::equal(wv.begin(), wv.begin() + from, gv.begin()))
    d += fmt::format("{}a byte before row 0 (the {} bytes before the output base) differs", d.empty() ? "" : "\n", from);
  return d;
}

// The output bytes a valid gather may write, merged: each head of rows [0,
// cu_seqlens_k[b]), the same in out_k's and out_v's buffers (one shape, SPEC §7.5).
std::vector<ByteRange> row_ranges(const GatherKvScenario& s, const KvOutBuffers& out) {
  const int64_t total = s.cu_seqlens_k.back(), ts = out.out_k.token_stride, hs = out.out_k.head_stride;
  std::vector<ByteRange> r;
  for (int64_t row = 0; row < total; ++row)
    for (int64_t h = 0; h < s.cache.num_kv_heads; ++h) {
      const int64_t at = out.offset_bytes + 2 * (row * ts + h * hs);
      if (!r.empty() && r.back().end == at)  // right after the last (no padding): one range
        r.back().end = at + 2 * int64_t{s.cache.head_dim};
      else
        r.push_back({at, at + 2 * int64_t{s.cache.head_dim}});
    }
  return merge_ranges(std::move(r), static_cast<int64_t>(out.k.size()));
}

// "" or the first output byte outside the elements of rows [0, cu_seqlens_k[b]) that
// changed: row padding, rows past the last sequence, the tail, the bytes before row 0.
std::string untouched_violation(const char* who, const GatherKvScenario& s, const std::vector<ByteRange>& rows,
                                const KvOutBuffers& pristine, const KvOutBuffers& out) {
  const int64_t bad = first_change_outside(rows, static_cast<int64_t>(out.k.size()),
                                           {{pristine.k.data(), out.k.data()}, {pristine.v.data(), out.v.data()}});
  if (bad < 0) return "";
  return fmt::format("{}: output byte {} is outside every gathered row's elements (row padding, before row 0 "
                     "or past cu_seqlens_k[b] = {}) but changed\n", who, bad, s.cu_seqlens_k.back());
}

}  // namespace

Verdict check_gather_kv_refuses_undeclared(const Backend& b, const GatherKvScenario& s) {
  const KvBuffers cache(s.cache), cache_before(cache);
  const std::string what = kv_outside_contract(b.capabilities(), s.cache, s.out_k_dtype,
                                               kv_misalignment(s, cache, b.capabilities().kv_alignment));
  const KvOutBuffers pristine(s);
  KvOutBuffers be_out(pristine);
  Outcome be;
  if (!what.empty()) be.code = run_gather_kv(&b, s, cache, be_out, &be.message);
  std::string changed = diff_outputs(s, pristine, be_out);
  if (cache.bytes != cache_before.bytes) changed += "the cache changed (gather_kv only reads it)";
  return judge_declared_refusal("gather_kv", b.name(), describe(s.cache), what, be, changed);
}

Verdict check_gather_kv(const Backend& b, const GatherKvScenario& s, unsigned which) {
  const KvBuffers cache(s.cache), cache_before(cache);  // copies: the same bytes, no second pattern fill
  const KvOutBuffers pristine(s);
  KvOutBuffers ref_out(pristine), be_out(pristine);
  Outcome ref, be;
  ref.code = run_gather_kv(nullptr, s, cache, ref_out, &ref.message);
  Verdict v;
  // A valid case outside the declared contract is not handed to the backend (as in
  // check_store_kv): only prop_gather_kv_undeclared_is_refused hands such calls.
  if (!ref.code)
    if (const std::string what = kv_outside_contract(b.capabilities(), s.cache, s.out_k_dtype,
                                                     kv_misalignment(s, cache, b.capabilities().kv_alignment));
        !what.empty()) {
      v.skipped = "gather_kv: a case with " + what + " (declared): not handed to " + std::string(b.name());
      return v;
    }
  be.code = run_gather_kv(&b, s, cache, be_out, &be.message);
  if (judge_unsupported(be, outside_kv(b.capabilities(), KVCHECK_OP_GATHER_KV, s.cache.dtype, s.out_k_dtype, s.cache.block_size,
                                   s.cache.num_kv_heads, s.cache.head_dim, KvRecipe::kSpec) ||
                            !kv_misalignment(s, cache, b.capabilities().kv_alignment).empty(),
                        be_out.k == pristine.k && be_out.v == pristine.v && cache.bytes == cache_before.bytes,
                        "gather_kv", b.name(), v))
    return v;
  std::string& fail = v.failure;
  fail += expect_outcomes(s.fault, s.code, ref, be, b.name());
  if (cache.bytes != cache_before.bytes) fail += "the cache changed (gather_kv only reads it)\n";
  if (which & kGatherKvErrorChangesNothing) {
    if (ref.code && !diff_outputs(s, pristine, ref_out).empty())
      fail += "the reference wrote although it threw:\n" + diff_outputs(s, pristine, ref_out) + "\n";
    if (be.code && !diff_outputs(s, pristine, be_out).empty())
      fail += "an output changed although gather_kv threw (" + be.message + "):\n" + diff_outputs(s, pristine, be_out) + "\n";
  }
  if ((which & kGatherKvTouchesOnlyRows) && !s.cu_seqlens_k.empty()) {
    const std::vector<ByteRange> rows = row_ranges(s, pristine);
    if (!ref.code) fail += untouched_violation("reference", s, rows, pristine, ref_out);
    if (!be.code) fail += untouched_violation("backend", s, rows, pristine, be_out);
  }
  if ((which & kGatherKvMatchesReference) && !ref.code && !be.code)
    if (const std::string d = diff_outputs(s, ref_out, be_out); !d.empty())
      fail += "outputs differ (expected = reference):\n" + d + "\n";
  if (!fail.empty())  // the scenario itself is printed by the caller (RapidCheck, the fuzz report, explain)
    fail = fmt::format("op=gather_kv backend={} {}\n{}", b.name(), describe(s.cache), fail);
  return v;
}

}  // namespace kvcheck::props
