// Slot-mapping properties (SPEC §5.4): impl/slot_mapping against reference/slot_mapping.
#include <rapidcheck.h>

#include <set>

#include "impl/error.h"
#include "impl/slot_mapping.h"
#include "properties/gen/metadata_gen.h"
#include "properties/registry.h"
#include "reference/slot_mapping.h"

namespace kvcheck::props {
namespace {

std::string diff(const std::string& what, const std::vector<int32_t>& expected,
                 const std::vector<int32_t>& actual) {
  if (expected.size() != actual.size())
    return what + ": expected " + std::to_string(expected.size()) + " slots, got " +
           std::to_string(actual.size());
  for (size_t i = 0; i < expected.size(); ++i)
    if (expected[i] != actual[i])
      return what + "[" + std::to_string(i) + "]: expected " + std::to_string(expected[i]) +
             ", actual " + std::to_string(actual[i]);
  return "";
}

// A batch of paged sequences (prefix-cached and chunked) over shuffled tables.
struct PagedBatch {
  int32_t bs = 1;
  std::vector<std::vector<int32_t>> tables;
  std::vector<PagedSeq> seqs;
};
PagedBatch draw_paged_batch(int32_t min_tokens) {
  PagedBatch b;
  b.bs = *gen::block_size();
  const int32_t num_seqs = *rc::gen::inRange(0, 5);
  std::vector<int32_t> tokens, need;
  for (int32_t i = 0; i < num_seqs; ++i) {
    tokens.push_back(*rc::gen::inRange(min_tokens, 3 * b.bs + 5));
    need.push_back(gen::blocks_for(tokens.back(), b.bs));
  }
  b.tables = (*gen::block_tables(need, 2)).tables;
  for (int32_t i = 0; i < num_seqs; ++i) {
    const int32_t cached = *rc::gen::inRange(0, tokens[static_cast<size_t>(i)] + 1);
    b.seqs.push_back({b.tables[static_cast<size_t>(i)], cached, tokens[static_cast<size_t>(i)]});
  }
  return b;
}

void prop_prefill_slot_mapping_matches_reference() {
  const PagedBatch b = draw_paged_batch(0);
  std::vector<int32_t> expected;
  for (const PagedSeq& s : b.seqs)
    for (int32_t slot : ref::paged_slots(s.block_table, b.bs, s.num_cached, s.num_tokens))
      expected.push_back(slot);
  const std::string msg = diff("slot_mapping", expected, paged_prefill_slot_mapping(b.seqs, b.bs));
  if (!msg.empty()) RC_FAIL(msg);
  // Distinct tables -> distinct slots (store_kv_cache rejects duplicates).
  RC_ASSERT(std::set<int32_t>(expected.begin(), expected.end()).size() == expected.size());
}

void prop_decode_slot_mapping_matches_reference() {
  const PagedBatch b = draw_paged_batch(1);
  std::vector<int32_t> expected;
  for (const PagedSeq& s : b.seqs)
    expected.push_back(static_cast<int32_t>(ref::paged_slot(s.block_table, b.bs, s.num_tokens - 1)));
  const std::string msg = diff("slot_mapping", expected, paged_decode_slot_mapping(b.seqs, b.bs));
  if (!msg.empty()) RC_FAIL(msg);
}

void prop_slot_mapping_past_table_is_error() {
  PagedBatch b = draw_paged_batch(0);
  const int32_t victim = *rc::gen::inRange<int32_t>(0, static_cast<int32_t>(b.seqs.size()) + 1);
  if (victim == static_cast<int32_t>(b.seqs.size())) {  // an extra sequence with a short table
    b.tables.push_back({});
    b.seqs.push_back({b.tables.back(), 0, 0});
  }
  PagedSeq& s = b.seqs[static_cast<size_t>(victim)];
  // Past the table's capacity, or onto a -1 entry.
  const int32_t capacity = static_cast<int32_t>(s.block_table.size()) * b.bs;
  s.num_tokens = capacity + *rc::gen::inRange(1, b.bs + 2);
  try {
    paged_prefill_slot_mapping(b.seqs, b.bs);
    RC_FAIL("no error for tokens up to " + std::to_string(s.num_tokens) + " over a table of " +
            std::to_string(s.block_table.size()) + " blocks");
  } catch (const Error& e) {
    RC_ASSERT(e.code() == ErrorCode::kRangeOutOfTable);
  }
}

void prop_swa_store_slots_match_reference() {
  const int32_t ring = *gen::block_size();
  const int32_t state = *rc::gen::inRange(0, 6);
  const int32_t seqlen_q = *rc::gen::inRange(0, 3 * ring + 3);  // chunks longer than the ring
  const int32_t seqlen_k = seqlen_q + *rc::gen::inRange(0, 3 * ring + 1);
  std::vector<int32_t> actual{-7};  // appends after what is there
  append_swa_store_slots(actual, state, ring, seqlen_k, seqlen_q);
  RC_ASSERT(actual.front() == -7);
  actual.erase(actual.begin());
  const std::string msg = diff("swa slot_mapping", ref::swa_store_slots(state, ring, seqlen_k, seqlen_q), actual);
  if (!msg.empty()) RC_FAIL(msg);
  // Invariants: the stored rows are the last min(seqlen_q, ring), in distinct slots of the ring.
  std::set<int32_t> used;
  for (int32_t j = 0; j < seqlen_q; ++j) {
    const int32_t slot = actual[static_cast<size_t>(j)];
    RC_ASSERT((slot == -1) == (j < seqlen_q - ring));
    if (slot == -1) continue;
    RC_ASSERT(slot / ring == state);
    RC_ASSERT(used.insert(slot).second);
  }
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
}

}  // namespace kvcheck::props
