#include "impl/kv_slot_mapping.h"

#include <algorithm>
#include <limits>

#include "impl/error.h"

namespace kvcheck {
namespace {

std::string str(int64_t v) { return std::to_string(v); }

int32_t longest_table(std::span<const PagedSeq> seqs) {
  size_t m = 0;
  for (const PagedSeq& s : seqs) m = std::max(m, s.block_table.size());
  return static_cast<int32_t>(m);
}

std::vector<int32_t> padded_tables(std::span<const PagedSeq> seqs, int32_t max_blocks, size_t rows) {
  std::vector<int32_t> t(rows * static_cast<size_t>(max_blocks), -1);
  for (size_t i = 0; i < seqs.size(); ++i)
    std::copy(seqs[i].block_table.begin(), seqs[i].block_table.end(),
              t.begin() + static_cast<std::ptrdiff_t>(i * static_cast<size_t>(max_blocks)));
  return t;
}

}  // namespace

void check_block_size_rule(int32_t block_size, const BlockSizeRule& rule) {
  if (rule.multiple_of < 1)
    throw Error(ErrorCode::kInvalidArgument,
                rule.consumer + "'s block_size rule needs a multiple >= 1, got " + str(rule.multiple_of));
  if (block_size % rule.multiple_of != 0)
    throw Error(ErrorCode::kInvalidArgument,
                "block_size " + str(block_size) + " breaks " + rule.consumer +
                    "'s rule: block_size must be a multiple of " + str(rule.multiple_of));
}

PrefillMetadata prepare_prefill(std::span<const PagedSeq> seqs, int32_t block_size,
                                const std::optional<BlockSizeRule>& rule) {
  PrefillMetadata m;
  m.slot_mapping = paged_prefill_slot_mapping(seqs, block_size);  // validates every sequence
  if (rule) check_block_size_rule(block_size, *rule);
  m.cu_seqlens_q.push_back(0);
  m.cu_seqlens_k.push_back(0);
  int64_t q = 0, k = 0;
  for (const PagedSeq& s : seqs) {
    q += s.num_tokens - s.num_cached;
    k += s.num_tokens;
    if (k > std::numeric_limits<int32_t>::max())
      throw Error(ErrorCode::kInvalidArgument, "cu_seqlens_k overflows int32: " + str(k) + " tokens");
    m.cu_seqlens_q.push_back(static_cast<int32_t>(q));
    m.cu_seqlens_k.push_back(static_cast<int32_t>(k));
    m.prefix_cache_hit |= s.num_cached > 0;
  }
  m.max_blocks = longest_table(seqs);
  m.block_tables = padded_tables(seqs, m.max_blocks, seqs.size());
  return m;
}

DecodeMetadata prepare_decode(std::span<const PagedSeq> seqs, int32_t block_size,
                              int32_t graph_batch_size, const std::optional<BlockSizeRule>& rule) {
  if (graph_batch_size != 0 && graph_batch_size < static_cast<int64_t>(seqs.size()))
    throw Error(ErrorCode::kInvalidArgument,
                "graph_batch_size " + str(graph_batch_size) + " is smaller than the batch of " +
                    str(static_cast<int64_t>(seqs.size())) + " sequences");
  DecodeMetadata m;
  m.slot_mapping = paged_decode_slot_mapping(seqs, block_size);
  if (rule) check_block_size_rule(block_size, *rule);
  const size_t rows = graph_batch_size != 0 ? static_cast<size_t>(graph_batch_size) : seqs.size();
  for (const PagedSeq& s : seqs) m.context_lens.push_back(s.num_tokens);
  m.slot_mapping.resize(rows, -1);
  m.context_lens.resize(rows, 0);
  m.max_blocks = longest_table(seqs);
  m.block_tables = padded_tables(seqs, m.max_blocks, rows);
  return m;
}

}  // namespace kvcheck
