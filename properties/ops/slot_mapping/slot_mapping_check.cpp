// The slot mappings' one check (SPEC §5.4, §7.6): impl/slot_mapping and
// impl/kv_slot_mapping against reference/slot_mapping on valid inputs, and the SPEC's
// error rules on faults. See metadata_checks.h for the invariants.
#include <algorithm>
#include <climits>
#include <set>

#include "impl/kv_page_table.h"
#include "impl/kv_slot_mapping.h"
#include "impl/slot_mapping.h"
#include "properties/blame.h"
#include "properties/metadata_checks.h"
#include "reference/slot_mapping.h"

namespace kvcheck::props {
namespace {

using Op = SlotMappingScenario::Op;
std::string str(int64_t v) { return std::to_string(v); }

// What the SPEC §5.4 rules say a call must throw, with the entry its message blames
// ("" when it names none).
struct RuleError {
  ErrorCode code;
  std::string blame;
};
using Rule = std::optional<RuleError>;

Rule slot_rule(std::span<const int32_t> table, int32_t bs, int64_t t) {
  if (bs < 1 || t < 0) return RuleError{ErrorCode::kInvalidArgument, ""};
  const int64_t index = t / bs;
  if (index >= static_cast<int64_t>(table.size())) return RuleError{ErrorCode::kRangeOutOfTable, ""};
  const int32_t block = table[static_cast<size_t>(index)];
  if (block < 0) return RuleError{ErrorCode::kRangeOutOfTable, "block_table[" + str(index) + "] = " + str(block)};
  if (int64_t{block} * bs + t % bs > INT32_MAX) return RuleError{ErrorCode::kInvalidArgument, ""};
  return std::nullopt;
}

// First error in sequence order, then token order (a token past the table always
// errs, so the loop is at most a table long).
Rule rule_error(const SlotMappingScenario& s) {
  const auto ring_overflows = [&] { return (int64_t{s.state_id} + 1) * s.ring_size - 1 > INT32_MAX; };
  const auto rule_broken = [&] { return s.rule_multiple != 0 && (s.rule_multiple < 1 || s.block_size % s.rule_multiple != 0); };
  switch (s.op) {
    case Op::kPreparePrefill: {  // the slots, then the rule, then cu_seqlens_k within int32
      SlotMappingScenario slots = s;
      slots.op = Op::kPrefill;
      if (Rule r = rule_error(slots)) return r;
      int64_t k = 0;
      for (int32_t t : s.num_tokens) k += t;
      if (rule_broken() || k > INT32_MAX) return RuleError{ErrorCode::kInvalidArgument, ""};
      return std::nullopt;
    }
    case Op::kPrepareDecode: {  // graph rows, the slots, then the rule
      if (s.graph_batch_size != 0 && s.graph_batch_size < static_cast<int64_t>(s.tables.size()))
        return RuleError{ErrorCode::kInvalidArgument, ""};
      SlotMappingScenario slots = s;
      slots.op = Op::kDecode;
      if (Rule r = rule_error(slots)) return r;
      if (rule_broken()) return RuleError{ErrorCode::kInvalidArgument, ""};
      return std::nullopt;
    }
    case Op::kPrefill:
    case Op::kPageTable:  // the page table lists every token's page: all of [0, num_tokens)
      // page_table_slot_mapping refuses page_size < 1 even with no token, and every other
      // error before it is kInvalidArgument too once block_size < 1.
      if (s.op == Op::kPageTable && s.block_size < 1) return RuleError{ErrorCode::kInvalidArgument, ""};
      for (size_t i = 0; i < s.tables.size(); ++i) {
        if (s.num_cached[i] < 0 || s.num_cached[i] > s.num_tokens[i]) return RuleError{ErrorCode::kInvalidArgument, ""};
        for (int64_t t = s.op == Op::kPageTable ? 0 : s.num_cached[i]; t < s.num_tokens[i]; ++t)
          if (Rule r = slot_rule(s.tables[i], s.block_size, t)) return r;
      }
      return std::nullopt;
    case Op::kDecode:
      for (size_t i = 0; i < s.tables.size(); ++i) {
        if (s.num_tokens[i] < 1) return RuleError{ErrorCode::kInvalidArgument, ""};
        if (Rule r = slot_rule(s.tables[i], s.block_size, int64_t{s.num_tokens[i]} - 1)) return r;
      }
      return std::nullopt;
    case Op::kSwaStore:
      if (s.ring_size < 1 || s.state_id < 0 || s.seqlen_q < 0 || s.seqlen_q > s.seqlen_k || ring_overflows())
        return RuleError{ErrorCode::kInvalidArgument, ""};
      return std::nullopt;
    case Op::kSwaWindow:
      if (s.seqlen_k < 1 || s.window < 1 || s.ring_size < s.window || s.state_id < 0 || s.swa_valid_start < 0 ||
          ring_overflows())
        return RuleError{ErrorCode::kInvalidArgument, ""};
      return std::nullopt;
  }
  return std::nullopt;
}

// The expected result: slots (paged, SWA store rows after the prefix) or {start_slot, valid_len}.
std::vector<int64_t> expected(const SlotMappingScenario& s) {
  std::vector<int64_t> want;
  switch (s.op) {
    case Op::kPrefill:
    case Op::kPreparePrefill:
    case Op::kPageTable:
      for (size_t i = 0; i < s.tables.size(); ++i)
        for (int32_t x : ref::paged_slots(s.tables[i], s.block_size, s.num_cached[i], s.num_tokens[i])) want.push_back(x);
      break;
    case Op::kDecode:
    case Op::kPrepareDecode:
      for (size_t i = 0; i < s.tables.size(); ++i)
        want.push_back(ref::paged_slot(s.tables[i], s.block_size, int64_t{s.num_tokens[i]} - 1));
      want.resize(std::max(want.size(), static_cast<size_t>(std::max(s.graph_batch_size, 0))), -1);  // padding rows
      break;
    case Op::kSwaStore:
      want.assign(s.prefix.begin(), s.prefix.end());
      for (int32_t x : ref::swa_store_slots(s.state_id, s.ring_size, s.seqlen_k, s.seqlen_q)) want.push_back(x);
      break;
    case Op::kSwaWindow: {  // positions [first, p] of the window that are valid (SPEC §5.5)
      const int64_t p = int64_t{s.seqlen_k} - 1, first = std::max<int64_t>(p - s.window + 1, s.swa_valid_start);
      const int64_t len = std::max<int64_t>(p - first + 1, 0);
      want = {int64_t{s.state_id} * s.ring_size + (len > 0 ? first % s.ring_size : 0), len};
    }
  }
  return want;
}

// prepare_*'s metadata besides the slots.
struct Prepared {
  PrefillMetadata prefill;
  DecodeMetadata decode;
  PageTable pages;  // page_table
  AppendPositions append;
};

// Runs the op; `out` gets its slots (SWA store: after the prefix; window: {start, len}).
void run(const SlotMappingScenario& s, std::vector<int32_t>& out, Prepared& m) {
  const std::vector<PagedSeq> seqs = s.seqs();
  std::optional<BlockSizeRule> rule;
  if (s.rule_multiple != 0) rule = BlockSizeRule{s.rule_multiple, "flash-attn"};
  switch (s.op) {
    case Op::kPreparePrefill:
      m.prefill = prepare_prefill(seqs, s.block_size, rule);
      out = m.prefill.slot_mapping;
      break;
    case Op::kPrepareDecode:
      m.decode = prepare_decode(seqs, s.block_size, s.graph_batch_size, rule);
      out = m.decode.slot_mapping;
      break;
    case Op::kPrefill: out = paged_prefill_slot_mapping(seqs, s.block_size); break;
    case Op::kPageTable: {
      m.pages = page_table_from_seqs(seqs, s.block_size);
      std::vector<int32_t> append_indptr{0}, seq_lens;
      for (const PagedSeq& q : seqs) {
        append_indptr.push_back(append_indptr.back() + q.num_tokens - q.num_cached);
        seq_lens.push_back(q.num_tokens);
      }
      m.append = batch_indices_positions(append_indptr, seq_lens);
      int64_t num_blocks = 1;  // every page the tables name exists
      for (int32_t b : m.pages.indices) num_blocks = std::max<int64_t>(num_blocks, int64_t{b} + 1);
      out = page_table_slot_mapping(m.pages, m.append.batch_indices, m.append.positions, s.block_size, num_blocks);
      break;
    }
    case Op::kDecode: out = paged_decode_slot_mapping(seqs, s.block_size); break;
    case Op::kSwaStore: append_swa_store_slots(out, s.state_id, s.ring_size, s.seqlen_k, s.seqlen_q); break;
    case Op::kSwaWindow: {
      const SwaDecodeWindow w = swa_decode_window(s.state_id, s.ring_size, s.window, s.seqlen_k, s.swa_valid_start);
      out = {w.start_slot, w.valid_len};
    }
  }
}

std::string compare(const std::vector<int64_t>& want, const std::vector<int32_t>& got) {
  if (want.size() != got.size()) return "expected " + str(static_cast<int64_t>(want.size())) + " entries, got " + str(static_cast<int64_t>(got.size())) + "\n";
  for (size_t i = 0; i < want.size(); ++i)
    if (want[i] != got[i])
      return "out[" + str(static_cast<int64_t>(i)) + "]: expected (reference) " + str(want[i]) + ", actual " + str(got[i]) + "\n";
  return "";
}

// prepare_*: cu_seqlens_q/k prefix sums of new / all tokens, prefix_cache_hit, context
// lens (0 on padding rows), block tables padded with -1 to the longest, per row.
std::string metadata(const SlotMappingScenario& s, const Prepared& m) {
  const size_t n = s.tables.size();
  const size_t rows = s.op == Op::kPrepareDecode && s.graph_batch_size != 0 ? static_cast<size_t>(s.graph_batch_size) : n;
  size_t max_blocks = 0;
  for (const auto& t : s.tables) max_blocks = std::max(max_blocks, t.size());
  std::vector<int64_t> tables(rows * max_blocks, -1), q{0}, k{0}, lens(rows, 0);
  bool hit = false;
  for (size_t i = 0; i < n; ++i) {
    std::copy(s.tables[i].begin(), s.tables[i].end(), tables.begin() + static_cast<std::ptrdiff_t>(i * max_blocks));
    q.push_back(q.back() + s.num_tokens[i] - s.num_cached[i]);
    k.push_back(k.back() + s.num_tokens[i]);
    lens[i] = s.num_tokens[i];
    hit = hit || s.num_cached[i] > 0;
  }
  const bool prefill = s.op == Op::kPreparePrefill;
  std::string fail;
  auto field = [&](const std::string& name, const std::vector<int64_t>& want, const std::vector<int32_t>& got) {
    if (std::string d = compare(want, got); !d.empty()) fail += name + ": " + d;
  };
  field("block_tables", tables, prefill ? m.prefill.block_tables : m.decode.block_tables);
  if ((prefill ? m.prefill.max_blocks : m.decode.max_blocks) != static_cast<int32_t>(max_blocks))
    fail += "max_blocks: expected " + str(static_cast<int64_t>(max_blocks)) + "\n";
  if (!prefill) {
    field("context_lens", lens, m.decode.context_lens);
    return fail;
  }
  field("cu_seqlens_q", q, m.prefill.cu_seqlens_q);
  field("cu_seqlens_k", k, m.prefill.cu_seqlens_k);
  if (m.prefill.prefix_cache_hit != hit) fail += "prefix_cache_hit: expected " + std::string(hit ? "true" : "false") + "\n";
  return fail;
}

// page_table: the CSR page table and the append positions, worked out here from the
// sequences (pages = ceil(num_tokens / bs); the new tokens are [num_cached, num_tokens)).
std::string page_metadata(const SlotMappingScenario& s, const Prepared& m) {
  std::vector<int64_t> indptr{0}, indices, last, batch, pos;
  for (size_t i = 0; i < s.tables.size(); ++i) {
    const int64_t pages = (int64_t{s.num_tokens[i]} + s.block_size - 1) / s.block_size;
    for (int64_t j = 0; j < pages; ++j) indices.push_back(s.tables[i][static_cast<size_t>(j)]);
    indptr.push_back(indptr.back() + pages);
    last.push_back(pages > 0 ? s.num_tokens[i] - (pages - 1) * s.block_size : 0);
    for (int64_t t = s.num_cached[i]; t < s.num_tokens[i]; ++t) batch.push_back(static_cast<int64_t>(i)), pos.push_back(t);
  }
  std::string fail;
  auto field = [&](const std::string& name, const std::vector<int64_t>& want, const std::vector<int32_t>& got) {
    if (std::string d = compare(want, got); !d.empty()) fail += name + ": " + d;
  };
  field("indptr", indptr, m.pages.indptr);
  field("indices", indices, m.pages.indices);
  field("last_page_len", last, m.pages.last_page_len);
  field("batch_indices", batch, m.append.batch_indices);
  field("positions", pos, m.append.positions);
  return fail;
}

std::string structure(const SlotMappingScenario& s, const std::vector<int32_t>& out) {
  if (s.op == Op::kPrefill || s.op == Op::kPreparePrefill || s.op == Op::kPageTable) {
    if (!s.fault.empty() || std::set<int32_t>(out.begin(), out.end()).size() == out.size()) return "";
    return "two tokens share a slot over disjoint tables\n";
  }
  if (s.op == Op::kSwaStore) {
    std::set<int32_t> used;
    for (int32_t j = 0; j < s.seqlen_q && s.prefix.size() + static_cast<size_t>(j) < out.size(); ++j) {
      const int32_t slot = out[s.prefix.size() + static_cast<size_t>(j)];
      const std::string row = "row " + str(j) + " (slot " + str(slot) + ")";
      if ((slot == -1) != (j < s.seqlen_q - s.ring_size)) return row + ": -1 exactly for rows before the last ring_size\n";
      if (slot == -1) continue;
      if (slot / s.ring_size != s.state_id) return row + " is outside the ring of state " + str(s.state_id) + "\n";
      if (!used.insert(slot).second) return row + " repeats a slot\n";
    }
  }
  if (s.op == Op::kSwaWindow && out.size() == 2 &&
      (out[0] / s.ring_size != s.state_id || out[1] > s.window || out[1] < 0))
    return "start slot " + str(out[0]) + " / valid_len " + str(out[1]) + " outside state " + str(s.state_id) +
           "'s ring or the window\n";
  return "";
}

}  // namespace

Verdict check_slot_mapping(const SlotMappingScenario& s, unsigned invariants) {
  const std::string what = op_name(s.op);
  const Rule rule = rule_error(s);
  std::optional<ErrorCode> want = s.code;
  if (!want && !s.fault.empty() && rule) want = rule->code;
  std::vector<int32_t> out = s.op == Op::kSwaStore ? s.prefix : std::vector<int32_t>{};
  Prepared m;
  const Outcome got = capture([&] { run(s, out, m); });
  std::string fail;
  if (want && !got.code) fail += what + " returned; it must throw " + std::string(to_string(*want)) + " (" + s.fault + ")\n";
  if (want && got.code && *got.code != *want)
    fail += what + " threw " + show(got) + "; it must throw " + std::string(to_string(*want)) + " (" + s.fault + ")\n";
  if (!want && got.code) fail += what + " rejected a valid input: " + show(got) + "\n";
  if (want && got.code && *got.code == *want && rule && rule->code == *want && !rule->blame.empty() &&
      error_blame(got.message) != rule->blame)
    fail += what + " blames " + (error_blame(got.message).empty() ? "no entry" : error_blame(got.message)) +
            ", the rules blame " + rule->blame + ": " + got.message + "\n";
  if ((invariants & kSlotErrorChangesNothing) && s.op == Op::kSwaStore &&
      (out.size() < s.prefix.size() || !std::equal(s.prefix.begin(), s.prefix.end(), out.begin()) ||
       (got.code && out.size() != s.prefix.size())))
    fail += what + " changed the entries before its own" + std::string(got.code ? " or appended although it threw\n" : "\n");
  if (!want && !got.code) {
    if (invariants & kSlotMatchesReference) fail += compare(expected(s), out);
    if (invariants & kSlotDistinctInRing) fail += structure(s, out);
    if ((invariants & kSlotMetadata) && (s.op == Op::kPreparePrefill || s.op == Op::kPrepareDecode)) fail += metadata(s, m);
    if ((invariants & kSlotMetadata) && s.op == Op::kPageTable) fail += page_metadata(s, m);
  }
  if (!fail.empty()) fail = "op=slot_mapping " + what + "\n" + fail;
  return {fail, ""};
}

}  // namespace kvcheck::props
