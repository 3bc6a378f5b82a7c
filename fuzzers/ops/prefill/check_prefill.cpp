// prefill target (SPEC §5.3-§5.6): the input decoded by decode_prefill, checked by the
// prefill properties' own check (props::check_prefill): the step run end to end by
// props::run_prefill_step must report nothing, and one input in eight stores the chunk
// before loading the history, which must fail exactly when a stored slot holds a
// visible history token.
#include "fuzzers/checks.h"
#include "properties/ops/prefill/prefill_step.h"

namespace kvcheck::fuzz {

CheckResult check_prefill(const uint8_t* data, size_t size, const Backend& backend) {
  return decode_and_check(data, size, decode_prefill,
                          [&](const auto& s) { return props::check_prefill(backend, s); });
}

}  // namespace kvcheck::fuzz
