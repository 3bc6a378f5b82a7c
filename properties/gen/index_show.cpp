// The one printer of the index-transform scenario: RapidCheck counterexamples, the
// index fuzz target's reports and `kvcheck explain` print it.
#include <ostream>
#include <sstream>

#include "properties/gen/choices.h"
#include "properties/gen/index_gen.h"

namespace kvcheck::props {

void showValue(const IndexScenario& s, std::ostream& os) {
  static const char* kOps[] = {"convert_kv_index", "kv_index_cat", "expand_swa_index", "swa_decode_index"};
  os << "index scenario: " << kOps[static_cast<int>(s.op)] << ", num_q " << s.num_q << "\n";
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
