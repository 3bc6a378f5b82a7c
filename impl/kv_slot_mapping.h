// Scheduler-state metadata of a vLLM / nano-vllm step (SPEC §7.6): seed 004's
// prepare_prefill / prepare_decode. Every slot comes from paged_slot
// (impl/slot_mapping.h), the one slot = block*block_size + offset formula.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "impl/slot_mapping.h"

namespace kvcheck {

/// A consumer's constraint on block_size, e.g. {256, "flash-attn"} (nano-vllm's
/// config.py asserts kvcache_block_size % 256 == 0 for FlashAttention's paged KV).
struct BlockSizeRule {
  int32_t multiple_of = 1;
  std::string consumer;
};

/// kInvalidArgument "block_size 16 breaks flash-attn's rule: block_size must be a
/// multiple of 256" when block_size % rule.multiple_of != 0 (or multiple_of < 1).
void check_block_size_rule(int32_t block_size, const BlockSizeRule& rule);

/// Prefill metadata of one step (shapes as nano-vllm's Context).
struct PrefillMetadata {
  std::vector<int32_t> slot_mapping;   // [sum of new tokens]
  std::vector<int32_t> cu_seqlens_q;   // [b+1], prefix sums of num_tokens - num_cached
  std::vector<int32_t> cu_seqlens_k;   // [b+1], prefix sums of num_tokens
  std::vector<int32_t> block_tables;   // [b][max_blocks], -1 padded
  int32_t max_blocks = 0;              // longest block table
  bool prefix_cache_hit = false;       // some num_cached > 0: attention reads the cache
};

/// SPEC §7.6 prefill over seqs (chunked, prefix cached). Errors as
/// paged_prefill_slot_mapping (SPEC §5.4), then the rule, when given.
PrefillMetadata prepare_prefill(std::span<const PagedSeq> seqs, int32_t block_size,
                                const std::optional<BlockSizeRule>& rule = std::nullopt);

/// Decode metadata: one row per sequence, then CUDA-graph padding rows.
struct DecodeMetadata {
  std::vector<int32_t> slot_mapping;   // [rows]: the last token's slot, -1 for padding
  std::vector<int32_t> context_lens;   // [rows]: num_tokens, 0 for padding
  std::vector<int32_t> block_tables;   // [rows][max_blocks], -1 padded
  int32_t max_blocks = 0;
};

/// SPEC §7.6 decode. graph_batch_size 0: no padding; else rows = graph_batch_size
/// (kInvalidArgument when smaller than seqs.size()). Errors as
/// paged_decode_slot_mapping, then the rule.
DecodeMetadata prepare_decode(std::span<const PagedSeq> seqs, int32_t block_size,
                              int32_t graph_batch_size = 0,
                              const std::optional<BlockSizeRule>& rule = std::nullopt);

}  // namespace kvcheck
