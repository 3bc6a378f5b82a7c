// Reference load plans (SPEC §5.3), written per output row: a plan is the list of
// (source block, offset) or zero for every row, built from the SPEC formulas one
// token at a time. Production segments are compared through expand_segments.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "impl/op_args.h"    // LoadSegment (plain type)
#include "impl/load_plan.h"  // SeqMeta (plain type); no production code is called

namespace kvcheck::ref {

/// One output row of a load: block -1 means a zero row (offset 0).
struct PlanRow {
  int32_t block = -1;
  int32_t offset = 0;
  bool operator==(const PlanRow&) const = default;
};
std::string to_string(const PlanRow& row);

/// Rows of tokens [begin, end) of a paged sequence: token t -> (table[t/bs], t%bs).
/// Throws Error(kRangeOutOfTable) for a token past the table or on a negative entry.
std::vector<PlanRow> paged_range_rows(std::span<const int32_t> block_table, int32_t bs,
                                      int32_t begin, int32_t end);
/// Rows of ring positions [begin, end): p -> (state_id, p % ring_size).
std::vector<PlanRow> ring_range_rows(int32_t state_id, int32_t ring_size, int32_t begin,
                                     int32_t end);
/// SPEC §5.3 compressed plan: per sequence the n = seqlen_k/ratio compressed tokens
/// c -> (table[c/(bs/ratio)], c%(bs/ratio)), or one zero row when n == 0.
std::vector<PlanRow> compressed_plan_rows(std::span<const SeqMeta> seqs, int32_t block_size,
                                          int32_t ratio);
/// SPEC §5.3 SWA plan: per sequence `window` rows, row r <-> position
/// p = seqlen_k - seqlen_q - window + r: zero when p < max(swa_valid_start, 0),
/// else (state_id, p % ring_size).
std::vector<PlanRow> swa_plan_rows(std::span<const SeqMeta> seqs, int32_t window,
                                   int32_t ring_size);

/// Expands segments into total_k rows (block, offset). Returns "" and fills rows
/// when every segment is inside one block of block_size tokens, zero fill only from
/// block -1, destinations disjoint, inside [0, total_k) and covering every row;
/// otherwise a message naming the first offending segment or row.
std::string expand_segments(std::span<const LoadSegment> segments, int32_t total_k,
                            int32_t block_size, std::vector<PlanRow>& rows);

}  // namespace kvcheck::ref
