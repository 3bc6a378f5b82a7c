// Decoder of the copy_blocks target (SPEC §8.1): the copy_blocks builder on the input
// bytes; one input in four gets an injected fault (its code known), one in eight raw
// mapping entries (the rules decide).
#include "fuzzers/decoders.h"

namespace kvcheck::fuzz {

props::CopyBlocksScenario decode_copy_blocks(ByteSource& src) {
  // Drawn before the inputs, so that long inputs are not all valid.
  const size_t kind = src.weighted({5, 2, 1});  // 0: valid (the simplest), 1: one fault, 2: raw
  props::CopyBlocksScenario s = props::build_copy_blocks_scenario(src);
  s.threads = 0;  // the properties split the work (decoders.h: why the fuzzers do not)
  switch (kind) {
    case 1: props::inject_copy_blocks_fault(src, s); break;
    case 2: props::raw_copy_blocks_mapping(src, s); break;
    default: break;
  }
  return s;
}

}  // namespace kvcheck::fuzz
