// Validation kernels of the checked entry points (SPEC §5, §7): the rules and order of
// the shared validators (impl/validate_store_load.cpp, impl/validate_index.cpp,
// impl/validate_kv.cpp with impl/kv_rules.h's predicates) on the device.
//
// Each input position gets an order key (row, segment, q*(k+1)+column, or the K/V
// family's sequence of scale values, cu_seqlens_k, outputs and table entries,
// kernels.h's GatherKvCheck); a position
// that breaks a rule atomicMin's its key into DeviceStatus::first, so the smallest
// offending position wins, as in the cpu's front-to-back scan. A one-thread blame
// kernel then re-checks that position and writes which rule failed and the values
// the message names. Duplicate slots / overlapping segments use `owner`: per cache
// slot / output row the smallest row / segment that claims it (claim, then
// atomicMin, then compare: three launches, so no grid-wide barrier is needed).
#include <climits>

#include "impl/cuda/kernels.h"
#include "impl/cuda/launch.cuh"
#include "impl/kv_rules.h"

namespace kvcheck::cuda {
namespace {

using dev::kThreads;
constexpr unsigned long long kUnowned = ~0ull;

__device__ __forceinline__ void flag(DeviceStatus* st, int64_t pos) {
  atomicMin(&st->first, static_cast<unsigned long long>(pos));
}

__device__ __forceinline__ int64_t tid() { return int64_t{blockIdx.x} * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int64_t nthreads() { return int64_t{gridDim.x} * blockDim.x; }

// ---- the K/V family's scale values (SPEC §7.3): k_scale[h], then v_scale[h] ----

__device__ __forceinline__ int64_t scale_positions(const KvScaleCheck& sc) { return int64_t{sc.num_k} + sc.num_v; }

__device__ Check scale_rule(const KvScaleCheck& sc, int64_t p, int64_t* v) {
  const int side = p < sc.num_k ? kKvSideK : kKvSideV;
  const int64_t h = side == kKvSideK ? p : p - sc.num_k;
  const float x = side == kKvSideK ? sc.k_scale[h] : sc.v_scale[h];
  if (kv_scale_ok(x)) return Check::kNone;
  v[0] = side;
  v[1] = h;
  v[2] = __float_as_uint(x);
  return Check::kKvScale;
}

__global__ void __launch_bounds__(kThreads) scale_check_kernel(KvScaleCheck sc, DeviceStatus* st) {
  dev::pdl_wait();
  for (int64_t p = tid(); p < scale_positions(sc); p += nthreads()) {
    int64_t v[3];
    if (scale_rule(sc, p, v) != Check::kNone) flag(st, p);
  }
  dev::pdl_trigger();
}

// ---- store_kv_cache / store_kv: rows, by slot_mapping (positions base + row) ----

__device__ __forceinline__ bool slot_in_range(int32_t s, int64_t num_slots) { return s >= 0 && s < num_slots; }

enum class Pass { kClaim, kOwn, kCompare };

template <Pass P>
__global__ void __launch_bounds__(kThreads)
    store_check_kernel(const int32_t* slots, int64_t n, int64_t num_slots, unsigned long long* owner, int64_t base,
                       DeviceStatus* st) {
  dev::pdl_wait();
  for (int64_t i = tid(); i < n; i += nthreads()) {
    const int32_t s = slots[i];
    if (s == -1) continue;
    if (!slot_in_range(s, num_slots)) {
      if (P == Pass::kClaim) flag(st, base + i);
      continue;
    }
    if (P == Pass::kClaim) owner[s] = kUnowned;  // every claimant writes the same value
    if (P == Pass::kOwn) atomicMin(&owner[s], static_cast<unsigned long long>(i));
    if (P == Pass::kCompare && owner[s] != static_cast<unsigned long long>(i)) flag(st, base + i);
  }
  dev::pdl_trigger();
}

// ---- concat_and_cache_mla's fused RoPE (docs/spec.md §8.4): positions[i], i < n ----

__device__ __forceinline__ bool position_ok(int64_t p, int64_t max_position) { return p >= 0 && p < max_position; }

__global__ void __launch_bounds__(kThreads)
    rope_check_kernel(const int64_t* positions, int64_t n, int64_t max_position, int64_t base, DeviceStatus* st) {
  dev::pdl_wait();
  for (int64_t i = tid(); i < n; i += nthreads())
    if (!position_ok(positions[i], max_position)) flag(st, base + i);
  dev::pdl_trigger();
}

/// Positions below `sc`'s are scale values (store_kv on an FP8 cache), then `num_pos`
/// RoPE positions (max_position rows), the rest rows.
__global__ void store_blame_kernel(KvScaleCheck sc, const int64_t* rope_positions, int64_t num_pos,
                                   int64_t max_position, const int32_t* slots, int64_t num_slots,
                                   const unsigned long long* owner, DeviceStatus* st) {
  dev::pdl_wait();
  if (st->first != kStatusOk) {
    const int64_t p = static_cast<int64_t>(st->first), base = scale_positions(sc);
    if (p < base) {
      st->check = static_cast<int32_t>(scale_rule(sc, p, st->v));
    } else if (p < base + num_pos) {
      st->check = static_cast<int32_t>(Check::kRopePosition);
      st->v[0] = p - base;
      st->v[1] = rope_positions[p - base];
      st->v[2] = max_position;
    } else {
      const int64_t i = p - base - num_pos;
      const int32_t s = slots[i];
      const bool range = !slot_in_range(s, num_slots);
      st->check = static_cast<int32_t>(range ? Check::kSlotRange : Check::kSlotDuplicate);
      st->v[0] = i;
      st->v[1] = s;
      st->v[2] = range ? 0 : static_cast<int64_t>(owner[s]);
    }
  }
  dev::pdl_trigger();
}

// ---- gather_kv: scales, cu_seqlens_k, outputs, block_table (GatherKvCheck's order) ----

__device__ Check gather_rule(const GatherKvCheck& a, int64_t p, int64_t* v) {
  const int64_t scales = scale_positions(a.scales);
  if (p < scales) return scale_rule(a.scales, p, v);
  p -= scales;
  const int32_t* cu = a.cu_seqlens_k;
  if (p < a.cu_entries) {
    if (p == 0) {
      if (cu[0] == 0) return Check::kNone;
      v[0] = cu[0];
      return Check::kKvCuFirst;
    }
    if (cu[p] >= cu[p - 1]) return Check::kNone;
    v[0] = p - 1;
    v[1] = cu[p];
    v[2] = cu[p - 1];
    return Check::kKvCuDecrease;
  }
  p -= a.cu_entries;
  if (p < 2) {
    const int side = static_cast<int>(p);
    const int64_t total = cu[a.cu_entries - 1];
    if (total <= 0) return Check::kNone;  // no rows: the outputs are not checked
    const KvOutRule rule = kv_output_rule(a.out_rows[side], total, a.out_null[side], a.out_misaligned[side],
                                          a.out_token_stride[side], a.out_head_stride[side], a.num_kv_heads,
                                          a.head_dim);
    if (rule == KvOutRule::kOk) return Check::kNone;
    const int64_t values[] = {side, static_cast<int64_t>(rule), a.out_rows[side], total, a.out_token_stride[side],
                              a.out_head_stride[side], a.num_kv_heads, a.head_dim};
    for (int k = 0; k < 8; ++k) v[k] = values[k];
    return Check::kKvOutput;
  }
  p -= 2;
  const int64_t per_seq = int64_t{a.max_blocks} + 2, i = p / per_seq, col = p % per_seq;
  const int64_t len = int64_t{cu[i + 1]} - cu[i];
  const int32_t raw_start = a.seq_starts ? a.seq_starts[i] : 0;
  if (col == 0) {
    if (raw_start >= 0) return Check::kNone;
    v[0] = i;
    v[1] = raw_start;
    return Check::kKvSeqStart;
  }
  if (raw_start < 0) return Check::kNone;  // column 0 reports
  const int64_t start = kv_seq_start(raw_start, a.block_unit, a.block_size);
  const bool too_long = kv_sequence_too_long(start, len, a.max_blocks, a.block_size);
  if (col == 1) {
    if (!too_long) return Check::kNone;
    v[0] = i;
    v[1] = start;
    v[2] = len;
    v[3] = a.max_blocks;
    v[4] = a.block_size;
    v[5] = a.seq_starts != nullptr;
    v[6] = raw_start;
    return Check::kKvSeqTooLong;
  }
  const int64_t j = col - 2;
  const KvColumns need = kv_needed_columns(start, len, a.block_size);
  if (too_long || j < need.first || j >= need.end) return Check::kNone;  // column 1 reports / not needed
  const int32_t block = a.block_table[i * a.max_blocks + j];
  const KvTableRule rule = kv_table_entry_rule(block, a.num_blocks);
  if (rule == KvTableRule::kOk) return Check::kNone;
  v[0] = i;
  v[1] = j;
  v[2] = block;
  v[3] = static_cast<int64_t>(rule);
  v[4] = a.block_size;
  v[5] = a.num_blocks;
  v[6] = start;
  return Check::kKvTableEntry;
}

__global__ void __launch_bounds__(kThreads) gather_check_kernel(GatherKvCheck a, DeviceStatus* st) {
  dev::pdl_wait();
  for (int64_t p = tid(); p < a.end; p += nthreads()) {
    int64_t v[8];
    if (gather_rule(a, p, v) != Check::kNone) flag(st, p);
  }
  dev::pdl_trigger();
}

__global__ void gather_blame_kernel(GatherKvCheck a, DeviceStatus* st) {
  dev::pdl_wait();
  if (st->first != kStatusOk) st->check = static_cast<int32_t>(gather_rule(a, static_cast<int64_t>(st->first), st->v));
  dev::pdl_trigger();
}

// ---- load_paged_kv_cache: segments ----

/// The per-segment rules in cpu order; kNone when the segment is fine by itself.
__device__ __forceinline__ Check segment_rule(const int32_t* g, int64_t num_blocks, int32_t block_size,
                                              int32_t total_k, bool null_cache) {
  const int32_t block = g[0], begin = g[1], end = g[2];
  const int64_t dst = g[3], len = int64_t{end} - begin;
  if (block != -1 && (block < 0 || block >= num_blocks)) return Check::kSegBlock;
  if (!(0 <= begin && begin <= end && end <= block_size)) return Check::kSegRange;
  if (dst < 0 || dst + len > total_k) return Check::kSegDestination;
  if (len > 0 && block >= 0 && null_cache) return Check::kSegNullCache;
  return Check::kNone;
}

/// One CTA per segment (grid-stride); its threads walk the segment's output rows.
template <Pass P>
__global__ void __launch_bounds__(kThreads)
    load_check_kernel(const int32_t* segs, int64_t num_segments, int64_t num_blocks, int32_t block_size,
                      int32_t total_k, bool null_cache, unsigned long long* owner, DeviceStatus* st) {
  dev::pdl_wait();
  for (int64_t s = blockIdx.x; s < num_segments; s += gridDim.x) {
    const int32_t* g = segs + 4 * s;
    if (segment_rule(g, num_blocks, block_size, total_k, null_cache) != Check::kNone) {
      if (P == Pass::kClaim && threadIdx.x == 0) flag(st, s);
      continue;
    }
    const int64_t dst = g[3], len = int64_t{g[2]} - g[1];
    for (int64_t r = dst + threadIdx.x; r < dst + len; r += blockDim.x) {
      if (P == Pass::kClaim) owner[r] = kUnowned;
      if (P == Pass::kOwn) atomicMin(&owner[r], static_cast<unsigned long long>(s));
      if (P == Pass::kCompare && owner[r] != static_cast<unsigned long long>(s)) flag(st, s);
    }
  }
  dev::pdl_trigger();
}

__global__ void load_blame_kernel(const int32_t* segs, int64_t num_blocks, int32_t block_size, int32_t total_k,
                                  bool null_cache, const unsigned long long* owner, DeviceStatus* st) {
  dev::pdl_wait();
  if (st->first != kStatusOk) {
    const int64_t s = static_cast<int64_t>(st->first);
    const int32_t* g = segs + 4 * s;
    Check c = segment_rule(g, num_blocks, block_size, total_k, null_cache);
    st->v[0] = s;
    for (int k = 0; k < 4; ++k) st->v[1 + k] = g[k];
    if (c == Check::kNone) {  // overlaps: the first segment writing one of its rows
      c = Check::kSegOverlap;
      unsigned long long t = kUnowned;
      for (int64_t r = g[3]; r < int64_t{g[3]} + (g[2] - g[1]); ++r) t = min(t, owner[r]);
      st->v[5] = static_cast<int64_t>(t);
      for (int k = 0; k < 4; ++k) st->v[6 + k] = segs[4 * t + k];
    }
    st->check = static_cast<int32_t>(c);
  }
  dev::pdl_trigger();
}

// ---- index transforms ----

/// convert_kv_index: position q*(k+1) is row q's own checks (seq id, context
/// length), q*(k+1)+1+c its entry c, as the cpu loop visits them.
__device__ Check convert_rule(const ConvertArgs& a, int64_t num_seqs, int64_t q, int64_t col, int64_t* v) {
  const int64_t seq = a.seq_ids ? a.seq_ids[q] : q;
  const bool seq_ok = seq >= 0 && (a.max_blocks == 0 || seq < num_seqs);
  const int32_t ctx = a.context_lens[q];
  v[0] = q;
  if (col == 0) {
    if (!seq_ok) return v[1] = seq, Check::kConvSeqId;
    if (ctx < 0) return v[1] = ctx, Check::kConvContextLen;
    return Check::kNone;
  }
  if (!seq_ok || ctx < 0) return Check::kNone;  // the row's own position reports it
  const int64_t c = col - 1;
  const int32_t x = a.topk[q * a.k + c];
  v[1] = c;
  v[2] = x;
  if (x < -1) return Check::kConvNegative;
  if (x < 0 || x >= ctx) return Check::kNone;
  const int64_t index = x / a.block_size;
  const int64_t block = index < a.max_blocks ? a.block_table[seq * a.max_blocks + index] : -1;
  if (index >= a.max_blocks || block < 0) {
    v[3] = seq;
    v[4] = index;
    v[5] = block;
    return Check::kConvMissingBlock;
  }
  if (block * a.block_size + x % a.block_size > INT_MAX) return v[2] = block, Check::kConvOverflow;
  return Check::kNone;
}

__global__ void __launch_bounds__(kThreads)
    convert_check_kernel(ConvertArgs a, int64_t num_seqs, DeviceStatus* st) {
  dev::pdl_wait();
  const int64_t per_row = int64_t{a.k} + 1;
  for (int64_t p = tid(); p < a.num_q * per_row; p += nthreads()) {
    int64_t v[6];
    if (convert_rule(a, num_seqs, p / per_row, p % per_row, v) != Check::kNone) flag(st, p);
  }
  dev::pdl_trigger();
}

__global__ void convert_blame_kernel(ConvertArgs a, int64_t num_seqs, DeviceStatus* st) {
  dev::pdl_wait();
  if (st->first != kStatusOk) {
    const int64_t p = static_cast<int64_t>(st->first), per_row = int64_t{a.k} + 1;
    st->check = static_cast<int32_t>(convert_rule(a, num_seqs, p / per_row, p % per_row, st->v));
  }
  dev::pdl_trigger();
}

__device__ __forceinline__ Check cat_rule(int32_t x, int64_t shift) {
  if (x < -1) return Check::kCatNegative;
  if (x >= 0 && x + shift > INT_MAX) return Check::kCatOverflow;
  return Check::kNone;
}

__global__ void __launch_bounds__(kThreads)
    cat_check_kernel(const int32_t* right, int64_t n, int64_t shift, DeviceStatus* st) {
  dev::pdl_wait();
  for (int64_t i = tid(); i < n; i += nthreads())
    if (cat_rule(right[i], shift) != Check::kNone) flag(st, i);
  dev::pdl_trigger();
}

__global__ void cat_blame_kernel(const int32_t* right, int64_t shift, DeviceStatus* st) {
  dev::pdl_wait();
  if (st->first != kStatusOk) {
    const int64_t i = static_cast<int64_t>(st->first);
    st->check = static_cast<int32_t>(cat_rule(right[i], shift));
    st->v[0] = i;
    st->v[1] = right[i];
  }
  dev::pdl_trigger();
}

__device__ __forceinline__ Check expand_rule(const int32_t* p, int32_t width, int64_t* piece) {
  if (p[1] < 0 || p[3] < 0 || int64_t{p[1]} + p[3] > width) return Check::kExpandLengths;
  for (int k = 0; k <= 2; k += 2) {
    if (p[k + 1] == 0) continue;
    if (p[k] < 0 || int64_t{p[k]} + p[k + 1] - 1 > INT_MAX) return *piece = k, Check::kExpandPiece;
  }
  return Check::kNone;
}

__global__ void __launch_bounds__(kThreads)
    expand_check_kernel(const int32_t* pivots, int32_t num_q, int32_t width, DeviceStatus* st) {
  dev::pdl_wait();
  for (int64_t q = tid(); q < num_q; q += nthreads()) {
    int64_t piece = 0;
    if (expand_rule(pivots + 4 * q, width, &piece) != Check::kNone) flag(st, q);
  }
  dev::pdl_trigger();
}

__global__ void expand_blame_kernel(const int32_t* pivots, int32_t width, DeviceStatus* st) {
  dev::pdl_wait();
  if (st->first != kStatusOk) {
    const int64_t q = static_cast<int64_t>(st->first);
    st->v[0] = q;
    for (int k = 0; k < 4; ++k) st->v[1 + k] = pivots[4 * q + k];
    st->check = static_cast<int32_t>(expand_rule(pivots + 4 * q, width, &st->v[5]));
  }
  dev::pdl_trigger();
}

__device__ __forceinline__ Check swa_rule(int32_t start, int32_t len, int32_t width, int32_t ring) {
  if (len < 0 || len > width || len > ring) return Check::kSwaLen;
  if (len > 0 && start < 0) return Check::kSwaStart;
  if (len > 0 && (int64_t{start} / ring + 1) * ring - 1 > INT_MAX) return Check::kSwaRing;
  return Check::kNone;
}

__global__ void __launch_bounds__(kThreads)
    swa_check_kernel(const int32_t* start_len, int32_t num_q, int32_t width, int32_t ring, DeviceStatus* st) {
  dev::pdl_wait();
  for (int64_t q = tid(); q < num_q; q += nthreads())
    if (swa_rule(start_len[2 * q], start_len[2 * q + 1], width, ring) != Check::kNone) flag(st, q);
  dev::pdl_trigger();
}

__global__ void swa_blame_kernel(const int32_t* start_len, int32_t width, int32_t ring, DeviceStatus* st) {
  dev::pdl_wait();
  if (st->first != kStatusOk) {
    const int64_t q = static_cast<int64_t>(st->first);
    const int32_t start = start_len[2 * q], len = start_len[2 * q + 1];
    const Check c = swa_rule(start, len, width, ring);
    st->check = static_cast<int32_t>(c);
    st->v[0] = q;
    st->v[1] = c == Check::kSwaLen ? len : start;
  }
  dev::pdl_trigger();
}

// ---- copy_blocks (SPEC §8.1), swap_blocks (docs/spec.md §8.3): positions 2p (src)
// and 2p+1 (dst) of each pair ----
// owner: with no_dst_is_src (copy_blocks: one pool) [2][num_blocks] — the first pair
// copying FROM block b, then the first writing it; else (swap_blocks: two pools)
// [dst_blocks] — the first pair writing it.

__device__ __forceinline__ bool copy_padding(int64_t src, int64_t dst) { return src == -1 || dst == -1; }
__device__ __forceinline__ bool block_in_range(int64_t b, int64_t num_blocks) { return b >= 0 && b < num_blocks; }

template <Pass P>
__global__ void __launch_bounds__(kThreads)
    copy_check_kernel(const int64_t* m, int64_t pairs, int64_t src_blocks, int64_t dst_blocks, bool no_dst_is_src,
                      unsigned long long* owner, DeviceStatus* st) {
  dev::pdl_wait();
  unsigned long long* from = owner;  // no_dst_is_src only
  unsigned long long* to = no_dst_is_src ? owner + src_blocks : owner;
  for (int64_t p = tid(); p < pairs; p += nthreads()) {
    const int64_t src = m[2 * p], dst = m[2 * p + 1];
    if (copy_padding(src, dst)) continue;
    const bool src_ok = block_in_range(src, src_blocks), dst_ok = block_in_range(dst, dst_blocks);
    const auto me = static_cast<unsigned long long>(p);
    if (P == Pass::kClaim) {  // every claimant writes the same value
      if (src_ok && no_dst_is_src) from[src] = kUnowned;
      if (dst_ok) {
        to[dst] = kUnowned;
        if (no_dst_is_src) from[dst] = kUnowned;
      }
    }
    if (P == Pass::kOwn) {
      if (src_ok && no_dst_is_src) atomicMin(&from[src], me);
      if (dst_ok) atomicMin(&to[dst], me);
    }
    if (P == Pass::kCompare) {
      if (!src_ok)
        flag(st, 2 * p);
      else if (!dst_ok || to[dst] != me || (no_dst_is_src && from[dst] != kUnowned))
        flag(st, 2 * p + 1);
    }
  }
  dev::pdl_trigger();
}

__global__ void copy_blame_kernel(const int64_t* m, int64_t src_blocks, int64_t dst_blocks, bool no_dst_is_src,
                                  const unsigned long long* owner, DeviceStatus* st) {
  dev::pdl_wait();
  if (st->first != kStatusOk) {
    const int64_t p = static_cast<int64_t>(st->first) / 2, k = static_cast<int64_t>(st->first) % 2;
    const int64_t value = m[2 * p + k];
    st->v[0] = p;
    if (k == 0 || !block_in_range(value, dst_blocks)) {
      st->check = static_cast<int32_t>(Check::kCopyRange);
      st->v[1] = k;
      st->v[2] = value;
    } else {
      const unsigned long long first_dst = owner[(no_dst_is_src ? src_blocks : 0) + value];
      const bool duplicate = first_dst != static_cast<unsigned long long>(p);
      st->check = static_cast<int32_t>(duplicate ? Check::kCopyDuplicate : Check::kCopySource);
      st->v[1] = value;
      st->v[2] = static_cast<int64_t>(duplicate ? first_dst : owner[value]);
    }
  }
  dev::pdl_trigger();
}

int64_t grid(int64_t items) { return dev::grid_for((items + kThreads - 1) / kThreads); }

/// Runs launches in order, stopping at the first error.
template <typename... F>
std::string chain(F&&... launches) {
  std::string err;
  ((err.empty() ? (void)(err = launches()) : (void)0), ...);
  return err;
}

}  // namespace

std::string launch_validate_slots(const KvScaleCheck& sc, const int32_t* slots, int64_t n, int64_t num_slots,
                                  unsigned long long* owner, DeviceStatus* st, const LaunchOptions& o,
                                  const RopeArgs* rope) {
  const int64_t g = grid(n), scale_end = sc.positions();
  const int64_t num_pos = rope ? n : 0, base = scale_end + num_pos;
  const int64_t* positions = rope ? rope->positions : nullptr;
  const int64_t max_position = rope ? rope->max_position : 0;
  const auto scales = [&] {
    return scale_end == 0 ? std::string() : dev::launch("scale_check_kernel", scale_check_kernel, grid(scale_end), o, sc, st);
  };
  const auto rope_positions = [&] {
    return num_pos == 0 ? std::string()
                        : dev::launch("rope_check_kernel", rope_check_kernel, g, o, positions, n, max_position, scale_end, st);
  };
  const auto pass = [&](auto kernel) {
    return n == 0 ? std::string() : dev::launch("store_check_kernel", kernel, g, o, slots, n, num_slots, owner, base, st);
  };
  return chain(
      scales, rope_positions, [&] { return pass(store_check_kernel<Pass::kClaim>); },
      [&] { return pass(store_check_kernel<Pass::kOwn>); }, [&] { return pass(store_check_kernel<Pass::kCompare>); },
      [&] {
        return dev::launch_one_thread("store_blame_kernel", store_blame_kernel, o, sc, positions, num_pos, max_position,
                                      slots, num_slots, static_cast<const unsigned long long*>(owner), st);
      });
}

std::string launch_validate_gather_kv(const GatherKvCheck& a, DeviceStatus* st, const LaunchOptions& o) {
  return chain([&] { return dev::launch("gather_check_kernel", gather_check_kernel, grid(a.end), o, a, st); },
               [&] { return dev::launch_one_thread("gather_blame_kernel", gather_blame_kernel, o, a, st); });
}

std::string launch_validate_load(const DeviceCache& c, const LoadArgs& a, unsigned long long* owner,
                                 DeviceStatus* st, const LaunchOptions& o) {
  const PagedLayout& L = c.layout;
  const int64_t g = dev::grid_for(a.num_segments);
  const bool null_cache = c.base == nullptr;
  const int32_t* segs = a.load_segments;
  return chain(
      [&] { return dev::launch("load_check_kernel", load_check_kernel<Pass::kClaim>, g, o, segs, a.num_segments, L.num_blocks, L.block_size, a.total_k, null_cache, owner, st); },
      [&] { return dev::launch("load_check_kernel", load_check_kernel<Pass::kOwn>, g, o, segs, a.num_segments, L.num_blocks, L.block_size, a.total_k, null_cache, owner, st); },
      [&] { return dev::launch("load_check_kernel", load_check_kernel<Pass::kCompare>, g, o, segs, a.num_segments, L.num_blocks, L.block_size, a.total_k, null_cache, owner, st); },
      [&] { return dev::launch_one_thread("load_blame_kernel", load_blame_kernel, o, segs, L.num_blocks, L.block_size, a.total_k, null_cache, static_cast<const unsigned long long*>(owner), st); });
}

std::string launch_validate_convert(const ConvertArgs& a, int64_t num_seqs, DeviceStatus* st,
                                    const LaunchOptions& o) {
  const int64_t g = grid(int64_t{a.num_q} * (int64_t{a.k} + 1));
  return chain([&] { return dev::launch("convert_check_kernel", convert_check_kernel, g, o, a, num_seqs, st); },
               [&] { return dev::launch_one_thread("convert_blame_kernel", convert_blame_kernel, o, a, num_seqs, st); });
}

std::string launch_validate_cat(const int32_t* right, int32_t wr, int32_t num_q, int64_t shift,
                                DeviceStatus* st, const LaunchOptions& o) {
  const int64_t n = int64_t{num_q} * wr;
  return chain([&] { return dev::launch("cat_check_kernel", cat_check_kernel, grid(n), o, right, n, shift, st); },
               [&] { return dev::launch_one_thread("cat_blame_kernel", cat_blame_kernel, o, right, shift, st); });
}

std::string launch_validate_expand(const int32_t* pivots, int32_t num_q, int32_t width, DeviceStatus* st,
                                   const LaunchOptions& o) {
  return chain([&] { return dev::launch("expand_check_kernel", expand_check_kernel, grid(num_q), o, pivots, num_q, width, st); },
               [&] { return dev::launch_one_thread("expand_blame_kernel", expand_blame_kernel, o, pivots, width, st); });
}

std::string launch_validate_swa_decode(const int32_t* start_len, int32_t num_q, int32_t width,
                                       int32_t ring_size, DeviceStatus* st, const LaunchOptions& o) {
  return chain(
      [&] { return dev::launch("swa_check_kernel", swa_check_kernel, grid(num_q), o, start_len, num_q, width, ring_size, st); },
      [&] { return dev::launch_one_thread("swa_blame_kernel", swa_blame_kernel, o, start_len, width, ring_size, st); });
}

std::string launch_validate_block_mapping(const int64_t* block_mapping, int64_t pairs, int64_t src_blocks,
                                          int64_t dst_blocks, bool no_dst_is_src, unsigned long long* owner,
                                          DeviceStatus* st, const LaunchOptions& o) {
  const int64_t g = grid(pairs);
  const auto pass = [&](auto kernel) {
    return dev::launch("copy_check_kernel", kernel, g, o, block_mapping, pairs, src_blocks, dst_blocks, no_dst_is_src,
                       owner, st);
  };
  return chain([&] { return pass(copy_check_kernel<Pass::kClaim>); },
               [&] { return pass(copy_check_kernel<Pass::kOwn>); },
               [&] { return pass(copy_check_kernel<Pass::kCompare>); },
               [&] {
                 return dev::launch_one_thread("copy_blame_kernel", copy_blame_kernel, o, block_mapping, src_blocks,
                                               dst_blocks, no_dst_is_src,
                                               static_cast<const unsigned long long*>(owner), st);
               });
}

}  // namespace kvcheck::cuda
