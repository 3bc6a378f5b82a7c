// The builder of the slot-mapping scenarios (SPEC §5.4), its fault injectors and its
// RapidCheck generators.
#include "properties/gen/ops/slot_mapping/slot_mapping_gen.h"

#include <algorithm>
#include <climits>
#include <string>

#include "properties/gen/choices.h"
#include "properties/gen/metadata_gen.h"

namespace kvcheck::props {
namespace {

using Op = SlotMappingScenario::Op;

int32_t draw(Source& src, int64_t lo, int64_t hi) { return static_cast<int32_t>(src.range(lo, hi)); }
bool paged(Op op) { return op != Op::kSwaStore && op != Op::kSwaWindow; }
bool prepare(Op op) { return op == Op::kPreparePrefill || op == Op::kPrepareDecode; }

void build_paged(Source& src, SlotMappingScenario& s) {
  const int32_t bs = s.block_size = choose_block_size(src);
  const int32_t min_tokens = s.op == Op::kPrefill || s.op == Op::kPageTable ? 0 : 1;  // decode stores the last token
  const int32_t num_seqs = static_cast<int32_t>(src.count(0, 4, 8));
  std::vector<int32_t> need;
  for (int32_t i = 0; i < num_seqs; ++i) {
    s.num_tokens.push_back(draw(src, min_tokens, 3 * int64_t{bs} + 4));
    need.push_back(gen::blocks_for(s.num_tokens.back(), bs));
  }
  s.tables = gen::build_block_tables(src, need, 2).tables;  // disjoint: distinct slots
  for (int32_t i = 0; i < num_seqs; ++i) s.num_cached.push_back(draw(src, 0, s.num_tokens[static_cast<size_t>(i)]));
  if (!prepare(s.op)) return;
  if (src.one_in(3)) s.rule_multiple = src.pick<int32_t>({1, bs, bs % 2 == 0 ? bs / 2 : 1});  // holds
  if (s.op == Op::kPrepareDecode) s.graph_batch_size = src.pick<int32_t>({0, num_seqs, num_seqs + 3});
}

void build_swa_store(Source& src, SlotMappingScenario& s) {
  const int32_t ring = s.ring_size = choose_block_size(src);
  s.state_id = draw(src, 0, 5);
  s.seqlen_q = draw(src, 0, 3 * int64_t{ring} + 2);              // chunks longer than the ring
  s.seqlen_k = s.seqlen_q + draw(src, 0, 3 * int64_t{ring});     // histories past it
  s.prefix.assign(static_cast<size_t>(draw(src, 1, 3)), -7);     // appends after what is there
}

void build_swa_window(Source& src, SlotMappingScenario& s) {
  const int32_t ring = s.ring_size = choose_block_size(src);
  s.window = draw(src, 1, ring);
  s.state_id = draw(src, 0, 5);
  s.seqlen_k = draw(src, 1, 3 * int64_t{ring} + s.window);  // shorter and longer than the window
  switch (src.weighted({2, 2, 1})) {
    case 0: s.swa_valid_start = 0; break;
    case 1: s.swa_valid_start = draw(src, 0, s.seqlen_k - 1); break;      // inside the history
    default: s.swa_valid_start = s.seqlen_k + draw(src, 0, 2); break;     // past it: empty window
  }
}

}  // namespace

std::vector<PagedSeq> SlotMappingScenario::seqs() const {
  std::vector<PagedSeq> out;
  for (size_t i = 0; i < tables.size(); ++i) out.push_back({tables[i], num_cached[i], num_tokens[i]});
  return out;
}

SlotMappingScenario build_slot_mapping_scenario(Source& src, Op op) {
  SlotMappingScenario s;
  s.op = op;
  switch (op) {
    case Op::kSwaStore: build_swa_store(src, s); break;
    case Op::kSwaWindow: build_swa_window(src, s); break;
    default: build_paged(src, s); break;
  }
  return s;
}

Op choose_slot_mapping_op(Source& src) { return static_cast<Op>(src.weighted({1, 1, 1, 1, 1, 1, 1})); }

SlotMappingScenario build_slot_mapping_scenario(Source& src) {
  return build_slot_mapping_scenario(src, choose_slot_mapping_op(src));
}

void inject_slot_mapping_fault(Source& src, SlotMappingScenario& s) {
  const size_t prepare_fault = prepare(s.op) ? src.weighted({2, 1, s.op == Op::kPrepareDecode && !s.tables.empty()}) : 0;
  if (prepare_fault == 1) {  // a rule the block size breaks, or no rule at all
    s.rule_multiple = src.pick<int32_t>({s.block_size + 1, -1, INT32_MIN});
    s.code = ErrorCode::kInvalidArgument;
    s.fault = "block_size rule broken";
    return;
  }
  if (prepare_fault == 2) {
    s.graph_batch_size = static_cast<int32_t>(s.tables.size()) > 1 ? static_cast<int32_t>(s.tables.size()) - 1 : -1;
    s.code = ErrorCode::kInvalidArgument;
    s.fault = "graph_batch_size below the batch";
    return;
  }
  if (paged(s.op)) {
    const int32_t n = static_cast<int32_t>(s.tables.size());
    const int32_t victim = draw(src, 0, n);
    if (victim == n) {  // an extra sequence with an empty table
      s.tables.emplace_back();
      s.num_cached.push_back(0);
      s.num_tokens.push_back(0);
      if (s.graph_batch_size != 0) s.graph_batch_size = std::max(s.graph_batch_size, n + 1);  // room for it
    }
    const size_t v = static_cast<size_t>(victim);
    const int32_t capacity = static_cast<int32_t>(s.tables[v].size()) * s.block_size;
    s.num_tokens[v] = capacity + draw(src, 1, s.block_size + 1);  // past the table (or its -1 tail)
    s.code = ErrorCode::kRangeOutOfTable;
    s.fault = "tokens up to " + std::to_string(s.num_tokens[v]) + " of sequence " + std::to_string(victim) +
              " over a table of " + std::to_string(s.tables[v].size()) + " blocks";
    return;
  }
  s.code = ErrorCode::kInvalidArgument;
  const bool store = s.op == Op::kSwaStore;
  switch (src.weighted({1, 1, 1, 1})) {
    case 0: s.ring_size = src.pick<int32_t>({0, -1, INT32_MIN}); s.fault = "ring_size < 1"; break;
    case 1: s.state_id = src.pick<int32_t>({-1, INT32_MIN}); s.fault = "state_id < 0"; break;
    case 2:
      if (store) {
        s.seqlen_q = s.seqlen_k + draw(src, 1, 3);
        s.fault = "seqlen_q > seqlen_k";
      } else {
        s.window = src.coin() ? 0 : s.ring_size + draw(src, 1, 3);
        s.fault = "window outside [1, ring_size]";
      }
      break;
    default:
      if (store) {
        s.seqlen_q = src.pick<int32_t>({-1, INT32_MIN});
        s.fault = "seqlen_q < 0";
      } else if (src.coin()) {
        s.seqlen_k = src.pick<int32_t>({0, -1, INT32_MIN});
        s.fault = "seqlen_k < 1";
      } else {
        s.swa_valid_start = src.pick<int32_t>({-1, INT32_MIN});
        s.fault = "swa_valid_start < 0";
      }
  }
}

void raw_slot_mapping_values(Source& src, SlotMappingScenario& s) {
  s.code.reset();
  constexpr int32_t kAwkward[] = {-1, 0, INT32_MAX, INT32_MIN, 1 << 30, -2};  // SPEC §6
  auto awkward = [&] { return src.pick(std::span<const int32_t>(kAwkward)); };
  if (paged(s.op)) {
    const size_t n = s.tables.size();
    switch (src.weighted({1, 1, 1, 1})) {
      case 0: s.block_size = src.pick<int32_t>({0, -1, INT32_MIN}); s.fault = "raw block_size"; break;
      case 1:  // num_cached / num_tokens anywhere (tokens past the table stop at the table)
        for (size_t i = 0; i < n; ++i) {
          if (src.one_in(3)) s.num_cached[i] = src.coin() ? awkward() : s.num_tokens[i] + 1;
          if (src.one_in(3)) s.num_tokens[i] = awkward();
        }
        s.fault = "raw token counts";
        break;
      case 2:  // prepare_*: any rule, graph rows below the batch (never huge: rows are allocated)
        if (prepare(s.op)) {
          s.rule_multiple = awkward();
          if (s.op == Op::kPrepareDecode) s.graph_batch_size = src.pick<int32_t>({-1, 0, static_cast<int32_t>(n) - 1, static_cast<int32_t>(n) + 1});
          s.fault = "raw rule and graph rows";
          break;
        }
        [[fallthrough]];
      default:  // -1, negative or huge (slot past INT32_MAX) table entries
        for (auto& t : s.tables)
          for (auto& b : t)
            if (src.one_in(4)) b = src.pick<int32_t>({-1, INT32_MAX, -2, INT32_MAX / s.block_size, INT32_MIN});
        s.fault = "raw table entries";
    }
    return;
  }
  // Every argument is O(1) except seqlen_q (store rows): it stays at most its drawn
  // value, or becomes invalid.
  if (src.coin()) s.ring_size = awkward();
  if (src.coin()) s.state_id = awkward();
  if (src.coin()) s.seqlen_k = awkward();
  const int32_t past_k = s.seqlen_k < INT32_MAX ? s.seqlen_k + 1 : -1;  // never a valid huge chunk
  if (src.coin()) s.seqlen_q = src.pick<int32_t>({-1, INT32_MIN, past_k, s.seqlen_q});
  if (src.coin()) s.window = awkward();
  if (src.coin()) s.swa_valid_start = awkward();
  s.fault = "raw SWA arguments";
}

rc::Gen<SlotMappingScenario> gen_slot_mapping_scenario(Op op) {
  return rc::gen::exec([op] {
    RcSource src;
    return build_slot_mapping_scenario(src, op);
  });
}

rc::Gen<SlotMappingScenario> gen_slot_mapping_fault_scenario(Op op) {
  return rc::gen::exec([op] {
    RcSource src;
    SlotMappingScenario s = build_slot_mapping_scenario(src, op);
    inject_slot_mapping_fault(src, s);
    return s;
  });
}

}  // namespace kvcheck::props
