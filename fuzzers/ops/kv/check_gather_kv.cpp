// gather_kv target (SPEC §7.5): the input decoded by decode_gather_kv, checked by the
// gather_kv properties' own check (properties/ops/kv/kv_check.h) with every invariant: both
// outputs bit for bit, only the gathered rows' elements written, the cache never
// written, and on an error the demanded code (or the reference's), outputs unchanged.
#include "fuzzers/checks.h"
#include "properties/ops/kv/kv_check.h"

namespace kvcheck::fuzz {

CheckResult check_gather_kv(const uint8_t* data, size_t size, const Backend& backend) {
  return decode_and_check(data, size, decode_gather_kv,
                          [&](const auto& s) { return props::check_gather_kv(backend, s); });
}

}  // namespace kvcheck::fuzz
