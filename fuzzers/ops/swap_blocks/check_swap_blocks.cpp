// swap_blocks target (docs/spec.md §8.3): the input decoded by decode_swap_blocks,
// checked by the properties' own check (properties/ops/swap_blocks/swap_blocks_check.h) with every
// invariant: dst against the reference, src unchanged, only dst blocks a pair names
// changed (each to its src block's bytes), and on a fault the rule's code and blamed
// entry with nothing written.
#include "fuzzers/checks.h"
#include "properties/ops/swap_blocks/swap_blocks_check.h"

namespace kvcheck::fuzz {

CheckResult check_swap_blocks(const uint8_t* data, size_t size, const Backend& backend) {
  return decode_and_check(data, size, decode_swap_blocks,
                          [&](const auto& s) { return props::check_swap_blocks(backend, s); });
}

}  // namespace kvcheck::fuzz
