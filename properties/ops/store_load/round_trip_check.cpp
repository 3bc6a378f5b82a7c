// The round trip's one check (SPEC §4, §5.1-5.2): a valid store, then a load of every
// stored row (one segment per row, in row order), on the backend and on the reference.
// See op_checks.h for the invariants.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "impl/contract_backend.h"
#include "properties/diff.h"
#include "properties/ops/store_load/op_checks.h"
#include "reference/numerics.h"

namespace kvcheck::props {
namespace {

// The output row SPEC §4/§5.2 prescribes for kv row x, from the reference's per-group
// quantisation: bytes as load_paged_kv_cache writes them, and each group's scale value.
struct Recipe {
  std::vector<uint8_t> data, scales, codes, scale;
  std::vector<double> group_scale;
};

double scale_value(const KVCacheFormat& f, const uint8_t* scale) {
  switch (f.sf_format) {
    case SfFormat::kUE8M0:
    case SfFormat::kUE8M0FloorAfter: return std::ldexp(1.0, int{*scale} - 127);
    case SfFormat::kE4M3:
    case SfFormat::kE4M3RoundUp: return ref::e4m3_to_float(*scale);
    case SfFormat::kFP32:
    case SfFormat::kFP32Pow2:
    case SfFormat::kFP32Pow2FloorFirst: {
      float v;
      std::memcpy(&v, scale, 4);
      return v;
    }
    case SfFormat::kNone: break;
  }
  return 1.0;
}

KVCHECK_BULK void recipe_row(const KVCacheFormat& f, const bf16_bits* x, Recipe& r) {
  r.data.assign(static_cast<size_t>(f.load_row_bytes()), 0);
  r.scales.assign(static_cast<size_t>(f.load_scale_row_bytes()), 0);
  r.group_scale.clear();
  if (f.is_bf16()) {
    std::memcpy(r.data.data(), x, r.data.size());
    return;
  }
  const int64_t group = f.elements_per_sf;
  const int64_t scale_width = f.scale_width();
  // SPEC §2/§5.2: a BF16 tail loads as stored, after the dequantised elements; an e4m3
  // tail as its casts decoded (§4.9).
  for (int64_t e = f.quantized_elements(); e < f.elements; ++e) {
    const bf16_bits v = f.e4m3_tail ? ref::float_to_bf16_rn(ref::e4m3_to_float(ref::cvt_e4m3(ref::bf16_to_float(x[e]))))
                                    : x[e];
    std::memcpy(&r.data[static_cast<size_t>(2 * e)], &v, 2);
  }
  r.codes.resize(static_cast<size_t>(group));
  r.scale.resize(static_cast<size_t>(scale_width));
  for (int64_t g = 0; g < f.num_scales(); ++g) {
    ref::quantize_group(f, {x + g * group, static_cast<size_t>(group)}, r.codes, r.scale);
    r.group_scale.push_back(scale_value(f, r.scale.data()));
    for (int64_t i = 0; i < group; ++i) {
      const int64_t e = g * group + i;
      const uint8_t code = r.codes[static_cast<size_t>(i)];
      if (f.do_cast) {
        const bf16_bits v = ref::dequantize(f, code, r.scale);
        std::memcpy(&r.data[static_cast<size_t>(2 * e)], &v, 2);
      } else if (f.quantized_dtype == QuantizedDtype::kE2M1) {
        r.data[static_cast<size_t>(e / 2)] |= static_cast<uint8_t>((code & 0xF) << (4 * (e % 2)));
      } else {
        r.data[static_cast<size_t>(e)] = code;
      }
    }
    if (!f.do_cast) std::memcpy(&r.scales[static_cast<size_t>(g * scale_width)], r.scale.data(), r.scale.size());
  }
}

// Per group, |round trip - x| within half a code step, as (relative, absolute in units
// of the group's scale): e4m3 has 3 mantissa bits (2^-4 relative, subnormal step 2^-9
// -> 2^-10 absolute); e2m1's largest gap is 4..6 (1/4 relative), its step below 1 is
// 0.5 (0.25 absolute). The scale: the recipe's (do_cast: not in the output), else the
// loaded one. "" or the worst element of the first group out of bounds.
KVCHECK_BULK std::string bound_violation(const KVCacheFormat& f, const bf16_bits* row, const uint8_t* out,
                                         const uint8_t* sc, const Recipe& recipe, size_t kv_row) {
  const double rel = f.quantized_dtype == QuantizedDtype::kE4M3 ? 0x1p-4 : 0.25;
  const double abs = f.quantized_dtype == QuantizedDtype::kE4M3 ? 0x1p-10 : 0.25;
  const double max_code = f.quantized_dtype == QuantizedDtype::kE4M3 ? 448.0 : 6.0;
  const int64_t group = f.elements_per_sf;
  const size_t width = static_cast<size_t>(f.scale_width());
  // A BF16 tail makes the round trip unchanged, bit for bit (SPEC §2); an e4m3 tail
  // gives its casts back (§4.9): the recipe's row either way.
  for (int64_t e = f.quantized_elements(); e < f.elements; ++e)
    if (std::memcmp(out + 2 * e, &recipe.data[static_cast<size_t>(2 * e)], 2) != 0)
      return fmt::format("kv row {} {} tail element {}: stored {:04x}, loaded back {:02x}{:02x}, expected {:02x}{:02x}\n",
                         kv_row, f.e4m3_tail ? "e4m3" : "BF16", e - f.quantized_elements(), row[e], out[2 * e + 1],
                         out[2 * e], recipe.data[static_cast<size_t>(2 * e + 1)], recipe.data[static_cast<size_t>(2 * e)]);
  for (int64_t g = 0; g < f.num_scales(); ++g) {
    double amax = 0;
    bool finite = true;
    for (int64_t i = 0; i < group; ++i) {
      const double x = ref::bf16_to_float(row[g * group + i]);
      finite = finite && std::isfinite(x);
      amax = std::max(amax, std::fabs(x));
    }
    if (!finite) continue;  // NaN/Inf groups: SPEC §4.5 cases, checked bit-exactly elsewhere
    const uint8_t* sp = sc ? sc + static_cast<size_t>(g) * width : nullptr;
    const double scale = f.do_cast ? recipe.group_scale[static_cast<size_t>(g)] : scale_value(f, sp);
    // An e4m3 scale saturates at 448: groups past 448*6 cannot be represented.
    if (is_e4m3_sf(f.sf_format) && amax > 448.0 * 6) continue;
    // Saturation slack when the rounded scale sits just under amax/max_code.
    const double saturation = std::max(0.0, amax - max_code * scale);
    for (int64_t i = 0; i < group; ++i) {
      const int64_t e = g * group + i;
      const double x = ref::bf16_to_float(row[e]);
      double y;
      if (f.do_cast) {
        bf16_bits v;
        std::memcpy(&v, out + 2 * e, 2);
        y = ref::bf16_to_float(v);
      } else {
        const uint8_t code = f.quantized_dtype == QuantizedDtype::kE2M1 ? (out[e / 2] >> (4 * (e % 2))) & 0xF : out[e];
        y = ref::bf16_to_float(ref::dequantize(f, code, {sp, width}));
      }
      const double limit = rel * std::fabs(x) + abs * scale + 0x1p-8 * std::fabs(y) + saturation + 1e-30;
      if (!(std::fabs(y - x) <= limit))
        return fmt::format("kv row {} group {} element {}: x = {:g}, round trip = {:g}, |error| {:g} > bound {:g} "
                           "(scale {:g}, amax {:g})\n",
                           kv_row, g, i, x, y, std::fabs(y - x), limit, scale, amax);
    }
  }
  return "";
}

}  // namespace

Verdict check_round_trip(const Backend& b, const StoreScenario& s, unsigned which) {
  const KVCacheFormat& f = s.shape.format;
  const int32_t bs = s.shape.block_size;
  std::vector<size_t> rows;  // kv row of each output row
  std::vector<int32_t> segments;
  for (size_t r = 0; r < s.slot_mapping.size(); ++r) {
    const int32_t slot = s.slot_mapping[r];
    if (slot < 0) continue;
    segments.insert(segments.end(), {slot / bs, slot % bs, slot % bs + 1, static_cast<int32_t>(rows.size())});
    rows.push_back(r);
  }
  const auto total_k = static_cast<int32_t>(rows.size());
  // The reference's own store + load run only for kRoundTripMatchesReference (the
  // recipe is the round trip's oracle; the reference's store and load are the store
  // and load checks' oracle).
  const bool with_reference = (which & kRoundTripMatchesReference) != 0;
  Cache be_cache = make_cache(s.shape);
  Cache ref_cache = with_reference ? copy_cache(be_cache) : Cache(CacheLayout::make(f, 1, 1));
  LoadBuffers be_out(f, total_k, 7u);
  LoadBuffers ref_out = with_reference ? LoadBuffers(be_out) : LoadBuffers(f, 0, 7u);
  LoadScenario load;  // every stored row, one segment per row, the store's work split
  load.shape = s.shape;
  load.load_segments = segments;
  load.total_k = load.out_rows = total_k;
  load.threads = s.threads;
  Outcome ref;
  if (with_reference) ref = run_store(nullptr, s, ref_cache);
  if (with_reference && !ref.code) ref = run_load(nullptr, load, ref_cache, ref_out);
  Outcome be = run_store(&b, s, be_cache);
  const std::string store_canaries = be_cache.canary_report();
  // A contract's diagnosis compares the writer's cache as the store left it.
  const std::vector<uint8_t> written =
      as_contract(b) ? std::vector<uint8_t>(be_cache.bytes().begin(), be_cache.bytes().end()) : std::vector<uint8_t>();
  if (!be.code) be = run_load(&b, load, be_cache, be_out);
  Verdict v;
  // (The store may have written before the load refused: only the capabilities decide.)
  if (judge_unsupported(be,
                        outside_paged(b.capabilities(), KVCHECK_OP_STORE_KV_CACHE | KVCHECK_OP_LOAD_PAGED_KV_CACHE,
                                      s.shape),
                        true, "round trip", b.name(), v))
    return v;
  std::string& fail = v.failure;
  fail += expect_outcomes("", std::nullopt, ref, be, b.name());
  if (!store_canaries.empty()) fail += "the store wrote into the " + store_canaries + "\n";
  if (const std::string r = ref_cache.canary_report(); !r.empty()) fail += "the reference wrote into the " + r + "\n";
  const LoadOutput& o = be_out.out;
  if (!be.code) {
    Recipe recipe;
    for (size_t k = 0; k < rows.size(); ++k) {
      const bf16_bits* x = &s.kv[rows[k] * static_cast<size_t>(s.row_stride)];
      uint8_t* got = o.data + static_cast<int64_t>(k) * o.data_row_stride;
      uint8_t* sc = o.scales ? o.scales + static_cast<int64_t>(k) * o.scale_row_stride : nullptr;
      recipe_row(f, x, recipe);
      if (which & kRoundTripMatchesRecipe) {
        const LoadOutput expected{recipe.data.data(), 0, recipe.scales.data(), 0, 1};
        const LoadOutput actual{got, 0, sc, 0, 1};
        const std::string d = diff_load_output(f, 1, expected, actual);
        if (!d.empty()) {
          fail += fmt::format("kv row {} (slot {}) stored then loaded differs from the reference quantise-dequantise:\n{}\n",
                              rows[k], s.slot_mapping[rows[k]], d);
          break;
        }
      }
      if ((which & kRoundTripErrorWithinBound) && f.is_quantized()) {
        const std::string d = bound_violation(f, x, got, sc, recipe, rows[k]);
        if (!d.empty()) {
          fail += d;
          break;
        }
      }
    }
  }
  if ((which & kRoundTripMatchesReference) && !ref.code && !be.code && !(ref_out == be_out)) {
    const std::string d = diff_load_output(f, total_k, ref_out.out, be_out.out);
    fail += "load output differs from the reference's store + load:\n" +
            (d.empty() ? std::string("  in row padding or the tail band") : d) + "\n";
  }
  // A writer x reader contract (docs/spec.md §6.2): which side broke it. The writer's
  // cache against the reference store's; if they agree, the reader loads it wrong.
  if (const auto* pair = as_contract(b); pair && !fail.empty() && !be.code) {
    Cache ref_store = make_cache(s.shape);  // the same pattern-filled cache the writer got
    const Outcome stored = run_store(nullptr, s, ref_store);
    const std::string d = stored.code ? std::string("  (the reference refused the store)")
                                      : diff_cache(be_cache.layout(), ref_store.bytes(), written);
    fail += d.empty() ? fmt::format("contract: the writer {}'s cache is the reference store's byte for byte{}: the "
                                    "reader {} loads it differently\n",
                                    pair->writer().name(),
                                    store_canaries.empty() ? "" : " (but the store wrote into the canary band)",
                                    pair->reader().name())
                      : fmt::format("contract: the writer {}'s cache differs from the reference store's (what the "
                                    "reader {} is judged against):\n{}\n",
                                    pair->writer().name(), pair->reader().name(), d);
  }
  if (!fail.empty()) fail = context("round_trip", s.shape, b.name()) + "\n" + fail;
  return v;
}

}  // namespace kvcheck::props
