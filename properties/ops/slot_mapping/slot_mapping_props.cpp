// Slot-mapping properties (SPEC §5.4): impl/slot_mapping against reference/slot_mapping.
// Each states its invariant through the one check (props::check_slot_mapping,
// metadata_checks.h) on the one scenario type (gen/ops/slot_mapping/slot_mapping_gen.h); the
// slot_mapping fuzz target runs the same check with every invariant.
#include <rapidcheck.h>

#include "properties/metadata_checks.h"
#include "properties/registry.h"

namespace kvcheck::props {
namespace {

using Op = SlotMappingScenario::Op;

void expect(const SlotMappingScenario& s, unsigned invariants) {
  const Verdict v = check_slot_mapping(s, invariants);
  if (!v.failure.empty()) RC_FAIL(v.failure);
}

void prop_prefill_slot_mapping_matches_reference() {
  expect(*gen_slot_mapping_scenario(Op::kPrefill), kSlotMatchesReference | kSlotDistinctInRing);
}

void prop_decode_slot_mapping_matches_reference() {
  expect(*gen_slot_mapping_scenario(Op::kDecode), kSlotMatchesReference);
}

void prop_slot_mapping_past_table_is_error() {
  expect(*gen_slot_mapping_fault_scenario(Op::kPrefill), 0);  // the outcome: kRangeOutOfTable
}

void prop_swa_store_slots_match_reference() {
  expect(*gen_slot_mapping_scenario(Op::kSwaStore), kSlotAll);
}

void prop_page_table_slots_match_block_table_slots() {
  expect(*gen_slot_mapping_scenario(Op::kPageTable), kSlotAll);
}

void prop_page_table_past_table_is_error() {
  expect(*gen_slot_mapping_fault_scenario(Op::kPageTable), 0);
}

void prop_swa_decode_window_matches_spec() {
  expect(*gen_slot_mapping_scenario(Op::kSwaWindow), kSlotMatchesReference | kSlotDistinctInRing);
}

}  // namespace

void register_slot_mapping_properties(Registry& r) {
  auto host = [&r](std::string name, std::string invariant, void (*body)()) {
    r.add({std::move(name), "slot_mapping", std::move(invariant), false,
           [body](const Backend&) { body(); }});
  };
  host("prop_prefill_slot_mapping_matches_reference",
       "prefill slots of tokens [num_cached, num_tokens) are T[t/bs]*bs + t%bs, distinct",
       prop_prefill_slot_mapping_matches_reference);
  host("prop_decode_slot_mapping_matches_reference",
       "decode gives each sequence the slot of its last token", prop_decode_slot_mapping_matches_reference);
  host("prop_slot_mapping_past_table_is_error",
       "a token past the block table is kRangeOutOfTable", prop_slot_mapping_past_table_is_error);
  host("prop_swa_store_slots_match_reference",
       "SWA store slots are state*ring + position%ring for the last ring rows of the chunk, -1 "
       "before, all distinct",
       prop_swa_store_slots_match_reference);
  host("prop_swa_decode_window_matches_spec",
       "the SWA decode window starts at state*ring + first%ring of its valid positions [first, p], "
       "valid_len = p - first + 1 <= window",
       prop_swa_decode_window_matches_spec);
  host("prop_page_table_slots_match_block_table_slots",
       "FlashInfer's metadata (CSR page table, batch_indices/positions) is the sequences' pages and new "
       "tokens, and addresses the prefill slots T[t/bs]*bs + t%bs, distinct",
       prop_page_table_slots_match_block_table_slots);
  host("prop_page_table_past_table_is_error",
       "a page table of a sequence longer than its block table is kRangeOutOfTable",
       prop_page_table_past_table_is_error);
}

}  // namespace kvcheck::props
