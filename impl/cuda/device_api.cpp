// Host side of the device API (device_api.h): the checks that read no metadata (the
// shape checks of impl/validate_store_load.h, which the cpu backend runs too: the same
// codes and messages), then the launches; and the translation of a device status word
// into the kvcheck::Error the cpu backend throws for the same input.
#include "impl/cuda/device_api.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "impl/op_args.h"
#include "impl/validate_store_load.h"
#include "impl/cuda/kernels.h"
#include "impl/cuda/kv_family.h"
#include "impl/error.h"
#include "impl/kv_layout.h"
#include "impl/validate_cache.h"
#include "impl/validate_copy_blocks.h"
#include "impl/validate_swap_blocks.h"
#include "impl/validate_errors.h"
#include "impl/validate_index.h"
#include "impl/validate_kv.h"

namespace kvcheck::cuda {
namespace {

void check_launch(const std::string& err) {
  if (!err.empty()) throw std::runtime_error("cuda " + err);
}

void check_rt(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("cuda ") + what + ": " + cudaGetErrorString(e));
}

/// The layout (SPEC §3), then the buffer it claims (validate_cache.h): checked calls.
void validate_cache(const DeviceCache& c) {
  const CacheLayout layout = CacheLayout::from_paged(c.layout);
  validate_layout(layout);
  validate_cache_bytes(layout, c.base, c.size_bytes);
}

/// The checks that read no metadata; `layout` too for checked calls (unchecked hot
/// paths skip re-deriving the layout: O(1), no allocation).
void store_shape(const DeviceCache& c, const StoreArgs& a, bool layout) {
  if (layout) validate_cache(c);
  validate_store_rows(KVInput{a.kv, a.kv_rows, a.kv_row_stride}, a.num_tokens, c.layout.elements, c.base);
  if (a.pe != nullptr || a.rope.cos_sin_cache != nullptr)  // concat_and_cache_mla is the entry that takes them
    throw Error(ErrorCode::kInvalidArgument, "store_kv_cache takes one source and no RoPE (StoreArgs::pe or rope is "
                                             "set: call concat_and_cache_mla)");
  if (a.num_tokens > 0 && a.slot_mapping == nullptr)
    throw Error(ErrorCode::kShapeMismatch, "slot_mapping is null");
}

void load_shape(const DeviceCache& c, const LoadArgs& a, bool layout) {
  if (layout) validate_cache(c);
  if (a.num_segments < 0)
    throw Error(ErrorCode::kInvalidArgument, "num_segments = " + std::to_string(a.num_segments) + " < 0");
  validate_load_outputs(a.num_segments * 4, a.total_k,
                             LoadOutput{a.out_data, a.out_data_stride, a.out_scales, a.out_scale_stride, a.out_rows},
                             c.layout.load_row_bytes(), c.layout.load_scale_row_bytes());
  if (a.num_segments > 0 && a.load_segments == nullptr)
    throw Error(ErrorCode::kShapeMismatch, "load_segments is null");
}

/// Starts a checked call: resets the status word on the stream.
void reset(DeviceStatus* status, const LaunchOptions& o) {
  if (status == nullptr) throw Error(ErrorCode::kInvalidArgument, "a checked call needs a device status word");
  check_rt(cudaMemsetAsync(status, 0xFF, sizeof(DeviceStatus), static_cast<cudaStream_t>(o.stream)),
           "cudaMemsetAsync(status)");
}

size_t count(int64_t n) { return n > 0 ? static_cast<size_t>(n) : 0; }

std::span<const int32_t> dspan(const int32_t* p, int64_t n) { return {p, count(n)}; }

Error error_from(const DeviceStatus& st, const PendingCheck& pc) {
  const int64_t* v = st.v;
  int32_t seg[4], other[4], piv[4];
  for (int k = 0; k < 4; ++k) {
    seg[k] = static_cast<int32_t>(v[1 + k]);
    other[k] = static_cast<int32_t>(v[6 + k]);
    piv[k] = static_cast<int32_t>(v[1 + k]);
  }
  const auto i32 = [](int64_t x) { return static_cast<int32_t>(x); };
  switch (static_cast<Check>(st.check)) {
    case Check::kSlotRange: return slot_out_of_range_error(v[0], i32(v[1]), pc.ctx[0], i32(pc.ctx[1]));
    case Check::kSlotDuplicate: return duplicate_slot_error(v[0], i32(v[1]), v[2]);
    case Check::kRopePosition: return rope_position_error(v[0], v[1], v[2]);
    case Check::kSegBlock: return segment_block_error(v[0], seg, pc.ctx[0]);
    case Check::kSegRange: return segment_range_error(v[0], seg, i32(pc.ctx[1]));
    case Check::kSegDestination: return segment_destination_error(v[0], seg, i32(pc.ctx[2]));
    case Check::kSegNullCache: return segment_null_cache_error(v[0], seg);
    case Check::kSegOverlap: return segment_overlap_error(v[0], seg, v[5], other);
    case Check::kConvSeqId: return convert_seq_id_error(v[0], v[1], pc.ctx[0]);
    case Check::kConvContextLen: return convert_context_len_error(v[0], i32(v[1]));
    case Check::kConvNegative: return convert_topk_negative_error(v[0], v[1], i32(v[2]));
    case Check::kConvMissingBlock:
      return convert_missing_block_error(v[0], v[1], i32(v[2]), v[3], v[4], v[5], i32(pc.ctx[1]));
    case Check::kConvOverflow: return convert_slot_overflow_error(v[0], v[1], v[2]);
    case Check::kCatNegative: return cat_right_negative_error(v[0], i32(pc.ctx[0]), i32(v[1]));
    case Check::kCatOverflow: return cat_shift_overflow_error(v[0], i32(pc.ctx[0]), i32(v[1]), pc.ctx[1]);
    case Check::kExpandLengths: return expand_lengths_error(v[0], piv, i32(pc.ctx[0]));
    case Check::kExpandPiece: return expand_piece_error(v[0], piv, static_cast<int>(v[5]));
    case Check::kSwaLen: return swa_decode_len_error(v[0], i32(v[1]), i32(pc.ctx[0]), i32(pc.ctx[1]));
    case Check::kSwaStart: return swa_decode_start_error(v[0], i32(v[1]));
    case Check::kSwaRing: return swa_decode_ring_overflow_error(v[0], i32(v[1]));
    case Check::kKvScale: {
      const uint32_t bits = static_cast<uint32_t>(v[2]);
      float value;
      std::memcpy(&value, &bits, sizeof value);
      return kv_scale_value_error(static_cast<int>(v[0]), v[1], value);
    }
    case Check::kKvCuFirst: return cu_seqlens_first_error(i32(v[0]));
    case Check::kKvCuDecrease: return cu_seqlens_decrease_error(v[0], i32(v[1]), i32(v[2]));
    case Check::kKvOutput:
      return gather_output_error(static_cast<KvOutRule>(v[1]), static_cast<int>(v[0]), v[2], v[3], v[4], v[5],
                                 i32(v[6]), i32(v[7]));
    case Check::kKvSeqStart: return gather_seq_start_error(v[0], i32(v[1]));
    case Check::kKvSeqTooLong:
      return gather_sequence_too_long_error(v[0], v[1], v[2], i32(v[3]), i32(v[4]),
                                            v[5] ? std::optional(i32(v[6])) : std::nullopt);
    case Check::kKvTableEntry:
      return gather_table_entry_error(static_cast<KvTableRule>(v[3]), v[0], v[1], i32(v[2]), i32(v[4]), v[5], v[6]);
    case Check::kCopyRange:
      // copy_blocks: ctx[0] = num_blocks; swap_blocks: ctx[k] = its pool's num_blocks.
      if (pc.op == static_cast<int32_t>(CheckedOp::kSwapBlocks))
        return copy_blocks_range_error(v[0], static_cast<int>(v[1]), v[2], pc.ctx[v[1]], v[1] == 0 ? "src." : "dst.");
      return copy_blocks_range_error(v[0], static_cast<int>(v[1]), v[2], pc.ctx[0]);
    case Check::kCopyDuplicate: return copy_blocks_duplicate_error(v[0], v[1], v[2]);
    case Check::kCopySource: return copy_blocks_source_error(v[0], v[1], v[2]);
    case Check::kNone: break;
  }
  throw std::logic_error("cuda validation: status names position " + std::to_string(st.first) +
                         " but no rule (check " + std::to_string(st.check) + ")");
}

// ---- the K/V family ----

/// The scale values the device checks: an FP8 cache's k_scale and v_scale, an e2m1
/// cache's global decode scales (SPEC §7.9; sizes validated on the host), none for
/// bf16/fp16 caches (SPEC §7.3: ignored). The cpu's validate_kv_scales reads the same.
KvScaleCheck scale_check(const KvCacheLayout& l, const KvScales& s) {
  if (!is_quantized_kv(l.dtype)) return {};
  return {s.k_scale.data(), s.v_scale.data(), static_cast<int32_t>(s.k_scale.size()),
          static_cast<int32_t>(s.v_scale.size())};
}

/// Runs a host check that comes after `device_positions` positions the device checks
/// (SPEC order). With none before it, its error is thrown at once (nothing enqueued);
/// else the error is kept: the device may still find an earlier one. False on error.
template <typename F>
bool host_check(int64_t device_positions, std::optional<Error>& deferred, F&& check) {
  try {
    check();
    return true;
  } catch (const Error& e) {
    if (device_positions == 0) throw;
    deferred = e;
    return false;
  }
}

KvDevRows dev_rows(const KvTokensIn& t) {
  return {t.data, static_cast<KvDevDtype>(t.dtype), t.token_stride, t.head_stride};
}
KvDevRowsOut dev_rows(const KvTokensOut& t) {
  return {t.data, static_cast<KvDevDtype>(t.dtype), t.token_stride, t.head_stride};
}

/// The cache side of a store_kv / gather_kv launch (views validated).
template <typename Launch, typename View>
void set_caches(Launch& a, const View& cache) {
  a.k_cache = cache.k;
  a.v_cache = cache.v;
  a.layout = kv_paged_layout(cache.layout);
  a.k_scale = cache.scales.k_scale.data();
  a.v_scale = cache.scales.v_scale.data();
  a.per_head_scale = cache.scales.kind == KvScaleKind::kPerHead;
  if (is_nvfp4(cache.layout.dtype)) {  // SPEC §7.9: the block-scale caches (validate_kv_sf checked them)
    a.k_sf = cache.k_sf;
    a.v_sf = cache.v_sf;
    a.sf = kv_sf_layout(cache.layout, cache.sf);
  }
}

}  // namespace

