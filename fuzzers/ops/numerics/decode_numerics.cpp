// Decoder of the numerics target (SPEC §4): the numerics builder on the input bytes.
#include "fuzzers/decoders.h"

namespace kvcheck::fuzz {

props::NumericsScenario decode_numerics(ByteSource& src) {
  props::NumericsScenario s = props::build_numerics_scenario(src);
  // The bytes the builder left set the group's values directly, so libFuzzer can aim
  // at amax, margin and rounding boundaries.
  for (size_t i = 0; i < s.group.size() && src.remaining() >= 2; ++i) s.group[i] = src.u16();
  return s;
}

}  // namespace kvcheck::fuzz
