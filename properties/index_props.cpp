// Index-transform properties (SPEC §5.5): every backend against reference/index_transforms.
#include <rapidcheck.h>

#include <set>

#include "impl/error.h"
#include "properties/gen/metadata_gen.h"
#include "properties/registry.h"
#include "reference/index_transforms.h"

namespace kvcheck::props {
namespace {

constexpr int32_t kSentinel = -123456789;  // out entries a failed call must not touch

// "" when equal, else "<what>[q][c]: expected E, actual A".
std::string diff(const std::string& what, const Backend& b, int32_t width,
                 const std::vector<int64_t>& expected, const std::vector<int32_t>& actual) {
  for (size_t i = 0; i < expected.size(); ++i)
    if (expected[i] != actual[i])
      return what + " on " + std::string(b.name()) + ": out[" + std::to_string(i / width) + "][" +
             std::to_string(i % width) + "]: expected " + std::to_string(expected[i]) +
             ", actual " + std::to_string(actual[i]);
  return "";
}

bool skip(const Backend& b) { return !b.capabilities().index_transforms; }

// Random convert_kv_index input: shuffled tables covering each sequence's context,
// padded with -1 or unused blocks; top-k with -1, in-context and out-of-context
// entries (including ones past the table).
struct ConvertInput {
  int32_t num_seqs = 0, num_q = 0, k = 0, max_blocks = 0, bs = 1;
  std::vector<int32_t> topk, table, seq_ids, ctx;
  ConvertKvIndexArgs args() const {
    return {topk, num_q, k, table, max_blocks, seq_ids, ctx, bs};
  }
};
ConvertInput draw_convert_input() {
  ConvertInput in;
  in.bs = *gen::block_size();
  const int32_t num_seqs = in.num_seqs = *rc::gen::inRange(1, 5);
  std::vector<int32_t> seq_ctx, need;
  for (int32_t s = 0; s < num_seqs; ++s) {
    seq_ctx.push_back(*rc::gen::inRange(0, 4 * in.bs + 3));
    need.push_back(gen::blocks_for(seq_ctx.back(), in.bs));
  }
  const auto t = *gen::block_tables(need, 2);
  for (const auto& row : t.tables) in.max_blocks = std::max<int32_t>(in.max_blocks, static_cast<int32_t>(row.size()));
  for (const auto& row : t.tables) {
    in.table.insert(in.table.end(), row.begin(), row.end());
    in.table.insert(in.table.end(), static_cast<size_t>(in.max_blocks) - row.size(), -1);
  }
  in.num_q = *rc::gen::inRange(0, 6);
  in.k = *rc::gen::inRange(0, 9);
  const bool identity = num_seqs == in.num_q && *rc::gen::arbitrary<bool>();
  for (int32_t q = 0; q < in.num_q; ++q) {
    const int32_t s = identity ? q : *rc::gen::inRange(0, num_seqs);
    if (!identity) in.seq_ids.push_back(s);
    // context_lens[q] <= the sequence's context: shorter is fine (decode of a prefix).
    const int32_t ctx = *rc::gen::inRange(0, seq_ctx[static_cast<size_t>(s)] + 1);
    in.ctx.push_back(ctx);
    for (int32_t c = 0; c < in.k; ++c)
      in.topk.push_back(*rc::gen::oneOf(rc::gen::just<int32_t>(-1), rc::gen::inRange(0, ctx + 1),
                                        rc::gen::inRange(ctx, ctx + 3 * in.bs + 2)));
  }
  return in;
}

void prop_convert_kv_index_matches_reference(const Backend& b) {
  RC_SUCCEED_IF(skip(b));
  const ConvertInput in = draw_convert_input();
  const bool in_place = *rc::gen::arbitrary<bool>();  // the seed's kernel rewrites topk
  std::vector<int32_t> out = in_place ? in.topk : std::vector<int32_t>(in.topk.size(), kSentinel);
  ConvertKvIndexArgs args = in.args();
  if (in_place) args.topk = out;
  const auto expected = ref::convert_kv_index(in.args());
  b.convert_kv_index(args, out);
  const std::string msg = diff("convert_kv_index", b, std::max(in.k, 1), expected, out);
  if (!msg.empty()) RC_FAIL(msg);
}

void prop_convert_kv_index_bad_input_is_error(const Backend& b) {
  RC_SUCCEED_IF(skip(b));
  ConvertInput in = draw_convert_input();
  if (in.num_q == 0 || in.k == 0) {
    in.num_q = std::max(in.num_q, 1);
    in.k = 1;
    in.topk.assign(static_cast<size_t>(in.num_q), -1);
    in.ctx.resize(static_cast<size_t>(in.num_q), 0);
    if (!in.seq_ids.empty()) in.seq_ids.resize(static_cast<size_t>(in.num_q), 0);
  }
  const int32_t q = *rc::gen::inRange(0, in.num_q);
  const int32_t c = *rc::gen::inRange(0, in.k);
  int32_t& x = in.topk[static_cast<size_t>(q) * in.k + c];
  ErrorCode want = ErrorCode::kRangeOutOfTable;
  switch (*rc::gen::inRange(0, 3)) {
    case 0:  // a valid index past max_blocks
      x = in.max_blocks * in.bs + *rc::gen::inRange(0, in.bs);
      in.ctx[static_cast<size_t>(q)] = x + 1;
      break;
    case 1: {  // a valid index on a -1 table entry: widen every row by one -1 column
      std::vector<int32_t> wider;
      for (int32_t s = 0; s < in.num_seqs; ++s) {
        const auto row = in.table.begin() + static_cast<int64_t>(s) * in.max_blocks;
        wider.insert(wider.end(), row, row + in.max_blocks);
        wider.push_back(-1);
      }
      in.table = std::move(wider);
      ++in.max_blocks;
      x = (in.max_blocks - 1) * in.bs;
      in.ctx[static_cast<size_t>(q)] = x + 1;
      break;
    }
    default:  // a negative entry other than -1
      want = ErrorCode::kInvalidArgument;
      x = *rc::gen::element(-2, -1000, INT32_MIN);
  }
  std::vector<int32_t> out(in.topk.size(), kSentinel);
  try {
    b.convert_kv_index(in.args(), out);
    RC_FAIL("convert_kv_index on " + std::string(b.name()) + ": no error for topk[" +
            std::to_string(q) + "][" + std::to_string(c) + "] = " + std::to_string(x));
  } catch (const Error& e) {
    RC_ASSERT(e.code() == want);
  }
  for (int32_t v : out) RC_ASSERT(v == kSentinel);  // nothing written
}

void prop_kv_index_cat_matches_reference(const Backend& b) {
  RC_SUCCEED_IF(skip(b));
  const int32_t num_q = *rc::gen::inRange(0, 6), wl = *rc::gen::inRange(0, 9), wr = *rc::gen::inRange(0, 9);
  const int32_t cached = *rc::gen::inRange(0, 10000), cur = *rc::gen::inRange(0, 10000);
  const auto entry = rc::gen::oneOf(rc::gen::just<int32_t>(-1), rc::gen::inRange(0, 10000));
  const auto left = *rc::gen::container<std::vector<int32_t>>(static_cast<size_t>(num_q * wl), entry);
  const auto right = *rc::gen::container<std::vector<int32_t>>(static_cast<size_t>(num_q * wr), entry);
  std::vector<int32_t> out(static_cast<size_t>(num_q) * (wl + wr), kSentinel);
  b.kv_index_cat(left, wl, right, wr, num_q, cached, cur, out);
  const std::string msg = diff("kv_index_cat", b, std::max(wl + wr, 1),
                               ref::kv_index_cat(left, wl, right, wr, num_q, cached, cur), out);
  if (!msg.empty()) RC_FAIL(msg);
}

void prop_expand_swa_index_matches_reference(const Backend& b) {
  RC_SUCCEED_IF(skip(b));
  const int32_t num_q = *rc::gen::inRange(0, 6), width = *rc::gen::inRange(0, 40);
  std::vector<int32_t> pivots;
  for (int32_t q = 0; q < num_q; ++q) {
    const int32_t len1 = *rc::gen::inRange(0, width + 1);
    const int32_t len2 = *rc::gen::inRange(0, width - len1 + 1);
    pivots.insert(pivots.end(), {*rc::gen::inRange(0, 5000), len1, *rc::gen::inRange(0, 5000), len2});
  }
  std::vector<int32_t> out(static_cast<size_t>(num_q) * width, kSentinel);
  b.expand_swa_index(pivots, num_q, width, out);
  const std::string msg = diff("expand_swa_index", b, std::max(width, 1),
                               ref::expand_swa_index(pivots, num_q, width), out);
  if (!msg.empty()) RC_FAIL(msg);
}

void prop_swa_decode_index_matches_reference(const Backend& b) {
  RC_SUCCEED_IF(skip(b));
  const int32_t ring = *gen::block_size();
  const int32_t width = *rc::gen::inRange(0, ring + 1);
  const int32_t num_q = *rc::gen::inRange(0, 6);
  std::vector<int32_t> start_len;
  for (int32_t q = 0; q < num_q; ++q) {
    const int32_t state = *rc::gen::inRange(0, 5);
    start_len.push_back(state * ring + *rc::gen::inRange(0, ring));  // may wrap
    start_len.push_back(*rc::gen::inRange(0, width + 1));            // short windows too
  }
  std::vector<int32_t> out(static_cast<size_t>(num_q) * width, kSentinel);
  b.swa_decode_index(start_len, num_q, width, ring, out);
  const std::string msg = diff("swa_decode_index", b, std::max(width, 1),
                               ref::swa_decode_index(start_len, num_q, width, ring), out);
  if (!msg.empty()) RC_FAIL(msg);
  for (int32_t q = 0; q < num_q; ++q) {  // distinct slots of the start slot's ring
    std::set<int32_t> seen;
    for (int32_t c = 0; c < width; ++c) {
      const int32_t v = out[static_cast<size_t>(q) * width + c];
      if (v == -1) continue;
      RC_ASSERT(v / ring == start_len[static_cast<size_t>(q) * 2] / ring);
      RC_ASSERT(seen.insert(v).second);
    }
  }
}

}  // namespace

void register_index_properties(Registry& r) {
  r.add({"prop_convert_kv_index_matches_reference", "index",
         "convert_kv_index maps in-context indices through the block table and everything else "
         "to -1, like the reference (also in place)",
         true, prop_convert_kv_index_matches_reference});
  r.add({"prop_convert_kv_index_bad_input_is_error", "index",
         "an index needing a missing block is kRangeOutOfTable, a negative index other than -1 "
         "kInvalidArgument, and nothing is written",
         true, prop_convert_kv_index_bad_input_is_error});
  r.add({"prop_kv_index_cat_matches_reference", "index",
         "kv_index_cat copies L and shifts every non -1 entry of R by cached + cur", true,
         prop_kv_index_cat_matches_reference});
  r.add({"prop_expand_swa_index_matches_reference", "index",
         "expand_swa_index expands two pieces per row and -1 after them", true,
         prop_expand_swa_index_matches_reference});
  r.add({"prop_swa_decode_index_matches_reference", "index",
         "swa_decode_index walks valid_len distinct slots along the start slot's ring (wrapping), "
         "-1 after",
         true, prop_swa_decode_index_matches_reference});
}

}  // namespace kvcheck::props
