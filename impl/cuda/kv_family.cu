// K/V family kernels (SPEC §7.3-§7.5). Work unit = (token row, K or V, head): a group
// of T threads (T a power of two <= 32 chosen from head_dim) moves that head's
// head_dim contiguous elements, 8 elements per thread step (16-byte loads/stores of
// bf16/fp16, 8-byte of FP8) when every base, stride and head_dim allow it (checked on
// the host at launch), else one element per step. Grid-stride over units; the only
// integer divisions are per unit (row/side/head, token/block), never per element.
// Templated on what changes the code (model dtype, cache dtype, vector width);
// layout travels as runtime strides in a KvPagedLayout, whose helpers (split,
// slot_offset, offset) are the only address formula used here. Launched like every kvcheck kernel
// (launch.cuh: PDL wait/trigger, the device status, dev::grid_for's grid cap). Numerics: NVIDIA's conversions (SATFINITE
// e4m3/e5m2, RN bf16/fp16) with NaN results pinned to SPEC §7.3's codes,
// __fdiv_rn / __fmul_rn, built with -fmad=false.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "impl/cuda/kv_family.h"
#include "impl/cuda/launch.cuh"
#include "impl/kv_rules.h"

namespace kvcheck::cuda {
namespace {

using dev::kThreads;
constexpr int kVec = 8;

template <KvDevDtype D>
constexpr bool kIsFp8 = kv_dev_is_fp8(D);

template <KvDevDtype In>
__device__ __forceinline__ float model_to_f32(uint16_t x) {
  if constexpr (In == KvDevDtype::kBF16) return __uint_as_float(uint32_t{x} << 16);
  else return __half2float(__ushort_as_half(x));
}

template <KvDevDtype Out>
__device__ __forceinline__ uint16_t f32_to_model(float y) {
  if (isnan(y)) return 0x7FFFu;  // SPEC §7.3 / §4: canonical NaN, sign dropped
  if constexpr (Out == KvDevDtype::kBF16) return __bfloat16_as_ushort(__float2bfloat16_rn(y));
  else return __half_as_ushort(__float2half_rn(y));
}

template <KvDevDtype C>
__device__ __forceinline__ uint8_t f32_to_fp8(float y) {
  if (isnan(y)) return 0x7Fu;
  return static_cast<uint8_t>(
      __nv_cvt_float_to_fp8(y, __NV_SATFINITE, C == KvDevDtype::kE4M3 ? __NV_E4M3 : __NV_E5M2));
}

template <KvDevDtype C>
__device__ __forceinline__ float fp8_to_f32(uint8_t q) {
  if constexpr (C == KvDevDtype::kE5M2) {
    return __half2float(__ushort_as_half(static_cast<uint16_t>(uint32_t{q} << 8)));  // exact
  } else {
    const uint32_t mag = q & 0x7Fu, sign = uint32_t{q & 0x80u} << 24;
    if (mag == 0x7Fu) return __uint_as_float(0x7FC00000u);
    const float v = mag < 8 ? __fmul_rn(static_cast<float>(mag), 0.001953125f)  // m * 2^-9
                            : __uint_as_float((mag << 20) + (120u << 23));
    return __uint_as_float(__float_as_uint(v) | sign);
  }
}

// Unit u -> (row, side, head) with 2*H units per row.
struct Unit {
  int64_t row;
  int side, head;
};
__device__ __forceinline__ Unit unit_of(int64_t u, int32_t heads) {
  const int64_t per_row = 2 * int64_t{heads};
  const int64_t row = u / per_row;
  const int32_t rest = static_cast<int32_t>(u - row * per_row);
  return {row, rest >= heads ? 1 : 0, rest >= heads ? rest - heads : rest};
}

// One element of an FP8 store (SPEC §7.3.1): q = cvt(x / s) (kSpec, kVllm), or with
// Recip (kSglang: s is then RN(1 / scale), taken once per head) q = cvt(x * s) with a
// NaN product sent to +max, as fminf/fmaxf clamp it (±Inf and overflow saturate in the
// SATFINITE cvt either way). A template argument, so the division path stays as lean
// as it was.
template <KvDevDtype In, KvDevDtype Out, bool Recip>
__device__ __forceinline__ uint8_t quantize_element(uint16_t e, float s) {
  const float x = model_to_f32<In>(e);
  if constexpr (Recip) {
    const float y = __fmul_rn(x, s);
    return f32_to_fp8<Out>(isnan(y) ? (Out == KvDevDtype::kE4M3 ? 448.0f : 57344.0f) : y);
  } else {
    return f32_to_fp8<Out>(__fdiv_rn(x, s));
  }
}

// One head of one side: D elements src -> dst, thread `lane` of a group of `width`.
// In/Out are the element types on each side: model (2 bytes) or FP8 (1 byte); Recip:
// a store of recipe kSglang (quantize_element).
template <KvDevDtype In, KvDevDtype Out, int V, bool Recip = false>
__device__ __forceinline__ void move_head(const uint8_t* __restrict__ src, uint8_t* __restrict__ dst,
                                          int32_t d, float scale, int lane, int width) {
  constexpr bool kQuant = kIsFp8<Out> && !kIsFp8<In>;
  constexpr bool kDequant = kIsFp8<In> && !kIsFp8<Out>;
  constexpr int kInBytes = kIsFp8<In> ? 1 : 2, kOutBytes = kIsFp8<Out> ? 1 : 2;
  if constexpr (V == kVec) {
    for (int32_t c = lane * kVec; c < d; c += width * kVec) {
      if constexpr (!kQuant && !kDequant) {  // a 16-bit copy
        *reinterpret_cast<uint4*>(dst + 2 * c) = __ldg(reinterpret_cast<const uint4*>(src + 2 * c));
      } else if constexpr (kQuant) {
        const uint4 x = __ldg(reinterpret_cast<const uint4*>(src + 2 * c));
        const uint32_t w[4] = {x.x, x.y, x.z, x.w};
        uint32_t q[2] = {0, 0};
        for (int i = 0; i < kVec; ++i) {
          const uint16_t e = static_cast<uint16_t>(w[i / 2] >> (16 * (i % 2)));
          q[i / 4] |= uint32_t{quantize_element<In, Out, Recip>(e, scale)} << (8 * (i % 4));
        }
        *reinterpret_cast<uint2*>(dst + c) = make_uint2(q[0], q[1]);
      } else {
        const uint2 x = __ldg(reinterpret_cast<const uint2*>(src + c));
        const uint32_t w[2] = {x.x, x.y};
        uint32_t y[4] = {0, 0, 0, 0};
        for (int i = 0; i < kVec; ++i) {
          const uint8_t q = static_cast<uint8_t>(w[i / 4] >> (8 * (i % 4)));
          y[i / 2] |= uint32_t{f32_to_model<Out>(__fmul_rn(fp8_to_f32<In>(q), scale))} << (16 * (i % 2));
        }
        *reinterpret_cast<uint4*>(dst + 2 * c) = make_uint4(y[0], y[1], y[2], y[3]);
      }
    }
  } else {
    for (int32_t c = lane; c < d; c += width) {
      if constexpr (!kQuant && !kDequant) {
        dst[2 * c] = src[2 * c];
        dst[2 * c + 1] = src[2 * c + 1];
      } else if constexpr (kQuant) {
        const uint16_t e = static_cast<uint16_t>(src[2 * c] | (src[2 * c + 1] << 8));
        dst[c] = quantize_element<In, Out, Recip>(e, scale);
      } else {
        const uint16_t y = f32_to_model<Out>(__fmul_rn(fp8_to_f32<In>(src[c]), scale));
        dst[2 * c] = static_cast<uint8_t>(y);
        dst[2 * c + 1] = static_cast<uint8_t>(y >> 8);
      }
    }
  }
  (void)kInBytes;
  (void)kOutBytes;
}

template <KvDevDtype KeyIn, KvDevDtype ValueIn, KvDevDtype Cache, int V, bool Recip>
__global__ void __launch_bounds__(kThreads) store_kv_kernel(StoreKvLaunch a, int width, const DeviceStatus* status) {
  dev::pdl_wait();
  if (dev::failed(status)) return;  // validation found an error: write nothing
  const KvPagedLayout& L = a.layout;
  constexpr int64_t kCacheBytes = kv_dev_bytes(Cache);
  const int group = threadIdx.x / width, lane = threadIdx.x % width, groups = blockDim.x / width;
  const int64_t units = a.n * 2 * L.num_kv_heads;
  for (int64_t u = int64_t{blockIdx.x} * groups + group; u < units; u += int64_t{gridDim.x} * groups) {
    const Unit w = unit_of(u, L.num_kv_heads);
    const int32_t slot = a.slot_mapping[w.row];
    const KvDevRows& in = w.side ? a.value : a.key;
    const uint8_t* src = static_cast<const uint8_t*>(in.data) + 2 * (w.row * in.token_stride + w.head * in.head_stride);
    // The row's address does not depend on the slot: start bringing it into L2 while
    // the slot load is in flight, so the two round trips overlap.
    for (int32_t c = lane * V; c < L.head_dim; c += width * V) asm volatile("prefetch.global.L2 [%0];" ::"l"(src + 2 * c));
    if (slot < 0) continue;  // -1 padding: nothing written, slot 0 included
    uint8_t* dst = static_cast<uint8_t*>(w.side ? a.v_cache : a.k_cache) + kCacheBytes * L.slot_offset(w.side, slot, w.head);
    float scale = 1.0f;
    if constexpr (kIsFp8<Cache>) {
      scale = (w.side ? a.v_scale : a.k_scale)[a.per_head_scale ? w.head : 0];
      if constexpr (Recip) scale = __fdiv_rn(1.0f, scale);
    }
    if (w.side == 0)
      move_head<KeyIn, kIsFp8<Cache> ? Cache : KeyIn, V, Recip>(src, dst, L.head_dim, scale, lane, width);
    else
      move_head<ValueIn, kIsFp8<Cache> ? Cache : ValueIn, V, Recip>(src, dst, L.head_dim, scale, lane, width);
  }
  dev::pdl_trigger();
}

template <KvDevDtype Cache, KvDevDtype KeyOut, KvDevDtype ValueOut, int V>
__global__ void __launch_bounds__(kThreads) gather_kv_kernel(GatherKvLaunch a, int width, const DeviceStatus* status) {
  dev::pdl_wait();
  if (dev::failed(status)) return;
  const KvPagedLayout& L = a.layout;
  constexpr int64_t kCacheBytes = kv_dev_bytes(Cache);
  const int group = threadIdx.x / width, lane = threadIdx.x % width, groups = blockDim.x / width;
  // The rows to write: cu_seqlens_k's last entry, read here (the host need not know
  // it); max_tokens only sized the grid, the loop strides over every unit.
  const int64_t units = int64_t{a.cu_seqlens_k[a.num_seqs]} * 2 * L.num_kv_heads;
  for (int64_t u = int64_t{blockIdx.x} * groups + group; u < units; u += int64_t{gridDim.x} * groups) {
    const Unit w = unit_of(u, L.num_kv_heads);
    // The sequence of row w.row: the last i with cu[i] <= row (binary search).
    int32_t lo = 0, hi = a.num_seqs;  // invariant: cu[lo] <= row < cu[hi]
    while (hi - lo > 1) {
      const int32_t mid = (lo + hi) / 2;
      if (a.cu_seqlens_k[mid] <= w.row) lo = mid; else hi = mid;
    }
    const int64_t start = a.seq_starts ? kv_seq_start(a.seq_starts[lo], a.block_unit, L.block_size) : 0;
    const KvSlotPos p = L.split(start + w.row - a.cu_seqlens_k[lo]);  // (table column, token in its block)
    const int64_t block = a.block_table[int64_t{lo} * a.max_blocks + p.block];
    const uint8_t* src = static_cast<const uint8_t*>(w.side ? a.v_cache : a.k_cache) +
                         kCacheBytes * L.offset(w.side, block, p.token, w.head);
    const KvDevRowsOut& o = w.side ? a.out_v : a.out_k;
    uint8_t* dst = static_cast<uint8_t*>(o.data) + 2 * (w.row * o.token_stride + w.head * o.head_stride);
    float scale = 1.0f;
    if constexpr (kIsFp8<Cache>) scale = (w.side ? a.v_scale : a.k_scale)[a.per_head_scale ? w.head : 0];
    if (w.side == 0)
      move_head<Cache, kIsFp8<Cache> ? KeyOut : Cache, V>(src, dst, L.head_dim, scale, lane, width);
    else
      move_head<Cache, kIsFp8<Cache> ? ValueOut : Cache, V>(src, dst, L.head_dim, scale, lane, width);
  }
  dev::pdl_trigger();
}

bool aligned(const void* p, int64_t bytes) { return reinterpret_cast<uintptr_t>(p) % static_cast<uintptr_t>(bytes) == 0; }

// 8-element vectors are legal when every head's first element is 16-byte aligned on
// the 2-byte side and 8-byte aligned on the FP8 side (both: 16 for 2-byte caches).
// `side` picks the cache (and its strides) the rows go to or come from.
bool vector_ok(const void* rows, int64_t ts, int64_t hs, const void* cache, const KvPagedLayout& L, int side) {
  const int64_t cb = L.element_bytes(), ca = 8 * cb;
  const KvStrides& s = L.strides(side);
  return L.head_dim % kVec == 0 && aligned(rows, 16) && (2 * ts) % 16 == 0 && (2 * hs) % 16 == 0 &&
         aligned(cache, ca) && (cb * s.stride_page) % ca == 0 && (cb * s.stride_token) % ca == 0 &&
         (cb * s.stride_head) % ca == 0;
}

// Threads per unit: enough for one step over head_dim, a power of two in [1, 32].
int group_width(int32_t head_dim, int v) {
  const int64_t steps = (int64_t{head_dim} + v - 1) / v;
  int w = 1;
  while (w < 32 && w < steps) w *= 2;
  return w;
}

// CTAs for `units` work units, kThreads / width of them per CTA.
int64_t grid(int64_t units, int width) {
  const int64_t per_cta = kThreads / width;
  return dev::grid_for((units + per_cta - 1) / per_cta);
}

template <KvDevDtype K, KvDevDtype Vd, KvDevDtype C, bool R = false>
std::string store_launch(const StoreKvLaunch& a, const DeviceStatus* st, const LaunchOptions& o) {
  const bool vec = vector_ok(a.key.data, a.key.token_stride, a.key.head_stride, a.k_cache, a.layout, kKvSideK) &&
                   vector_ok(a.value.data, a.value.token_stride, a.value.head_stride, a.v_cache, a.layout, kKvSideV);
  const int width = group_width(a.layout.head_dim, vec ? kVec : 1);
  const int64_t g = grid(a.n * 2 * a.layout.num_kv_heads, width);
  return vec ? dev::launch("store_kv_kernel", store_kv_kernel<K, Vd, C, kVec, R>, g, o, a, width, st)
             : dev::launch("store_kv_kernel", store_kv_kernel<K, Vd, C, 1, R>, g, o, a, width, st);
}

const char* dtype_name(KvDevDtype d) {
  switch (d) {
    case KvDevDtype::kBF16: return "bf16";
    case KvDevDtype::kFP16: return "fp16";
    case KvDevDtype::kE4M3: return "e4m3";
    case KvDevDtype::kE5M2: return "e5m2";
  }
  return "an unknown dtype";
}

// One model dtype M for both sides (SPEC §7.1). A 2-byte cache copies bits, so it must
// be M itself: anything else is refused here, never copied as raw bits.
template <KvDevDtype M>
std::string store_by_cache(const StoreKvLaunch& a, const DeviceStatus* st, const LaunchOptions& o) {
  switch (a.layout.dtype) {
    case KvDevDtype::kE4M3:
      return a.reciprocal ? store_launch<M, M, KvDevDtype::kE4M3, true>(a, st, o)
                          : store_launch<M, M, KvDevDtype::kE4M3>(a, st, o);
    case KvDevDtype::kE5M2:
      return a.reciprocal ? store_launch<M, M, KvDevDtype::kE5M2, true>(a, st, o)
                          : store_launch<M, M, KvDevDtype::kE5M2>(a, st, o);
    default:
      if (a.layout.dtype == M) return store_launch<M, M, M>(a, st, o);  // a copy
      return std::string("store_kv: key is ") + dtype_name(M) + " but a " + dtype_name(a.layout.dtype) +
             " cache takes " + dtype_name(a.layout.dtype) + " rows (SPEC §7.1)";
  }
}

template <KvDevDtype C, KvDevDtype K, KvDevDtype Vd>
std::string gather_launch(const GatherKvLaunch& a, const DeviceStatus* st, const LaunchOptions& o) {
  const bool vec = vector_ok(a.out_k.data, a.out_k.token_stride, a.out_k.head_stride, a.k_cache, a.layout, kKvSideK) &&
                   vector_ok(a.out_v.data, a.out_v.token_stride, a.out_v.head_stride, a.v_cache, a.layout, kKvSideV);
  const int width = group_width(a.layout.head_dim, vec ? kVec : 1);
  const int64_t g = grid(a.max_tokens * 2 * a.layout.num_kv_heads, width);
  return vec ? dev::launch("gather_kv_kernel", gather_kv_kernel<C, K, Vd, kVec>, g, o, a, width, st)
             : dev::launch("gather_kv_kernel", gather_kv_kernel<C, K, Vd, 1>, g, o, a, width, st);
}

template <KvDevDtype M>
std::string gather_by_cache(const GatherKvLaunch& a, const DeviceStatus* st, const LaunchOptions& o) {
  switch (a.layout.dtype) {
    case KvDevDtype::kE4M3: return gather_launch<KvDevDtype::kE4M3, M, M>(a, st, o);
    case KvDevDtype::kE5M2: return gather_launch<KvDevDtype::kE5M2, M, M>(a, st, o);
    default:
      if (a.layout.dtype == M) return gather_launch<M, M, M>(a, st, o);
      return std::string("gather_kv: out_k is ") + dtype_name(M) + " but a " + dtype_name(a.layout.dtype) +
             " cache gives " + dtype_name(a.layout.dtype) + " rows (SPEC §7.1)";
  }
}

bool is_model(KvDevDtype d) { return d == KvDevDtype::kBF16 || d == KvDevDtype::kFP16; }

}  // namespace

std::string launch_store_kv(const StoreKvLaunch& a, const DeviceStatus* st, const LaunchOptions& o) {
  if (a.n == 0) return "";
  if (!is_model(a.key.dtype) || !is_model(a.value.dtype)) return "store_kv: rows must be bf16 or fp16";
  if (a.key.dtype != a.value.dtype)
    return std::string("store_kv: key is ") + dtype_name(a.key.dtype) + " but value is " + dtype_name(a.value.dtype) +
           ": key and value share one model dtype (SPEC §7.1)";
  return a.key.dtype == KvDevDtype::kBF16 ? store_by_cache<KvDevDtype::kBF16>(a, st, o)
                                          : store_by_cache<KvDevDtype::kFP16>(a, st, o);
}

std::string launch_gather_kv(const GatherKvLaunch& a, const DeviceStatus* st, const LaunchOptions& o) {
  if (a.max_tokens <= 0) return "";
  if (!is_model(a.out_k.dtype) || !is_model(a.out_v.dtype)) return "gather_kv: outputs must be bf16 or fp16";
  if (a.out_k.dtype != a.out_v.dtype)
    return std::string("gather_kv: out_k is ") + dtype_name(a.out_k.dtype) + " but out_v is " +
           dtype_name(a.out_v.dtype) + ": key and value share one model dtype (SPEC §7.1)";
  return a.out_k.dtype == KvDevDtype::kBF16 ? gather_by_cache<KvDevDtype::kBF16>(a, st, o)
                                            : gather_by_cache<KvDevDtype::kFP16>(a, st, o);
}

}  // namespace kvcheck::cuda
