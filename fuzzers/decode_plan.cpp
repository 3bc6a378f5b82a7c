// Decoder of the plan target (SPEC §5.3): builder appends, compressed and SWA plans.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <climits>
#include <sstream>

#include "fuzzers/decoders.h"

namespace kvcheck::fuzz {
namespace {

// Builder block sizes from here on reach total_k past INT32_MAX in a few pieces; the
// check compares segments arithmetically instead of row by row.
constexpr int32_t kHugeBlock = 1 << 20;

}  // namespace

PlanScenario decode_plan(FuzzedDataProvider& fdp) {
  PlanScenario s;
  s.mode = static_cast<PlanScenario::Mode>(fdp.ConsumeIntegralInRange<int>(0, 2));
  SplitMix64 rng{fdp.ConsumeIntegral<uint64_t>()};
  auto below = [&](int64_t n) {
    return static_cast<int32_t>(rng.next() % static_cast<uint64_t>(std::max<int64_t>(n, 1)));
  };
  switch (s.mode) {
    case PlanScenario::Mode::kBuilder: {
      // Mostly ordinary block sizes; huge ones reach total_k past INT32_MAX in a few
      // pieces; < 1 is the constructor's error.
      const int size_mode = fdp.ConsumeIntegralInRange<int>(0, 15);
      constexpr int32_t kHuge[] = {1 << 20, (1 << 30) + 7, INT32_MAX};
      constexpr int32_t kBad[] = {0, -1, INT32_MIN};
      s.block_size = size_mode < 13 ? fdp_block_size(fdp)
                     : size_mode < 15 ? fdp.PickValueInArray(kHuge)
                                      : fdp.PickValueInArray(kBad);
      const bool huge = s.block_size >= kHugeBlock;
      const int32_t bs = std::max(s.block_size, 1);
      const int num_ops = fdp.ConsumeIntegralInRange<int>(0, 12);
      for (int i = 0; i < num_ops; ++i) {
        PlanOp op;
        op.kind = static_cast<PlanOp::Kind>(fdp.ConsumeIntegralInRange<int>(0, 3));
        const int bad = fdp.ConsumeIntegralInRange<int>(0, 9);  // 0, 1: an invalid field
        switch (op.kind) {
          case PlanOp::Kind::kSegment: {
            const int which = fdp.ConsumeIntegralInRange<int>(0, 3);
            op.a = which == 0 ? -1 : below(64);
            op.b = op.a == -1 ? 0 : fdp.ConsumeIntegralInRange<int32_t>(0, bs);
            op.c = fdp.ConsumeIntegralInRange<int32_t>(op.b, bs);
            if (bad == 0) {
              constexpr int32_t kBlocks[] = {-2, INT32_MIN};
              op.a = fdp.PickValueInArray(kBlocks);
              op.note = "invalid block";
            } else if (bad == 1) {
              const int k = fdp.ConsumeIntegralInRange<int>(0, 2);
              if (k == 0) {
                if (op.c == INT32_MAX) --op.c;  // room for begin = end + 1
                op.b = op.c + 1;
                op.note = "invalid: begin > end";
              } else if (k == 1 && bs < INT32_MAX) {
                op.b = 0;
                op.c = bs + 1;
                op.note = "invalid: end > block_size";
              } else if (k == 2) {
                op.b = -1;
                op.note = "invalid: begin < 0";
              }
            }
            break;
          }
          case PlanOp::Kind::kZeroFill:
            op.a = huge ? fdp.ConsumeIntegralInRange<int32_t>(0, INT32_MAX)
                        : fdp.ConsumeIntegralInRange<int32_t>(0, 3 * bs + 2);
            if (bad == 0) op.a = fdp.ConsumeBool() ? -1 : INT32_MIN, op.note = "invalid: negative";
            break;
          case PlanOp::Kind::kPaged: {
            const int32_t tokens = huge ? fdp.ConsumeIntegralInRange<int32_t>(0, INT32_MAX)
                                        : fdp.ConsumeIntegralInRange<int32_t>(0, 4 * bs + 3);
            const int64_t need = (int64_t{tokens} + bs - 1) / bs;
            const int tail = fdp.ConsumeIntegralInRange<int>(0, 2);
            const int table_mode = fdp.ConsumeIntegralInRange<int>(0, 4);
            op.table.resize(static_cast<size_t>(need + tail));
            if (table_mode <= 1) {  // distinct blocks from a shuffled pool
              op.note = "shuffled table";
              auto pool = props::shuffled(rng, static_cast<int64_t>(op.table.size()) + 8, static_cast<int64_t>(op.table.size()));
              std::copy(pool.begin(), pool.end(), op.table.begin());
            } else {  // random entries, repeats allowed
              op.note = "random table";
              for (auto& b : op.table) b = below(64);
            }
            if (table_mode == 3 && !op.table.empty()) {  // holes, maybe inside the range
              op.note = "holey table";
              for (int h = fdp.ConsumeIntegralInRange<int>(1, 3); h > 0; --h)
                op.table[static_cast<size_t>(below(static_cast<int64_t>(op.table.size())))] =
                    fdp.ConsumeBool() ? -1 : INT32_MIN;
            }
            if (table_mode == 4 && need > 0) {  // one block short
              op.note = "short table";
              op.table.resize(static_cast<size_t>(need - 1));
            }
            op.c = tokens;
            op.b = fdp.ConsumeIntegralInRange<int32_t>(0, tokens);
            if (bad == 0) {
              if (op.c == INT32_MAX) --op.c;  // room for begin = end + 1
              if (fdp.ConsumeBool()) op.b = op.c + 1, op.note += ", invalid: begin > end";
              else op.b = -1, op.note += ", invalid: begin < 0";
            }
            break;
          }
          case PlanOp::Kind::kRing: {
            op.a = below(16);
            const int pos_mode = fdp.ConsumeIntegralInRange<int>(0, 7);
            const int64_t len_choice = fdp.ConsumeIntegralInRange<int>(0, 4);
            int64_t len = len_choice == 0 ? 0
                          : len_choice == 1 ? bs  // exactly the ring
                                            : fdp.ConsumeIntegralInRange<int32_t>(0, bs);
            int64_t begin = pos_mode == 0 ? INT32_MAX - len - below(bs)  // far positions
                                          : fdp.ConsumeIntegralInRange<int32_t>(0, 4 * std::min(bs, 1 << 28));
            begin = std::clamp<int64_t>(begin, 0, INT32_MAX - len);
            if (bad == 0) {
              const int k = fdp.ConsumeIntegralInRange<int>(0, 3);
              if (k == 0) op.a = fdp.ConsumeBool() ? -1 : INT32_MIN, op.note = "invalid: state_id < 0";
              else if (k == 1) begin = -1 - below(bs), op.note = "invalid: begin < 0";
              else if (k == 2 && bs < INT32_MAX) len = bs + 1, begin = std::min<int64_t>(begin, INT32_MAX - len), op.note = "invalid: longer than the ring";
              else len = -1 - below(bs), begin = std::max<int64_t>(begin, -len), op.note = "invalid: begin > end";
            }
            op.b = static_cast<int32_t>(begin);
            op.c = static_cast<int32_t>(begin + len);
            if (op.note.empty() && len > 0 && begin % bs + len > bs) op.note = "wraps";
            if (op.note.empty() && len == bs) op.note = "exactly the ring";
            break;
          }
        }
        s.ops.push_back(std::move(op));
      }
      break;
    }
    case PlanScenario::Mode::kCompressed: {
      s.block_size = fdp_block_size(fdp);
      std::vector<int32_t> divisors;
      for (int32_t d = 1; d <= s.block_size; ++d)
        if (s.block_size % d == 0) divisors.push_back(d);
      s.ratio = divisors[fdp.ConsumeIntegralInRange<size_t>(0, divisors.size() - 1)];
      const int32_t per_block = s.block_size / s.ratio;
      const int32_t num_seqs = fdp.ConsumeIntegralInRange<int32_t>(0, 4);
      const int table_mode = fdp.ConsumeIntegralInRange<int>(0, 3);  // 2: holey, 3: short
      s.table_mode = table_mode <= 1 ? "disjoint shuffled" : table_mode == 2 ? "holey" : "short";
      int32_t next_block = 0;
      std::vector<int32_t> pool = props::shuffled(rng, 4 * 64, 4 * 64);
      for (int32_t i = 0; i < num_seqs; ++i) {
        SeqMeta q;
        q.seqlen_k = fdp.ConsumeBool() ? fdp.ConsumeIntegralInRange<int32_t>(0, s.ratio)  // n == 0 reachable
                                       : fdp.ConsumeIntegralInRange<int32_t>(0, 5 * s.block_size);
        const int32_t n = q.seqlen_k / s.ratio;
        const int32_t need = (n + per_block - 1) / per_block;
        for (int32_t b = 0; b < need + fdp.ConsumeIntegralInRange<int32_t>(0, 2); ++b)
          q.block_table.push_back(b >= need && fdp.ConsumeBool() ? -1 : pool[static_cast<size_t>(next_block++ % 256)]);
        s.seqs.push_back(std::move(q));
      }
      if (table_mode >= 2 && num_seqs > 0) {
        SeqMeta& q = s.seqs[static_cast<size_t>(below(num_seqs))];
        if (table_mode == 3 && !q.block_table.empty()) q.block_table.pop_back();
        if (table_mode == 2 && !q.block_table.empty())
          q.block_table[static_cast<size_t>(below(static_cast<int64_t>(q.block_table.size())))] = -1;
      }
      const int bad = fdp.ConsumeIntegralInRange<int>(0, 9);
      if (bad == 0) {
        constexpr int32_t kRatios[] = {0, -1, INT32_MIN};
        s.ratio = fdp.PickValueInArray(kRatios);
        s.broken = "ratio " + std::to_string(s.ratio);
      } else if (bad == 1 && s.block_size > 1) {
        s.ratio = s.block_size + 1;  // does not divide block_size
        s.broken = "ratio does not divide block_size";
      } else if (bad == 2) {
        s.block_size = fdp.ConsumeBool() ? 0 : -s.block_size;
        s.broken = "block_size " + std::to_string(s.block_size);
      } else if (bad == 3 && num_seqs > 0) {
        const int32_t i = below(num_seqs);
        s.seqs[static_cast<size_t>(i)].seqlen_k = fdp.ConsumeBool() ? -1 : INT32_MIN;
        s.broken = "seqlen_k of sequence " + std::to_string(i);
      }
      break;
    }
    case PlanScenario::Mode::kSwa: {
      s.window = fdp.ConsumeIntegralInRange<int32_t>(1, 16);
      s.ring_size = s.window + (fdp.ConsumeBool() ? 0 : fdp.ConsumeIntegralInRange<int32_t>(0, 8));
      const int32_t num_seqs = fdp.ConsumeIntegralInRange<int32_t>(0, 4);
      const auto states = props::shuffled(rng, 8, 8);
      for (int32_t i = 0; i < num_seqs; ++i) {
        SeqMeta q;
        const int hist_mode = fdp.ConsumeIntegralInRange<int>(0, 7);
        const int32_t history_end =
            hist_mode == 0 ? fdp.ConsumeIntegralInRange<int32_t>(1 << 30, (1 << 30) + 64)  // far
            : hist_mode == 1 ? fdp.ConsumeIntegralInRange<int32_t>(0, s.window - 1)       // short
                             : fdp.ConsumeIntegralInRange<int32_t>(0, 3 * s.ring_size);
        q.seqlen_q = fdp.ConsumeIntegralInRange<int32_t>(0, 2 * s.ring_size + 3);
        q.seqlen_k = history_end + q.seqlen_q;
        const int start_mode = fdp.ConsumeIntegralInRange<int>(0, 3);
        q.swa_valid_start = start_mode == 0   ? 0
                            : start_mode <= 2 ? fdp.ConsumeIntegralInRange<int32_t>(0, history_end)
                                              : history_end + fdp.ConsumeIntegralInRange<int32_t>(0, 5);
        q.state_id = states[static_cast<size_t>(i)];
        s.seqs.push_back(std::move(q));
      }
      const int bad = fdp.ConsumeIntegralInRange<int>(0, 9);
      if (bad == 0) {
        if (fdp.ConsumeBool()) s.window = fdp.ConsumeBool() ? 0 : -1, s.broken = "window < 1";
        else s.ring_size = s.window - 1, s.broken = "ring_size < window";
      } else if (bad == 1 && num_seqs > 0) {
        const int32_t i = below(num_seqs);
        SeqMeta& q = s.seqs[static_cast<size_t>(i)];
        const int k = fdp.ConsumeIntegralInRange<int>(0, 3);
        static const char* kWhat[] = {"seqlen_q > seqlen_k", "seqlen_q < 0", "swa_valid_start < 0",
                                      "state_id < 0"};
        if (k == 0) q.seqlen_q = q.seqlen_k + 1;
        else if (k == 1) q.seqlen_q = -1;
        else if (k == 2) q.swa_valid_start = -1;
        else q.state_id = INT32_MIN;
        s.broken = std::string(kWhat[k]) + " in sequence " + std::to_string(i);
      }
      break;
    }
  }
  return s;
}

std::string describe(const PlanScenario& s) {
  std::ostringstream o;
  auto seqs = [&] {
    for (size_t i = 0; i < s.seqs.size(); ++i) {
      const SeqMeta& q = s.seqs[i];
      o << "  seq " << i << ": seqlen_k " << q.seqlen_k << ", seqlen_q " << q.seqlen_q;
      if (s.mode == PlanScenario::Mode::kSwa)
        o << ", swa_valid_start " << q.swa_valid_start << ", state_id " << q.state_id;
      else
        o << ", block_table " << props::format_ints(q.block_table, 16);
      o << "\n";
    }
    if (!s.broken.empty()) o << "  invalid on purpose: " << s.broken << "\n";
  };
  switch (s.mode) {
    case PlanScenario::Mode::kBuilder: {
      static const char* kOps[] = {"append_segment", "append_zero_fill", "append_paged_range",
                                   "append_ring_range"};
      o << "plan scenario: BlockLoadPlanBuilder(" << s.block_size << "), " << s.ops.size()
        << " appends\n";
      for (size_t i = 0; i < s.ops.size(); ++i) {
        const PlanOp& op = s.ops[i];
        o << "  " << i << ": " << kOps[static_cast<int>(op.kind)] << "(";
        switch (op.kind) {
          case PlanOp::Kind::kSegment: o << op.a << ", " << op.b << ", " << op.c; break;
          case PlanOp::Kind::kZeroFill: o << op.a; break;
          case PlanOp::Kind::kPaged: o << props::format_ints(op.table, 16) << ", " << op.b << ", " << op.c; break;
          case PlanOp::Kind::kRing: o << op.a << ", " << op.b << ", " << op.c; break;
        }
        o << ")" << (op.note.empty() ? "" : "  # " + op.note) << "\n";
      }
      break;
    }
    case PlanScenario::Mode::kCompressed:
      o << "plan scenario: build_compressed_plan, block_size " << s.block_size << ", ratio "
        << s.ratio << ", " << s.seqs.size() << " sequences, tables " << s.table_mode << "\n";
      seqs();
      break;
    case PlanScenario::Mode::kSwa:
      o << "plan scenario: build_swa_plan, window " << s.window << ", ring_size " << s.ring_size
        << ", " << s.seqs.size() << " sequences\n";
      seqs();
      break;
  }
  return o.str();
}

}  // namespace kvcheck::fuzz
