// kvcheck's CUDA kernels as an engine calls them (C++17, no CUDA headers needed): the
// SPEC §5 operations on DEVICE pointers, enqueued on a caller's stream. No call
// allocates, copies to or from the host, or synchronises, so every call can be
// captured into a CUDA graph; the only exception is PendingCheck::throw_if_error,
// which a caller uses when it wants to see a checked call's verdict.
//
// Two entry points per operation:
//   * unchecked (`store_kv_cache`, ...): the metadata is assumed valid, as the seed's
//     kernels `assume` theirs; one kernel, the hot path.
//   * checked (`store_kv_cache_checked`, ...): the sizes are checked on the host
//     (kvcheck::Error at once, nothing enqueued); then validation kernels check every
//     metadata entry on the device with the rules, order, ErrorCode and blamed index
//     and value of SPEC §5 and the cpu backend, into a DeviceStatus; the data kernel
//     skips when the status holds an error, so bad input writes nothing.
//
// Programmatic dependent launch (LaunchOptions::pdl): every kernel waits for the
// previous grid in the stream before it reads metadata or inputs (they may be
// produced by that grid) and lets its dependents launch after its last write.
//
// The K/V family (SPEC §7: store_kv_checked, gather_kv_checked, at the end) takes
// kvcheck's views (impl/kv_format.h: std::span, so C++20 callers only) and addresses
// through KvPagedLayout (impl/kv_paged_layout.h).
//
// Errors: kvcheck::Error for bad arguments; std::runtime_error("cuda ...") when the
// CUDA runtime refuses a launch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "impl/error.h"
#include "impl/paged_layout.h"
#include "impl/rope_args.h"

