// The one printer of the slot-mapping scenario: RapidCheck counterexamples, the
// slot_mapping fuzz target's reports and `kvcheck explain` print it.
#include <ostream>
#include <sstream>

#include "properties/gen/choices.h"
#include "properties/gen/ops/slot_mapping/slot_mapping_gen.h"

namespace kvcheck::props {

void showValue(const SlotMappingScenario& s, std::ostream& os) {
  using Op = SlotMappingScenario::Op;
  os << "slot_mapping scenario: " << op_name(s.op) << "\n";
  if (s.op != Op::kSwaStore && s.op != Op::kSwaWindow) {
    os << "  block_size " << s.block_size << ", " << s.tables.size() << " sequences";
    if (s.rule_multiple != 0) os << ", rule: a multiple of " << s.rule_multiple;
    if (s.op == Op::kPrepareDecode) os << ", graph_batch_size " << s.graph_batch_size;
    os << "\n";
    for (size_t i = 0; i < s.tables.size(); ++i)
      os << "  seq " << i << ": num_cached " << s.num_cached[i] << ", num_tokens " << s.num_tokens[i]
         << ", block_table " << format_ints(s.tables[i]) << "\n";
  } else if (s.op == Op::kSwaStore) {
    os << "  state_id " << s.state_id << ", ring_size " << s.ring_size << ", seqlen_k " << s.seqlen_k
       << ", seqlen_q " << s.seqlen_q << ", after " << format_ints(s.prefix) << "\n";
  } else {
    os << "  state_id " << s.state_id << ", ring_size " << s.ring_size << ", window " << s.window << ", seqlen_k "
       << s.seqlen_k << ", swa_valid_start " << s.swa_valid_start << "\n";
  }
  if (s.fault.empty())
    os << "  valid: must match the reference\n";
  else if (s.code)
    os << "  fault: " << s.fault << "; must throw " << to_string(*s.code) << "\n";
  else
    os << "  " << s.fault << ": the SPEC §5.4 rules decide\n";
}

const char* op_name(SlotMappingScenario::Op op) {
  static const char* kOps[] = {"paged_prefill_slot_mapping", "paged_decode_slot_mapping", "append_swa_store_slots",
                               "swa_decode_window", "prepare_prefill", "prepare_decode",
                               "page_table_from_seqs + batch_indices_positions + page_table_slot_mapping"};
  return kOps[static_cast<int>(op)];
}

std::string describe(const SlotMappingScenario& s) {
  std::ostringstream os;
  showValue(s, os);
  return os.str();
}

}  // namespace kvcheck::props
