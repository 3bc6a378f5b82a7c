// The one printer of the index-transform scenario: RapidCheck counterexamples, the
// index fuzz target's reports and `kvcheck explain` print it.
#include <ostream>
#include <sstream>

#include "properties/gen/choices.h"
#include "properties/gen/ops/index/index_gen.h"
#include "include/kvcheck/backend_abi.h"

namespace kvcheck::props {

const IndexOpInfo& index_op_info(IndexScenario::Op op) {
  static const IndexOpInfo kOps[] = {{"convert_kv_index", KVCHECK_OP_CONVERT_KV_INDEX},
                                     {"kv_index_cat", KVCHECK_OP_KV_INDEX_CAT},
                                     {"expand_swa_index", KVCHECK_OP_EXPAND_SWA_INDEX},
                                     {"swa_decode_index", KVCHECK_OP_SWA_DECODE_INDEX}};
  return kOps[static_cast<int>(op)];
}

void showValue(const IndexScenario& s, std::ostream& os) {
  os << "index scenario: " << index_op_info(s.op).name << ", num_q " << s.num_q << "\n";
  switch (s.op) {
    case IndexScenario::Op::kConvert:
      os << "  k " << s.k << ", block_size " << s.block_size << ", max_blocks " << s.max_blocks
         << (s.in_place ? ", in place (out = topk)" : "") << "\n  block_table " << format_ints(s.block_table)
         << "\n  seq_ids " << format_ints(s.seq_ids) << "\n  context_lens " << format_ints(s.context_lens)
         << "\n  topk " << format_ints(s.topk) << "\n";
      break;
    case IndexScenario::Op::kCat:
      os << "  wl " << s.wl << ", wr " << s.wr << ", total_k_swa_cached " << s.total_k_swa_cached
         << ", total_k_swa_cur " << s.total_k_swa_cur << "\n  L " << format_ints(s.left) << "\n  R "
         << format_ints(s.right) << "\n";
      break;
    case IndexScenario::Op::kExpand:
      os << "  width " << s.width << "\n  pivots [off1, len1, off2, len2]... " << format_ints(s.pivots) << "\n";
      break;
    case IndexScenario::Op::kSwaDecode:
      os << "  width " << s.width << ", ring_size " << s.ring_size << "\n  start_len [start_slot, valid_len]... "
         << format_ints(s.start_len) << "\n";
      break;
  }
  if (s.fault.empty())
    os << "  valid: the backend must match the reference\n";
  else if (s.code)
    os << "  fault: " << s.fault << "; must throw " << to_string(*s.code) << " and write nothing\n";
  else
    os << "  " << s.fault << ": the SPEC §5.5 rules decide\n";
}

std::string describe(const IndexScenario& s) {
  std::ostringstream os;
  showValue(s, os);
  return os.str();
}

}  // namespace kvcheck::props
