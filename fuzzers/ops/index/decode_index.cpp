// Decoder of the index target (SPEC §5.5): the index builder on the input bytes.
#include "fuzzers/decoders.h"

namespace kvcheck::fuzz {

props::IndexScenario decode_index(ByteSource& src) {
  using Op = props::IndexScenario::Op;
  const auto op = static_cast<Op>(src.weighted({1, 1, 1, 1}));
  // Drawn before the inputs, so that long inputs are not all valid.
  const size_t kind = op == Op::kConvert ? src.weighted({3, 1, 1}) : 0;  // 0: valid (the simplest), 1: one fault, 2: raw
  props::IndexScenario s = props::build_index_scenario(src, op);
  switch (kind) {
    case 1: props::inject_convert_fault(src, s); break;
    case 2: props::raw_convert_values(src, s); break;
    default: break;
  }
  return s;
}

}  // namespace kvcheck::fuzz
