// store_kv target (SPEC §7.4): the input decoded by decode_store_kv, checked by the
// store_kv properties' own check (properties/ops/kv/kv_check.h) with every invariant: whole
// K/V buffers bit for bit, only the records of valid slots written, and on an error the
// demanded code (or the reference's) blaming the same entry, with no byte changed.
#include "fuzzers/checks.h"
#include "properties/ops/kv/kv_check.h"

namespace kvcheck::fuzz {

CheckResult check_store_kv(const uint8_t* data, size_t size, const Backend& backend) {
  return decode_and_check(data, size, decode_store_kv,
                          [&](const auto& s) { return props::check_store_kv(backend, s); });
}

}  // namespace kvcheck::fuzz
