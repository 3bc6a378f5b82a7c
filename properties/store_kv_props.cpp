// Properties of store_kv (SPEC §7.4), each stating one invariant of the one store_kv
// check (kv_check.h) on scenarios of the one store_kv builder (gen/kv_gen.h).
#include <rapidcheck.h>

#include "properties/class_bounds.h"
#include "properties/classes.h"
#include "properties/kv_check.h"
#include "properties/kv_harness.h"
#include "properties/registry.h"

namespace kvcheck::props {
namespace {

void prop_store_kv_matches_reference(const Backend& b) {
  const auto s = *gen_store_kv_scenario();
  note_kv_classes(s);
  require_isolated([&] { return check_store_kv(b, s, kStoreKvMatchesReference); });
}

void prop_store_kv_touches_only_written_records(const Backend& b) {
  const auto s = *gen_store_kv_scenario();
  note_kv_classes(s);
  require_isolated([&] { return check_store_kv(b, s, kStoreKvTouchesOnlyRecords); });
}

void prop_store_kv_invalid_input_throws_and_writes_nothing(const Backend& b) {
  const auto s = *gen_store_kv_fault_scenario();
  note_class("error");
  require_isolated([&] { return check_store_kv(b, s, kStoreKvErrorChangesNothing); });
}

}  // namespace

void register_store_kv_properties(Registry& r) {
  r.add({"prop_store_kv_matches_reference", "store_kv",
         "the whole K/V buffer (records, stride padding, gaps, canaries) is bit-identical to the reference", true,
         prop_store_kv_matches_reference, {}, nullptr, bounds::store_kv()});
  r.add({"prop_store_kv_touches_only_written_records", "store_kv",
         "bytes outside the K/V records of valid slots (-1 rows, other slots, padding, other layers) are unchanged",
         true, prop_store_kv_touches_only_written_records, {}, nullptr, bounds::store_kv()});
  r.add({"prop_store_kv_invalid_input_throws_and_writes_nothing", "store_kv",
         "a bad slot, row shape, dtype, scale or view throws the right kvcheck::Error and changes no byte", true,
         prop_store_kv_invalid_input_throws_and_writes_nothing, {}, nullptr, bounds::store_kv_fault()});
}

}  // namespace kvcheck::props
