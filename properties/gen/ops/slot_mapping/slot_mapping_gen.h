// The scenario type of the host slot mappings (SPEC §5.4) and its one builder. The
// builder draws through a Source (source.h): on an RcSource it is the RapidCheck
// generator of properties/ops/slot_mapping/slot_mapping_props.cpp, on the fuzz input
// (fuzzers/ops/slot_mapping/decode_slot_mapping.cpp) the slot_mapping target's decoder; the one check
// is props::check_slot_mapping (metadata_checks.h).
#pragma once

#include <rapidcheck.h>

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "impl/error.h"
#include "impl/slot_mapping.h"
#include "properties/gen/source.h"

namespace kvcheck::props {

/// One call of impl/slot_mapping.h or impl/kv_slot_mapping.h (SPEC §7.6). Paged ops
/// (prefill, decode, prepare_prefill, prepare_decode): sequence i is {tables[i],
/// num_cached[i], num_tokens[i]} over block_size; prepare_* take `rule` when
/// rule_multiple != 0 ({rule_multiple, "flash-attn"}), prepare_decode
/// graph_batch_size; page_table: the prefill batch's slots through FlashInfer's
/// metadata (impl/kv_page_table.h: the CSR page table of every sequence's num_tokens
/// tokens, the append positions of its new ones with append_indptr = the prefix sums
/// of num_tokens - num_cached, then the slots they address). SWA ops: store =
/// append_swa_store_slots(state_id, ring_size, seqlen_k, seqlen_q) after `prefix`
/// (what `out` held before); window = swa_decode_window(state_id, ring_size, window,
/// seqlen_k, swa_valid_start). `fault` "" is a valid input; a fault with `code` must
/// throw exactly it; a fault without code (raw values) must do what the SPEC §5.4
/// rules say (the check derives code and blamed entry).
struct SlotMappingScenario {
  enum class Op { kPrefill, kDecode, kSwaStore, kSwaWindow, kPreparePrefill, kPrepareDecode, kPageTable } op = Op::kPrefill;
  int32_t block_size = 1;
  std::vector<std::vector<int32_t>> tables;
  std::vector<int32_t> num_cached, num_tokens;
  int32_t graph_batch_size = 0;  // prepare_decode: 0 = no CUDA-graph padding rows
  int32_t rule_multiple = 0;     // prepare_*: 0 = no BlockSizeRule
  int32_t state_id = 0, ring_size = 1, window = 1, seqlen_k = 0, seqlen_q = 0, swa_valid_start = 0;
  std::vector<int32_t> prefix;  // SWA store: entries already in out (must stay)
  std::string fault;            // what was broken ("" = valid), e.g. "tokens past the table of sequence 2"
  std::optional<ErrorCode> code;

  /// The sequences as impl/slot_mapping.h takes them (spans into `tables`).
  std::vector<PagedSeq> seqs() const;
};

/// The builder: a valid input of `op`. Paged: 0-4 sequences of up to 3*bs+5 tokens
/// over shuffled disjoint tables (tails of -1 or unused blocks), num_cached anywhere
/// in [0, num_tokens] (decode: num_tokens >= 1). SWA store: a ring of a chosen block
/// size, chunks longer than the ring, histories past it, after a non-empty prefix.
/// SWA window: window <= ring, histories shorter and longer than the window,
/// swa_valid_start inside or past the window. prepare_*: the paged batch with
/// num_tokens >= 1, sometimes a rule that holds (a divisor of block_size); decode
/// graph_batch_size 0, the batch or 3 more rows.
SlotMappingScenario build_slot_mapping_scenario(Source& src, SlotMappingScenario::Op op);
/// Every op of the enum, equally (prefill first: the simplest).
SlotMappingScenario::Op choose_slot_mapping_op(Source& src);
/// The op drawn too (choose_slot_mapping_op).
SlotMappingScenario build_slot_mapping_scenario(Source& src);
/// A fault with its code. Paged: one sequence's tokens run past its table (capacity + 1
/// to + bs + 1; maybe an extra sequence with an empty table): kRangeOutOfTable. SWA: one
/// argument out of its range (kInvalidArgument). prepare_*: also a broken rule, and
/// graph_batch_size below the batch (kInvalidArgument).
void inject_slot_mapping_fault(Source& src, SlotMappingScenario& s);
/// Raw values (fuzz), no code (the rules decide): paged — block_size < 1, num_cached
/// outside [0, num_tokens], negative or huge token counts, -1 or huge (int32 overflow)
/// table entries; SWA — any argument anywhere, rings past INT32_MAX.
void raw_slot_mapping_values(Source& src, SlotMappingScenario& s);

/// RapidCheck generators: the builder on an RcSource.
rc::Gen<SlotMappingScenario> gen_slot_mapping_scenario(SlotMappingScenario::Op op);
/// A paged op (prefill or decode as given) with a past-the-table fault.
rc::Gen<SlotMappingScenario> gen_slot_mapping_fault_scenario(SlotMappingScenario::Op op);

/// The one printer (RapidCheck counterexamples, fuzz reports, `kvcheck explain`).
void showValue(const SlotMappingScenario& s, std::ostream& os);
/// The function(s) an op calls, by name ("paged_prefill_slot_mapping", ...).
const char* op_name(SlotMappingScenario::Op op);
std::string describe(const SlotMappingScenario& s);

}  // namespace kvcheck::props
