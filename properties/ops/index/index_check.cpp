// The index transforms' one check (SPEC §5.5): the backend against
// reference/index_transforms (int64 results, so an overflow shows) on valid inputs, and
// the SPEC's [decided] error rules on faults. See metadata_checks.h for the invariants.
#include <algorithm>
#include <climits>
#include <set>

#include "properties/blame.h"
#include "properties/metadata_checks.h"
#include "reference/index_transforms.h"

namespace kvcheck::props {
namespace {

using Op = IndexScenario::Op;
constexpr int32_t kSentinel = 0x7A7A7A7A;  // out entries a call must not touch
constexpr size_t kTail = 8;                // entries past the output: never written

std::string str(int64_t v) { return std::to_string(v); }

// What the SPEC §5.5 [decided] rules say a convert_kv_index input must throw: the
// first error in query order (the row's seq id and context, then its entries), with
// the entry its message blames ("" when it names none).
struct RuleError {
  ErrorCode code;
  std::string blame;
};
std::optional<RuleError> convert_rule_error(const IndexScenario& s) {
  const int64_t rows = s.max_blocks > 0 ? static_cast<int64_t>(s.block_table.size()) / s.max_blocks : 0;
  for (int32_t q = 0; q < s.num_q; ++q) {
    const int64_t seq = s.seq_ids.empty() ? q : s.seq_ids[static_cast<size_t>(q)];
    if (seq < 0 || (s.max_blocks > 0 && seq >= rows))
      return RuleError{ErrorCode::kInvalidArgument, "seq_ids[" + str(q) + "] = " + str(seq)};
    const int32_t ctx = s.context_lens[static_cast<size_t>(q)];
    if (ctx < 0) return RuleError{ErrorCode::kInvalidArgument, "context_lens[" + str(q) + "] = " + str(ctx)};
    for (int32_t c = 0; c < s.k; ++c) {
      const int32_t x = s.topk[static_cast<size_t>(int64_t{q} * s.k + c)];
      auto entry = [&] { return "topk[" + str(q) + "][" + str(c) + "] = " + str(x); };  // only when blamed
      if (x < -1) return RuleError{ErrorCode::kInvalidArgument, entry()};
      if (x < 0 || x >= ctx) continue;
      const int64_t index = x / s.block_size;
      const int64_t block = index < s.max_blocks ? s.block_table[static_cast<size_t>(seq * s.max_blocks + index)] : -1;
      if (block < 0) return RuleError{ErrorCode::kRangeOutOfTable, entry()};
      if (block * s.block_size + x % s.block_size > INT32_MAX) return RuleError{ErrorCode::kInvalidArgument, ""};
    }
  }
  return std::nullopt;
}

// Runs the scenario's op on the backend into out (num_q * width entries).
void run(const Backend& b, const IndexScenario& s, std::span<int32_t> out) {
  switch (s.op) {
    case Op::kConvert: {
      ConvertKvIndexArgs args{s.topk, s.num_q, s.k, s.block_table, s.max_blocks, s.seq_ids, s.context_lens, s.block_size};
      if (s.in_place) args.topk = out;
      b.convert_kv_index(args, out);
      break;
    }
    case Op::kCat:
      b.kv_index_cat(s.left, s.wl, s.right, s.wr, s.num_q, s.total_k_swa_cached, s.total_k_swa_cur, out);
      break;
    case Op::kExpand: b.expand_swa_index(s.pivots, s.num_q, s.width, out); break;
    case Op::kSwaDecode: b.swa_decode_index(s.start_len, s.num_q, s.width, s.ring_size, out); break;
  }
}

std::vector<int64_t> reference(const IndexScenario& s) {
  switch (s.op) {
    case Op::kConvert:
      return ref::convert_kv_index({s.topk, s.num_q, s.k, s.block_table, s.max_blocks, s.seq_ids, s.context_lens, s.block_size});
    case Op::kCat:
      return ref::kv_index_cat(s.left, s.wl, s.right, s.wr, s.num_q, s.total_k_swa_cached, s.total_k_swa_cur);
    case Op::kExpand: return ref::expand_swa_index(s.pivots, s.num_q, s.width);
    case Op::kSwaDecode: return ref::swa_decode_index(s.start_len, s.num_q, s.width, s.ring_size);
  }
  return {};
}

// "" when out (then the tail) holds the reference's entries, else the first difference.
std::string compare(const IndexScenario& s, std::span<const int32_t> buf, size_t n) {
  const std::vector<int64_t> want = reference(s);
  const int64_t w = std::max<int64_t>(index_out_width(s), 1);
  for (size_t i = 0; i < n; ++i)
    if (want[i] != buf[i])
      return "out[" + str(static_cast<int64_t>(i) / w) + "][" + str(static_cast<int64_t>(i) % w) +
             "]: expected (reference) " + str(want[i]) + ", actual " + str(buf[i]) + "\n";
  for (size_t i = n; i < buf.size(); ++i)
    if (buf[i] != kSentinel) return "wrote past its output at entry " + str(static_cast<int64_t>(i)) + "\n";
  return "";
}

// swa_decode_index: each row's slots are distinct and inside its start slot's ring.
std::string ring_violation(const IndexScenario& s, std::span<const int32_t> out) {
  for (int32_t q = 0; q < s.num_q; ++q) {
    const int32_t start = s.start_len[static_cast<size_t>(q) * 2];
    std::set<int32_t> seen;
    for (int32_t c = 0; c < s.width; ++c) {
      const int32_t v = out[static_cast<size_t>(int64_t{q} * s.width + c)];
      if (v == -1) continue;
      if (v / s.ring_size != start / s.ring_size)
        return "out[" + str(q) + "][" + str(c) + "] = " + str(v) + " is outside the ring of start slot " + str(start) + "\n";
      if (!seen.insert(v).second) return "out[" + str(q) + "][" + str(c) + "] = " + str(v) + " repeats a slot\n";
    }
  }
  return "";
}

}  // namespace

Verdict check_index(const Backend& b, const IndexScenario& s, unsigned invariants) {
  const IndexOpInfo& op = index_op_info(s.op);
  const std::string what = op.name;
  if (!(b.capabilities().ops & op.bit)) return {"", what + ": the backend has no " + what};
  const std::optional<RuleError> rule = s.op == Op::kConvert ? convert_rule_error(s) : std::nullopt;
  std::optional<ErrorCode> want = s.code;
  if (!want && !s.fault.empty() && rule) want = rule->code;
  const size_t n = static_cast<size_t>(int64_t{s.num_q} * index_out_width(s));
  std::vector<int32_t> buf(n + kTail, kSentinel);
  if (s.in_place) std::copy(s.topk.begin(), s.topk.end(), buf.begin());
  const std::vector<int32_t> before = buf;
  const Outcome be = capture([&] { run(b, s, std::span(buf).first(n)); });
  // Declared: checked above, so a refusal here is inside the capabilities.
  if (Verdict v; judge_unsupported(be, false, buf == before, what, b.name(), v)) return v;
  std::string fail;
  if (want && !be.code) fail += what + " returned; it must throw " + std::string(to_string(*want)) + " (" + s.fault + ")\n";
  if (want && be.code && *be.code != *want)
    fail += what + " threw " + show(be) + "; it must throw " + std::string(to_string(*want)) + " (" + s.fault + ")\n";
  if (!want && be.code) fail += what + " rejected a valid input: " + show(be) + "\n";
  if (want && be.code && *be.code == *want && rule && rule->code == *want && !rule->blame.empty() &&
      error_blame(be.message) != rule->blame)
    fail += what + " blames " + (error_blame(be.message).empty() ? "no entry" : error_blame(be.message)) +
            ", the rules blame " + rule->blame + ": " + be.message + "\n";
  if ((invariants & kIndexErrorChangesNothing) && be.code && buf != before)
    fail += what + " wrote output although it threw (" + be.message + ")\n";
  if ((invariants & kIndexMatchesReference) && !want && !be.code) fail += compare(s, buf, n);
  if ((invariants & kIndexSlotsInStartRing) && s.op == Op::kSwaDecode && !be.code) fail += ring_violation(s, buf);
  if (!fail.empty()) fail = "op=index " + what + " backend=" + std::string(b.name()) + "\n" + fail;
  return {fail, ""};
}

}  // namespace kvcheck::props
