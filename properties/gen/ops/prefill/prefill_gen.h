// The prefill step's one builder (SPEC §5.3-§5.6): gen_prefill_scenario() is it on an
// RcSource (the properties), fuzz::decode_prefill on a ByteSource (the fuzz target).
#pragma once

#include <rapidcheck.h>

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "impl/format.h"
#include "impl/load_plan.h"  // SeqMeta
#include "properties/gen/source.h"

namespace kvcheck::props {

/// One prefill step's inputs, run by properties/ops/prefill/prefill_step.h's run_prefill_step.
struct PrefillScenario {
  KVCacheFormat format = KVCacheFormat::BF16(8);  // BF16(E) or V41
  int32_t window = 1, ring_size = 1, num_swa_states = 1;  // SWA cache: one ring per block
  int32_t block_size = 1, ratio = 1;  // compressed cache blocks hold block_size/ratio tokens
  int32_t num_compressed_blocks = 1;
  int32_t topk_width = 0;
  std::vector<SeqMeta> seqs;  // distinct state_ids, disjoint compressed block tables
  /// Per sequence [seqlen_q][topk_width]: the compressed tokens (logical, < seqlen_k /
  /// ratio, distinct per row) each chunk row is given; -1 = none.
  std::vector<std::vector<int32_t>> topk;
  /// The wrong order (store the chunk into the ring before loading the history),
  /// to prove the check can fail.
  bool store_before_load = false;
};

void showValue(const PrefillScenario& s, std::ostream& os);

/// A valid batch of 0-4 sequences (none 1 in 25): BF16(8) or V41 (BF16(16), BF16(64)
/// less often); window 1-16, ring = window + 0-8; histories shorter than the window, at
/// the ring's wrap point or one past it, wrapping rings, chunks longer than the ring,
/// swa_valid_start inside the history; compressed blocks of the shared sizes (or 1-300)
/// with every divisor as ratio (so seqlen_k < ratio), disjoint shuffled block tables
/// with -1 or spare-block tails, and 0-4 distinct top-k per chunk row. The simplest:
/// BF16(8), window 1, no sequence. store_before_load is false (the callers set it).
PrefillScenario build_prefill_scenario(Source& src);
rc::Gen<PrefillScenario> gen_prefill_scenario();

/// The scenario as readable lines (showValue), for fuzz reports and explain.
std::string describe(const PrefillScenario& s);

}  // namespace kvcheck::props
