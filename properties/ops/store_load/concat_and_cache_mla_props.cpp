// Properties of concat_and_cache_mla (docs/spec.md §8.2): the store check (op_checks.h)
// on two-source scenarios, whose rows joined are the kv rows of the store invariants.
#include <rapidcheck.h>

#include "properties/class_bounds.h"
#include "properties/ops/store_load/op_checks.h"
#include "properties/regression.h"
#include "properties/registry.h"

namespace kvcheck::props {
namespace {

StoreScenario draw_concat_scenario() { return *gen_concat_scenario(); }
StoreFaultScenario draw_concat_fault_scenario() { return *gen_concat_fault_scenario(); }
StoreScenario draw_split_scenario() { return *gen_concat_split_scenario(); }
StoreFaultScenario draw_split_fault_scenario() { return *gen_concat_split_fault_scenario(); }
StoreScenario draw_rope_scenario() { return *gen_concat_rope_scenario(); }
StoreFaultScenario draw_rope_fault_scenario() { return *gen_concat_rope_fault_scenario(); }

void prop_concat_matches_reference(const Backend& b, const StoreScenario& s) {
  require(check_store(b, {s, "", std::nullopt}, kStoreMatchesReference));
}

void prop_concat_touches_only_written_records(const Backend& b, const StoreScenario& s) {
  require(check_store(b, {s, "", std::nullopt}, kStoreTouchesOnlyRecords));
}

void prop_concat_bad_input_throws_and_writes_nothing(const Backend& b, const StoreFaultScenario& c) {
  require(check_store(b, c, kStoreErrorChangesNothing));
}

void prop_split_matches_reference(const Backend& b, const StoreScenario& s) {
  require(check_store(b, {s, "", std::nullopt}, kStoreMatchesReference | kStoreTouchesOnlyRecords));
}

}  // namespace

void register_concat_and_cache_mla_properties(Registry& r) {
  const auto add = [&r](Property p) {
    p.needs = needs_op(KVCHECK_OP_CONCAT_AND_CACHE_MLA, "concat_and_cache_mla");
    r.add(std::move(p));
  };
  add(scenario_property("prop_concat_and_cache_mla_matches_reference", "concat_and_cache_mla",
                        "storing kv_c ++ k_pe leaves the whole cache (records, block padding, other layers, "
                        "canaries) bit-identical to the reference's store of the joined rows",
                        draw_concat_scenario, prop_concat_matches_reference, bounds::concat()));
  add(scenario_property("prop_concat_and_cache_mla_touches_only_written_records", "concat_and_cache_mla",
                        "only the records of valid rows change; a BF16 record or tail holds the row's kv_c and "
                        "k_pe values in order",
                        draw_concat_scenario, prop_concat_touches_only_written_records, bounds::concat()));
  add(scenario_property("prop_concat_and_cache_mla_bad_input_is_error", "concat_and_cache_mla",
                        "kv_lora_rank or rope_dim < 1, kv_lora_rank + rope_dim != E, kv_c or k_pe short or "
                        "narrow, a bad slot or block stride throws the rule's error and changes no byte",
                        draw_concat_fault_scenario, prop_concat_bad_input_throws_and_writes_nothing,
                        bounds::concat_fault()));
  // Split caches: only backends with the feature bit (KVCHECK_OP_CONCAT_MLA_PE_CACHE);
  // without it these rows are not exercised, and the properties above draw none.
  const auto add_split = [&r](Property p) {
    p.needs = needs_op(KVCHECK_OP_CONCAT_AND_CACHE_MLA | KVCHECK_OP_CONCAT_MLA_PE_CACHE,
                       "concat_and_cache_mla's pe_cache (KVCHECK_OP_CONCAT_MLA_PE_CACHE)");
    r.add(std::move(p));
  };
  add_split(scenario_property("prop_concat_and_cache_mla_pe_cache_matches_reference", "concat_and_cache_mla",
                              "split caches: kv_c stored into the cache and k_pe into pe_cache leave both whole "
                              "caches bit-identical to the reference's, and change only valid rows' records",
                              draw_split_scenario, prop_split_matches_reference, bounds::concat_split()));
  add_split(scenario_property("prop_concat_and_cache_mla_pe_cache_bad_input_is_error", "concat_and_cache_mla",
                              "split caches: a width off its cache's E, pe_cache's num_blocks, block_size or "
                              "block_stride, pe_cache inside the cache, or any concat rule broken throws the "
                              "rule's error and changes neither cache",
                              draw_split_fault_scenario, prop_concat_bad_input_throws_and_writes_nothing,
                              bounds::concat_fault()));
  // Fused RoPE (docs/spec.md §8.4): only backends with KVCHECK_OP_CONCAT_MLA_ROPE.
  const auto add_rope = [&r](Property p) {
    p.needs = needs_op(KVCHECK_OP_CONCAT_AND_CACHE_MLA | KVCHECK_OP_CONCAT_MLA_ROPE,
                       "concat_and_cache_mla's fused RoPE (KVCHECK_OP_CONCAT_MLA_ROPE)");
    r.add(std::move(p));
  };
  add_rope(scenario_property("prop_concat_and_cache_mla_rope_matches_reference", "concat_and_cache_mla",
                             "k_pe rotated (NeoX or GPT-J, whole or a sub-range, fp32 without FMA) then stored "
                             "leaves the whole cache (and a split pe_cache) bit-identical to the reference's, and "
                             "changes only valid rows' records",
                             draw_rope_scenario, prop_split_matches_reference, bounds::concat_rope()));
  add_rope(scenario_property("prop_concat_and_cache_mla_rope_bad_input_is_error", "concat_and_cache_mla",
                             "an odd or zero rot_dim, a rotated range outside k_pe, max_position 0, positions short "
                             "or outside the table, or any concat rule broken throws the rule's error and changes "
                             "no byte",
                             draw_rope_fault_scenario, prop_concat_bad_input_throws_and_writes_nothing,
                             bounds::concat_fault()));
}

}  // namespace kvcheck::props
