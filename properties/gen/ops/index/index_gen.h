// The scenario type of the four index transforms (SPEC §5.5) and its one builder. The
// builder draws through a Source (source.h): on an RcSource it is the RapidCheck
// generator of properties/ops/index/index_props.cpp, on the fuzz input (fuzzers/ops/index/decode_index.cpp)
// the index target's decoder; the one check is props::check_index (index_check.h).
#pragma once

#include <rapidcheck.h>

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "impl/error.h"
#include "properties/gen/source.h"

namespace kvcheck::props {

/// One call of one transform. Shapes always agree with the counts (a kShapeMismatch
/// is not drawn). `fault` "" is a valid input (the reference assumes one); a fault with
/// `code` must throw exactly it; a fault without code (raw values, maybe several
/// errors) must do what the SPEC §5.5 rules say (the check derives code and entry).
struct IndexScenario {
  enum class Op { kConvert, kCat, kExpand, kSwaDecode } op = Op::kConvert;
  int32_t num_q = 0;
  // convert_kv_index: topk[num_q][k] through block_table[rows][max_blocks].
  std::vector<int32_t> topk, block_table, seq_ids, context_lens;
  int32_t k = 0, max_blocks = 0, block_size = 1;
  bool in_place = false;  // out is topk itself (the seed's kernel rewrites topk)
  // kv_index_cat: L[num_q][wl], R[num_q][wr].
  std::vector<int32_t> left, right;
  int32_t wl = 0, wr = 0, total_k_swa_cached = 0, total_k_swa_cur = 0;
  // expand_swa_index: pivots[num_q][4]; swa_decode_index: start_len[num_q][2].
  std::vector<int32_t> pivots, start_len;
  int32_t width = 0, ring_size = 1;
  std::string fault;  // what was broken ("" = valid), e.g. "topk[1][0] = -2"
  std::optional<ErrorCode> code;
};

/// The transform an index scenario calls: its name ("kv_index_cat") and its
/// KVCHECK_OP_* capability bit (include/kvcheck/backend_abi.h). The one table of them.
struct IndexOpInfo {
  const char* name;
  uint32_t bit;
};
const IndexOpInfo& index_op_info(IndexScenario::Op op);

/// Entries per output row of the scenario's op (k, wl + wr or width).
int64_t index_out_width(const IndexScenario& s);

/// The builder: a valid input of `op`. convert: shuffled block tables covering each
/// sequence's context (tails of -1 or unused blocks), row q or seq_ids, top-k of -1,
/// in-context and out-of-context entries (also past the table), sometimes in place.
/// cat: R with -1 entries, L with SPEC §6 awkward values (copied as is). expand: two
/// pieces with len1 + len2 <= width. swa_decode: a ring of a shared block size, start
/// slots anywhere in it (wrapping), valid_len <= min(width, ring), width past the ring.
IndexScenario build_index_scenario(Source& src, IndexScenario::Op op);
/// The op drawn too (convert first: the simplest).
IndexScenario build_index_scenario(Source& src);
/// A convert_kv_index fault with its code: a valid index past max_blocks or on a -1
/// table entry (kRangeOutOfTable), a negative entry other than -1 (kInvalidArgument).
void inject_convert_fault(Source& src, IndexScenario& s);
/// Raw convert_kv_index values (fuzz): awkward top-k entries, a -1 table entry some
/// context needs, or queries without a table row; no code (the rules decide).
void raw_convert_values(Source& src, IndexScenario& s);

/// RapidCheck generators: the builder on an RcSource.
rc::Gen<IndexScenario> gen_index_scenario(IndexScenario::Op op);
rc::Gen<IndexScenario> gen_convert_fault_scenario();

/// The one printer (RapidCheck counterexamples, fuzz reports, `kvcheck explain`).
void showValue(const IndexScenario& s, std::ostream& os);
std::string describe(const IndexScenario& s);

}  // namespace kvcheck::props
