// Store-then-load properties (SPEC §4, §5.1-5.2): the round trip equals the
// reference quantise-dequantise, and its error stays within each format's bound.
#include <fmt/format.h>
#include <rapidcheck.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "properties/class_bounds.h"
#include "properties/diff.h"
#include "properties/gen/gen_caps.h"
#include "properties/harness.h"
#include "properties/regression.h"
#include "properties/registry.h"
#include "reference/numerics.h"

namespace kvcheck::props {
namespace {

// Stores s on the backend, then loads every stored row back, one row per segment
// in row order. Returns the loaded rows (row r of the result = r-th valid row).
struct RoundTrip {
  std::vector<size_t> rows;  // kv row of each output row
  std::unique_ptr<LoadBuffers> out;
};

RoundTrip store_then_load(const Backend& b, const StoreScenario& s) {
  KVCache cache = make_cache(s.shape);
  RC_ASSERT(!run_store(&b, s, cache));
  if (const std::string c = cache.canary_report(); !c.empty())
    RC_FAIL(context("round_trip", s.shape, b.name()) + "\nthe store wrote into the " + c);
  RoundTrip rt;
  std::vector<int32_t> segments;
  for (size_t r = 0; r < s.slot_mapping.size(); ++r) {
    const int32_t slot = s.slot_mapping[r];
    if (slot < 0) continue;
    const int32_t block = slot / s.shape.block_size, token = slot % s.shape.block_size;
    segments.insert(segments.end(), {block, token, token + 1, static_cast<int32_t>(rt.rows.size())});
    rt.rows.push_back(r);
  }
  const auto total_k = static_cast<int32_t>(rt.rows.size());
  rt.out = std::make_unique<LoadBuffers>(s.shape.format, total_k, 7u);
  const ScopedParallelism split(&b, s.threads, total_k);
  b.load_paged_kv_cache(const_view(cache), segments, total_k, rt.out->out);
  return rt;
}

// The output row SPEC §4/§5.2 prescribes for kv row x, built from the reference's
// per-group quantisation. Bytes as load_paged_kv_cache writes them.
void expected_row(const KVCacheFormat& f, const bf16_bits* x, std::vector<uint8_t>& data,
                  std::vector<uint8_t>& scales) {
  data.assign(static_cast<size_t>(f.load_row_bytes()), 0);
  scales.assign(static_cast<size_t>(f.load_scale_row_bytes()), 0);
  if (f.is_bf16()) {
    std::memcpy(data.data(), x, data.size());
    return;
  }
  const int64_t group = f.elements_per_sf;
  const int64_t scale_width = f.sf_format == SfFormat::kFP32 ? 4 : 1;
  std::vector<uint8_t> codes(static_cast<size_t>(group)), scale(static_cast<size_t>(scale_width));
  for (int64_t g = 0; g < f.num_scales(); ++g) {
    ref::quantize_group(f, {x + g * group, static_cast<size_t>(group)}, codes, scale);
    for (int64_t i = 0; i < group; ++i) {
      const int64_t e = g * group + i;
      if (f.do_cast) {
        const bf16_bits v = ref::dequantize(f, codes[static_cast<size_t>(i)], scale);
        std::memcpy(&data[static_cast<size_t>(2 * e)], &v, 2);
      } else if (f.quantized_dtype == QuantizedDtype::kE2M1) {
        data[static_cast<size_t>(e / 2)] |= static_cast<uint8_t>((codes[static_cast<size_t>(i)] & 0xF) << (4 * (e % 2)));
      } else {
        data[static_cast<size_t>(e)] = codes[static_cast<size_t>(i)];
      }
    }
    if (!f.do_cast) std::memcpy(&scales[static_cast<size_t>(g * scale_width)], scale.data(), scale.size());
  }
}

// Round-trip properties check one drawn store scenario, drawn separately so a failing
// case can be saved as a regression file and replayed (regression.h).
StoreScenario draw_round_trip_scenario() { return *gen_store_scenario(); }

void prop_round_trip_matches_reference(const Backend& b, const StoreScenario& s) {
  const KVCacheFormat& f = s.shape.format;
  const RoundTrip rt = store_then_load(b, s);
  std::vector<uint8_t> data, scales;
  for (size_t o = 0; o < rt.rows.size(); ++o) {
    expected_row(f, &s.kv[rt.rows[o] * static_cast<size_t>(s.row_stride)], data, scales);
    LoadOutput expected{data.data(), 0, scales.data(), 0, 1};
    LoadOutput actual{rt.out->out.data + static_cast<int64_t>(o) * rt.out->out.data_row_stride, 0,
                      rt.out->out.scales ? rt.out->out.scales + static_cast<int64_t>(o) * rt.out->out.scale_row_stride
                                         : nullptr,
                      0, 1};
    const std::string diff = diff_load_output(f, 1, expected, actual);
    if (!diff.empty())
      RC_FAIL(fmt::format("{}\nkv row {} (slot {}) stored then loaded differs from the reference "
                          "quantise-dequantise:\n{}",
                          context("round_trip", s.shape, b.name()), rt.rows[o], s.slot_mapping[rt.rows[o]], diff));
  }
}

// Per-group round-trip error bound of each recipe, as (relative, absolute in units
// of the group's scale). Half the code spacing: e4m3 has 3 mantissa bits (2^-4
// relative, subnormal step 2^-9 -> 2^-10 absolute); e2m1's largest gap is 4..6
// (1/4 relative) and its step below 1 is 0.5 (0.25 absolute).
struct Bound {
  double rel, abs;
};

Bound bound_for(const KVCacheFormat& f) {
  return f.quantized_dtype == QuantizedDtype::kE4M3 ? Bound{0x1p-4, 0x1p-10} : Bound{0.25, 0.25};
}

double scale_value(const KVCacheFormat& f, const uint8_t* scale) {
  switch (f.sf_format) {
    case SfFormat::kUE8M0: return std::ldexp(1.0, int{*scale} - 127);
    case SfFormat::kE4M3: return ref::e4m3_to_float(*scale);
    case SfFormat::kFP32: {
      float v;
      std::memcpy(&v, scale, 4);
      return v;
    }
    case SfFormat::kNone: break;
  }
  return 1.0;
}

StoreScenario draw_quantised_round_trip_scenario() {
  const auto named = rc::gen::elementOf(std::vector<KVCacheFormat>{
      KVCacheFormat::V41(), KVCacheFormat::V41_FP4(), KVCacheFormat::FP4_INDEX(),
      KVCacheFormat::FP8_FP32SF_INDEX(), KVCacheFormat::MXFP8_INDEX()});
  // Custom records (run-time group kernels) where the backend takes any format.
  const auto f = generator_caps().formats == ~0u ? *rc::gen::weightedOneOf<KVCacheFormat>({{5, named}, {2, gen_custom_format()}})
                                                 : *named;
  return *gen_store_scenario(CacheShape{f, *gen_block_size(), *rc::gen::inRange(1, 3), 0});
}

void prop_round_trip_error_within_bound(const Backend& b, const StoreScenario& s) {
  const KVCacheFormat& f = s.shape.format;
  const RoundTrip rt = store_then_load(b, s);
  const int64_t group = f.elements_per_sf;
  const Bound bound = bound_for(f);
  std::vector<double> x(static_cast<size_t>(group)), y(static_cast<size_t>(group));
  for (size_t o = 0; o < rt.rows.size(); ++o) {
    const bf16_bits* row = &s.kv[rt.rows[o] * static_cast<size_t>(s.row_stride)];
    const uint8_t* out = rt.out->out.data + static_cast<int64_t>(o) * rt.out->out.data_row_stride;
    const uint8_t* sc = rt.out->out.scales ? rt.out->out.scales + static_cast<int64_t>(o) * rt.out->out.scale_row_stride : nullptr;
    for (int64_t g = 0; g < f.num_scales(); ++g) {
      for (int64_t i = 0; i < group; ++i) x[static_cast<size_t>(i)] = ref::bf16_to_float(row[g * group + i]);
      // NaN/Inf groups: SPEC §4.5 cases, checked bit-exactly elsewhere.
      if (!std::all_of(x.begin(), x.end(), [](double v) { return std::isfinite(v); })) continue;
      double amax = 0;
      for (double v : x) amax = std::max(amax, std::fabs(v));
      double scale;
      if (f.do_cast) {
        // The stored scale is not in the output: recover it from the recipe.
        std::vector<uint8_t> codes(static_cast<size_t>(group)), sbytes(4);
        ref::quantize_group(f, {row + g * group, static_cast<size_t>(group)}, codes,
                            {sbytes.data(), static_cast<size_t>(f.sf_format == SfFormat::kFP32 ? 4 : 1)});
        scale = scale_value(f, sbytes.data());
        for (int64_t i = 0; i < group; ++i) {
          bf16_bits v;
          std::memcpy(&v, out + 2 * (g * group + i), 2);
          y[static_cast<size_t>(i)] = ref::bf16_to_float(v);
        }
      } else {
        const size_t width = f.sf_format == SfFormat::kFP32 ? 4 : 1;
        const uint8_t* sp = sc + static_cast<size_t>(g) * width;
        scale = scale_value(f, sp);
        for (int64_t i = 0; i < group; ++i) {
          const int64_t e = g * group + i;
          const uint8_t code = f.quantized_dtype == QuantizedDtype::kE2M1 ? (out[e / 2] >> (4 * (e % 2))) & 0xF : out[e];
          y[static_cast<size_t>(i)] = ref::bf16_to_float(ref::dequantize(f, code, {sp, width}));
        }
      }
      // V41_FP4's e4m3 scale saturates at 448: groups past 448*6 cannot be represented.
      if (f.sf_format == SfFormat::kE4M3 && amax > 448.0 * 6) continue;
      // Saturation slack when the rounded scale sits just under amax/max_code.
      const double max_code = f.quantized_dtype == QuantizedDtype::kE4M3 ? 448.0 : 6.0;
      const double saturation = std::max(0.0, amax - max_code * scale);
      // The element furthest past its bound (a NaN error counts as furthest).
      int64_t worst = -1;
      double worst_err = 0, worst_limit = 0, worst_excess = 0;
      for (int64_t i = 0; i < group; ++i) {
        const double xi = x[static_cast<size_t>(i)], yi = y[static_cast<size_t>(i)];
        const double limit = bound.rel * std::fabs(xi) + bound.abs * scale + 0x1p-8 * std::fabs(yi) + saturation + 1e-30;
        const double err = std::fabs(yi - xi);
        if (err <= limit) continue;
        const double excess = std::isnan(err) ? std::numeric_limits<double>::infinity() : err - limit;
        if (worst < 0 || excess > worst_excess) {
          worst = i;
          worst_err = err;
          worst_limit = limit;
          worst_excess = excess;
        }
      }
      if (worst >= 0)
        RC_FAIL(fmt::format("{}\nkv row {} group {} element {}: x = {:g}, round trip = {:g}, |error| {:g} > bound {:g} "
                            "(scale {:g}, amax {:g})",
                            context("round_trip", s.shape, b.name()), rt.rows[o], g, worst, x[static_cast<size_t>(worst)],
                            y[static_cast<size_t>(worst)], worst_err, worst_limit, scale, amax));
    }
  }
}

}  // namespace

void register_round_trip_properties(Registry& r) {
  r.add(scenario_property("prop_round_trip_matches_reference", "round_trip",
                          "store then load equals the reference quantise-dequantise (bit-exact; identity for BF16)",
                          draw_round_trip_scenario, prop_round_trip_matches_reference, bounds::store()));
  r.add(scenario_property(
      "prop_round_trip_error_within_bound", "round_trip",
      "per group, |round trip - x| <= half a code step (relative and scale-absolute) for finite groups",
      draw_quantised_round_trip_scenario, prop_round_trip_error_within_bound, bounds::round_trip_bound()));
}

}  // namespace kvcheck::props
