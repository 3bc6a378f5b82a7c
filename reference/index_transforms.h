// Reference index transforms (SPEC §5.5), one element at a time. Inputs are assumed
// valid (the properties draw valid ones and check errors separately); results are
// int64 so an overflow shows instead of wrapping.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "impl/op_args.h"  // ConvertKvIndexArgs (plain type)

namespace kvcheck::ref {

/// topk entry x of query q: -1 unless 0 <= x < context_lens[q]; then
/// block_table[seq][x / bs]*bs + x % bs with seq = seq_ids[q] (or q).
std::vector<int64_t> convert_kv_index(const ConvertKvIndexArgs& args);

/// [num_q][wl + wr]: the L row, then the R row with non -1 entries + cached + cur.
std::vector<int64_t> kv_index_cat(std::span<const int32_t> left, int32_t wl,
                                  std::span<const int32_t> right, int32_t wr, int32_t num_q,
                                  int32_t total_k_swa_cached, int32_t total_k_swa_cur);

/// [num_q][width]: column c -> off1 + c (c < len1), off2 + c - len1 (c < len1+len2), -1.
std::vector<int64_t> expand_swa_index(std::span<const int32_t> pivots, int32_t num_q,
                                      int32_t width);

/// [num_q][width]: column c < valid_len -> the c-th slot after start_slot along its
/// ring: ring*(start/ring) + (start%ring + c) % ring; else -1.
std::vector<int64_t> swa_decode_index(std::span<const int32_t> start_len, int32_t num_q,
                                      int32_t width, int32_t ring_size);

}  // namespace kvcheck::ref