namespace kvcheck::cuda {

/// Where a call runs. stream: a cudaStream_t (nullptr = the legacy default stream).
struct LaunchOptions {
  void* stream = nullptr;
  bool pdl = false;  // launch with cudaLaunchAttributeProgrammaticStreamSerialization
};

/// The device status word of checked calls: 96 bytes of device memory the caller
/// owns (8-byte aligned). A checked call resets it (cudaMemsetAsync), its
/// validation kernels record the first offending input, its data kernels read it.
struct DeviceStatus {
  unsigned long long first;  // smallest offending position; kStatusOk when none
  int32_t check;             // which rule failed (internal code: validate.cu's Check)
  int32_t reserved;
  int64_t v[10];             // the values the error message names
};
constexpr unsigned long long kStatusOk = ~0ull;

/// What a checked call leaves to read later: the status and what the message needs.
struct PendingCheck {
  const DeviceStatus* status = nullptr;  // nullptr: nothing to check (e.g. n == 0)
  int32_t op = 0;
  int64_t ctx[3] = {0, 0, 0};
  /// A host check that failed after checks the device makes (SPEC order: the K/V
  /// family's scale values and cu_seqlens_k come before some size checks). The call
  /// then launched no data kernel; this is the verdict unless the device found an
  /// earlier error.
  std::optional<Error> deferred;
  /// Waits for `stream`, copies the status to the host and throws the kvcheck::Error
  /// the cpu backend throws for the same input (same code and message).
  void throw_if_error(void* stream) const;
};

/// A paged cache in device memory: base (16-byte aligned for the vector kernels;
/// others take a slower path) of a buffer of size_bytes bytes, at least
/// layout.size_bytes(): the checked entries throw kShapeMismatch for a smaller one
/// (docs/spec.md §5.2 validation order); the unchecked ones assume it.
struct DeviceCache {
  uint8_t* base = nullptr;
  PagedLayout layout;
  int64_t size_bytes = 0;
};

/// store_kv_cache input (SPEC §5.1): kv[kv_rows][E] BF16 bits, row r at
/// kv + r*kv_row_stride (elements); slot_mapping[num_tokens] int32. The row count is
/// num_tokens; kv may hold more rows (CUDA-graph padding).
struct StoreArgs {
  const uint16_t* kv = nullptr;
  int64_t kv_rows = 0;
  int64_t kv_row_stride = 0;  // elements
  const int32_t* slot_mapping = nullptr;
  int64_t num_tokens = 0;
  // A second source, set only by concat_and_cache_mla (docs/spec.md §8.2), which
  // validates it: elements [split, E) of row r are at pe + r*pe_row_stride + (e - split),
  // kv holds [0, split). store_kv_cache refuses a non-null pe (kInvalidArgument).
  const uint16_t* pe = nullptr;
  int64_t pe_row_stride = 0;  // elements
  int64_t split = 0;          // elements
  // Fused RoPE (docs/spec.md §8.4), set only by concat_and_cache_mla with pe: element
  // e >= split is element e - split of a k_pe row, rotated as §8.4 says before the store.
  // cos_sin_cache null: none. store_kv_cache refuses one (kInvalidArgument).
  RopeArgs rope{};
};

/// concat_and_cache_mla input (docs/spec.md §8.2): kv_c[kv_c_rows][kv_lora_rank] and
/// k_pe[k_pe_rows][rope_dim] BF16 bits, rows kv_c_row_stride / k_pe_row_stride
/// elements apart (they may be views of one tensor); slot_mapping[num_tokens].
struct ConcatArgs {
  const uint16_t* kv_c = nullptr;
  int64_t kv_c_rows = 0, kv_c_row_stride = 0;
  const uint16_t* k_pe = nullptr;
  int64_t k_pe_rows = 0, k_pe_row_stride = 0;
  int32_t kv_lora_rank = 0, rope_dim = 0;
  const int32_t* slot_mapping = nullptr;
  int64_t num_tokens = 0;
  /// Split caches (docs/spec.md §8.2): k_pe's own cache (E = rope_dim, the cache's
  /// num_blocks and block_size), the cache then holding kv_c (E = kv_lora_rank).
  const DeviceCache* pe_cache = nullptr;
  /// Fused RoPE of k_pe (docs/spec.md §8.4): positions and cos_sin_cache in device memory.
  const RopeArgs* rope = nullptr;
};

/// load_paged_kv_cache arguments (SPEC §5.2): load_segments[num_segments][4] int32;
/// out_data rows of layout.load-row bytes (BF16 [E] for do_cast/BF16, else the data
/// bytes) at out_data_stride bytes apart; out_scales (index formats) rows of
/// sf_bytes at out_scale_stride bytes apart; out_rows >= total_k.
struct LoadArgs {
  const int32_t* load_segments = nullptr;
  int64_t num_segments = 0;
  int32_t total_k = 0;
  uint8_t* out_data = nullptr;
  int64_t out_data_stride = 0;  // bytes
  uint8_t* out_scales = nullptr;
  int64_t out_scale_stride = 0;  // bytes
  int64_t out_rows = 0;
};

/// Bytes of scratch device memory a checked store / load needs (8-byte aligned):
/// 8 bytes per cache slot (store) or per output row (load).
size_t store_workspace_bytes(const PagedLayout& layout);
size_t load_workspace_bytes(int32_t total_k);

/// SPEC §5.1, metadata assumed valid and `cache.layout` built by CacheLayout::paged()
/// (not re-derived here: O(1) host work). Throws kvcheck::Error only for unusable
/// sizes/pointers.
void store_kv_cache(const DeviceCache& cache, const StoreArgs& args, const LaunchOptions& opts);
/// SPEC §5.1, checked on the device (see the top of this file). status: device
/// memory; workspace: store_workspace_bytes(layout) bytes of device memory.
PendingCheck store_kv_cache_checked(const DeviceCache& cache, const StoreArgs& args,
                                    DeviceStatus* status, void* workspace,
                                    const LaunchOptions& opts);

/// docs/spec.md §8.2 concat_and_cache_mla, metadata assumed valid, layout as for
/// store_kv_cache: the store kernels reading each row from two sources (16-byte
/// accesses when kv_lora_rank % 8 == 0 and both sources are 16-byte aligned rows); with
/// args.pe_cache, two one-source stores (kv_c into `cache`, k_pe into *pe_cache).
/// Throws kvcheck::Error for the §8.2 checks that read no metadata.
void concat_and_cache_mla(const DeviceCache& cache, const ConcatArgs& args, const LaunchOptions& opts);
/// docs/spec.md §8.2, checked on the device as store_kv_cache_checked (its slot rules,
/// same workspace: store_workspace_bytes(layout)).
PendingCheck concat_and_cache_mla_checked(const DeviceCache& cache, const ConcatArgs& args, DeviceStatus* status,
                                          void* workspace, const LaunchOptions& opts);

/// SPEC §5.2, metadata assumed valid (every segment length <= block_size), layout as
/// for store_kv_cache.
void load_paged_kv_cache(const DeviceCache& cache, const LoadArgs& args, const LaunchOptions& opts);
/// SPEC §5.2, checked on the device; workspace: load_workspace_bytes(total_k).
PendingCheck load_paged_kv_cache_checked(const DeviceCache& cache, const LoadArgs& args,
                                         DeviceStatus* status, void* workspace,
                                         const LaunchOptions& opts);

/// convert_kv_index (SPEC §5.5): topk[num_q][k]; block_table[num_seqs][max_blocks]
/// (num_seqs = its rows); seq_ids[num_q] or nullptr (row q); context_lens[num_q].
struct ConvertArgs {
  const int32_t* topk = nullptr;
  int32_t num_q = 0, k = 0;
  const int32_t* block_table = nullptr;
  int64_t block_table_entries = 0;
  int32_t max_blocks = 0;
  const int32_t* seq_ids = nullptr;
  const int32_t* context_lens = nullptr;
  int32_t block_size = 0;
  int32_t* out = nullptr;  // [num_q][k]
};
/// checked == true: validated on the device as the cpu validator does (status
/// must then be given); false: entries assumed valid.
PendingCheck convert_kv_index(const ConvertArgs& a, bool checked, DeviceStatus* status,
                              const LaunchOptions& opts);
/// kv_index_cat: out[num_q][wl+wr] = left row, then right row shifted by
/// total_k_swa_cached + total_k_swa_cur (-1 kept).
PendingCheck kv_index_cat(const int32_t* left, int32_t wl, const int32_t* right, int32_t wr,
                          int32_t num_q, int32_t total_k_swa_cached, int32_t total_k_swa_cur,
                          int32_t* out, bool checked, DeviceStatus* status,
                          const LaunchOptions& opts);
/// expand_swa_index: pivots[num_q][4] -> out[num_q][width].
PendingCheck expand_swa_index(const int32_t* pivots, int32_t num_q, int32_t width, int32_t* out,
                              bool checked, DeviceStatus* status, const LaunchOptions& opts);
/// SWA decode index: start_len[num_q][2] -> out[num_q][width] along rings of ring_size.
PendingCheck swa_decode_index(const int32_t* start_len, int32_t num_q, int32_t width,
                              int32_t ring_size, int32_t* out, bool checked,
                              DeviceStatus* status, const LaunchOptions& opts);

/// The grid cap every grid-stride kernel obeys: KVCHECK_CUDA_MAX_GRID (a test-only
/// knob: a small value makes each CTA run many rows) or 0 for the default.
int64_t grid_cap_override();

/// "" when a device exists and runs this build's kernels (an sm_90 image on an
/// sm_90 GPU), else why not.
std::string probe_device();
/// Free bytes of device memory (0 when there is no device).
int64_t device_free_bytes();

}  // namespace kvcheck::cuda

