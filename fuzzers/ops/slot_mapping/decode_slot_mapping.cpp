// Decoder of the slot_mapping target (SPEC §5.4, §7.6): the slot-mapping builder on the
// input bytes, then maybe a fault (its code known) or raw values (the rules decide).
#include "fuzzers/decoders.h"

namespace kvcheck::fuzz {

props::SlotMappingScenario decode_slot_mapping(ByteSource& src) {
  const auto op = props::choose_slot_mapping_op(src);
  // Drawn before the inputs, so that long inputs are not all valid.
  const size_t kind = src.weighted({3, 1, 1});  // 0: valid (the simplest), 1: one fault, 2: raw
  props::SlotMappingScenario s = props::build_slot_mapping_scenario(src, op);
  switch (kind) {
    case 1: props::inject_slot_mapping_fault(src, s); break;
    case 2: props::raw_slot_mapping_values(src, s); break;
    default: break;
  }
  return s;
}

}  // namespace kvcheck::fuzz
