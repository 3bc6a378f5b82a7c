// concat_and_cache_mla target (docs/spec.md §8.2): the input decoded by
// decode_concat_and_cache_mla, checked by the store check (properties/ops/store_load/op_checks.h) with
// every invariant: the whole cache against the reference's store of the joined rows,
// only records of valid rows written (BF16 records and tails equal to kv_c ++ k_pe), no
// UE8M0 0xFF, and on an error the expected code (or the reference's) with no byte changed.
#include "fuzzers/checks.h"
#include "properties/ops/store_load/op_checks.h"

namespace kvcheck::fuzz {

CheckResult check_concat_and_cache_mla(const uint8_t* data, size_t size, const Backend& backend) {
  return decode_and_check(data, size, decode_concat_and_cache_mla,
                          [&](const auto& s) { return props::check_store(backend, s); });
}

}  // namespace kvcheck::fuzz
