// Internal launchers of the CUDA kernels (store.cu, load.cu, index_transforms.cu,
// validate.cu), called by device_api.cpp after its host checks. C++17, no CUDA
// headers. Every pointer is a DEVICE pointer; each launcher only enqueues on
// opts.stream and returns "" or the CUDA error text. `status` (nullable) is the
// checked call's status word: data kernels return early when it holds an error.
#pragma once

#include <cstdint>
#include <string>

#include "impl/cuda/device_api.h"

namespace kvcheck::cuda {

std::string launch_store(const DeviceCache& cache, const StoreArgs& a, const DeviceStatus* status,
                         const LaunchOptions& opts);
std::string launch_load(const DeviceCache& cache, const LoadArgs& a, const DeviceStatus* status,
                        const LaunchOptions& opts);

/// The scale values an FP8 K/V call checks on the device (SPEC §7.3): positions
/// [0, num_k) are k_scale[h], then [num_k, num_k + num_v) v_scale[h]. Empty (no
/// positions) for bf16/fp16 caches and for store_kv_cache.
struct KvScaleCheck {
  const float* k_scale = nullptr;
  const float* v_scale = nullptr;
  int32_t num_k = 0, num_v = 0;
  int64_t positions() const { return int64_t{num_k} + num_v; }
};

/// Validation kernels (validate.cu). `owner`: one uint64 per cache slot (slots) or
/// output row (load); status already reset to kStatusOk. launch_validate_slots
/// checks the scale values (positions [0, S), S = scales.positions()), then with rope
/// (concat_and_cache_mla's fused RoPE, docs/spec.md §8.4) rope->positions[i] for i < n
/// against [0, max_position) (positions S + i), then slot_mapping[n] against
/// [0, num_slots) and for duplicates (positions S + R + row, R = n with rope, else 0;
/// SPEC §5.1, §7.3, §7.4: store_kv_cache, concat_and_cache_mla and store_kv).
std::string launch_validate_slots(const KvScaleCheck& scales, const int32_t* slot_mapping, int64_t n,
                                  int64_t num_slots, unsigned long long* owner, DeviceStatus* status,
                                  const LaunchOptions& opts, const RopeArgs* rope = nullptr);

/// gather_kv's checks that read device memory (SPEC §7.5), as one sequence of
/// positions in the cpu's order: the scale values [0, S); cu_seqlens_k [S, S + C)
/// (C = cu_entries: position S is cu[0] != 0, S + i + 1 is cu[i+1] < cu[i]); out_k,
/// out_v (S + C, S + C + 1: kv_output_rule against total = cu[C - 1], when > 0); then
/// per sequence i, max_blocks + 2 positions: its seq_starts entry, its positions
/// against the row, then table column j. Only
/// positions [0, end) are checked: a host check that failed in between (the host
/// knows which) cuts the sequence there, so nothing past it is read.
struct GatherKvCheck {
  KvScaleCheck scales;
  const int32_t* cu_seqlens_k = nullptr;
  int64_t cu_entries = 0;
  int64_t out_rows[2] = {0, 0}, out_token_stride[2] = {0, 0}, out_head_stride[2] = {0, 0};
  bool out_null[2] = {false, false}, out_misaligned[2] = {false, false};
  int32_t num_kv_heads = 0, head_dim = 0, block_size = 0;
  int64_t num_blocks = 0;
  const int32_t* block_table = nullptr;
  int32_t max_blocks = 0;
  const int32_t* seq_starts = nullptr;  // [num_seqs] or nullptr (every start 0)
  bool block_unit = false;              // seq_starts rounded down to their block
  int64_t end = 0;
};
std::string launch_validate_gather_kv(const GatherKvCheck& a, DeviceStatus* status, const LaunchOptions& opts);
std::string launch_validate_load(const DeviceCache& cache, const LoadArgs& a,
                                 unsigned long long* owner, DeviceStatus* status,
                                 const LaunchOptions& opts);
std::string launch_validate_convert(const ConvertArgs& a, int64_t num_seqs, DeviceStatus* status,
                                    const LaunchOptions& opts);
std::string launch_validate_cat(const int32_t* right, int32_t wr, int32_t num_q, int64_t shift,
                                DeviceStatus* status, const LaunchOptions& opts);
std::string launch_validate_expand(const int32_t* pivots, int32_t num_q, int32_t width,
                                   DeviceStatus* status, const LaunchOptions& opts);
std::string launch_validate_swa_decode(const int32_t* start_len, int32_t num_q, int32_t width,
                                       int32_t ring_size, DeviceStatus* status,
                                       const LaunchOptions& opts);

/// SPEC §5.5 data kernels.
std::string launch_convert_kv_index(const ConvertArgs& a, const DeviceStatus* status,
                                    const LaunchOptions& opts);
std::string launch_kv_index_cat(const int32_t* left, int32_t wl, const int32_t* right, int32_t wr,
                                int32_t num_q, int32_t shift, int32_t* out,
                                const DeviceStatus* status, const LaunchOptions& opts);
std::string launch_expand_swa_index(const int32_t* pivots, int32_t num_q, int32_t width,
                                    int32_t* out, const DeviceStatus* status,
                                    const LaunchOptions& opts);
std::string launch_swa_decode_index(const int32_t* start_len, int32_t num_q, int32_t width,
                                    int32_t ring_size, int32_t* out, const DeviceStatus* status,
                                    const LaunchOptions& opts);

/// Which rule a validation kernel found broken (DeviceStatus::check); v[] holds
/// the values the matching impl/validate_errors.h builder takes.
enum class Check : int32_t {
  kNone = 0,
  kSlotRange,      // v: row, slot
  kSlotDuplicate,  // v: row, slot, first row
  kSegBlock,       // v: s, seg[4]
  kSegRange,
  kSegDestination,
  kSegNullCache,
  kSegOverlap,  // v: s, seg[4], t, seg_t[4]
  kConvSeqId,   // v: q, seq
  kConvContextLen,  // v: q, context_len
  kConvNegative,    // v: q, c, x
  kConvMissingBlock,  // v: q, c, x, seq, index, block
  kConvOverflow,      // v: q, c, block
  kCatNegative,       // v: i, x
  kCatOverflow,       // v: i, x
  kExpandLengths,     // v: q, p[4]
  kExpandPiece,       // v: q, p[4], piece
  kSwaLen,            // v: q, len
  kSwaStart,          // v: q, start
  kSwaRing,           // v: q, start
  kKvScale,           // v: side, h, the float's bits
  kKvCuFirst,         // v: cu[0]
  kKvCuDecrease,      // v: i, cu[i+1], cu[i]
  kKvOutput,          // v: side, KvOutRule, rows, total, token_stride, head_stride, H, D
  kKvSeqTooLong,      // v: i, start, len, max_blocks, block_size, has seq_starts, seq_starts[i]
  kKvTableEntry,      // v: i, j, block, KvTableRule, block_size, num_blocks, start
  kCopyRange,         // v: p, k, value
  kCopyDuplicate,     // v: p, dst, q
  kCopySource,        // v: p, dst, q
  kKvSeqStart,        // v: i, seq_starts[i]
  kRopePosition,      // v: i, positions[i], max_position
};

/// PendingCheck::op values.
enum class CheckedOp : int32_t {
  kStore = 1, kLoad, kConvert, kCat, kExpand, kSwaDecode, kStoreKv, kGatherKv, kCopyBlocks, kSwapBlocks
};

/// copy_blocks (SPEC §8.1) and swap_blocks (docs/spec.md §8.3), copy_blocks.cu: src
/// and dst DEVICE-reachable addresses (the same allocation for copy_blocks; a mapped
/// page-locked host address for a swap's host side), DEVICE block_mapping
/// [num_pairs][2]; `views` HOST [num_views][3] (src_offset, dst_offset, block_bytes),
/// merged (impl/validate_copy_blocks.h, impl/validate_swap_blocks.h: no two write one
/// byte) and validated.
struct BlockCopyLaunch {
  const uint8_t* src = nullptr;
  uint8_t* dst = nullptr;
  const int64_t* block_mapping = nullptr;
  int64_t num_pairs = 0, src_stride = 0, dst_stride = 0;
  const int64_t* views = nullptr;
  int64_t num_views = 0;
};
std::string launch_block_copy(const BlockCopyLaunch& a, const DeviceStatus* status, const LaunchOptions& opts);
/// The block_mapping rules on the device: positions 2p / 2p+1, src entries in [0,
/// src_blocks), dst in [0, dst_blocks), no dst twice and, when `no_dst_is_src`
/// (copy_blocks, src_blocks == dst_blocks), no dst that is a src. owner: uint64
/// [src_blocks + dst_blocks] with that rule, else [dst_blocks].
std::string launch_validate_block_mapping(const int64_t* block_mapping, int64_t num_pairs, int64_t src_blocks,
                                          int64_t dst_blocks, bool no_dst_is_src, unsigned long long* owner,
                                          DeviceStatus* status, const LaunchOptions& opts);

}  // namespace kvcheck::cuda
