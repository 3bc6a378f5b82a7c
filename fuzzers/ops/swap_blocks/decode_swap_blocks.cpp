// Decoder of the swap_blocks target (docs/spec.md §8.3): the swap_blocks builder on the
// input bytes; one input in four gets an injected fault (its code known), one in eight
// raw mapping entries (the rules decide).
#include "fuzzers/decoders.h"

namespace kvcheck::fuzz {

props::SwapBlocksScenario decode_swap_blocks(ByteSource& src) {
  // Drawn before the inputs, so that long inputs are not all valid.
  const size_t kind = src.weighted({5, 2, 1});  // 0: valid (the simplest), 1: one fault, 2: raw
  props::SwapBlocksScenario s = props::build_swap_blocks_scenario(src);
  s.threads = 0;  // the properties split the work (decoders.h: why the fuzzers do not)
  switch (kind) {
    case 1: props::inject_swap_blocks_fault(src, s); break;
    case 2: props::raw_swap_blocks_mapping(src, s); break;
    default: break;
  }
  return s;
}

}  // namespace kvcheck::fuzz
