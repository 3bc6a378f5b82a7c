// The backend interface: every production implementation (cpu, cuda) offers the
// operations of SPEC §5 on host buffers, so each property and fuzzer takes the
// backend as a parameter. All entry points are *checked*: they validate every input
// first and throw kvcheck::Error before writing any output byte. Core layer
// (docs/layers.md); the argument views are impl/op_args.h, the capabilities
// impl/capabilities.h, the registry (available_backends, backend_by_name)
// impl/backends.h.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "impl/capabilities.h"
#include "impl/kv_format.h"
#include "impl/op_args.h"

namespace kvcheck {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  virtual BackendCapabilities capabilities() const { return {}; }
  /// The backend whose operations these are: itself, or for a wrapper that forwards
  /// every call (the runner's call counting) the backend it wraps, so a check can ask
  /// what it is really testing (a writer x reader contract, impl/contract_backend.h).
  virtual const Backend& underlying() const { return *this; }

  /// Test hook (SPEC §6): this backend's later calls made on the calling thread split
  /// their work as if the machine had `max_threads` threads and a thread paid for
  /// itself at `min_bytes_per_thread` bytes (0, 0: the backend's own defaults), so the
  /// properties reach multi-threaded paths on any machine. Returns false when the
  /// backend has no such knob (the default) or rejects the values.
  virtual bool set_test_parallelism(int32_t /*max_threads*/, int64_t /*min_bytes_per_thread*/) const {
    return false;
  }

  /// SPEC §5.1. kv rows are BF16 [n][E], n = slot_mapping.size(). Throws
  /// kShapeMismatch, kSlotOutOfRange (index and value named), kDuplicateSlot.
  virtual void store_kv_cache(const KVInput& kv, std::span<const int32_t> slot_mapping,
                              const CacheView& cache) const = 0;

  /// SPEC §5.2. load_segments holds S*4 int32 (LoadSegment order); total_k >= 0.
  /// Throws kInvalidArgument, kShapeMismatch, kSegmentBlockOutOfRange,
  /// kSegmentRangeInvalid, kSegmentDestinationOutOfRange, kSegmentOverlap.
  virtual void load_paged_kv_cache(const ConstCacheView& cache,
                                   std::span<const int32_t> load_segments, int32_t total_k,
                                   const LoadOutput& out) const = 0;

  /// SPEC §5.5 convert_kv_index into out[num_q*k]. Throws kInvalidArgument for
  /// bad sizes and kRangeOutOfTable when a valid index needs a block past
  /// max_blocks or a -1 table entry.
  virtual void convert_kv_index(const ConvertKvIndexArgs& args, std::span<int32_t> out) const = 0;

  /// SPEC §5.5 kv_index_cat: out[num_q][wl+wr] = L row, then R row with every
  /// non -1 entry shifted by total_k_swa_cached + total_k_swa_cur.
  virtual void kv_index_cat(std::span<const int32_t> left, int32_t wl,
                            std::span<const int32_t> right, int32_t wr, int32_t num_q,
                            int32_t total_k_swa_cached, int32_t total_k_swa_cur,
                            std::span<int32_t> out) const = 0;

  /// SPEC §5.5 expand_swa_index: pivots[num_q][4] = off1, len1, off2, len2 ->
  /// out[num_q][width].
  virtual void expand_swa_index(std::span<const int32_t> pivots, int32_t num_q, int32_t width,
                                std::span<int32_t> out) const = 0;

  /// SPEC §5.5 SWA decode index: start_len[num_q][2] = start_slot, valid_len ->
  /// out[num_q][width] physical slots walking forward along the start slot's ring
  /// of ring_size slots (wrapping), -1 from column valid_len on.
  virtual void swa_decode_index(std::span<const int32_t> start_len, int32_t num_q,
                                int32_t width, int32_t ring_size,
                                std::span<int32_t> out) const = 0;

  /// SPEC §7.4 store_kv: for each i < n = slot_mapping.size() with slot_mapping[i]
  /// != -1, writes every head of key row i / value row i ([rows][H][D], model dtype
  /// bf16/fp16, rows >= n) into the K / V record of that slot (FP8 caches: quantised
  /// with the head's scale, SPEC §7.3). Throws (nothing written) kInvalidArgument,
  /// kShapeMismatch, kSlotOutOfRange, kDuplicateSlot; default: kUnsupported. With rope
  /// (docs/spec.md §8.4, capability KVCHECK_OP_STORE_KV_ROPE), every head of key row i is
  /// rotated at positions[i] first (the key buffer only read).
  virtual void store_kv(const KvTokensIn& key, const KvTokensIn& value,
                        std::span<const int32_t> slot_mapping, const KvCacheView& cache,
                        const RopeArgs* rope = nullptr) const;

  /// SPEC §7.5 gather_kv: sequence i's tokens [0, cu_seqlens_k[i+1] - cu_seqlens_k[i])
  /// through block_table[i][0..max_blocks) ([num_seqs][max_blocks], -1 padded) from
  /// table position seq_starts[i] (if given; token or block unit) to rows
  /// [cu_seqlens_k[i], cu_seqlens_k[i+1]) of out_k / out_v (model dtype; FP8
  /// dequantised). Throws (nothing written) kInvalidArgument, kShapeMismatch,
  /// kRangeOutOfTable, kBlockOutOfRange; default: kUnsupported.
  virtual void gather_kv(const GatherKvArgs& args) const;

  /// SPEC §8.1 copy_blocks: in place, every view's block src to its block dst for
  /// each (src, dst) of block_mapping without a -1. Throws (nothing written)
  /// kInvalidArgument, kShapeMismatch, kBlockOutOfRange, kBlockConflict; default:
  /// kUnsupported.
  virtual void copy_blocks(const CopyBlocksArgs& args) const;

  /// docs/spec.md §8.2 concat_and_cache_mla: store_kv_cache of the rows kv_c[i] ++
  /// k_pe[i]. Throws (nothing written) kInvalidFormat, kInvalidArgument,
  /// kShapeMismatch, kSlotOutOfRange, kDuplicateSlot; default: kUnsupported.
  virtual void concat_and_cache_mla(const ConcatMlaArgs& args) const;

  /// docs/spec.md §8.3 swap_blocks: every view's src block s to its dst block d for
  /// each (s, d) of block_mapping without a -1, between two allocations (src only
  /// read). Throws (nothing written) kInvalidArgument, kShapeMismatch,
  /// kBlockOutOfRange, kBlockConflict; default: kUnsupported.
  virtual void swap_blocks(const SwapBlocksArgs& args) const;
};

}  // namespace kvcheck
