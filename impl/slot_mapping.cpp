#include "impl/slot_mapping.h"

#include <algorithm>
#include <limits>
#include <string>

#include "impl/error.h"

namespace kvcheck {
namespace {

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
std::string str(int64_t v) { return std::to_string(v); }

}  // namespace

int32_t paged_slot(std::span<const int32_t> block_table, int32_t block_size, int32_t t) {
  if (block_size < 1)
    throw Error(ErrorCode::kInvalidArgument, "block_size must be >= 1, got " + str(block_size));
  if (t < 0) throw Error(ErrorCode::kInvalidArgument, "token index " + str(t) + " < 0");
  const int64_t index = t / block_size;
  if (index >= static_cast<int64_t>(block_table.size()))
    throw Error(ErrorCode::kRangeOutOfTable,
                "token " + str(t) + " needs block_table[" + str(index) + "] but the table has " +
                    str(static_cast<int64_t>(block_table.size())) + " blocks");
  const int32_t block = block_table[static_cast<size_t>(index)];
  if (block < 0)
    throw Error(ErrorCode::kRangeOutOfTable,
                "token " + str(t) + " needs block_table[" + str(index) + "] = " + str(block));
  const int64_t slot = int64_t{block} * block_size + t % block_size;
  if (slot > kInt32Max)
    throw Error(ErrorCode::kInvalidArgument, "slot " + str(slot) + " of token " + str(t) +
                                                 " (block " + str(block) + ") overflows int32");
  return static_cast<int32_t>(slot);
}

std::vector<int32_t> paged_prefill_slot_mapping(std::span<const PagedSeq> seqs,
                                                int32_t block_size) {
  std::vector<int32_t> slots;
  for (size_t i = 0; i < seqs.size(); ++i) {
    const PagedSeq& s = seqs[i];
    if (s.num_cached < 0 || s.num_cached > s.num_tokens)
      throw Error(ErrorCode::kInvalidArgument,
                  "sequence " + str(static_cast<int64_t>(i)) + ": need 0 <= num_cached <= " +
                      "num_tokens, got " + str(s.num_cached) + ", " + str(s.num_tokens));
    for (int32_t t = s.num_cached; t < s.num_tokens; ++t)
      slots.push_back(paged_slot(s.block_table, block_size, t));
  }
  return slots;
}

std::vector<int32_t> paged_decode_slot_mapping(std::span<const PagedSeq> seqs, int32_t block_size) {
  std::vector<int32_t> slots;
  for (size_t i = 0; i < seqs.size(); ++i) {
    if (seqs[i].num_tokens < 1)
      throw Error(ErrorCode::kInvalidArgument, "sequence " + str(static_cast<int64_t>(i)) +
                                                   ": decode needs num_tokens >= 1, got " +
                                                   str(seqs[i].num_tokens));
    slots.push_back(paged_slot(seqs[i].block_table, block_size, seqs[i].num_tokens - 1));
  }
  return slots;
}

void append_swa_store_slots(std::vector<int32_t>& out, int32_t state_id, int32_t ring_size,
                            int32_t seqlen_k, int32_t seqlen_q) {
  if (ring_size < 1 || state_id < 0 || seqlen_q < 0 || seqlen_q > seqlen_k)
    throw Error(ErrorCode::kInvalidArgument,
                "SWA store needs ring_size >= 1, state_id >= 0, 0 <= seqlen_q <= seqlen_k; got "
                "ring_size " + str(ring_size) + ", state_id " + str(state_id) + ", seqlen_q " +
                    str(seqlen_q) + ", seqlen_k " + str(seqlen_k));
  if ((int64_t{state_id} + 1) * ring_size - 1 > kInt32Max)
    throw Error(ErrorCode::kInvalidArgument, "ring " + str(state_id) + " of " + str(ring_size) +
                                                 " slots overflows int32");
  const int32_t history_end = seqlen_k - seqlen_q;
  out.reserve(out.size() + static_cast<size_t>(seqlen_q));
  for (int32_t j = 0; j < seqlen_q; ++j)
    out.push_back(j < seqlen_q - ring_size
                      ? -1
                      : state_id * ring_size + (history_end + j) % ring_size);
}

SwaDecodeWindow swa_decode_window(int32_t state_id, int32_t ring_size, int32_t window,
                                  int32_t seqlen_k, int32_t swa_valid_start) {
  if (seqlen_k < 1 || window < 1 || ring_size < window || state_id < 0 || swa_valid_start < 0)
    throw Error(ErrorCode::kInvalidArgument,
                "SWA decode window needs seqlen_k >= 1, 1 <= window <= ring_size, state_id >= "
                "0, swa_valid_start >= 0; got seqlen_k " + str(seqlen_k) + ", window " +
                    str(window) + ", ring_size " + str(ring_size) + ", state_id " +
                    str(state_id) + ", swa_valid_start " + str(swa_valid_start));
  if ((int64_t{state_id} + 1) * ring_size - 1 > kInt32Max)
    throw Error(ErrorCode::kInvalidArgument, "ring " + str(state_id) + " of " + str(ring_size) +
                                                 " slots overflows int32");
  const int32_t p = seqlen_k - 1;
  const int32_t first = std::max(p - window + 1, swa_valid_start);
  if (first > p) return {state_id * ring_size, 0};
  return {state_id * ring_size + first % ring_size, p - first + 1};
}

}  // namespace kvcheck
