// load target (SPEC §5.2): the input decoded by decode_load, checked by the load
// properties' own check (properties/ops/store_load/op_checks.h) with every invariant: whole outputs bit
// for bit (row padding and tail band too), the cache never written, uncovered rows kept,
// zero-fill rows zero, BF16 / index rows equal to the cache, and on an error the
// expected code (or the reference's) blaming the same entry, with no byte changed.
#include "fuzzers/checks.h"
#include "properties/ops/store_load/op_checks.h"

namespace kvcheck::fuzz {

CheckResult check_load(const uint8_t* data, size_t size, const Backend& backend) {
  return decode_and_check(data, size, decode_load, [&](const auto& s) { return props::check_load(backend, s); });
}

}  // namespace kvcheck::fuzz
