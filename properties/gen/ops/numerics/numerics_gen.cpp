#include "properties/gen/ops/numerics/numerics_gen.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <ostream>
#include <sstream>

#include "properties/gen/choices.h"

namespace kvcheck::props {
namespace {

// fp32 values where a conversion changes behaviour (SPEC §4.5): ±0, Inf, NaNs,
// subnormal and normal limits, 1, e4m3 saturation (448, 464, 480) and subnormal ties
// (2^-9, 2^-10), its smallest normal 2^-6, e2m1 steps and ties (0.25, 0.75, 2.5, 3.5,
// 5, 6, 7), a BF16 rounding tie (1 + 2^-8), 1/448, 1/6 and the amax margin 1e-4.
constexpr uint32_t kBoundaries[] = {
    0x00000000, 0x7F800000, 0x7FC00000, 0x7F800001, 0x00000001, 0x007FFFFF, 0x00800000, 0x7F7FFFFF,
    0x3F800000, 0x43E00000, 0x43E80000, 0x43F00000, 0x3B000000, 0x3A800000, 0x3C800000, 0x3E800000,
    0x3F400000, 0x40200000, 0x40600000, 0x40A00000, 0x40C00000, 0x40E00000, 0x3F808000, 0x3B124925,
    0x3E2AAAAB, 0x38D1B717};

uint32_t choose_float_bits(Source& src) {
  switch (src.weighted({2, 1, 1, 2})) {
    case 0: return src.seed();                // random bits
    case 1: return src.seed() & 0xFFFF0000u;  // a BF16 value
    case 2: {  // 2^k (k in [-149, 127]) or 1 ulp off: ceil_log2's exact-power edge
      const int64_t k = src.range(-149, 127);
      const uint32_t p = k >= -126 ? static_cast<uint32_t>(k + 127) << 23 : 1u << (k + 149);
      return p + static_cast<uint32_t>(src.pick<int32_t>({0, 1, -1}));
    }
    default: {
      const uint32_t b = src.pick(std::span<const uint32_t>(kBoundaries));
      const int32_t ulps = src.pick<int32_t>({0, 1, -1, 2, -2});
      return (b + static_cast<uint32_t>(ulps)) ^ (src.coin() ? 0x80000000u : 0u);
    }
  }
}

// Pins one element as the group's amax at 448 * 2^k (e4m3 data) or 6 * 2^k (e2m1), or
// one BF16 ulp above: a * (1/448) and a * (1/6) round to exactly 2^k in fp32, the scale
// rounding edge of SPEC §4.1-4.3 (ceil_log2 of a power of two, e4m3 scale codes) that
// drawn values almost never hit. k is past the largest finite element; not with an Inf.
void pin_amax(Source& src, NumericsScenario& s) {
  int emax = 0;
  for (bf16_bits v : s.group) {
    const int e = (v >> 7) & 0xFF;
    if (v == 0x7F80 || v == 0xFF80) return;  // an infinite amax stays
    if (e != 0xFF) emax = std::max(emax, e);
  }
  const uint16_t base = s.format.quantized_dtype == QuantizedDtype::kE4M3 ? 0x43E0 : 0x40C0;  // 448, 6
  const int e = std::min<int>(254, emax + 1 + static_cast<int>(src.range(0, 3)));
  const uint16_t mant = static_cast<uint16_t>((base & 0x7F) + src.pick<int>({0, 1}));
  const size_t at = static_cast<size_t>(src.range(0, static_cast<int64_t>(s.group.size()) - 1));
  s.group[at] = static_cast<bf16_bits>((src.coin() ? 0x8000 : 0) | (e << 7) | mant);
}

}  // namespace

NumericsScenario build_numerics_scenario(Source& src) {
  NumericsScenario s;
  if (src.weighted({3, 1}) == 0) {
    std::vector<KVCacheFormat> table;
    for (const auto& f : supported_formats())
      if (f.is_quantized()) table.push_back(f);
    s.format = src.pick(std::span<const KVCacheFormat>(table));  // a category: every size reaches each
  } else {
    s.format = choose_custom_format(src);
  }
  const int64_t e = s.format.elements_per_sf;
  const ValueMix mix = choose_value_mix(src);
  const int64_t zero_run = src.coin() ? 1 : e;  // zeros per element (amax of the rest) or the whole group
  s.group = make_bf16_rows(mix, 1, e, e, zero_run);
  if (src.one_in(4)) pin_amax(src, s);
  const int64_t n = src.count(0, 64, 5);
  for (int64_t i = 0; i < n; ++i) s.floats.push_back(choose_float_bits(src));
  return s;
}

rc::Gen<NumericsScenario> gen_numerics_scenario() {
  return rc::gen::exec([] {
    RcSource src;
    return build_numerics_scenario(src);
  });
}

void showValue(const NumericsScenario& s, std::ostream& o) {
  char buf[16];
  o << "numerics scenario\n  floats (" << s.floats.size() << "):";
  for (size_t i = 0; i < s.floats.size() && i < 16; ++i) {
    std::snprintf(buf, sizeof buf, " 0x%08x", s.floats[i]);
    o << buf;
  }
  if (s.floats.size() > 16) o << " ...";
  o << "\n  group of " << s.format.name << " (" << s.group.size() << "):";
  for (size_t i = 0; i < s.group.size() && i < 32; ++i) {
    std::snprintf(buf, sizeof buf, " 0x%04x", s.group[i]);
    o << buf;
  }
  if (s.group.size() > 32) o << " ...";
}

std::string describe(const NumericsScenario& s) {
  std::ostringstream o;
  showValue(s, o);
  return o.str() + "\n";
}

}  // namespace kvcheck::props
