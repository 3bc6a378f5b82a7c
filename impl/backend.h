// The backend interface: every production implementation (cpu, cuda) offers the
// operations of SPEC §5 on host buffers, so each property and fuzzer takes the
// backend as a parameter. All entry points are *checked*: they validate every input
// first and throw kvcheck::Error before writing any output byte.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "include/kvcheck/backend_abi.h"  // the KVCHECK_OP_* bits of BackendCapabilities::ops
#include "impl/format.h"
#include "impl/kv_format.h"
#include "impl/layout.h"

namespace kvcheck {

/// A paged cache in host memory: `base` points at a buffer of `size_bytes` bytes
/// (what the allocation holds) laid out by `layout` (see KVCache for an owning
/// allocation). Every checked entry rejects a non-null view whose buffer is smaller
/// than its layout, layout.size_bytes() = num_blocks * block_stride (kShapeMismatch,
/// docs/spec.md §5.2 validation order), before reading or writing a byte.
struct CacheView {
  uint8_t* base = nullptr;
  CacheLayout layout;
  int64_t size_bytes = 0;
};
struct ConstCacheView {
  const uint8_t* base = nullptr;
  CacheLayout layout;
  int64_t size_bytes = 0;
};

/// Store input kv[rows][E] of BF16 bit patterns; row r starts at data + r*row_stride
/// (elements, >= E). `rows` is what the buffer holds: the operation takes its row
/// count from slot_mapping and throws kShapeMismatch when rows < slot_mapping.size().
struct KVInput {
  const bf16_bits* data = nullptr;
  int64_t rows = 0;
  int64_t row_stride = 0;  // elements
};

/// Load output (SPEC §5.2). data: `rows` rows of format.load_row_bytes() bytes at
/// data_row_stride bytes apart; scales: index formats only, `rows` rows of
/// format.load_scale_row_bytes() bytes at scale_row_stride bytes apart (ue8m0 as
/// int32 little-endian packs, fp32 as floats). rows must be >= total_k.
struct LoadOutput {
  uint8_t* data = nullptr;
  int64_t data_row_stride = 0;  // bytes
  uint8_t* scales = nullptr;
  int64_t scale_row_stride = 0;  // bytes
  int64_t rows = 0;
};

/// A load segment (SPEC §5.2): copy tokens [src_begin, src_end) of block
/// src_block_id (-1: zeros) to output rows [dst_offset, dst_offset+len).
/// Stored as 4 consecutive int32 in this order in `load_segments` spans.
struct LoadSegment {
  int32_t src_block_id, src_begin, src_end, dst_offset;
  bool operator==(const LoadSegment&) const = default;
};
static_assert(sizeof(LoadSegment) == 16);

/// convert_kv_index (SPEC §5.5) arguments. topk[num_q][k] holds logical token
/// indices (or -1); row q looks up block_table row seq_ids[q] (an empty seq_ids
/// means seq_ids[q] == q) and is valid below context_lens[q].
struct ConvertKvIndexArgs {
  std::span<const int32_t> topk;          // [num_q * k]
  int32_t num_q = 0, k = 0;
  std::span<const int32_t> block_table;   // [num_seqs * max_blocks]
  int32_t max_blocks = 0;
  std::span<const int32_t> seq_ids;       // [num_q] or empty
  std::span<const int32_t> context_lens;  // [num_q], tokens
  int32_t block_size = 0;
};

/// What a backend can run; properties skip (and report) what it cannot, and the
/// generators draw only formats, K/V dtypes and block sizes inside it (the fields
/// mirror kvcheck_capabilities of include/kvcheck/backend_abi.h).
struct BackendCapabilities {
  /// KVCHECK_OP_* bits (backend_abi.h): the one record of which operations run. The
  /// default is every operation but the optional K/V family (SPEC §7), which a backend
  /// opts into (Backend::store_kv / gather_kv default to kUnsupported).
  uint32_t ops = ~0u & ~(KVCHECK_OP_STORE_KV | KVCHECK_OP_GATHER_KV);
  uint32_t formats = ~0u;          // KVCHECK_FORMAT_BIT(kvcheck_format) bits
  uint32_t kv_dtypes = ~0u;        // 1 << KvDtype bits
  int32_t block_size_multiple = 1; // block sizes are multiples of this
  int32_t max_block_size = 0;      // 0 = no limit
  /// Buffers are the caller's host memory, used in place (HOST plugins, in-process
  /// backends); false for device plugins, whose adapter copies every buffer. The
  /// generators draw sparse multi-GiB inputs only for host-memory backends.
  bool host_memory = true;

  /// Whether f's kvcheck_format bit is set. A format no name matches: true when every
  /// format is supported or when f is invalid (so invalid-format inputs still reach
  /// the backend's validation), false for a valid format outside the table.
  bool supports_format(const KVCacheFormat& f) const;
  bool supports_kv_dtype(KvDtype d) const { return (kv_dtypes >> static_cast<int>(d)) & 1u; }
  /// Block sizes below 1 are invalid input, not a capability question: true.
  bool supports_block_size(int64_t bs) const {
    return bs < 1 || (bs % block_size_multiple == 0 && (max_block_size == 0 || bs <= max_block_size));
  }
  /// Whether every property of `op` (a Property::op name) can run; else *why says
  /// which operation is missing.
  bool supports_property_op(const std::string& op, std::string* why) const;
  /// "" when nothing is restricted, else one line per restriction ("formats: BF16
  /// only", "block_size: multiples of 16", "ops: no load_paged_kv_cache, ...").
  std::string restrictions() const;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  virtual BackendCapabilities capabilities() const { return {}; }

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
  /// kShapeMismatch, kSlotOutOfRange, kDuplicateSlot; default: kUnsupported.
  virtual void store_kv(const KvTokensIn& key, const KvTokensIn& value,
                        std::span<const int32_t> slot_mapping, const KvCacheView& cache) const;

  /// SPEC §7.5 gather_kv: sequence i's tokens [0, cu_seqlens_k[i+1] - cu_seqlens_k[i])
  /// through block_table[i][0..max_blocks) ([num_seqs][max_blocks], -1 padded) to
  /// rows [cu_seqlens_k[i], cu_seqlens_k[i+1]) of out_k / out_v (model dtype; FP8
  /// dequantised). Throws (nothing written) kInvalidArgument, kShapeMismatch,
  /// kRangeOutOfTable, kBlockOutOfRange; default: kUnsupported.
  virtual void gather_kv(const ConstKvCacheView& cache, std::span<const int32_t> block_table,
                         int32_t max_blocks, std::span<const int32_t> cu_seqlens_k,
                         const KvTokensOut& out_k, const KvTokensOut& out_v) const;
};

/// Backends compiled into this build, in order (cpu first). `why_missing` gets a
/// line per backend that is built but cannot run here (e.g. "cuda: no device").
std::vector<std::shared_ptr<const Backend>> available_backends(
    std::vector<std::string>* why_missing = nullptr);

/// "" unless plugins were named ($KVCHECK_PLUGIN, `--plugin`) and none of their
/// backends can run here; then why not, plugin by plugin. Callers testing "the plugin"
/// refuse to run instead of testing the built-in backends in its place.
std::string user_plugins_unavailable();

/// The backend called `name`; throws Error(kUnsupported) with its probe's reason when
/// it loaded but cannot run here ("backend reshape-and-cache: no usable CUDA device:
/// ..."), else Error(kInvalidArgument) listing the names available here.
std::shared_ptr<const Backend> backend_by_name(const std::string& name);

}  // namespace kvcheck
