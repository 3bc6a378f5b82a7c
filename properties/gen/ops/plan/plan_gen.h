// The scenario type of the host load plans (SPEC §5.3) and its one builder. The builder
// draws through a Source (source.h): on an RcSource it is the RapidCheck generator of
// properties/ops/plan/plan_props.cpp, on the fuzz input (fuzzers/ops/plan/decode_plan.cpp) the plan
// target's decoder; the one check is props::check_plan (metadata_checks.h).
#pragma once

#include <rapidcheck.h>

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "impl/error.h"
#include "impl/load_plan.h"
#include "properties/gen/source.h"

namespace kvcheck::props {

/// One BlockLoadPlanBuilder call. Fields by kind: segment (a = block, b = src_begin,
/// c = src_end), zero fill (a = num_tokens), paged range (b = token_begin, c =
/// token_end over `table`), ring range (a = state_id, b = begin, c = end).
struct PlanOp {
  enum class Kind { kSegment, kZeroFill, kPaged, kRing } kind = Kind::kSegment;
  int32_t a = 0, b = 0, c = 0;
  std::vector<int32_t> table;
  std::string note;               // how it was made ("shuffled table", "wraps", "invalid: ...")
  std::optional<ErrorCode> code;  // an injected fault: the code the SPEC rules must give it
};

/// One of: a sequence of appends to BlockLoadPlanBuilder(block_size) (block_size may be
/// < 1, or huge so that total_k overflows); build_compressed_plan(seqs, block_size,
/// ratio); build_swa_plan(seqs, window, ring_size). `broken` names an argument made
/// invalid on purpose (compressed/SWA; "" = valid arguments).
struct PlanScenario {
  enum class Mode { kBuilder, kCompressed, kSwa } mode = Mode::kBuilder;
  int32_t block_size = 1;
  std::vector<PlanOp> ops;
  int32_t ratio = 1, window = 1, ring_size = 1;
  std::vector<SeqMeta> seqs;
  std::string broken;
  std::string table_mode = "disjoint shuffled";  // compressed: "holey", "short" (faults)
};

/// The builder: a valid scenario of `mode`. Builder: 0-12 appends over block_size (>= 1,
/// any size: huge ones draw huge zero fills and ranges): segments (-1 blocks too), zero
/// fills of several blocks, paged ranges over shuffled (or repeating) tables, ring ranges
/// empty, anywhere, ending exactly at the wrap point, wrapping by one, exactly the ring
/// or at far positions. Compressed: ratio a divisor of block_size, seqlen_k < ratio
/// reachable, shuffled tables. SWA: gen::build_swa_batch, some histories near 2^30,
/// some swa_valid_start past the history.
PlanScenario build_plan_scenario(Source& src, PlanScenario::Mode mode, int32_t block_size);
/// Builder block sizes for the fuzzer: mostly choose_block_size, some huge (total_k past
/// INT32_MAX in a few pieces), some < 1 (the constructor's error).
int32_t choose_builder_block_size(Source& src);
/// Makes `op` invalid (SPEC §5.3 [decided]) and sets its code: bad block or range of a
/// segment, negative zero fill, reversed, negative or past-the-table paged range or a
/// hole inside it, bad state, reversed or too long ring range.
void inject_append_fault(Source& src, PlanOp& op, int32_t block_size);
/// Compressed/SWA: a bad argument (ratio, block_size, seqlen_k; window, ring_size, a
/// sequence field) or a holey / short table; names it in `broken` / `table_mode`.
void inject_plan_fault(Source& src, PlanScenario& s);

/// RapidCheck generators: the builder on an RcSource (choose_block_size sizes).
rc::Gen<PlanScenario> gen_plan_scenario(PlanScenario::Mode mode);
/// A short valid builder sequence and then one faulty append.
rc::Gen<PlanScenario> gen_failed_append_scenario();

/// The one printer (RapidCheck counterexamples, fuzz reports, `kvcheck explain`).
void showValue(const PlanScenario& s, std::ostream& os);
std::string describe(const PlanScenario& s);

}  // namespace kvcheck::props
