// copy_blocks target (SPEC §8.1): the input decoded by decode_copy_blocks, checked by
// the properties' own check (properties/ops/copy_blocks/copy_blocks_check.h) with every invariant: the
// whole allocation against the reference, only destination blocks changed (each to its
// source's bytes), and on a fault the rule's code and blamed entry with nothing written.
#include "fuzzers/checks.h"
#include "properties/ops/copy_blocks/copy_blocks_check.h"

namespace kvcheck::fuzz {

CheckResult check_copy_blocks(const uint8_t* data, size_t size, const Backend& backend) {
  return decode_and_check(data, size, decode_copy_blocks,
                          [&](const auto& s) { return props::check_copy_blocks(backend, s); });
}

}  // namespace kvcheck::fuzz
