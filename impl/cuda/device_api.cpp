// Host side of the device API (device_api.h): the checks that read no metadata (the
// shape checks of impl/validate_store_load.h, which the cpu backend runs too: the same
// codes and messages), then the launches; and the translation of a device status word
// into the kvcheck::Error the cpu backend throws for the same input.
#include "impl/cuda/device_api.h"

#include <cuda_runtime_api.h>

#include <span>
#include <stdexcept>
#include <string>

#include "impl/op_args.h"
#include "impl/validate_store_load.h"
#include "impl/cuda/kernels.h"
#include "impl/error.h"
#include "impl/validate_cache.h"
#include "impl/validate_errors.h"
#include "impl/validate_index.h"

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
    case Check::kNone: break;
  }
  throw std::logic_error("cuda validation: status names position " + std::to_string(st.first) +
                         " but no rule (check " + std::to_string(st.check) + ")");
}

}  // namespace

void PendingCheck::throw_if_error(void* stream) const {
  if (status == nullptr) return;
  DeviceStatus host{};
  const auto s = static_cast<cudaStream_t>(stream);
  check_rt(cudaMemcpyAsync(&host, status, sizeof host, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync(status)");
  check_rt(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  if (host.first != kStatusOk) throw error_from(host, *this);
}

size_t store_workspace_bytes(const PagedLayout& layout) { return count(layout.num_slots()) * 8; }
size_t load_workspace_bytes(int32_t total_k) { return count(total_k) * 8; }

void store_kv_cache(const DeviceCache& cache, const StoreArgs& args, const LaunchOptions& opts) {
  store_shape(cache, args, false);
  check_launch(launch_store(cache, args, nullptr, opts));
}

PendingCheck store_kv_cache_checked(const DeviceCache& cache, const StoreArgs& args, DeviceStatus* status,
                                    void* workspace, const LaunchOptions& opts) {
  store_shape(cache, args, true);
  if (args.num_tokens == 0) return {};
  const PendingCheck pc = check_slot_mapping(args.slot_mapping, args.num_tokens, cache.layout.num_blocks,
                                             cache.layout.block_size, status, workspace, opts);
  check_launch(launch_store(cache, args, status, opts));
  return pc;
}

PendingCheck check_slot_mapping(const int32_t* slot_mapping, int64_t n, int64_t num_blocks, int32_t block_size,
                                DeviceStatus* status, void* workspace, const LaunchOptions& opts) {
  if (n == 0) return {};
  if (workspace == nullptr) throw Error(ErrorCode::kInvalidArgument, "a checked store needs a workspace");
  reset(status, opts);
  check_launch(launch_validate_slots(slot_mapping, n, num_blocks * block_size,
                                     static_cast<unsigned long long*>(workspace), status, opts));
  return {status, static_cast<int32_t>(CheckedOp::kStore), {num_blocks, block_size, 0}};
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
          {cache.layout.num_blocks, cache.layout.block_size, args.total_k}};
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
    pc = {status, static_cast<int32_t>(CheckedOp::kConvert), {num_seqs, a.max_blocks, 0}};
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
    pc = {status, static_cast<int32_t>(CheckedOp::kCat), {wr, wide_shift, 0}};
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
    pc = {status, static_cast<int32_t>(CheckedOp::kExpand), {width, 0, 0}};
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
    pc = {status, static_cast<int32_t>(CheckedOp::kSwaDecode), {width, ring_size, 0}};
  }
  check_launch(launch_swa_decode_index(start_len, num_q, width, ring_size, out, checked ? status : nullptr, opts));
  return pc;
}

}  // namespace kvcheck::cuda
