// The builder of the load-plan scenarios (SPEC §5.3) and its RapidCheck generators.
#include "properties/gen/ops/plan/plan_gen.h"

#include <algorithm>
#include <climits>

#include "properties/gen/choices.h"
#include "properties/gen/metadata_gen.h"

namespace kvcheck::props {
namespace {

using Kind = PlanOp::Kind;
using Mode = PlanScenario::Mode;

int32_t draw(Source& src, int64_t lo, int64_t hi) {
  return static_cast<int32_t>(src.range(lo, std::min<int64_t>(hi, INT32_MAX)));
}

PlanOp build_segment(Source& src, int32_t bs) {
  PlanOp op;
  op.a = src.weighted({3, 1}) == 1 ? -1 : draw(src, 0, 63);
  op.b = op.a == -1 ? 0 : draw(src, 0, bs);
  op.c = draw(src, op.b, bs);
  return op;
}

PlanOp build_paged(Source& src, int32_t bs) {
  PlanOp op;
  op.kind = Kind::kPaged;
  // Huge blocks: ranges up to INT32_MAX too (a table of a few thousand blocks).
  op.c = bs >= (1 << 20) && src.one_in(4) ? INT32_MAX - draw(src, 0, 1) : draw(src, 0, 4 * int64_t{bs} + 2);
  const int32_t need = static_cast<int32_t>((int64_t{op.c} + bs - 1) / bs);
  if (src.weighted({3, 1}) == 0) {  // distinct blocks from a shuffled pool
    op.table = gen::build_block_tables(src, {need}, 2).tables[0];
    op.note = "shuffled table";
  } else {  // random entries, repeats allowed (a plan does not care)
    op.table.resize(static_cast<size_t>(need + src.range(0, 2)));
    for (auto& b : op.table) b = draw(src, 0, 63);
    op.note = "random table";
  }
  op.b = draw(src, 0, op.c);
  return op;
}

PlanOp build_ring(Source& src, int32_t bs) {
  PlanOp op;
  op.kind = Kind::kRing;
  op.a = draw(src, 0, 15);
  const int64_t lap = src.range(0, 3);  // ring positions repeat every bs tokens
  int64_t first = draw(src, 0, int64_t{bs} - 1), len = 0;
  switch (src.weighted({1, 2, 2, 2, 1, 1})) {
    case 0: break;                                   // empty
    case 1: len = draw(src, 0, bs); break;           // anywhere
    case 2: len = bs - first; break;                 // ends exactly at the wrap point
    case 3:                                          // wraps by one token (a ring of 1 cannot)
      first = bs > 1 ? draw(src, 1, int64_t{bs} - 1) : 0;
      len = bs > 1 ? bs - first + 1 : 1;
      break;
    case 4: len = bs; break;                         // exactly the ring
    default:                                         // far positions
      len = draw(src, 0, bs);
      first = INT32_MAX - len - draw(src, 0, int64_t{bs} - 1) - lap * bs;
  }
  const int64_t begin = std::clamp<int64_t>(lap * bs + first, 0, INT32_MAX - len);
  op.b = static_cast<int32_t>(begin);
  op.c = static_cast<int32_t>(begin + len);
  if (len > 0 && begin % bs + len > bs) op.note = "wraps";
  else if (len == bs) op.note = "exactly the ring";
  return op;
}

PlanOp build_op(Source& src, int32_t bs) {
  switch (src.weighted({1, 1, 1, 2})) {
    case 0: return build_segment(src, bs);
    case 1: {  // sometimes several blocks long (huge block sizes: past INT32_MAX in total)
      PlanOp op;
      op.kind = Kind::kZeroFill;
      op.a = draw(src, 0, 3 * int64_t{bs} + 1);
      return op;
    }
    case 2: return build_paged(src, bs);
    default: return build_ring(src, bs);
  }
}

void build_compressed(Source& src, PlanScenario& s) {
  const int32_t bs = s.block_size = choose_block_size(src);
  std::vector<int32_t> divisors;  // ratio: a divisor of bs (1 and bs included)
  for (int32_t d = 1; d <= bs; ++d)
    if (bs % d == 0) divisors.push_back(d);
  s.ratio = src.pick(std::span<const int32_t>(divisors));
  const int32_t num_seqs = static_cast<int32_t>(src.count(0, 4, 4));
  std::vector<int32_t> need;
  for (int32_t i = 0; i < num_seqs; ++i) {
    SeqMeta q;  // seqlen_k < ratio reachable: no compressed token, one zero row
    q.seqlen_k = src.coin() ? draw(src, 0, 5 * int64_t{bs}) : draw(src, 0, s.ratio);
    need.push_back(gen::blocks_for(q.seqlen_k / s.ratio, bs / s.ratio));
    s.seqs.push_back(std::move(q));
  }
  const auto t = gen::build_block_tables(src, need, 2);
  for (size_t i = 0; i < s.seqs.size(); ++i) s.seqs[i].block_table = t.tables[i];
}

void build_swa(Source& src, PlanScenario& s) {
  const gen::SwaBatch b = gen::build_swa_batch(src);
  s.window = b.window;
  s.ring_size = b.ring_size;
  s.seqs = b.seqs;
  for (SeqMeta& q : s.seqs) {
    if (src.one_in(8)) {  // far positions: a history near 2^30
      q.seqlen_k += 1 << 30;
      q.swa_valid_start += 1 << 30;
    }
    if (src.one_in(8)) q.swa_valid_start = q.seqlen_k - q.seqlen_q + draw(src, 0, 4);  // past the history: all pad
  }
}

}  // namespace

int32_t choose_builder_block_size(Source& src) {
  switch (src.weighted({13, 2, 1})) {
    case 0: return choose_block_size(src);
    case 1: return src.pick<int32_t>({1 << 20, (1 << 30) + 7, INT32_MAX});
    default: return src.pick<int32_t>({0, -1, INT32_MIN});
  }
}

PlanScenario build_plan_scenario(Source& src, Mode mode, int32_t block_size) {
  PlanScenario s;
  s.mode = mode;
  switch (mode) {
    case Mode::kBuilder: {
      s.block_size = block_size;
      const int32_t bs = std::max(block_size, 1);
      // Every kind of append at every case size (a plain count would stay at 0 for small sizes).
      const int64_t num_ops = src.weighted({1, 8}) == 0 ? 0 : src.count(1, 12, 6);
      for (int64_t i = 0; i < num_ops; ++i) s.ops.push_back(build_op(src, bs));
      break;
    }
    case Mode::kCompressed: build_compressed(src, s); break;
    case Mode::kSwa: build_swa(src, s); break;
  }
  return s;
}

rc::Gen<PlanScenario> gen_plan_scenario(Mode mode) {
  return rc::gen::exec([mode] {
    RcSource src;
    return build_plan_scenario(src, mode, mode == Mode::kBuilder ? choose_block_size(src) : 1);
  });
}

rc::Gen<PlanScenario> gen_failed_append_scenario() {
  return rc::gen::exec([] {
    RcSource src;
    PlanScenario s = build_plan_scenario(src, Mode::kBuilder, choose_block_size(src));
    s.ops.resize(std::min<size_t>(s.ops.size(), 3));  // a short history, then the fault
    s.ops.push_back(build_op(src, s.block_size));
    inject_append_fault(src, s.ops.back(), s.block_size);
    return s;
  });
}

}  // namespace kvcheck::props
