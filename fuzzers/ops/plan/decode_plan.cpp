// Decoder of the plan target (SPEC §5.3): the plan builder on the input bytes, with
// builder block sizes huge (total_k past INT32_MAX) or < 1 too, and injected faults.
#include "fuzzers/decoders.h"

namespace kvcheck::fuzz {

props::PlanScenario decode_plan(ByteSource& src) {
  using Mode = props::PlanScenario::Mode;
  const auto mode = static_cast<Mode>(src.weighted({1, 1, 1}));
  const int32_t bs = mode == Mode::kBuilder ? props::choose_builder_block_size(src) : 1;
  props::PlanScenario s = props::build_plan_scenario(src, mode, bs);
  if (mode == Mode::kBuilder) {
    for (props::PlanOp& op : s.ops)
      if (src.one_in(5)) props::inject_append_fault(src, op, bs);
  } else if (src.one_in(5)) {
    props::inject_plan_fault(src, s);
  }
  return s;
}

}  // namespace kvcheck::fuzz
