// index target (SPEC §5.5): the input decoded by decode_index, checked by the index
// properties' own check (properties/metadata_checks.h) with every invariant: the backend
// against the reference (int64 results, so an overflow shows), swa_decode_index slots
// distinct in the start slot's ring, and on a fault the code and blamed entry of the
// SPEC rules with nothing written.
#include "fuzzers/checks.h"
#include "properties/metadata_checks.h"

namespace kvcheck::fuzz {

CheckResult check_index(const uint8_t* data, size_t size, const Backend& backend) {
  return decode_and_check(data, size, decode_index, [&](const auto& s) { return props::check_index(backend, s); });
}

}  // namespace kvcheck::fuzz
