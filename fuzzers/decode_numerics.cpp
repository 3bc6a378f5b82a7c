// Decoder of the numerics target (SPEC §4): raw float bit patterns and one BF16 group.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <climits>
#include <sstream>

#include "fuzzers/decoders.h"

namespace kvcheck::fuzz {

NumericsScenario decode_numerics(FuzzedDataProvider& fdp) {
  NumericsScenario s;
  s.format = supported_formats()[fdp.ConsumeIntegralInRange<size_t>(0, 4)];
  // The shared value drawing (props::ValueMix): random bits, normal, specials, mostly zero.
  const int value_mode = fdp.ConsumeIntegralInRange<int>(0, 3);
  props::ValueMix mix;
  mix.random_bits_pct = value_mode == 0 ? 100 : 0;
  mix.special_pct = value_mode == 2 ? 75 : 0;
  mix.zero_group_pct = value_mode == 3 ? 88 : 0;
  mix.seed = static_cast<uint32_t>(fdp.ConsumeIntegral<uint64_t>());
  const int64_t e = s.format.elements_per_sf;
  s.group = props::make_bf16_rows(mix, 1, e, e, 1);
  // Float bit patterns straight from the input (4 bytes each), so the fuzzer can aim
  // at rounding boundaries; group elements overwritten from what is left.
  const size_t count = fdp.ConsumeIntegralInRange<size_t>(0, 64);
  for (size_t i = 0; i < count && fdp.remaining_bytes() >= 4; ++i)
    s.floats.push_back(fdp.ConsumeIntegral<uint32_t>());
  for (size_t i = 0; i < s.group.size() && fdp.remaining_bytes() >= 2; ++i)
    s.group[i] = fdp.ConsumeIntegral<uint16_t>();
  return s;
}

std::string describe(const NumericsScenario& s) {
  std::ostringstream o;
  o << "numerics scenario\n  floats (" << s.floats.size() << "):";
  for (size_t i = 0; i < s.floats.size() && i < 16; ++i) o << " " << hex(s.floats[i], 8);
  o << "\n  group of " << s.format.name << " (" << s.group.size() << "):";
  for (size_t i = 0; i < s.group.size() && i < 32; ++i) o << " " << hex(s.group[i], 4);
  o << "\n";
  return o.str();
}

}  // namespace kvcheck::fuzz
