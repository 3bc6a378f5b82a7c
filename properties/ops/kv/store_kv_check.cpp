// store_kv's one check (SPEC §7.4): reference and backend store into identical K/V
// buffers (pattern-filled, canary-framed, strided or one-allocation views). See
// kv_check.h for the invariants.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "properties/ops/kv/kv_check.h"
#include "properties/ops/kv/kv_harness.h"
#include "properties/ops/kv/kv_undeclared.h"
#include "reference/kv_layout.h"

namespace kvcheck::props {
namespace {

// The body bytes a valid store may write, sorted and merged: the K and V records of
// valid slots (reference formula, SPEC §7.2; a head's head_dim elements are contiguous)
// and, for an e2m1 cache, their scale bytes (SPEC §7.9).
std::vector<ByteRange> record_ranges(const StoreKvScenario& s, const KvBuffers& buf) {
  const KvCacheLayout& l = buf.layout;
  const bool e2m1 = l.dtype == KvDtype::kE2M1;
  const auto bytes = [&](int64_t elements) { return e2m1 ? elements / 2 : elements * kv_dtype_bytes(l.dtype); };
  const ConstKvCacheView view = buf.view();
  std::vector<ByteRange> r;
  const auto add = [&r](int64_t begin, int64_t end) {
    if (!r.empty() && r.back().end == begin)  // the next head right after (NHD, no head pad): one range
      r.back().end = end;
    else
      r.push_back({begin, end});
  };
  for (int32_t slot : s.slot_mapping) {
    if (slot < 0 || slot >= s.cache.num_slots()) continue;  // (a backend that accepted it fails the outcome)
    const int64_t block = slot / l.block_size, token = slot % l.block_size;
    for (int side = 0; side < 2; ++side)
      for (int64_t h = 0; h < l.num_kv_heads; ++h) {
        const int64_t off = (side ? buf.v_offset : buf.k_offset) + bytes(ref::kv_element_offset(l, block, token, h, 0));
        add(off, off + bytes(l.head_dim));
        if (e2m1)
          for (int64_t g = 0; g < l.head_dim / 16; ++g) {
            const int64_t sf = (side ? buf.v_sf_offset : buf.k_sf_offset) + ref::kv_sf_byte_offset(view, block, token, h, g);
            add(sf, sf + 1);
          }
      }
  }
  std::sort(r.begin(), r.end(), [](const ByteRange& a, const ByteRange& b) { return a.begin < b.begin; });
  return merge_ranges(std::move(r), buf.body_bytes);
}

// "" or the first body byte outside the records of valid slots that changed.
std::string untouched_violation(const char* who, const std::vector<ByteRange>& records, const KvBuffers& before,
                                const KvBuffers& after) {
  const int64_t bad = first_change_outside(records, after.body_bytes, {{before.body(), after.body()}});
  if (bad < 0) return "";
  return fmt::format("{}: byte {} changed but no valid row stores there ({}): 0x{:02X} -> 0x{:02X}\n", who, bad,
                     locate_kv_byte(after, bad), before.body()[bad], after.body()[bad]);
}

// An FP8 store whose bytes differ from the case's recipe: which other recipes (SPEC
// §7.3.1) the reference would have written exactly these bytes under, so a kernel
// team sees "matches sglang, not the declared vllm" rather than a rounding diff.
std::string other_recipes_matching(const Backend& b, const StoreKvScenario& s, const KvBuffers& be_buf) {
  if (!is_fp8(s.cache.dtype) || !is_kv_recipe(s.cache.recipe)) return "";
  std::string matches, others, declared;
  for (const KvRecipe r : kv_recipes()) {
    if (b.capabilities().supports_kv_recipe(r)) declared += (declared.empty() ? "" : ", ") + to_string(r);
    if (r == s.cache.recipe) continue;
    StoreKvScenario t = s;
    t.cache.recipe = r;
    KvBuffers buf(t.cache);  // the buffer's view carries its shape's recipe
    if (run_store_kv(nullptr, t, buf)) continue;
    std::string& list = buf.bytes == be_buf.bytes ? matches : others;
    list += (list.empty() ? "" : ", ") + to_string(r);
  }
  if (matches.empty())
    return fmt::format("recipe: the bytes match no other recipe either ({}; the case's is {}, declared: {})\n",
                       others, to_string(s.cache.recipe), declared);
  return fmt::format("recipe: the backend's bytes match recipe {} exactly, not the declared {} (this case's; "
                     "declared: {}; docs/spec.md §7.3.1)\n",
                     matches, to_string(s.cache.recipe), declared);
}

}  // namespace

Verdict check_store_kv_refuses_undeclared(const Backend& b, const StoreKvScenario& s) {
  const KvBuffers pristine(s.cache);
  const std::string what = kv_outside_contract(b.capabilities(), s.cache, s.key.dtype,
                                               kv_misalignment(s, pristine, b.capabilities().kv_alignment));
  KvBuffers be_buf(pristine);
  Outcome be;
  if (!what.empty()) be.code = run_store_kv(&b, s, be_buf, &be.message);
  return judge_declared_refusal("store_kv", b.name(), describe(s.cache), what, be,
                                be_buf.guards_intact() ? diff_kv_buffers(be_buf, pristine.bytes.span(), be_buf.bytes.span())
                                                       : "wrote into the canary band around the buffer");
}

Verdict check_store_kv(const Backend& b, const StoreKvScenario& s, unsigned which) {
  const KvBuffers pristine(s.cache);
  KvBuffers ref_buf(pristine), be_buf(pristine);  // copies: the same bytes, no second pattern fill
  Outcome ref, be;
  std::string ref_wrote, be_wrote;  // rows the call wrote (key and value are only read)
  ref.code = run_store_kv(nullptr, s, ref_buf, &ref.message, &ref_wrote);
  Verdict v;
  // A valid case outside the declared contract (a replayed file, explain: the
  // generators never draw one) is not handed to the backend, as the gate does for a
  // format or dtype: a kernel built for the contract may fault on it (a misaligned
  // vector access poisons a CUDA context). prop_store_kv_undeclared_shape_is_refused
  // is the one check that hands such calls.
  if (!ref.code)
    if (const std::string what = kv_outside_contract(b.capabilities(), s.cache, s.key.dtype,
                                                     kv_misalignment(s, pristine, b.capabilities().kv_alignment));
        !what.empty()) {
      v.skipped = "store_kv: a case with " + what + " (declared): not handed to " + std::string(b.name());
      return v;
    }
  be.code = run_store_kv(&b, s, be_buf, &be.message, &be_wrote);
  const uint32_t ops = KVCHECK_OP_STORE_KV | (s.rope ? KVCHECK_OP_STORE_KV_ROPE : 0u);
  if (judge_unsupported(be, outside_kv(b.capabilities(), ops, s.cache.dtype, s.key.dtype, s.cache.block_size,
                                   s.cache.num_kv_heads, s.cache.head_dim, s.cache.recipe) ||
                            !kv_misalignment(s, pristine, b.capabilities().kv_alignment).empty(),
                        be_buf.bytes == pristine.bytes, "store_kv", b.name(), v))
    return v;
  std::string& fail = v.failure;
  fail += expect_outcomes(s.fault, s.code, ref, be, b.name());
  if (!be_wrote.empty()) fail += "the backend wrote an input: " + be_wrote + "\n";
  if (!ref_wrote.empty()) fail += "the reference wrote an input: " + ref_wrote + "\n";
  if (!ref_buf.guards_intact()) fail += "the reference wrote into the canary band around the buffer\n";
  if (!be_buf.guards_intact()) fail += "wrote into the canary band around the buffer\n";
  if (which & kStoreKvErrorChangesNothing) {
    if (ref.code)
      if (const std::string d = diff_kv_buffers(ref_buf, pristine.bytes.span(), ref_buf.bytes.span()); !d.empty())
        fail += "the reference changed the buffer although it threw:\n" + d + "\n";
    if (be.code)
      if (const std::string d = diff_kv_buffers(be_buf, pristine.bytes.span(), be_buf.bytes.span()); !d.empty())
        fail += "the buffer changed although the store threw (" + be.message + "):\n" + d + "\n";
  }
  if ((which & kStoreKvTouchesOnlyRecords) && (!ref.code || !be.code)) {
    const std::vector<ByteRange> records = record_ranges(s, pristine);
    if (!ref.code) fail += untouched_violation("reference", records, pristine, ref_buf);
    if (!be.code) fail += untouched_violation("backend", records, pristine, be_buf);
  }
  if ((which & kStoreKvMatchesReference) && !ref.code && !be.code)
    if (const std::string d = diff_kv_buffers(be_buf, ref_buf.bytes.span(), be_buf.bytes.span()); !d.empty())
      fail += "K/V buffer after store_kv differs (expected = reference):\n" + d + "\n" +
              other_recipes_matching(b, s, be_buf);
  if (!fail.empty())  // the scenario itself is printed by the caller (RapidCheck, the fuzz report, explain)
    fail = fmt::format("op=store_kv backend={} {}\n{}", b.name(), describe(s.cache), fail);
  return v;
}

}  // namespace kvcheck::props
