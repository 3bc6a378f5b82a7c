// store target (SPEC §5.1): the input decoded by decode_store, checked by the store
// properties' own check (properties/ops/store_load/op_checks.h) with every invariant: whole caches bit
// for bit, only records of valid rows written (BF16: equal to the input), no UE8M0 0xFF,
// and on an error the expected code (or the reference's) blaming the same entry, with
// no byte changed.
#include "fuzzers/checks.h"
#include "properties/ops/store_load/op_checks.h"

namespace kvcheck::fuzz {

CheckResult check_store(const uint8_t* data, size_t size, const Backend& backend) {
  return decode_and_check(data, size, decode_store, [&](const auto& s) { return props::check_store(backend, s); });
}

}  // namespace kvcheck::fuzz
