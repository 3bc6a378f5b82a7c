// Decoder of the prefill target (SPEC §5.3-5.6): the prefill builder (properties/gen/
// prefill_gen.h) on the input bytes; one input in eight stores the chunk before
// loading the history (the second prefill property's case).
#include "fuzzers/decoders.h"

namespace kvcheck::fuzz {

props::PrefillScenario decode_prefill(ByteSource& src) {
  props::PrefillScenario s = props::build_prefill_scenario(src);
  s.store_before_load = src.one_in(8);
  return s;
}

}  // namespace kvcheck::fuzz
