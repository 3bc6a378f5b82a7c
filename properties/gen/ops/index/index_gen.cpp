// The builder of the index-transform scenarios (SPEC §5.5), its fault injectors and its
// RapidCheck generators.
#include "properties/gen/ops/index/index_gen.h"

#include <algorithm>
#include <climits>
#include <string>

#include "properties/gen/choices.h"
#include "properties/gen/metadata_gen.h"

namespace kvcheck::props {
namespace {

using Op = IndexScenario::Op;

int32_t draw(Source& src, int64_t lo, int64_t hi) { return static_cast<int32_t>(src.range(lo, hi)); }

// Block-table rows of a convert scenario (max_blocks 0: as many as the queries read).
int32_t table_rows(const IndexScenario& s) {
  if (s.max_blocks > 0) return static_cast<int32_t>(s.block_table.size() / static_cast<size_t>(s.max_blocks));
  int32_t rows = s.seq_ids.empty() ? s.num_q : 0;
  for (int32_t q : s.seq_ids) rows = std::max(rows, q + 1);
  return rows;
}

void build_convert(Source& src, IndexScenario& s) {
  const int32_t bs = s.block_size = choose_block_size(src);
  const int32_t num_seqs = static_cast<int32_t>(src.count(1, 8, 4));
  std::vector<int32_t> seq_ctx, need;
  for (int32_t q = 0; q < num_seqs; ++q) {
    seq_ctx.push_back(draw(src, 0, 4 * int64_t{bs} + 2));
    need.push_back(gen::blocks_for(seq_ctx.back(), bs));
  }
  const auto t = gen::build_block_tables(src, need, 2);
  for (const auto& row : t.tables) s.max_blocks = std::max(s.max_blocks, static_cast<int32_t>(row.size()));
  for (const auto& row : t.tables) {
    s.block_table.insert(s.block_table.end(), row.begin(), row.end());
    s.block_table.insert(s.block_table.end(), static_cast<size_t>(s.max_blocks) - row.size(), -1);
  }
  s.num_q = static_cast<int32_t>(src.count(0, 16, 4));
  s.k = static_cast<int32_t>(src.count(0, 32, 2));
  const bool by_row = s.num_q <= num_seqs && src.coin();  // no seq_ids: query q reads row q
  for (int32_t q = 0; q < s.num_q; ++q) {
    const int32_t seq = by_row ? q : draw(src, 0, num_seqs - 1);
    if (!by_row) s.seq_ids.push_back(seq);
    // context_lens[q] <= the sequence's context: shorter is fine (decode of a prefix).
    const int32_t ctx = draw(src, 0, seq_ctx[static_cast<size_t>(seq)]);
    s.context_lens.push_back(ctx);
    for (int32_t c = 0; c < s.k; ++c)
      switch (src.weighted({1, 1, 1})) {
        case 0: s.topk.push_back(-1); break;
        case 1: s.topk.push_back(draw(src, 0, ctx)); break;  // ctx itself: the first -1 past it
        default: s.topk.push_back(draw(src, ctx, ctx + 3 * int64_t{bs} + 1));  // past the table too
      }
  }
  s.in_place = src.coin();
}

void build_cat(Source& src, IndexScenario& s) {
  s.num_q = static_cast<int32_t>(src.count(0, 16, 4));
  s.wl = static_cast<int32_t>(src.count(0, 16, 2));
  s.wr = static_cast<int32_t>(src.count(0, 16, 2));
  s.total_k_swa_cached = draw(src, 0, 1 << 20);
  s.total_k_swa_cur = draw(src, 0, 1 << 20);
  constexpr int32_t kAwkward[] = {-2, INT32_MIN, INT32_MAX, -1, 0};  // SPEC §6; L is copied as is
  for (int64_t i = 0; i < int64_t{s.num_q} * s.wl; ++i)
    s.left.push_back(src.weighted({1, 2, 1}) == 1 ? draw(src, 0, (1 << 20) - 1)
                     : src.coin()                 ? src.pick(std::span<const int32_t>(kAwkward))
                                                  : -1);
  for (int64_t i = 0; i < int64_t{s.num_q} * s.wr; ++i)
    s.right.push_back(src.weighted({1, 2}) == 0 ? -1 : draw(src, 0, (1 << 20) - 1));
}

void build_expand(Source& src, IndexScenario& s) {
  s.num_q = static_cast<int32_t>(src.count(0, 16, 4));
  s.width = static_cast<int32_t>(src.count(0, 48, 1));
  for (int32_t q = 0; q < s.num_q; ++q) {  // len1 + len2 <= width (SPEC §5.5 [decided])
    const int32_t off1 = draw(src, 0, (1 << 16) - 1), len1 = draw(src, 0, s.width);
    const int32_t off2 = draw(src, 0, (1 << 16) - 1), len2 = draw(src, 0, s.width - len1);
    s.pivots.insert(s.pivots.end(), {off1, len1, off2, len2});
  }
}

void build_swa_decode(Source& src, IndexScenario& s) {
  const int32_t ring = s.ring_size = choose_block_size(src);
  s.width = static_cast<int32_t>(src.count(0, ring + 8, 1));  // columns past the ring are -1
  s.num_q = static_cast<int32_t>(src.count(0, 16, 4));
  for (int32_t q = 0; q < s.num_q; ++q) {
    const int32_t state = draw(src, 0, 7);
    s.start_len.push_back(state * ring + draw(src, 0, ring - 1));  // may wrap
    s.start_len.push_back(draw(src, 0, std::min(s.width, ring)));  // short windows too
  }
}

}  // namespace

int64_t index_out_width(const IndexScenario& s) {
  switch (s.op) {
    case Op::kConvert: return s.k;
    case Op::kCat: return int64_t{s.wl} + s.wr;
    default: return s.width;
  }
}

IndexScenario build_index_scenario(Source& src, Op op) {
  IndexScenario s;
  s.op = op;
  switch (op) {
    case Op::kConvert: build_convert(src, s); break;
    case Op::kCat: build_cat(src, s); break;
    case Op::kExpand: build_expand(src, s); break;
    case Op::kSwaDecode: build_swa_decode(src, s); break;
  }
  return s;
}

IndexScenario build_index_scenario(Source& src) {
  return build_index_scenario(src, static_cast<Op>(src.weighted({1, 1, 1, 1})));
}

void inject_convert_fault(Source& src, IndexScenario& s) {
  s.in_place = false;
  if (s.num_q == 0 || s.k == 0) {  // room for one bad entry
    s.num_q = std::max(s.num_q, 1);
    s.k = 1;
    s.topk.assign(static_cast<size_t>(s.num_q), -1);
    s.context_lens.resize(static_cast<size_t>(s.num_q), 0);
    if (!s.seq_ids.empty()) s.seq_ids.resize(static_cast<size_t>(s.num_q), 0);
    if (s.seq_ids.empty() && s.num_q > table_rows(s)) s.seq_ids.assign(static_cast<size_t>(s.num_q), 0);
  }
  const int32_t q = draw(src, 0, s.num_q - 1), c = draw(src, 0, s.k - 1);
  int32_t& x = s.topk[static_cast<size_t>(q) * static_cast<size_t>(s.k) + static_cast<size_t>(c)];
  const int32_t bs = s.block_size;
  switch (src.weighted({1, 1, 1})) {
    case 0:  // a valid index past max_blocks
      x = s.max_blocks * bs + draw(src, 0, bs - 1);
      s.context_lens[static_cast<size_t>(q)] = x + 1;
      s.code = ErrorCode::kRangeOutOfTable;
      s.fault = "topk[" + std::to_string(q) + "][" + std::to_string(c) + "] = " + std::to_string(x) +
                ": past max_blocks";
      break;
    case 1: {  // a valid index on a -1 table entry: widen every row by one -1 column
      const int32_t rows = table_rows(s);
      std::vector<int32_t> wider;
      for (int32_t r = 0; r < rows; ++r) {
        const auto row = s.block_table.begin() + int64_t{r} * s.max_blocks;
        wider.insert(wider.end(), row, row + s.max_blocks);
        wider.push_back(-1);
      }
      s.block_table = std::move(wider);
      ++s.max_blocks;
      x = (s.max_blocks - 1) * bs;
      s.context_lens[static_cast<size_t>(q)] = x + 1;
      s.code = ErrorCode::kRangeOutOfTable;
      s.fault = "topk[" + std::to_string(q) + "][" + std::to_string(c) + "] = " + std::to_string(x) +
                ": on a -1 table entry";
      break;
    }
    default:  // a negative entry other than -1
      x = src.pick<int32_t>({-2, -1000, INT32_MIN});
      s.code = ErrorCode::kInvalidArgument;
      s.fault = "topk[" + std::to_string(q) + "][" + std::to_string(c) + "] = " + std::to_string(x);
  }
}

void raw_convert_values(Source& src, IndexScenario& s) {
  s.in_place = false;
  s.code.reset();
  constexpr int32_t kAwkward[] = {-2, INT32_MIN, INT32_MAX, -1, 0};  // SPEC §6
  switch (src.weighted({1, 1, 1})) {
    case 0:  // awkward entries (INT32_MAX: past any context, so -1)
      for (auto& x : s.topk)
        if (src.one_in(6)) x = src.pick(std::span<const int32_t>(kAwkward));
      s.fault = "raw top-k entries";
      break;
    case 1:  // a -1 table entry some query's context may need
      if (!s.block_table.empty()) s.block_table[static_cast<size_t>(draw(src, 0, static_cast<int64_t>(s.block_table.size()) - 1))] = -1;
      s.fault = "a -1 table entry";
      break;
    default:  // queries without a table row
      s.seq_ids.clear();
      s.fault = "no seq_ids";
  }
}

rc::Gen<IndexScenario> gen_index_scenario(Op op) {
  return rc::gen::exec([op] {
    RcSource src;
    return build_index_scenario(src, op);
  });
}

rc::Gen<IndexScenario> gen_convert_fault_scenario() {
  return rc::gen::exec([] {
    RcSource src;
    IndexScenario s = build_index_scenario(src, Op::kConvert);
    inject_convert_fault(src, s);
    return s;
  });
}

}  // namespace kvcheck::props