#if __cplusplus >= 202002L  // the views of impl/kv_format.h use std::span
#include <span>

#include "impl/kv_format.h"
#include "impl/op_args.h"

namespace kvcheck::cuda {

/// Bytes of scratch device memory a checked store_kv needs (8-byte aligned): 8 per
/// cache slot (num_blocks * block_size). Throws validate_kv_layout's error for an
/// invalid layout, the first error store_kv_checked would throw.
size_t store_kv_workspace_bytes(const KvCacheLayout& layout);

/// store_kv (SPEC §7.4), checked as the cpu backend checks it, on device memory:
/// key, value, slot_mapping (n = its size), the caches and the scales are DEVICE
/// pointers (never read on the host). On the host, in SPEC order: the cache
/// (validate_kv_cache), the scales' kind and sizes, then (after the scale values,
/// which the device checks) the model dtypes and rows (validate_store_kv_rows; a
/// bf16/fp16 cache takes rows of its own dtype only) and a null slot_mapping
/// (kShapeMismatch): an error with no device check before it is thrown at once,
/// nothing enqueued. On the device: the scale values (FP8), then each slot (range,
/// duplicates), into `status`; the store kernel skips on error, so a refusal writes
/// nothing. Both K and V share the view's strides (kv_paged_layout). workspace:
/// store_kv_workspace_bytes(cache.layout) bytes of device memory. With rope (docs/spec.md
/// §8.4; positions and table DEVICE pointers): its shape and pointers on the host with
/// the rows, its positions on the device before the slots; every head of the key rows
/// rotated as the kernel reads it.
PendingCheck store_kv_checked(const KvTokensIn& key, const KvTokensIn& value, std::span<const int32_t> slot_mapping,
                              const KvCacheView& cache, DeviceStatus* status, void* workspace,
                              const LaunchOptions& opts, const RopeArgs* rope = nullptr);

/// gather_kv (SPEC §7.5), checked as the cpu backend checks it, on device memory
/// (block_table, cu_seqlens_k, seq_starts, caches, scales, outputs: DEVICE pointers in
/// `args`). On the host: the cache, the scales' kind and sizes, the outputs' model
/// dtypes, cu_seqlens_k not empty (nor null), max_blocks, the table's and seq_starts'
/// sizes (and not null). On the device, in the cpu's order between those: the scale
/// values, cu_seqlens_k (first 0, never decreasing), the outputs against cu[b] (rows,
/// null, alignment, overlap), each sequence's start, its positions against the row and
/// its needed table entries. A host error that follows device checks is kept in
/// PendingCheck::deferred (the data kernel is then not launched); otherwise the gather
/// kernel skips on error. The rows written, cu[b], are read on the device: the grid is
/// sized for the rows the outputs hold. No workspace.
PendingCheck gather_kv_checked(const GatherKvArgs& args, DeviceStatus* status, const LaunchOptions& opts);

/// copy_blocks (SPEC §8.1) on device memory: args.base and args.block_mapping are
/// DEVICE pointers, args.views HOST memory (the engine's list of layer caches, known
/// when it launches). The views are validated on the host in both entries (SPEC §8.1
/// steps 1-2, kvcheck::Error at once, nothing enqueued); views of one offset are
/// copied once. Unchecked: block_mapping assumed valid.
void copy_blocks(const CopyBlocksArgs& args, const LaunchOptions& opts);
/// Bytes of scratch device memory copy_blocks_checked needs for `args`: 16 per block
/// when it has views and pairs (num_blocks is then bounded by the allocation: view
/// 0's last block lies inside it, or the call is refused first), else 0.
size_t copy_blocks_workspace_bytes(const CopyBlocksArgs& args);
/// Checked: block_mapping validated on the device (step 3: the smallest failing
/// position, the cpu's code and message) into `status`; the copy kernel skips on
/// error, so a refusal writes nothing.
PendingCheck copy_blocks_checked(const CopyBlocksArgs& args, DeviceStatus* status, void* workspace,
                                 const LaunchOptions& opts);

/// swap_blocks (docs/spec.md §8.3) between two allocations: args.src and args.dst are
/// DEVICE pointers, or PAGE-LOCKED HOST pointers (cudaMallocHost, cudaHostRegisterMapped)
/// where their pool's `host` is set — one kernel moves device->device, host->device and
/// device->host, reading and writing host memory through its mapped address (it takes
/// SMs, where a copy engine would not: an engine that overlaps its offload with compute
/// may prefer cudaMemcpyBatchAsync). args.block_mapping is a DEVICE pointer,
/// args.views HOST memory. Both entries validate the views on the host (steps 1-2,
/// kvcheck::Error at once, nothing enqueued), and refuse with kInvalidArgument a pool
/// not where its flag says (pageable memory would fault the context). Unchecked:
/// block_mapping assumed valid.
void swap_blocks(const SwapBlocksArgs& args, const LaunchOptions& opts);
/// Bytes of scratch device memory swap_blocks_checked needs: 8 per dst block when it has
/// views and pairs (dst.num_blocks bounded by dst's allocation), else 0.
size_t swap_blocks_workspace_bytes(const SwapBlocksArgs& args);
/// Checked: block_mapping validated on the device (step 3: the smallest failing
/// position, the cpu's code and message) into `status`; the copy kernel skips on
/// error, so a refusal writes nothing.
PendingCheck swap_blocks_checked(const SwapBlocksArgs& args, DeviceStatus* status, void* workspace,
                                 const LaunchOptions& opts);

}  // namespace kvcheck::cuda
#endif
