// The one printer of the load-plan scenario: RapidCheck counterexamples, the plan fuzz
// target's reports and `kvcheck explain` print it.
#include <ostream>
#include <sstream>

#include "properties/gen/choices.h"
#include "properties/gen/ops/plan/plan_gen.h"

namespace kvcheck::props {

void showValue(const PlanScenario& s, std::ostream& o) {
  auto seqs = [&] {
    for (size_t i = 0; i < s.seqs.size(); ++i) {
      const SeqMeta& q = s.seqs[i];
      o << "  seq " << i << ": seqlen_k " << q.seqlen_k << ", seqlen_q " << q.seqlen_q;
      if (s.mode == PlanScenario::Mode::kSwa)
        o << ", swa_valid_start " << q.swa_valid_start << ", state_id " << q.state_id;
      else
        o << ", block_table " << format_ints(q.block_table, 16);
      o << "\n";
    }
    if (!s.broken.empty()) o << "  invalid on purpose: " << s.broken << "\n";
  };
  switch (s.mode) {
    case PlanScenario::Mode::kBuilder: {
      static const char* kOps[] = {"append_segment", "append_zero_fill", "append_paged_range", "append_ring_range"};
      o << "plan scenario: BlockLoadPlanBuilder(" << s.block_size << "), " << s.ops.size() << " appends\n";
      for (size_t i = 0; i < s.ops.size(); ++i) {
        const PlanOp& op = s.ops[i];
        o << "  " << i << ": " << kOps[static_cast<int>(op.kind)] << "(";
        switch (op.kind) {
          case PlanOp::Kind::kSegment: o << op.a << ", " << op.b << ", " << op.c; break;
          case PlanOp::Kind::kZeroFill: o << op.a; break;
          case PlanOp::Kind::kPaged: o << format_ints(op.table, 16) << ", " << op.b << ", " << op.c; break;
          case PlanOp::Kind::kRing: o << op.a << ", " << op.b << ", " << op.c; break;
        }
        o << ")" << (op.note.empty() ? "" : "  # " + op.note)
          << (op.code ? " (must throw " + std::string(to_string(*op.code)) + ")" : "") << "\n";
      }
      break;
    }
    case PlanScenario::Mode::kCompressed:
      o << "plan scenario: build_compressed_plan, block_size " << s.block_size << ", ratio " << s.ratio << ", "
        << s.seqs.size() << " sequences, tables " << s.table_mode << "\n";
      seqs();
      break;
    case PlanScenario::Mode::kSwa:
      o << "plan scenario: build_swa_plan, window " << s.window << ", ring_size " << s.ring_size << ", "
        << s.seqs.size() << " sequences\n";
      seqs();
      break;
  }
}

std::string describe(const PlanScenario& s) {
  std::ostringstream o;
  showValue(s, o);
  return o.str();
}

}  // namespace kvcheck::props
