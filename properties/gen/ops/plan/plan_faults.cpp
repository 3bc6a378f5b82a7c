// The fault injectors of the load-plan scenarios (SPEC §5.3 [decided] error rules):
// one fault per append (with the code it must raise), or one bad argument or table of a
// compressed / SWA plan.
#include <algorithm>
#include <climits>
#include <string>

#include "properties/gen/ops/plan/plan_gen.h"

namespace kvcheck::props {
namespace {

int32_t draw(Source& src, int64_t lo, int64_t hi) {
  return static_cast<int32_t>(src.range(lo, std::min<int64_t>(hi, INT32_MAX)));
}

void fault(PlanOp& op, ErrorCode code, const std::string& what) {
  op.code = code;
  op.note += (op.note.empty() ? "" : ", ") + what;
}

void paged_fault(Source& src, PlanOp& op, int32_t bs) {
  const int64_t past = static_cast<int64_t>(op.table.size()) * bs + draw(src, 1, bs);
  switch (src.weighted({1, 1, 1, 1, 1})) {
    case 0:
      if (op.c == INT32_MAX) --op.c;  // room for begin = end + 1
      op.b = op.c + 1;
      return fault(op, ErrorCode::kInvalidArgument, "invalid: begin > end");
    case 1: op.b = -1; return fault(op, ErrorCode::kInvalidArgument, "invalid: begin < 0");
    case 2:
      if (past <= INT32_MAX) {  // a range past the table
        op.c = static_cast<int32_t>(past);
        return fault(op, ErrorCode::kRangeOutOfTable, "invalid: past the table");
      }
      [[fallthrough]];
    case 3:
      if (op.c > 0) {  // a hole inside the range
        op.b = std::min(op.b, op.c - 1);
        const int64_t first = op.b / bs, last = (int64_t{op.c} - 1) / bs;
        op.table[static_cast<size_t>(first + src.range(0, last - first))] = src.coin() ? INT32_MIN : -1;
        op.note = "holey table";
        return fault(op, ErrorCode::kRangeOutOfTable, "invalid: hole in the range");
      }
      [[fallthrough]];
    default:
      if (op.c == 0) op.c = 1;
      op.b = std::min(op.b, op.c - 1);
      op.table.resize(static_cast<size_t>((int64_t{op.c} - 1) / bs));  // the last block it needs is gone
      op.note = "short table";
      return fault(op, ErrorCode::kRangeOutOfTable, "invalid: past the table");
  }
}

}  // namespace

void inject_append_fault(Source& src, PlanOp& op, int32_t block_size) {
  const int32_t bs = std::max(block_size, 1);
  switch (op.kind) {
    case PlanOp::Kind::kSegment:
      switch (src.weighted({1, 1, bs < INT32_MAX ? 1 : 0, 1})) {
        case 0: op.a = src.pick<int32_t>({-2, INT32_MIN}); return fault(op, ErrorCode::kInvalidArgument, "invalid block");
        case 1:
          if (op.c == INT32_MAX) --op.c;
          op.b = op.c + 1;
          return fault(op, ErrorCode::kSegmentRangeInvalid, "invalid: begin > end");
        case 2: op.b = 0, op.c = bs + 1; return fault(op, ErrorCode::kSegmentRangeInvalid, "invalid: end > block_size");
        default: op.b = -1; return fault(op, ErrorCode::kSegmentRangeInvalid, "invalid: begin < 0");
      }
    case PlanOp::Kind::kZeroFill:
      op.a = src.pick<int32_t>({-1, INT32_MIN, -draw(src, 1, 9)});
      return fault(op, ErrorCode::kInvalidArgument, "invalid: negative");
    case PlanOp::Kind::kPaged: return paged_fault(src, op, bs);
    case PlanOp::Kind::kRing: {
      op.note.clear();
      const int64_t len = int64_t{op.c} - op.b;
      switch (src.weighted({1, 1, bs < INT32_MAX ? 1 : 0, 1})) {
        case 0: op.a = src.pick<int32_t>({-1, INT32_MIN}); return fault(op, ErrorCode::kInvalidArgument, "invalid: state_id < 0");
        case 1:
          op.b = -1 - draw(src, 0, bs - 1), op.c = static_cast<int32_t>(std::max<int64_t>(op.b + len, op.b));
          return fault(op, ErrorCode::kInvalidArgument, "invalid: begin < 0");
        case 2:
          op.b = std::min<int32_t>(op.b, INT32_MAX - bs - 3), op.c = op.b + bs + draw(src, 1, 3);
          return fault(op, ErrorCode::kRangeOutOfTable, "invalid: longer than the ring");
        default:
          op.b = std::max<int32_t>(op.b, 1), op.c = op.b - 1 - draw(src, 0, std::min(op.b - 1, bs - 1));
          return fault(op, ErrorCode::kInvalidArgument, "invalid: begin > end");
      }
    }
  }
}

void inject_plan_fault(Source& src, PlanScenario& s) {
  const int32_t n = static_cast<int32_t>(s.seqs.size());
  if (s.mode == PlanScenario::Mode::kCompressed) {
    switch (src.weighted({1, 1, 1, 1, 1, 1})) {
      case 0:
      case 1: {  // a hole in, or one block cut off, a table (an error when the sequence needs it)
        std::vector<SeqMeta*> with_table;
        for (SeqMeta& q : s.seqs)
          if (!q.block_table.empty()) with_table.push_back(&q);
        if (!with_table.empty()) {
          SeqMeta& q = *with_table[static_cast<size_t>(src.range(0, static_cast<int64_t>(with_table.size()) - 1))];
          if (src.coin()) {
            q.block_table[static_cast<size_t>(src.range(0, static_cast<int64_t>(q.block_table.size()) - 1))] = -1;
            s.table_mode = "holey";
          } else {
            q.block_table.pop_back();
            s.table_mode = "short";
          }
          return;
        }
        [[fallthrough]];
      }
      case 2: s.ratio = src.pick<int32_t>({0, -1, INT32_MIN}), s.broken = "ratio " + std::to_string(s.ratio); return;
      case 3:
        if (s.block_size > 1) {
          s.ratio = s.block_size + 1, s.broken = "ratio does not divide block_size";
          return;
        }
        [[fallthrough]];
      case 4: s.block_size = src.coin() ? -s.block_size : 0, s.broken = "block_size " + std::to_string(s.block_size); return;
      default:
        if (n == 0) {
          s.ratio = 0, s.broken = "ratio 0";
          return;
        }
        const int32_t i = draw(src, 0, n - 1);
        s.seqs[static_cast<size_t>(i)].seqlen_k = src.coin() ? INT32_MIN : -1;
        s.broken = "seqlen_k of sequence " + std::to_string(i);
    }
    return;
  }
  if (s.mode != PlanScenario::Mode::kSwa) return;
  switch (src.weighted({1, 1, n > 0 ? 4 : 0})) {
    case 0: s.window = src.coin() ? -1 : 0, s.broken = "window < 1"; return;
    case 1: s.ring_size = s.window - 1, s.broken = "ring_size < window"; return;
    default: {
      const int32_t i = draw(src, 0, n - 1);
      SeqMeta& q = s.seqs[static_cast<size_t>(i)];
      static const char* kWhat[] = {"seqlen_q > seqlen_k", "seqlen_q < 0", "swa_valid_start < 0", "state_id < 0"};
      const size_t k = src.weighted({1, 1, 1, 1});
      if (k == 0) q.seqlen_q = q.seqlen_k + 1;
      else if (k == 1) q.seqlen_q = -1;
      else if (k == 2) q.swa_valid_start = -1;
      else q.state_id = INT32_MIN;
      s.broken = std::string(kWhat[k]) + " in sequence " + std::to_string(i);
    }
  }
}

}  // namespace kvcheck::props