void PendingCheck::throw_if_error(void* stream) const {
  if (status == nullptr) return;
  DeviceStatus host{};
  const auto s = static_cast<cudaStream_t>(stream);
  check_rt(cudaMemcpyAsync(&host, status, sizeof host, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync(status)");
  check_rt(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  if (host.first != kStatusOk) throw error_from(host, *this);
  if (deferred) throw *deferred;
}

size_t store_workspace_bytes(const PagedLayout& layout) { return count(layout.num_slots()) * 8; }
size_t load_workspace_bytes(int32_t total_k) { return count(total_k) * 8; }

void store_kv_cache(const DeviceCache& cache, const StoreArgs& args, const LaunchOptions& opts) {
  store_shape(cache, args, false);
  check_launch(launch_store(cache, args, nullptr, opts));
}

namespace {

/// A checked store's device part (store_kv_cache and concat_and_cache_mla, after their
/// host checks): the slot validation kernel, then the store kernel, which skips on error.
PendingCheck checked_store(const DeviceCache& cache, const StoreArgs& args, DeviceStatus* status, void* workspace,
                           const LaunchOptions& opts, const RopeArgs* rope = nullptr) {
  if (args.num_tokens == 0) return {};
  if (workspace == nullptr) throw Error(ErrorCode::kInvalidArgument, "a checked store needs a workspace");
  reset(status, opts);
  // concat_and_cache_mla's RoPE positions (docs/spec.md §8.4) come before the slots.
  check_launch(launch_validate_slots({}, args.slot_mapping, args.num_tokens, cache.layout.num_slots(),
                                     static_cast<unsigned long long*>(workspace), status, opts, rope));
  check_launch(launch_store(cache, args, status, opts));
  return {status, static_cast<int32_t>(CheckedOp::kStore), {cache.layout.num_blocks, cache.layout.block_size, 0}, {}};
}

/// The §8.2 host checks (validate_concat_mla_shape, on the device views; the layouts
/// only for checked calls). Then: one cache, the args as a two-source store; split
/// caches, kv_c's and k_pe's one-source stores (`pe`).
StoreArgs concat_store_args(const DeviceCache& c, const ConcatArgs& a, bool layout, StoreArgs* pe = nullptr) {
  if (layout) validate_cache(c);
  ConcatCacheExtents e{c.base, c.size_bytes, c.layout.elements};
  if (a.pe_cache) {
    const DeviceCache& p = *a.pe_cache;
    if (layout) {
      CacheLayout pe_layout;
      try {  // a layout from_paged refuses is pe_cache's step 1 too
        pe_layout = CacheLayout::from_paged(p.layout);
      } catch (const Error& err) {
        rethrow_for_pe_cache(err);
      }
      validate_concat_pe_cache(CacheLayout::from_paged(c.layout), pe_layout, p.base, p.size_bytes);
    } else {
      validate_concat_pe_geometry(c.layout.num_blocks, c.layout.block_size, p.layout.num_blocks,
                                  p.layout.block_size);
    }
    e.split = true;
    e.pe_base = p.base;
    e.pe_size_bytes = p.size_bytes;
    e.pe_elements = p.layout.elements;
  }
  validate_concat_mla_rows({a.kv_c, a.kv_c_rows, a.kv_c_row_stride}, {a.k_pe, a.k_pe_rows, a.k_pe_row_stride},
                           a.kv_lora_rank, a.rope_dim, a.num_tokens, e, a.rope);
  if (a.num_tokens > 0 && a.slot_mapping == nullptr) throw Error(ErrorCode::kShapeMismatch, "slot_mapping is null");
  const RopeArgs rope = a.rope ? *a.rope : RopeArgs{};
  if (a.pe_cache) {
    // k_pe's store: a two-source store split at 0 when rotated (the kernels rotate the
    // second source's elements), else a one-source store.
    *pe = {a.k_pe, a.k_pe_rows, a.k_pe_row_stride, a.slot_mapping, a.num_tokens};
    if (a.rope) {
      pe->pe = a.k_pe;
      pe->pe_row_stride = a.k_pe_row_stride;
      pe->rope = rope;
    }
    return {a.kv_c, a.kv_c_rows, a.kv_c_row_stride, a.slot_mapping, a.num_tokens};
  }
  return {a.kv_c, a.kv_c_rows, a.kv_c_row_stride, a.slot_mapping, a.num_tokens, a.k_pe, a.k_pe_row_stride,
          a.kv_lora_rank, rope};
}

}  // namespace

PendingCheck store_kv_cache_checked(const DeviceCache& cache, const StoreArgs& args, DeviceStatus* status,
                                    void* workspace, const LaunchOptions& opts) {
  store_shape(cache, args, true);
  return checked_store(cache, args, status, workspace, opts);
}

void concat_and_cache_mla(const DeviceCache& cache, const ConcatArgs& args, const LaunchOptions& opts) {
  StoreArgs pe;
  check_launch(launch_store(cache, concat_store_args(cache, args, false, &pe), nullptr, opts));
  if (args.pe_cache && args.num_tokens > 0) check_launch(launch_store(*args.pe_cache, pe, nullptr, opts));
}

PendingCheck concat_and_cache_mla_checked(const DeviceCache& cache, const ConcatArgs& args, DeviceStatus* status,
                                          void* workspace, const LaunchOptions& opts) {
  StoreArgs pe;
  // The RoPE positions are checked with the (first) store's slots.
  PendingCheck check =
      checked_store(cache, concat_store_args(cache, args, true, &pe), status, workspace, opts, args.rope);
  // The slots were checked against the cache, whose num_blocks and block_size pe_cache
  // shares; the second store skips on the same status word.
  if (args.pe_cache && args.num_tokens > 0) check_launch(launch_store(*args.pe_cache, pe, status, opts));
  return check;
}

void load_paged_kv_cache(const DeviceCache& cache, const LoadArgs& args, const LaunchOptions& opts) {
  load_shape(cache, args, false);
  check_launch(launch_load(cache, args, nullptr, opts));
}

PendingCheck load_paged_kv_cache_checked(const DeviceCache& cache, const LoadArgs& args, DeviceStatus* status,
                                         void* workspace, const LaunchOptions& opts) {
  load_shape(cache, args, true);
  if (args.num_segments == 0) return {};
  if (workspace == nullptr && args.total_k > 0)
    throw Error(ErrorCode::kInvalidArgument, "checked load needs a workspace");
  reset(status, opts);
  check_launch(launch_validate_load(cache, args, static_cast<unsigned long long*>(workspace), status, opts));
  check_launch(launch_load(cache, args, status, opts));
  return {status,
          static_cast<int32_t>(CheckedOp::kLoad),
          {cache.layout.num_blocks, cache.layout.block_size, args.total_k},
          {}};
}

PendingCheck convert_kv_index(const ConvertArgs& a, bool checked, DeviceStatus* status, const LaunchOptions& opts) {
  ConvertKvIndexArgs shape;
  const int64_t n = int64_t{a.num_q} * a.k;
  shape.topk = dspan(a.topk, n);
  shape.num_q = a.num_q;
  shape.k = a.k;
  shape.block_table = dspan(a.block_table, a.block_table_entries);
  shape.max_blocks = a.max_blocks;
  shape.seq_ids = a.seq_ids ? dspan(a.seq_ids, a.num_q) : std::span<const int32_t>();
  shape.context_lens = dspan(a.context_lens, a.num_q);
  shape.block_size = a.block_size;
  const int64_t num_seqs = validate_convert_kv_index_shape(shape, count(n));
  if (a.num_q == 0) return {};  // k == 0 still validates each row's seq id and length
  PendingCheck pc;
  if (checked) {
    reset(status, opts);
    check_launch(launch_validate_convert(a, num_seqs, status, opts));
    pc = {status, static_cast<int32_t>(CheckedOp::kConvert), {num_seqs, a.max_blocks, 0}, {}};
  }
  check_launch(launch_convert_kv_index(a, checked ? status : nullptr, opts));
  return pc;
}

PendingCheck kv_index_cat(const int32_t* left, int32_t wl, const int32_t* right, int32_t wr, int32_t num_q,
                          int32_t total_k_swa_cached, int32_t total_k_swa_cur, int32_t* out, bool checked,
                          DeviceStatus* status, const LaunchOptions& opts) {
  const int32_t shift = validate_kv_index_cat_shape(count(int64_t{num_q} * wl), wl, count(int64_t{num_q} * wr), wr,
                                                    num_q, total_k_swa_cached, total_k_swa_cur,
                                                    count(int64_t{num_q} * (int64_t{wl} + wr)));
  if (int64_t{num_q} * (int64_t{wl} + wr) == 0) return {};
  // The shift itself may pass INT32_MAX (the entries then fail): the check takes int64.
  const int64_t wide_shift = int64_t{total_k_swa_cached} + total_k_swa_cur;
  PendingCheck pc;
  if (checked) {
    reset(status, opts);
    check_launch(launch_validate_cat(right, wr, num_q, wide_shift, status, opts));
    pc = {status, static_cast<int32_t>(CheckedOp::kCat), {wr, wide_shift, 0}, {}};
  }
  check_launch(launch_kv_index_cat(left, wl, right, wr, num_q, shift, out, checked ? status : nullptr, opts));
  return pc;
}

PendingCheck expand_swa_index(const int32_t* pivots, int32_t num_q, int32_t width, int32_t* out, bool checked,
                              DeviceStatus* status, const LaunchOptions& opts) {
  validate_expand_swa_index_shape(count(int64_t{num_q} * 4), num_q, width, count(int64_t{num_q} * width));
  if (num_q == 0) return {};
  PendingCheck pc;
  if (checked) {
    reset(status, opts);
    check_launch(launch_validate_expand(pivots, num_q, width, status, opts));
    pc = {status, static_cast<int32_t>(CheckedOp::kExpand), {width, 0, 0}, {}};
  }
  check_launch(launch_expand_swa_index(pivots, num_q, width, out, checked ? status : nullptr, opts));
  return pc;
}

PendingCheck swa_decode_index(const int32_t* start_len, int32_t num_q, int32_t width, int32_t ring_size,
                              int32_t* out, bool checked, DeviceStatus* status, const LaunchOptions& opts) {
  validate_swa_decode_index_shape(count(int64_t{num_q} * 2), num_q, width, ring_size,
                                  count(int64_t{num_q} * width));
  if (num_q == 0) return {};
  PendingCheck pc;
  if (checked) {
    reset(status, opts);
    check_launch(launch_validate_swa_decode(start_len, num_q, width, ring_size, status, opts));
    pc = {status, static_cast<int32_t>(CheckedOp::kSwaDecode), {width, ring_size, 0}, {}};
  }
  check_launch(launch_swa_decode_index(start_len, num_q, width, ring_size, out, checked ? status : nullptr, opts));
  return pc;
}

size_t store_kv_workspace_bytes(const KvCacheLayout& layout) {
  validate_kv_layout(layout);
  return count(kv_paged_layout(layout).num_slots()) * 8;
}

PendingCheck store_kv_checked(const KvTokensIn& key, const KvTokensIn& value, std::span<const int32_t> slot_mapping,
                              const KvCacheView& cache, DeviceStatus* status, void* workspace,
                              const LaunchOptions& opts, const RopeArgs* rope) {
  const KvCacheLayout& l = cache.layout;
  const int64_t n = static_cast<int64_t>(slot_mapping.size());
  validate_kv_cache(cache);
  validate_kv_scales_shape(l, cache.scales);
  const KvScaleCheck scales = scale_check(l, cache.scales);
  std::optional<Error> deferred;
  const bool rows_ok = host_check(scales.positions(), deferred, [&] {
    validate_store_kv_rows(key, value, n, l.dtype, rope, l.head_dim);
    if (n > 0 && slot_mapping.data() == nullptr) throw Error(ErrorCode::kShapeMismatch, "slot_mapping is null");
  });
  const int64_t slots = rows_ok ? n : 0;  // a failed row check: the slots come after it
  if (scales.positions() + slots == 0) return {};
  if (slots > 0 && workspace == nullptr) throw Error(ErrorCode::kInvalidArgument, "a checked store needs a workspace");
  const KvPagedLayout paged = kv_paged_layout(l);
  reset(status, opts);
  // A RoPE's positions between the scale values and the slots (docs/spec.md §8.4).
  check_launch(launch_validate_slots(scales, slot_mapping.data(), slots, paged.num_slots(),
                                     static_cast<unsigned long long*>(workspace), status, opts,
                                     rows_ok ? rope : nullptr));
  PendingCheck pc{status, static_cast<int32_t>(CheckedOp::kStoreKv), {l.num_blocks, l.block_size, 0}, deferred};
  if (deferred || n == 0) return pc;  // an error is certain / nothing to write
  StoreKvLaunch s;
  s.key = dev_rows(key);
  s.value = dev_rows(value);
  s.slot_mapping = slot_mapping.data();
  s.n = n;
  set_caches(s, cache);
  s.reciprocal = cache.scales.recipe == KvRecipe::kSglang;  // SPEC §7.3.1
  if (rope) s.rope = *rope;
  check_launch(launch_store_kv(s, status, opts));
  return pc;
}

PendingCheck gather_kv_checked(const GatherKvArgs& a, DeviceStatus* status, const LaunchOptions& opts) {
  const ConstKvCacheView& cache = a.cache;
  const KvCacheLayout& l = cache.layout;
  validate_kv_cache(cache);
  validate_kv_scales_shape(l, cache.scales);
  GatherKvCheck c;
  c.scales = scale_check(l, cache.scales);
  std::optional<Error> deferred;
  // The positions the device checks, cut at the first host check that fails.
  int64_t end = c.scales.positions();
  const int64_t cu_entries = static_cast<int64_t>(a.cu_seqlens_k.size()), num_seqs = cu_entries - 1;
  if (host_check(end, deferred, [&] {
        validate_gather_kv_dtypes(l.dtype, a.out_k, a.out_v, a.cu_seqlens_k.size());
        if (a.cu_seqlens_k.data() == nullptr) throw Error(ErrorCode::kShapeMismatch, "cu_seqlens_k is null");
      })) {
    end += cu_entries;
    if (host_check(end, deferred, [&] {
          validate_gather_kv_table_shape(a.max_blocks, static_cast<int64_t>(a.block_table.size()), num_seqs,
                                         static_cast<int64_t>(a.seq_starts.size()));
          if (!a.block_table.empty() && a.block_table.data() == nullptr)
            throw Error(ErrorCode::kShapeMismatch, "block_table is null");
        }))
      end += 2 + num_seqs * (int64_t{a.max_blocks} + 2);
  }
  c.cu_seqlens_k = a.cu_seqlens_k.data();
  c.cu_entries = cu_entries;
  const KvTokensOut* outs[] = {&a.out_k, &a.out_v};
  for (const int side : {kKvSideK, kKvSideV}) {
    const KvTokensOut& o = *outs[side];
    c.out_rows[side] = o.rows;
    c.out_token_stride[side] = o.token_stride;
    c.out_head_stride[side] = o.head_stride;
    c.out_null[side] = o.data == nullptr;
    c.out_misaligned[side] = kv_rows_misaligned(o.data);
  }
  c.num_kv_heads = l.num_kv_heads;
  c.head_dim = l.head_dim;
  c.block_size = l.block_size;
  c.num_blocks = l.num_blocks;
  c.block_table = a.block_table.data();
  c.max_blocks = a.max_blocks;
  c.seq_starts = a.seq_starts.empty() ? nullptr : a.seq_starts.data();
  c.block_unit = a.seq_start_unit == SeqStartUnit::kBlock;
  c.end = end;
  reset(status, opts);
  check_launch(launch_validate_gather_kv(c, status, opts));
  PendingCheck pc{status, static_cast<int32_t>(CheckedOp::kGatherKv), {0, 0, 0}, deferred};
  if (deferred) return pc;  // an error is certain: no data kernel
  GatherKvLaunch g;
  set_caches(g, cache);
  g.block_table = a.block_table.data();
  g.max_blocks = a.max_blocks;
  g.cu_seqlens_k = a.cu_seqlens_k.data();
  g.seq_starts = c.seq_starts;
  g.block_unit = c.block_unit;
  g.num_seqs = static_cast<int32_t>(num_seqs);
  // Valid input has cu[b] <= both outputs' rows, so that many rows bound the grid.
  g.max_tokens = std::max<int64_t>(0, std::min(a.out_k.rows, a.out_v.rows));
  g.out_k = dev_rows(a.out_k);
  g.out_v = dev_rows(a.out_v);
  check_launch(launch_gather_kv(g, status, opts));
  return pc;
}

// ---- copy_blocks ----

namespace {

/// Launches the copy of the merged views (validated on the host before).
void launch_copy(const CopyBlocksArgs& a, const DeviceStatus* status, const LaunchOptions& opts) {
  if (a.num_blocks == 0) return;  // no pair is real; the views' offsets are unchecked
  const auto merged = merge_aliased_views(a.views);
  std::vector<int64_t> views;
  for (const auto& [offset, bytes] : merged) views.insert(views.end(), {offset, offset, bytes});
  BlockCopyLaunch l;
  l.src = a.base;
  l.dst = a.base;
  l.block_mapping = a.block_mapping.data();
  l.num_pairs = static_cast<int64_t>(a.block_mapping.size()) / 2;
  l.src_stride = l.dst_stride = a.block_stride;
  l.views = views.data();
  l.num_views = static_cast<int64_t>(merged.size());
  check_launch(launch_block_copy(l, status, opts));
}

}  // namespace

size_t copy_blocks_workspace_bytes(const CopyBlocksArgs& a) {
  if (a.views.empty() || a.block_mapping.empty() || a.block_stride < 1 || a.num_blocks <= 0) return 0;
  // A refused extent must not turn into a huge allocation: bounded as the rule bounds it.
  const int64_t fits = a.size_bytes / a.block_stride + 1;
  return count(std::min(a.num_blocks, fits)) * 16;
}

void copy_blocks(const CopyBlocksArgs& args, const LaunchOptions& opts) {
  validate_copy_blocks_shape(args);
  launch_copy(args, nullptr, opts);
}

PendingCheck copy_blocks_checked(const CopyBlocksArgs& args, DeviceStatus* status, void* workspace,
                                 const LaunchOptions& opts) {
  validate_copy_blocks_shape(args);
  const int64_t pairs = static_cast<int64_t>(args.block_mapping.size()) / 2;
  if (pairs == 0 || args.views.empty()) return {};  // nothing to copy, nothing read
  if (workspace == nullptr && args.num_blocks > 0)
    throw Error(ErrorCode::kInvalidArgument, "a checked copy_blocks needs a workspace");
  reset(status, opts);
  check_launch(launch_validate_block_mapping(args.block_mapping.data(), pairs, args.num_blocks, args.num_blocks, true,
                                             static_cast<unsigned long long*>(workspace), status, opts));
  launch_copy(args, status, opts);
  return {status, static_cast<int32_t>(CheckedOp::kCopyBlocks), {args.num_blocks, 0, 0}, {}};
}

// ---- swap_blocks ----

namespace {

/// The address a kernel reaches `p` at: a pool flagged host must be page-locked host
/// memory (its mapped address), any other device memory; else kInvalidArgument, since
/// a kernel touching pageable memory faults the whole context.
template <typename T>
T* reachable(T* p, bool host, const char* name) {
  if (p == nullptr) return p;
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky: clear it
    attr.type = cudaMemoryTypeUnregistered;
  }
  const std::string n = name;
  if (host) {
    if (attr.type != cudaMemoryTypeHost || attr.devicePointer == nullptr)
      throw Error(ErrorCode::kInvalidArgument, n + " is flagged host but is not page-locked host memory "
                                                   "(cudaMallocHost or cudaHostRegister it)");
    return static_cast<T*>(attr.devicePointer);
  }
  if (attr.type != cudaMemoryTypeDevice && attr.type != cudaMemoryTypeManaged)
    throw Error(ErrorCode::kInvalidArgument,
                n + " is not device memory (set " + n + "_host for page-locked host memory)");
  return p;
}

/// The two pools' kernel-reachable addresses, resolved once per call (one
/// cudaPointerGetAttributes each) before anything is enqueued.
struct SwapPools {
  const uint8_t* src;
  uint8_t* dst;
};

SwapPools reachable_pools(const SwapBlocksArgs& a) {
  return {reachable(a.src, a.src_pool.host, "src"), reachable(a.dst, a.dst_pool.host, "dst")};
}

void launch_swap(const SwapBlocksArgs& a, const SwapPools& pools, const DeviceStatus* status,
                 const LaunchOptions& opts) {
  // A pool without blocks: no pair is real, and its unchecked offsets are not summed.
  if (a.src_pool.num_blocks == 0 || a.dst_pool.num_blocks == 0) return;
  const auto merged = merge_swap_views(a.views);
  std::vector<int64_t> views;
  for (const auto& v : merged) views.insert(views.end(), v.begin(), v.end());
  BlockCopyLaunch l;
  l.src = pools.src;
  l.dst = pools.dst;
  l.block_mapping = a.block_mapping.data();
  l.num_pairs = static_cast<int64_t>(a.block_mapping.size()) / 2;
  l.src_stride = a.src_pool.block_stride;
  l.dst_stride = a.dst_pool.block_stride;
  l.views = views.data();
  l.num_views = static_cast<int64_t>(merged.size());
  check_launch(launch_block_copy(l, status, opts));
}

}  // namespace

size_t swap_blocks_workspace_bytes(const SwapBlocksArgs& a) {
  const BlockPool& d = a.dst_pool;
  if (a.views.empty() || a.block_mapping.empty() || d.block_stride < 1 || d.num_blocks <= 0) return 0;
  const int64_t fits = d.size_bytes / d.block_stride + 1;  // bounded as the rule bounds it
  return count(std::min(d.num_blocks, fits)) * 8;
}

void swap_blocks(const SwapBlocksArgs& args, const LaunchOptions& opts) {
  validate_swap_blocks_shape(args);
  if (args.views.empty() || args.block_mapping.empty()) return;
  launch_swap(args, reachable_pools(args), nullptr, opts);
}

PendingCheck swap_blocks_checked(const SwapBlocksArgs& args, DeviceStatus* status, void* workspace,
                                 const LaunchOptions& opts) {
  validate_swap_blocks_shape(args);
  const int64_t pairs = static_cast<int64_t>(args.block_mapping.size()) / 2;
  if (pairs == 0 || args.views.empty()) return {};  // nothing to move, nothing read
  // Where the pools live is known on the host: refused before anything is enqueued.
  const SwapPools pools = reachable_pools(args);
  if (workspace == nullptr && args.dst_pool.num_blocks > 0)
    throw Error(ErrorCode::kInvalidArgument, "a checked swap_blocks needs a workspace");
  reset(status, opts);
  check_launch(launch_validate_block_mapping(args.block_mapping.data(), pairs, args.src_pool.num_blocks,
                                             args.dst_pool.num_blocks, false,
                                             static_cast<unsigned long long*>(workspace), status, opts));
  launch_swap(args, pools, status, opts);
  return {status,
          static_cast<int32_t>(CheckedOp::kSwapBlocks),
          {args.src_pool.num_blocks, args.dst_pool.num_blocks, 0},
          {}};
}

}  // namespace kvcheck::cuda
