// K/V family kernels (SPEC §7.3-§7.5). Work unit = (token row, K or V, head): a group
// of T threads (T a power of two <= 32 chosen from head_dim) moves that head's
// head_dim contiguous elements, 8 elements per vector (16-byte loads/stores of
// bf16/fp16, 8-byte of FP8) when every base, stride and head_dim allow it (checked on
// the host at launch), else one element per step. Each thread keeps kSteps (2 or 4)
// vectors of a unit in flight (all loads, then all conversions and stores), so the
// per-unit work (unit split, slot or sequence lookup, scale) is paid once per 32-64
// bytes of rows, not per 16 (ncu on the H200 had the FP8 store and the gathers
// issue-bound at 67-69 % of issue slots with one vector per unit and thread).
// Grid-stride over units; the only integer divisions are per unit (row/side/
// head, token/block), 32-bit where the values fit, never per element.
// Templated on what changes the code (model dtype, cache dtype, vector width);
// layout travels as runtime strides in a KvPagedLayout, whose helpers (split,
// slot_offset, offset) are the only address formula used here. Launched like every kvcheck kernel
// (launch.cuh: PDL wait/trigger, the device status, dev::grid_for's grid cap). Numerics: NVIDIA's conversions (SATFINITE
// e4m3/e5m2 and RN bf16/fp16, two per hardware cvt) with NaN results pinned to SPEC
// §7.3's codes; x / s as dev::div_rn (equal to __fdiv_rn on every input, numerics.cuh),
// __fmul_rn, built with -fmad=false. e2m1 (NVFP4, SPEC §7.9) caches have their own
// kernels (store_nvfp4_kernel: a thread per 1, 2 or 4 16-element groups of a head;
// gather_nvfp4_kernel: 8-element pieces, a group of threads per head).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <type_traits>

#include "impl/cuda/kv_family.h"
#include "impl/cuda/launch.cuh"
#include "impl/cuda/numerics.cuh"
#include "impl/kv_rules.h"
#include "impl/kv_units.h"

namespace kvcheck::cuda {
namespace {

using dev::kThreads;
constexpr int kVec = 8;    // elements per vector access
// Vectors of one unit a thread has in flight: 2 for a copy (32 bytes each way), 4
// when the move converts (FP8 store and gather; 8-byte vectors on the FP8 side).
// Measured on the H200 at 262,144 tokens, 8 heads x 128, % of the d2d copy, store /
// gather: copies 88.9 / 92.1 at 2 against 85.1 / 85.7 at 4; e4m3 87.5 / 81.0 at 4
// against 80.6 / 64.4 at 2 (1 step, the old shape: 56 / 40). Capping registers
// (__launch_bounds__ with 6 or 8 CTAs per SM) lost 5 to 30 points everywhere.
template <KvDevDtype In, KvDevDtype Out>
constexpr int kSteps = In == Out ? 2 : 4;

template <KvDevDtype D>
constexpr bool kIsFp8 = kv_dev_is_fp8(D);
template <KvDevDtype D>
constexpr __nv_fp8_interpretation_t kFp8Kind = D == KvDevDtype::kE4M3 ? __NV_E4M3 : __NV_E5M2;
// The largest finite value, where recipe sglang's clamp sends a NaN product.
template <KvDevDtype D>
constexpr float kFp8Max = D == KvDevDtype::kE4M3 ? 448.0f : 57344.0f;

template <KvDevDtype In>
__device__ __forceinline__ float model_to_f32(uint16_t x) {
  if constexpr (In == KvDevDtype::kBF16) return __uint_as_float(uint32_t{x} << 16);
  else return __half2float(__ushort_as_half(x));
}

// Two floats to two model-dtype values (RN, one cvt), lo in bits 0-15; NaNs as the cvt
// gives them (callers that can meet one use f32x2_to_model).
template <KvDevDtype Out>
__device__ __forceinline__ uint32_t f32x2_to_model_cvt(float lo, float hi) {
  if constexpr (Out == KvDevDtype::kBF16) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
  } else {
    const __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
  }
}
// f32x2_to_model_cvt with a NaN half pinned to SPEC §7.3 / §4's canonical 0x7FFF, sign
// dropped.
template <KvDevDtype Out>
__device__ __forceinline__ uint32_t f32x2_to_model(float lo, float hi) {
  uint32_t y = f32x2_to_model_cvt<Out>(lo, hi);
  if (isnan(lo)) y = (y & 0xFFFF0000u) | 0x7FFFu;
  if (isnan(hi)) y = (y & 0x0000FFFFu) | 0x7FFF0000u;
  return y;
}
template <KvDevDtype Out>
__device__ __forceinline__ uint16_t f32_to_model(float y) {
  return static_cast<uint16_t>(f32x2_to_model<Out>(y, y));
}

// Two floats to two FP8 codes (SATFINITE, one cvt), lo in bits 0-7; NaN -> 0x7F.
template <KvDevDtype C>
__device__ __forceinline__ uint32_t f32x2_to_fp8(float lo, float hi) {
  uint32_t q = dev::cvt_fp8x2<kFp8Kind<C>>(lo, hi);
  if (isnan(lo)) q = (q & 0xFF00u) | 0x7Fu;
  if (isnan(hi)) q = (q & 0x00FFu) | 0x7F00u;
  return q;
}

// gather_kv's output row `row` -> the (block, token in it) it reads (SPEC §7.5): its
// sequence i, the last with cu_seqlens_k[i] <= row (binary search), and table position
// start_i + (row - cu[i]) of that sequence's block_table row.
__device__ __forceinline__ KvSlotPos gather_source(const GatherKvLaunch& a, int64_t row) {
  int32_t lo = 0, hi = a.num_seqs;  // invariant: cu[lo] <= row < cu[hi]
  while (hi - lo > 1) {
    const int32_t mid = (lo + hi) / 2;
    if (a.cu_seqlens_k[mid] <= row) lo = mid; else hi = mid;
  }
  const int64_t start = a.seq_starts ? kv_seq_start(a.seq_starts[lo], a.block_unit, a.layout.block_size) : 0;
  const KvSlotPos p = a.layout.split(start + row - a.cu_seqlens_k[lo]);  // (table column, token in its block)
  return {a.block_table[int64_t{lo} * a.max_blocks + p.block], p.token};
}

// The scale one unit (one head of K or V) uses: s, and for an FP8 store its
// reciprocal RN(1/s) (recipe sglang multiplies by it; spec and vllm divide, through
// dev::div_rn, which takes it and fast_div_ok(s)).
struct UnitScale {
  float s = 1.0f, rcp = 1.0f;
  bool fast = false;
};

// The elements of one head between two sides of a move: In -> Out, each a model dtype
// (2 bytes) or FP8 (1 byte). A copy (same dtype), a quantisation (model -> FP8, SPEC
// §7.3.1 recipe: x / s, or x * RN(1/s) with a NaN product sent to +max when Recip; ±Inf
// and overflow saturate in the SATFINITE cvt either way) or a dequantisation (FP8 ->
// model: RN(float(q) * s)). load/store move one vector of kVec elements (16 bytes of
// a model dtype, 8 of FP8), load1/store1 one element.
template <KvDevDtype In, KvDevDtype Out, bool Recip>
struct Elems {
  static constexpr bool kQuant = kIsFp8<Out> && !kIsFp8<In>;
  static constexpr bool kDequant = kIsFp8<In> && !kIsFp8<Out>;
  static constexpr int kInBytes = kIsFp8<In> ? 1 : 2;
  using Vec = std::conditional_t<kIsFp8<In>, uint2, uint4>;

  __device__ static float quantize(float x, const UnitScale& sc) {
    if constexpr (Recip) {
      const float y = __fmul_rn(x, sc.rcp);
      return isnan(y) ? kFp8Max<Out> : y;
    } else {
      return dev::div_rn(x, sc.s, sc.rcp, sc.fast);
    }
  }
  // Two elements packed in the low 32 (model) or 16 (FP8) bits -> two on the other side.
  __device__ static uint32_t pair(uint32_t w, const UnitScale& sc) {
    static_assert(kQuant || kDequant, "a copy converts nothing");
    if constexpr (kQuant) {
      return f32x2_to_fp8<Out>(quantize(model_to_f32<In>(static_cast<uint16_t>(w)), sc),
                               quantize(model_to_f32<In>(static_cast<uint16_t>(w >> 16)), sc));
    } else {
      const float2 f = dev::fp8x2_to_f32<kFp8Kind<In>>(w);
      return f32x2_to_model<Out>(__fmul_rn(f.x, sc.s), __fmul_rn(f.y, sc.s));
    }
  }
  __device__ static Vec load(const uint8_t* src, int32_t c) {
    return __ldg(reinterpret_cast<const Vec*>(src + kInBytes * c));
  }
  __device__ static void store(uint8_t* dst, int32_t c, const Vec& x, const UnitScale& sc) {
    if constexpr (kQuant && !Recip) {
      // A division by s: when the scale and all 8 elements are in div_rn's fast range
      // (the common case), one branch for the vector, 3 instructions per element and
      // no NaN to pin; else element by element.
      const uint32_t w[4] = {x.x, x.y, x.z, x.w};
      float f[kVec];
      bool fast = sc.fast;
#pragma unroll
      for (int i = 0; i < kVec; ++i) {
        f[i] = model_to_f32<In>(static_cast<uint16_t>(w[i / 2] >> (16 * (i % 2))));
        fast &= dev::fast_div_operand(f[i]);
      }
      if (fast) {
        uint32_t q[4];
#pragma unroll
        for (int j = 0; j < 4; ++j)
          q[j] = dev::cvt_fp8x2<kFp8Kind<Out>>(dev::div_rn_fast(f[2 * j], sc.s, sc.rcp),
                                               dev::div_rn_fast(f[2 * j + 1], sc.s, sc.rcp));
        *reinterpret_cast<uint2*>(dst + c) = make_uint2(q[0] | q[1] << 16, q[2] | q[3] << 16);
        return;
      }
    }
    if constexpr (kQuant) {
      *reinterpret_cast<uint2*>(dst + c) =
          make_uint2(pair(x.x, sc) | pair(x.y, sc) << 16, pair(x.z, sc) | pair(x.w, sc) << 16);
    } else if constexpr (kDequant) {
      *reinterpret_cast<uint4*>(dst + 2 * c) =
          make_uint4(pair(x.x, sc), pair(x.x >> 16, sc), pair(x.y, sc), pair(x.y >> 16, sc));
    } else {
      *reinterpret_cast<uint4*>(dst + 2 * c) = x;  // a 16-bit copy
    }
  }
  __device__ static uint32_t load1(const uint8_t* src, int32_t c) {
    return kIsFp8<In> ? uint32_t{src[c]} : uint32_t{src[2 * c]} | uint32_t{src[2 * c + 1]} << 8;
  }
  __device__ static void store1(uint8_t* dst, int32_t c, uint32_t x, const UnitScale& sc) {
    if constexpr (kQuant) {
      dst[c] = static_cast<uint8_t>(pair(x, sc));  // the high half is a zero
    } else {
      uint32_t y = x;
      if constexpr (kDequant) y = pair(x, sc);
      dst[2 * c] = static_cast<uint8_t>(y);
      dst[2 * c + 1] = static_cast<uint8_t>(y >> 8);
    }
  }
};

// One head of one side: d elements src -> dst, thread `lane` of a group of `width`,
// up to kSteps vectors per trip: their loads first (issued before `write`, which may
// wait on a slot load), then their conversions and stores. Nothing is written unless
// `write`.
template <KvDevDtype In, KvDevDtype Out, int V, bool Recip = false>
__device__ __forceinline__ void move_head(const uint8_t* __restrict__ src, uint8_t* __restrict__ dst, bool write,
                                          int32_t d, const UnitScale& sc, int lane, int width) {
  using E = Elems<In, Out, Recip>;
  constexpr int kS = kSteps<In, Out>;
  if constexpr (V == kVec) {
    for (int32_t base = lane * kVec; base < d; base += width * kVec * kS) {
      typename E::Vec x[kS];
#pragma unroll
      for (int k = 0; k < kS; ++k)
        if (base + k * width * kVec < d) x[k] = E::load(src, base + k * width * kVec);
      if (!write) return;
#pragma unroll
      for (int k = 0; k < kS; ++k)
        if (base + k * width * kVec < d) E::store(dst, base + k * width * kVec, x[k], sc);
    }
  } else {
    if (!write) return;
    for (int32_t c = lane; c < d; c += width) E::store1(dst, c, E::load1(src, c), sc);
  }
}

// docs/spec.md §8.4: element c of the key head at `src` (model dtype M) after the
// rotation at row `row`'s position; x its bits. Outside the rotated range as it is.
template <KvDevDtype M>
__device__ __forceinline__ uint32_t rope_elem(const uint8_t* src, int32_t c, uint32_t x, const RopeArgs& q,
                                              int64_t row) {
  const int32_t k = c - q.rope_offset;
  if (k < 0 || k >= q.rot_dim) return x;
  const dev::RopePlace p = dev::rope_place(k, q.rot_dim, q.is_neox);
  const float* cs = q.cos_sin_cache + q.positions[row] * q.rot_dim;
  const uint8_t* y = src + 2 * (q.rope_offset + p.partner);
  const float other = model_to_f32<M>(static_cast<uint16_t>(y[0] | y[1] << 8));
  return f32_to_model<M>(
      dev::rope_value(model_to_f32<M>(static_cast<uint16_t>(x)), other, cs[p.j], cs[q.rot_dim / 2 + p.j], p.first));
}

// rope_head's fallback, for a vector on an end of the rotated range or of a layout
// dev::rope_chunk_fast refuses: element by element (rope_elem). Out of line: inlined,
// it raised the vector path's registers for shapes the common models never have.
template <KvDevDtype M>
__device__ __noinline__ uint4 rope_vec_slow(const uint8_t* src, int32_t e, uint4 x, RopeArgs q, int64_t row) {
  uint32_t w[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
  for (int i = 0; i < kVec; ++i) {
    const uint32_t y = rope_elem<M>(src, e + i, (w[i / 2] >> (16 * (i % 2))) & 0xFFFFu, q, row);
    w[i / 2] = (w[i / 2] & (0xFFFF0000u >> (16 * (i % 2)))) | (y << (16 * (i % 2)));
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

// A key head with the fused RoPE (§8.4) on the vector path: move_head's loads and
// stores (the same quantisation), each vector rotated in registers in between. A vector
// inside the rotated range with dev::rope_chunk_fast's layout takes its NeoX partner
// vector (same head; loaded with the row's) and its table values by vector loads; a
// vector on an end of the range, or of another layout, goes element by element
// (rope_elem). f32x2_to_model's halves are f32_to_model's bits: both agree.
template <KvDevDtype M, KvDevDtype Out, bool Recip>
__device__ __forceinline__ void rope_head(const uint8_t* __restrict__ src, uint8_t* __restrict__ dst, bool write,
                                          int32_t d, const UnitScale& sc, int lane, int width, const RopeArgs& q,
                                          int64_t row) {
  using E = Elems<M, Out, Recip>;
  static_assert(!kIsFp8<M>, "a model-dtype key");
  constexpr int kS = kSteps<M, Out>;
  const float* cs = q.cos_sin_cache + q.positions[row] * q.rot_dim;  // once per head
  for (int32_t base = lane * kVec; base < d; base += width * kVec * kS) {
    uint4 x[kS], p[kS];
    bool fast[kS];
#pragma unroll
    for (int k = 0; k < kS; ++k) {
      const int32_t e = base + k * width * kVec, k0 = e - q.rope_offset;
      fast[k] = e < d && k0 >= 0 && k0 + kVec <= q.rot_dim && dev::rope_chunk_fast(k0, q.rot_dim, q.is_neox);
      p[k] = make_uint4(0, 0, 0, 0);
      if (e < d) x[k] = E::load(src, e);
      if (fast[k]) {  // e % 8 == 0, half % 8 == 0: the partner vector is aligned
        if (q.is_neox) p[k] = E::load(src, e + dev::rope_partner_offset(k0, q.rot_dim));
      }
    }
    if (!write) return;
#pragma unroll
    for (int k = 0; k < kS; ++k) {
      const int32_t e = base + k * width * kVec, k0 = e - q.rope_offset;
      if (e >= d) continue;
      if (fast[k]) {
        uint32_t w[4] = {x[k].x, x[k].y, x[k].z, x[k].w};
        const uint32_t pw[4] = {p[k].x, p[k].y, p[k].z, p[k].w};
        float f[kVec], y[kVec];
#pragma unroll
        for (int i = 0; i < kVec; ++i) {
          f[i] = model_to_f32<M>(static_cast<uint16_t>(w[i / 2] >> (16 * (i % 2))));
          y[i] = model_to_f32<M>(static_cast<uint16_t>(pw[i / 2] >> (16 * (i % 2))));
        }
        float c[kVec] = {}, s[kVec] = {};  // loaded here, not with the rows: 146 -> ~100 registers at kS = 4
        dev::rope_chunk_table(cs, k0, q.rot_dim, q.is_neox, c, s);
        dev::rope_chunk_apply(f, y, c, s, k0, q.rot_dim, q.is_neox);
#pragma unroll
        for (int j = 0; j < 4; ++j) w[j] = f32x2_to_model<M>(f[2 * j], f[2 * j + 1]);
        x[k] = make_uint4(w[0], w[1], w[2], w[3]);
      } else if (k0 + kVec > 0 && k0 < q.rot_dim) {
        x[k] = rope_vec_slow<M>(src, e, x[k], q, row);
      }
      E::store(dst, e, x[k], sc);
    }
  }
}

// rope_head for NeoX over the whole head in one trip (rope_pairs_in_thread): vector k
// of a thread and its vector k + kS/2 are each other's partners and share their table
// columns, so no partner is loaded twice and each pair's 16 table floats are loaded
// once. The position and table loads go out with the row's (the position clamped into
// the table: a padding row's is not read otherwise), not after the slot's, so a unit
// waits on one round trip, not three.
template <KvDevDtype M, KvDevDtype Out, bool Recip>
__device__ __forceinline__ void rope_head_pairs(const uint8_t* __restrict__ src, uint8_t* __restrict__ dst, bool write,
                                                const UnitScale& sc, int lane, int width, const RopeArgs& q,
                                                int64_t row) {
  using E = Elems<M, Out, Recip>;
  static_assert(!kIsFp8<M>, "a model-dtype key");
  constexpr int kS = kSteps<M, Out>, kH = kS / 2;
  const int64_t pos = q.positions[row];
  const float* cs = q.cos_sin_cache + (static_cast<uint64_t>(pos) < static_cast<uint64_t>(q.max_position) ? pos : 0) *
                                          q.rot_dim;
  const int32_t half = q.rot_dim / 2;
  uint4 x[kS];
#pragma unroll
  for (int k = 0; k < kS; ++k) x[k] = E::load(src, (lane + k * width) * kVec);
  float c[kH][kVec], s[kH][kVec];
#pragma unroll
  for (int k = 0; k < kH; ++k) {
    const int32_t j0 = (lane + k * width) * kVec;
    dev::load_table4(cs + j0, c[k]);
    dev::load_table4(cs + j0 + 4, c[k] + 4);
    dev::load_table4(cs + half + j0, s[k]);
    dev::load_table4(cs + half + j0 + 4, s[k] + 4);
  }
  if (!write) return;
#pragma unroll
  for (int k = 0; k < kH; ++k) {
    const uint32_t aw[4] = {x[k].x, x[k].y, x[k].z, x[k].w}, bw[4] = {x[k + kH].x, x[k + kH].y, x[k + kH].z, x[k + kH].w};
    uint32_t ra[4], rb[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float a0 = model_to_f32<M>(static_cast<uint16_t>(aw[j])), a1 = model_to_f32<M>(static_cast<uint16_t>(aw[j] >> 16));
      const float b0 = model_to_f32<M>(static_cast<uint16_t>(bw[j])), b1 = model_to_f32<M>(static_cast<uint16_t>(bw[j] >> 16));
      ra[j] = f32x2_to_model<M>(dev::rope_value(a0, b0, c[k][2 * j], s[k][2 * j], true),
                                dev::rope_value(a1, b1, c[k][2 * j + 1], s[k][2 * j + 1], true));
      rb[j] = f32x2_to_model<M>(dev::rope_value(b0, a0, c[k][2 * j], s[k][2 * j], false),
                                dev::rope_value(b1, a1, c[k][2 * j + 1], s[k][2 * j + 1], false));
    }
    x[k] = make_uint4(ra[0], ra[1], ra[2], ra[3]);
    x[k + kH] = make_uint4(rb[0], rb[1], rb[2], rb[3]);
  }
#pragma unroll
  for (int k = 0; k < kS; ++k) E::store(dst, (lane + k * width) * kVec, x[k], sc);
}

// Which RoPE a store_kv_kernel instantiation applies to the key rows.
enum KvRope : int { kNoRope = 0, kRopeAny = 1, kRopePairs = 2 };  // kRopePairs: rope_head_pairs

// Rope: a fused RoPE on the key rows (§8.4), a separate instantiation so that its
// registers never cost the plain store occupancy; kRopePairs where rope_pairs_in_thread
// holds (the engines' NeoX over a whole head), kRopeAny else. With an FP8 cache it asks
// ptxas for 3 resident CTAs (80 registers; kRopeAny spills at most 44 bytes where 96-104
// registers left 2, kRopePairs none): H100, 262,144 tokens 8x128, kRopeAny e4m3 56.4 ->
// 61.0 % of the copy, twice (4 CTAs: 58.0). A model-dtype cache keeps ptxas's choice
// (kRopePairs: 64 registers; kRopeAny 76: 4 CTAs measured 80.6 then 76.0 % against 75.7,
// no gain that repeats). kRopePairs against kRopeAny, same process (H100, 2026-12-06):
// bf16 75.6 -> 82.2 %, e4m3 60.9 -> 80.1 % of the copy.
template <KvDevDtype Cache, int Rope>
constexpr int kStoreKvMinCtas = Rope != kNoRope && kIsFp8<Cache> ? 3 : 1;
template <KvDevDtype KeyIn, KvDevDtype ValueIn, KvDevDtype Cache, int V, bool Recip, int Rope>
__global__ void __launch_bounds__(kThreads, (kStoreKvMinCtas<Cache, Rope>)) store_kv_kernel(StoreKvLaunch a, int width, const DeviceStatus* status) {
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
    // -1 padding writes nothing (slot 0 included); its row is still read, so the
    // row loads need not wait for the slot's.
    const bool write = slot >= 0;
    uint8_t* dst = static_cast<uint8_t*>(w.side ? a.v_cache : a.k_cache) +
                   kCacheBytes * L.slot_offset(w.side, write ? slot : 0, w.head);
    UnitScale sc;
    if constexpr (kIsFp8<Cache>) {
      sc.s = (w.side ? a.v_scale : a.k_scale)[a.per_head_scale ? w.head : 0];
      sc.rcp = __frcp_rn(sc.s);  // = __fdiv_rn(1, s): recipe sglang's RN(1/s)
      sc.fast = !Recip && dev::fast_div_ok(sc.s);
    }
    if constexpr (Rope == kRopePairs) {
      if (w.side == 0) {
        rope_head_pairs<KeyIn, kIsFp8<Cache> ? Cache : KeyIn, Recip>(src, dst, write, sc, lane, width, a.rope, w.row);
        continue;
      }
    } else if constexpr (Rope == kRopeAny) {
      if (w.side == 0) {
        if constexpr (V == kVec) {
          rope_head<KeyIn, kIsFp8<Cache> ? Cache : KeyIn, Recip>(src, dst, write, L.head_dim, sc, lane, width,
                                                                  a.rope, w.row);
        } else {  // unaligned rows or head_dim % 8 != 0: element by element
          using E = Elems<KeyIn, kIsFp8<Cache> ? Cache : KeyIn, Recip>;
          if (write)
            for (int32_t c = lane; c < L.head_dim; c += width)
              E::store1(dst, c, rope_elem<KeyIn>(src, c, E::load1(src, c), a.rope, w.row), sc);
        }
        continue;
      }
    }
    if (w.side == 0)
      move_head<KeyIn, kIsFp8<Cache> ? Cache : KeyIn, V, Recip>(src, dst, write, L.head_dim, sc, lane, width);
    else
      move_head<ValueIn, kIsFp8<Cache> ? Cache : ValueIn, V, Recip>(src, dst, write, L.head_dim, sc, lane, width);
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
    const KvSlotPos at = gather_source(a, w.row);
    const uint8_t* src = static_cast<const uint8_t*>(w.side ? a.v_cache : a.k_cache) +
                         kCacheBytes * L.offset(w.side, at.block, at.token, w.head);
    const KvDevRowsOut& o = w.side ? a.out_v : a.out_k;
    uint8_t* dst = static_cast<uint8_t*>(o.data) + 2 * (w.row * o.token_stride + w.head * o.head_stride);
    UnitScale sc;
    if constexpr (kIsFp8<Cache>) sc.s = (w.side ? a.v_scale : a.k_scale)[a.per_head_scale ? w.head : 0];
    if (w.side == 0)
      move_head<Cache, kIsFp8<Cache> ? KeyOut : Cache, V>(src, dst, true, L.head_dim, sc, lane, width);
    else
      move_head<Cache, kIsFp8<Cache> ? ValueOut : Cache, V>(src, dst, true, L.head_dim, sc, lane, width);
  }
  dev::pdl_trigger();
}

// ---- NVFP4 (e2m1) caches, SPEC §7.9 ----
// The store's work unit is (token row, K or V, head, chunk of G 16-element groups), G =
// 4, 2 or 1 (the largest that divides head_dim / 16; 2 for the NeoX-pairs RoPE store
// wherever two-group units fit: nvfp4_store_groups): one thread per unit, so each
// group's amax and scale stay in one thread's registers and the per-unit work (unit
// split, slot, offsets) is paid once per G groups; a thread issues its row loads with
// the slot's, before it waits on either. The gather moves 8-element pieces, a group of
// threads per head as the dense gather (gather_nvfp4_kernel). Accesses are as wide as
// each address allows (checked per unit: rows and records may sit at any even / any
// byte offset), never wider. Numerics as the cpu backend's nvfp4_groups /
// dequantize_nvfp4_head: _rn intrinsics, IEEE division (or dev::div_rn, equal to it),
// no FMA, and a NaN never relied on for its sign (pinned to SPEC §7.9's codes).
constexpr int kNvfp4Group = 16;  // elements per e4m3 scale

// The e2m1 store's work: G-group units a head (head_dim % 16 == 0, validated), and
// units in all (n rows, K and V, every head).
template <int G>
__host__ __device__ constexpr int32_t nvfp4_units_per_head(int32_t head_dim) {
  return head_dim / (kNvfp4Group * G);
}
template <int G>
__host__ __device__ int64_t nvfp4_units(const StoreKvLaunch& a) {
  return a.n * 2 * a.layout.num_kv_heads * nvfp4_units_per_head<G>(a.layout.head_dim);
}
// G groups of 16 model elements (32 G bytes, 2-byte aligned: validated) at p ->
// w[k][i / 2] holds element i of group k in its low (i even) or high half.
template <int G>
__device__ __forceinline__ void load_groups(const uint8_t* p, uint32_t (&w)[G][8]) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  if (a % 16 == 0) {
#pragma unroll
    for (int k = 0; k < G; ++k) {
      const uint4 x = __ldg(reinterpret_cast<const uint4*>(p) + 2 * k);
      const uint4 y = __ldg(reinterpret_cast<const uint4*>(p) + 2 * k + 1);
      w[k][0] = x.x, w[k][1] = x.y, w[k][2] = x.z, w[k][3] = x.w, w[k][4] = y.x, w[k][5] = y.y, w[k][6] = y.z,
      w[k][7] = y.w;
    }
  } else if (a % 4 == 0) {
#pragma unroll
    for (int k = 0; k < G; ++k)
#pragma unroll
      for (int j = 0; j < 8; ++j) w[k][j] = __ldg(reinterpret_cast<const uint32_t*>(p) + 8 * k + j);
  } else {
    const uint16_t* h = reinterpret_cast<const uint16_t*>(p);
#pragma unroll
    for (int k = 0; k < G; ++k)
#pragma unroll
      for (int j = 0; j < 8; ++j) w[k][j] = uint32_t{__ldg(h + 16 * k + 2 * j)} | uint32_t{__ldg(h + 16 * k + 2 * j + 1)} << 16;
  }
}
template <int G>
__device__ __forceinline__ void store_codes(uint8_t* p, const uint32_t (&q)[2 * G]) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  if (G % 2 == 0 && a % 16 == 0) {
#pragma unroll
    for (int k = 0; k < G / 2; ++k)
      reinterpret_cast<uint4*>(p)[k] = make_uint4(q[4 * k], q[4 * k + 1], q[4 * k + 2], q[4 * k + 3]);
  } else if (a % 8 == 0) {
#pragma unroll
    for (int k = 0; k < G; ++k) reinterpret_cast<uint2*>(p)[k] = make_uint2(q[2 * k], q[2 * k + 1]);
  } else if (a % 4 == 0) {
#pragma unroll
    for (int j = 0; j < 2 * G; ++j) reinterpret_cast<uint32_t*>(p)[j] = q[j];
  } else {
#pragma unroll
    for (int b = 0; b < 8 * G; ++b) p[b] = static_cast<uint8_t>(q[b / 4] >> (8 * (b % 4)));
  }
}

// One side's global decode scale g and what every group of a store needs from it:
// RN(6 g) with its reciprocal, for dev::div_rn.
struct Nvfp4Side {
  float g, six_g, rcp_six_g;
  bool fast;
};
__device__ __forceinline__ Nvfp4Side nvfp4_side(float g) {
  const float six_g = __fmul_rn(6.0f, g);
  return {g, six_g, __frcp_rn(six_g), dev::fast_div_ok(six_g)};
}

// SPEC §7.9's store of one group (a group of the cpu's nvfp4_groups): the 16 elements in w (model
// dtype In) -> the scale byte (returned) and the 8 code bytes in q (element 2i in the
// low nibble of byte i). amax skips NaN (fmaxf returns the other operand); sf =
// cvt_e4m3(amax / RN(6 g)) SATFINITE (0 for amax 0; a NaN quotient, from Inf / Inf, is
// 0x7F as the cpu's), the division by dev::div_rn (IEEE for a model-dtype amax, the
// only kind there is); inv = 1 / RN(float(sf) * g) as __frcp_rn (IEEE's correctly
// rounded reciprocal: the quotient 1 / y), 0 when amax or float(sf) is not > 0; code =
// cvt_e2m1(RN(x * inv)), 0 for a NaN product.
template <KvDevDtype In>
__device__ __forceinline__ uint8_t nvfp4_quantize(const uint32_t (&w)[8], const Nvfp4Side& g, uint32_t* q) {
  float x[kNvfp4Group];
  float amax = 0.0f;
#pragma unroll
  for (int i = 0; i < kNvfp4Group; ++i) {
    x[i] = model_to_f32<In>(static_cast<uint16_t>(w[i / 2] >> (16 * (i % 2))));
    amax = fmaxf(amax, fabsf(x[i]));
  }
  uint8_t sf = 0;
  if (amax != 0.0f) {
    const float t = dev::div_rn(amax, g.six_g, g.rcp_six_g, g.fast);
    // >= 448 (Inf too) is 0x7E under SATFINITE either way: clamped, so no cvt corner.
    sf = isnan(t) ? uint8_t{0x7F} : dev::cvt_e4m3(t < 448.0f ? t : 448.0f);
  }
  const float s = dev::e4m3_to_f32(sf);
  const float inv = (amax > 0.0f && s > 0.0f) ? __frcp_rn(__fmul_rn(s, g.g)) : 0.0f;
  uint32_t b[kNvfp4Group / 2];  // byte i: elements 2i (low nibble) and 2i + 1
#pragma unroll
  for (int i = 0; i < kNvfp4Group / 2; ++i)
    b[i] = dev::cvt_e2m1x2</*kNanZero=*/true>(__fmul_rn(x[2 * i], inv), __fmul_rn(x[2 * i + 1], inv));
  q[0] = dev::pack_bytes4(b[0], b[1], b[2], b[3]);
  q[1] = dev::pack_bytes4(b[4], b[5], b[6], b[7]);
  return sf;
}

// nvfp4_rope_pairs_apply's shuffles and arithmetic, the table read as float4s where
// Aligned16, else as floats: one copy of the loop each, chosen once a call by a uniform
// branch. A load_table4(p, f, aligned16) a float4 compiled to its two forms predicated,
// the five loads issued for every four floats (sm_90 SASS of the two-group kernel: 80
// table loads a unit where 16 do).
template <KvDevDtype In, int G, bool Aligned16>
__device__ __forceinline__ void nvfp4_rope_pairs_rotate(uint32_t (&x)[G][8], const float* cs, int32_t half,
                                                        int32_t chunk, int32_t chunks, bool rotate) {
#pragma unroll
  for (int k = 0; k < G; ++k) {
    uint32_t y[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) y[i] = __shfl_xor_sync(0xFFFFFFFFu, x[k][i], chunks / 2);
    if (!rotate) continue;
    const int32_t e0 = kNvfp4Group * (G * chunk + k);
    const bool first = e0 < half;
    const int32_t j0 = first ? e0 : e0 - half;
    // The first half's x c - y s as x c + (-y) s, as dev::rope_value takes it, with the
    // partners' sign bits flipped once a word rather than an operand's sign per element.
    const uint32_t flip = first ? 0x80008000u : 0u;  // both halves' sign bits (bf16 and fp16 alike)
#pragma unroll
    for (int h = 0; h < 2; ++h) {  // 8 elements (4 words) at a time: 16 table floats live
      float c[8], s[8];
      dev::load_table4(cs + j0 + 8 * h, c, Aligned16);
      dev::load_table4(cs + j0 + 8 * h + 4, c + 4, Aligned16);
      dev::load_table4(cs + half + j0 + 8 * h, s, Aligned16);
      dev::load_table4(cs + half + j0 + 8 * h + 4, s + 4, Aligned16);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const uint32_t xw = x[k][4 * h + i], yw = y[4 * h + i] ^ flip;
        const float a0 = model_to_f32<In>(static_cast<uint16_t>(xw)), a1 = model_to_f32<In>(static_cast<uint16_t>(xw >> 16));
        const float b0 = model_to_f32<In>(static_cast<uint16_t>(yw)), b1 = model_to_f32<In>(static_cast<uint16_t>(yw >> 16));
        // Unpinned: a NaN of any bits quantises alike (nvfp4_quantize: fmaxf skips it, its
        // code is 0), so f32x2_to_model's 0x7FFF pin would be dead work here.
        x[k][4 * h + i] = f32x2_to_model_cvt<In>(dev::rope_value(a0, b0, c[2 * i], s[2 * i], false),
                                                 dev::rope_value(a1, b1, c[2 * i + 1], s[2 * i + 1], false));
      }
    }
  }
}
// The e2m1 store's NeoX-pairs RoPE (nvfp4_rope_pairs: NeoX from element 0 over the whole
// head, a power-of-two number m2 >= 2 of G-group units a head): a unit's 16 G elements
// lie on one side of their pairs and their partners are the same words of the unit
// m2 / 2 lanes away (lane ^ m2 / 2: units run chunk-fastest in lane order, warps start
// at multiples of 32), so each group's partner comes by 8 shuffles, not 16 loads, and
// its 32 table floats as float4s. Every lane calls it (the shuffles); `rotate` says
// whether this one's x changes (a key row's unit, padding rows too: their result is
// never written, and waiting for the slot before the position and table loads would
// chain three round trips). The position is clamped into the table, as rope_head_pairs
// does, for a padding row's. The arithmetic is rope_value's, the result rounded to the
// model dtype: rope_elem's bits but for a NaN's (left as the cvt gives it, below), so
// nvfp4_quantize, which reads every NaN alike, writes rope_elem's codes and scales.
template <KvDevDtype In, int G>
__device__ __forceinline__ void nvfp4_rope_pairs_apply(uint32_t (&x)[G][8], const RopeArgs& q, int32_t chunk,
                                                       int32_t chunks, int64_t row, bool rotate) {
  const int32_t half = q.rot_dim / 2;
  const int64_t pos = rotate ? q.positions[row] : 0;
  const float* cs =
      q.cos_sin_cache + (static_cast<uint64_t>(pos) < static_cast<uint64_t>(q.max_position) ? pos : 0) * q.rot_dim;
  // Every float4 starts a multiple of 4 floats into its row (j0 and half are multiples
  // of 16 under nvfp4_rope_pairs, then + 8h, + 4) and a row is rot_dim floats, a
  // multiple of 64: each is 16-byte aligned exactly where the table is.
  if (reinterpret_cast<uintptr_t>(q.cos_sin_cache) % 16 == 0)
    nvfp4_rope_pairs_rotate<In, G, true>(x, cs, half, chunk, chunks, rotate);
  else
    nvfp4_rope_pairs_rotate<In, G, false>(x, cs, half, chunk, chunks, rotate);
}

// One store_kv unit into an e2m1 cache (G groups of a head, unit u; live false: a lane
// past the units, which reads unit 0's row and writes nothing): the codes stored, the
// G scale bytes in sf; returns where the first goes (the k-th at + k * sf_step), or
// nullptr where nothing is written (-1 padding, not live). Rope: the key rows' fused
// RoPE (§8.4) before the quantisation: kRopeAny element by element (rope_elem, the bits
// the cpu's rotated rows hold), kRopePairs by nvfp4_rope_pairs_apply (every lane).
template <KvDevDtype In, int Rope, int G>
__device__ __forceinline__ uint8_t* store_nvfp4_unit(const StoreKvLaunch& a, int64_t u, bool live, uint8_t (&sf)[G]) {
  const KvPagedLayout& L = a.layout;
  const int32_t chunks = nvfp4_units_per_head<G>(L.head_dim);
  // kRopePairs rotates K units only: one side a warp (chunk_unit_of_sides), else chunk_unit_of.
  const ChunkUnit w = Rope == kRopePairs ? chunk_unit_of_sides(live ? u : 0, L.num_kv_heads, chunks, a.n)
                                         : chunk_unit_of(live ? u : 0, L.num_kv_heads, chunks);
  const int32_t slot = live ? a.slot_mapping[w.row] : -1;
  const float g = (w.side ? a.v_scale : a.k_scale)[0];
  const KvDevRows& in = w.side ? a.value : a.key;
  const uint8_t* head = static_cast<const uint8_t*>(in.data) + 2 * (w.row * in.token_stride + w.head * in.head_stride);
  uint32_t x[G][8];
  load_groups<G>(head + 2 * kNvfp4Group * G * w.chunk, x);  // issued with the slot's and g's loads
  if constexpr (Rope == kRopePairs)
    nvfp4_rope_pairs_apply<In, G>(x, a.rope, w.chunk, chunks, w.row, live && w.side == kKvSideK);
  if (slot < 0) return nullptr;
  if constexpr (Rope == kRopeAny) {
    if (w.side == kKvSideK) {
#pragma unroll
      for (int k = 0; k < G; ++k)
#pragma unroll
        for (int i = 0; i < kNvfp4Group; ++i) {
          const int32_t c = kNvfp4Group * (G * w.chunk + k) + i;
          const uint32_t r = rope_elem<In>(head, c, (x[k][i / 2] >> (16 * (i % 2))) & 0xFFFFu, a.rope, w.row);
          x[k][i / 2] = (x[k][i / 2] & (0xFFFF0000u >> (16 * (i % 2)))) | ((r & 0xFFFFu) << (16 * (i % 2)));
        }
    }
  }
  const Nvfp4Side gs = nvfp4_side(g);
  uint32_t q[2 * G];
#pragma unroll
  for (int k = 0; k < G; ++k) sf[k] = nvfp4_quantize<In>(x[k], gs, q + 2 * k);
  const KvSlotPos p = L.split(slot);
  uint8_t* data = static_cast<uint8_t*>(w.side ? a.v_cache : a.k_cache) +
                  kv_dev_byte_offset(KvDevDtype::kE2M1, L.offset(w.side, p.block, p.token, w.head));
  store_codes<G>(data + (kNvfp4Group / 2) * G * w.chunk, q);
  return static_cast<uint8_t*>(w.side ? a.v_sf : a.k_sf) + a.sf.offset(p.block, p.token, w.head, G * w.chunk);
}

// The scale bytes of a warp's units, written by the whole warp (every lane calls it):
// lane l holds G bytes, byte k for sfp + k * step (sfp nullptr: none). In trip j each
// lane writes byte 32 j + l of the warp's 32 G in lane-major order, i.e. byte l % G of
// lane (32 j + l) / G, so one store instruction carries 32 / G lanes' bytes. A lane's
// own G bytes would take G instructions of one byte per lane. With the 4-token
// interleave (step 4) a token's head_dim / 16 bytes of a head lie 4 apart in the
// 4 x head_dim / 16 bytes that three other tokens share (one 32-byte sector at 128):
// one byte per lane splits them over G partial writes, this writes them in one, as the
// access-pattern floor does (H100, bench_cuda's "kv e2m1 interleave4 8x128" store: 47.1
// -> 67.9 % of the copy, its floor 63.6 %; docs/cuda.md).
template <int G>
__device__ __forceinline__ void store_scales_warp(uint8_t* sfp, const uint8_t (&sf)[G], int32_t step) {
  uint32_t word = 0;
#pragma unroll
  for (int k = 0; k < G; ++k) word |= uint32_t{sf[k]} << (8 * k);
  const int lane = static_cast<int>(threadIdx.x & 31u), k = lane % G;
  const auto at = static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(sfp));
#pragma unroll
  for (int j = 0; j < G; ++j) {
    const int src = (32 * j + lane) / G;
    const uint32_t v = __shfl_sync(0xFFFFFFFFu, word, src);
    uint8_t* d = reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(__shfl_sync(0xFFFFFFFFu, at, src)));
    if (d != nullptr) d[k * step] = static_cast<uint8_t>(v >> (8 * k));
  }
}

// store_kv into an e2m1 cache, G groups per thread (store_nvfp4_unit): the grid-stride
// loop runs per warp, every lane to the end, a lane past the units holding no bytes.
// WarpScales: the scale bytes warp-wide (store_scales_warp), else each lane writes its
// own G bytes. The shuffles pay only where a token's bytes of a head are spread over a
// shared sector, the 4-token interleave with G > 1; in the linear layouts a lane's G
// bytes are adjacent and the shuffles cost 0.8-3.0 points (H200, 262,144 tokens, % of
// the copy, this split / warp-wide everywhere: 8x128 62.1 / 59.1, 8x96 54.2 / 53.2,
// 8x80 44.5 / 43.7; interleave4 8x128 per-lane 43.1, warp-wide 58.1).
template <KvDevDtype In, int Rope, int G, bool WarpScales>
__global__ void __launch_bounds__(kThreads) store_nvfp4_kernel(StoreKvLaunch a, const DeviceStatus* status) {
  static_assert(32 % G == 0 && kThreads % 32 == 0, "whole warps, G bytes a lane");
  dev::pdl_wait();
  if (dev::failed(status)) return;  // validation found an error: write nothing
  const int64_t units = nvfp4_units<G>(a);
  const int32_t sf_step = a.sf.interleave4 ? 4 : 1;  // a group's scale byte from the previous one's
  const int64_t lane = threadIdx.x & 31u;
  for (int64_t u0 = int64_t{blockIdx.x} * blockDim.x + threadIdx.x - lane; u0 < units;
       u0 += int64_t{gridDim.x} * blockDim.x) {
    uint8_t sf[G] = {};
    uint8_t* sfp = store_nvfp4_unit<In, Rope, G>(a, u0 + lane, u0 + lane < units, sf);
    if constexpr (WarpScales) {
      store_scales_warp<G>(sfp, sf, sf_step);
    } else if (sfp != nullptr) {
#pragma unroll
      for (int k = 0; k < G; ++k) sfp[k * sf_step] = sf[k];
    }
  }
  dev::pdl_trigger();
}

// Eight e2m1 codes (a 32-bit word, element j in nibble j) times a scale s that is a
// bf16 value (every e4m3 value is) -> four bf16x2 words, elements 2i / 2i + 1 in the
// low / high half of word i, each exactly e2m1(code) * s. The codes' bf16 bytes come
// from two byte permutations over 8-entry tables (the magnitudes 0, .5, 1, 1.5, 2, 3,
// 4, 6 are bf16 0x0000, 0x3F00, 0x3F80, 0x3FC0, 0x4000, 0x4040, 0x4080, 0x40C0), the
// nibbles' sign bits moved to the bytes' top bits; then one bf16x2 multiply per pair,
// exact (at most 2 x 4 significant bits, exponents far from bf16's limits).
__device__ __forceinline__ void e2m1x8_times(uint32_t q, uint32_t ss, uint32_t (&p)[4]) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const uint32_t c = (q >> (16 * h)) & 0xFFFFu;  // elements 4h .. 4h + 3
    const uint32_t sel = c & 0x7777u;
    const uint32_t lo = __byte_perm(0xC0800000u, 0xC0804000u, sel);
    const uint32_t x = __byte_perm(c, 0u, 0x1100u);  // bytes c0 c0 c1 c1
    const uint32_t hi = __byte_perm(0x3F3F3F00u, 0x40404040u, sel) | ((x << 4) & 0x00800080u) | (x & 0x80008000u);
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const uint32_t v = __byte_perm(lo, hi, i ? 0x7362u : 0x5140u);  // bf16 elements 2i, 2i + 1 of the four
      const __nv_bfloat162 prod =
          __hmul2_rn(*reinterpret_cast<const __nv_bfloat162*>(&v), *reinterpret_cast<const __nv_bfloat162*>(&ss));
      p[2 * h + i] = *reinterpret_cast<const uint32_t*>(&prod);
    }
  }
}

// Eight elements of one e2m1 group half: codes q, scale byte sf, global scale g ->
// four Out pairs, element = RN_Out(RN(RN(e2m1(q) * float(sf)) * g)). A NaN (a 0x7F /
// 0xFF scale byte, or 0 * Inf from g) is pinned as f32x2_to_model pins it; where
// neither can happen (the scale a number and g finite: every product is a number) the
// pairs convert without the checks.
template <KvDevDtype Out>
__device__ __forceinline__ uint4 nvfp4_decode8(uint32_t q, uint8_t sf, float g) {
  const float s = dev::e4m3_to_f32(sf);
  const uint32_t sb = __float_as_uint(s) >> 16;  // exact: an e4m3 value (or NaN) as bf16
  uint32_t p[4];
  e2m1x8_times(q, sb | sb << 16, p);
  uint32_t y[4];
  if (!isnan(s) && isfinite(g)) {
#pragma unroll
    for (int i = 0; i < 4; ++i)
      y[i] = f32x2_to_model_cvt<Out>(__fmul_rn(__uint_as_float(p[i] << 16), g),
                                     __fmul_rn(__uint_as_float(p[i] & 0xFFFF0000u), g));
  } else {
#pragma unroll
    for (int i = 0; i < 4; ++i)
      y[i] = f32x2_to_model<Out>(__fmul_rn(__uint_as_float(p[i] << 16), g), __fmul_rn(__uint_as_float(p[i] & 0xFFFF0000u), g));
  }
  return make_uint4(y[0], y[1], y[2], y[3]);
}

// gather_kv from an e2m1 cache. Work unit = (output row, K or V, head) as the dense
// gather's: a group of `width` threads, the row's source found once per unit; thread
// `lane` takes the head's 8-element pieces lane, lane + width, ... (kNvfp4Steps of them
// in flight), so a group's stores are contiguous 16-byte vectors and its code loads
// contiguous 32-bit words. The two pieces of a 16-element group share its scale byte.
constexpr int kNvfp4Steps = 4;
template <KvDevDtype Out>
__global__ void __launch_bounds__(kThreads) gather_nvfp4_kernel(GatherKvLaunch a, int width, const DeviceStatus* status) {
  dev::pdl_wait();
  if (dev::failed(status)) return;
  const KvPagedLayout& L = a.layout;
  const int group = threadIdx.x / width, lane = threadIdx.x % width, groups = blockDim.x / width;
  const int32_t pieces = L.head_dim / 8;
  const int32_t sf_step = a.sf.interleave4 ? 4 : 1;
  // The rows to write: cu_seqlens_k's last entry, read here (max_tokens sized the grid).
  const int64_t units = int64_t{a.cu_seqlens_k[a.num_seqs]} * 2 * L.num_kv_heads;
  for (int64_t u = int64_t{blockIdx.x} * groups + group; u < units; u += int64_t{gridDim.x} * groups) {
    const Unit w = unit_of(u, L.num_kv_heads);
    const KvSlotPos at = gather_source(a, w.row);
    const uint8_t* data = static_cast<const uint8_t*>(w.side ? a.v_cache : a.k_cache) +
                          kv_dev_byte_offset(KvDevDtype::kE2M1, L.offset(w.side, at.block, at.token, w.head));
    const uint8_t* sfp = static_cast<const uint8_t*>(w.side ? a.v_sf : a.k_sf) + a.sf.offset(at.block, at.token, w.head, 0);
    const KvDevRowsOut& o = w.side ? a.out_v : a.out_k;
    uint8_t* dst = static_cast<uint8_t*>(o.data) + 2 * (w.row * o.token_stride + w.head * o.head_stride);
    const float g = (w.side ? a.v_scale : a.k_scale)[0];
    const bool codes4 = reinterpret_cast<uintptr_t>(data) % 4 == 0;  // pieces sit 4 bytes apart
    const bool out16 = reinterpret_cast<uintptr_t>(dst) % 16 == 0;   // and 16 bytes apart here
    for (int32_t p0 = lane; p0 < pieces; p0 += width * kNvfp4Steps) {
      uint32_t q[kNvfp4Steps];
      uint8_t sf[kNvfp4Steps];
#pragma unroll
      for (int k = 0; k < kNvfp4Steps; ++k) {
        const int32_t p = p0 + k * width;
        if (p >= pieces) break;
        const uint8_t* c = data + 4 * p;
        q[k] = codes4 ? __ldg(reinterpret_cast<const uint32_t*>(c))
                      : dev::pack_bytes4(__ldg(c), __ldg(c + 1), __ldg(c + 2), __ldg(c + 3));
        sf[k] = __ldg(sfp + (p / 2) * sf_step);
      }
#pragma unroll
      for (int k = 0; k < kNvfp4Steps; ++k) {
        const int32_t p = p0 + k * width;
        if (p >= pieces) break;
        const uint4 y = nvfp4_decode8<Out>(q[k], sf[k], g);
        uint8_t* d = dst + 16 * p;
        if (out16) {
          *reinterpret_cast<uint4*>(d) = y;
        } else {  // 2-byte aligned (validated)
          const uint32_t yw[4] = {y.x, y.y, y.z, y.w};
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            reinterpret_cast<uint16_t*>(d)[2 * j] = static_cast<uint16_t>(yw[j]);
            reinterpret_cast<uint16_t*>(d)[2 * j + 1] = static_cast<uint16_t>(yw[j] >> 16);
          }
        }
      }
    }
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

// Threads per unit: enough for one trip over head_dim (`steps` vectors per thread,
// or one element per thread on the scalar path), a power of two in [1, 32].
int group_width(int32_t head_dim, int v, int steps) {
  const int64_t per_thread = v == kVec ? int64_t{kVec} * steps : 1;
  const int64_t threads = (int64_t{head_dim} + per_thread - 1) / per_thread;
  int w = 1;
  while (w < 32 && w < threads) w *= 2;
  return w;
}

// rope_head_pairs' shape: NeoX from the head's first element over all of it, the head
// one trip of `width` threads x `steps` 8-element vectors (steps even), so a thread's
// vector k (k < steps / 2) and k + steps / 2 are rot_dim / 2 elements apart: a pair.
bool rope_pairs_in_thread(const RopeArgs& q, int32_t head_dim, int width, int steps) {
  return q.is_neox && q.rope_offset == 0 && q.rot_dim == head_dim && steps % 2 == 0 &&
         int64_t{width} * kVec * steps == head_dim;
}

// nvfp4_rope_pairs_apply's shape: NeoX from the head's first element over all of it,
// the head a whole number of G-group units (head_dim / (16 G) rounds down: 80 is 2.5
// two-group units, not 2), a power of two from 2 to 32 of them (G >= 2: a group never
// straddles the half), so a unit's partner unit is lane ^ units / 2 of the same warp.
template <int G>
bool nvfp4_rope_pairs(const RopeArgs& q, int32_t head_dim) {
  const int32_t chunks = nvfp4_units_per_head<G>(head_dim);
  return q.is_neox && q.rope_offset == 0 && q.rot_dim == head_dim && G >= 2 && head_dim % (kNvfp4Group * G) == 0 &&
         chunks >= 2 && chunks <= 32 && (chunks & (chunks - 1)) == 0;
}

// The store's groups per thread, G. The NeoX-pairs store takes two-group units wherever
// they fit (head_dim 64 to 1024), even where four would divide the head. ptxas (sm_90),
// per-lane / warp-wide scale bytes: four-group 75-77 / 80-84 registers (3 / 3 or 2 CTAs
// of 256 a multiprocessor, registers going 256 a warp), two-group 64 / 66 (4 / 3 CTAs),
// at half the work a thread. H100, 262,144 tokens, "kv e2m1 8x128 rope" store (linear
// scales: the 64-register build), % of the copy, one machine, alternating builds: G = 2
// 53.7 / 53.6, G = 4 44.6 (its floor 78.6-78.9 %). The interleave4 RoPE store is not
// measured. G = 4 stays for head_dim 2048 (32 units a head). Every other store: 4, 2 or
// 1, whichever is the largest to divide head_dim / 16.
int nvfp4_store_groups(const StoreKvLaunch& a) {
  if (a.rope.cos_sin_cache != nullptr && nvfp4_rope_pairs<2>(a.rope, a.layout.head_dim)) return 2;
  const int32_t groups = a.layout.head_dim / kNvfp4Group;
  return groups % 4 == 0 ? 4 : groups % 2 == 0 ? 2 : 1;
}

// CTAs for `units` work units, kThreads / width of them per CTA.
int64_t grid(int64_t units, int width) {
  const int64_t per_cta = kThreads / width;
  return dev::grid_for((units + per_cta - 1) / per_cta);
}

// e2m1 (SPEC §7.9): one thread per G 16-element groups (validated: head_dim % 16 == 0,
// even strides, the scale caches there; refused here too for direct callers).
std::string nvfp4_refusal(const char* op, const KvPagedLayout& L, const void* k_sf, const void* v_sf) {
  if (L.head_dim <= 0 || L.head_dim % kNvfp4Group != 0)
    return std::string(op) + ": an e2m1 cache needs head_dim a multiple of 16 (SPEC §7.9)";
  if (k_sf == nullptr || v_sf == nullptr) return std::string(op) + ": an e2m1 cache needs k_sf and v_sf (SPEC §7.9)";
  return "";
}

template <KvDevDtype M, int G, bool W>
std::string store_nvfp4_launch_gw(const StoreKvLaunch& a, const DeviceStatus* st, const LaunchOptions& o) {
  const int64_t g = grid(nvfp4_units<G>(a), 1);
  if (a.rope.cos_sin_cache != nullptr) {
    if constexpr (G >= 2)
      if (nvfp4_rope_pairs<G>(a.rope, a.layout.head_dim))
        return dev::launch_grid("store_nvfp4_kernel", store_nvfp4_kernel<M, kRopePairs, G, W>, g, false, o, a, st);
    return dev::launch_grid("store_nvfp4_kernel", store_nvfp4_kernel<M, kRopeAny, G, W>, g, false, o, a, st);
  }
  return dev::launch_grid("store_nvfp4_kernel", store_nvfp4_kernel<M, kNoRope, G, W>, g, false, o, a, st);
}
// Warp-wide scale bytes only for the 4-token interleave with G > 1 (store_nvfp4_kernel).
template <KvDevDtype M, int G>
std::string store_nvfp4_launch_g(const StoreKvLaunch& a, const DeviceStatus* st, const LaunchOptions& o) {
  if constexpr (G > 1)
    if (a.sf.interleave4) return store_nvfp4_launch_gw<M, G, true>(a, st, o);
  return store_nvfp4_launch_gw<M, G, false>(a, st, o);
}
template <KvDevDtype M>
std::string store_nvfp4_launch(const StoreKvLaunch& a, const DeviceStatus* st, const LaunchOptions& o) {
  if (std::string why = nvfp4_refusal("store_kv", a.layout, a.k_sf, a.v_sf); !why.empty()) return why;
  switch (nvfp4_store_groups(a)) {
    case 4: return store_nvfp4_launch_g<M, 4>(a, st, o);
    case 2: return store_nvfp4_launch_g<M, 2>(a, st, o);
    default: return store_nvfp4_launch_g<M, 1>(a, st, o);
  }
}

template <KvDevDtype M>
std::string gather_nvfp4_launch(const GatherKvLaunch& a, const DeviceStatus* st, const LaunchOptions& o) {
  if (std::string why = nvfp4_refusal("gather_kv", a.layout, a.k_sf, a.v_sf); !why.empty()) return why;
  const int width = group_width(a.layout.head_dim, kVec, kNvfp4Steps);
  const int64_t g = grid(a.max_tokens * 2 * a.layout.num_kv_heads, width);
  return dev::launch("gather_nvfp4_kernel", gather_nvfp4_kernel<M>, g, o, a, width, st);
}

template <KvDevDtype K, KvDevDtype Vd, KvDevDtype C, bool R = false>
std::string store_launch(const StoreKvLaunch& a, const DeviceStatus* st, const LaunchOptions& o) {
  const bool vec = vector_ok(a.key.data, a.key.token_stride, a.key.head_stride, a.k_cache, a.layout, kKvSideK) &&
                   vector_ok(a.value.data, a.value.token_stride, a.value.head_stride, a.v_cache, a.layout, kKvSideV);
  constexpr int kS = kSteps<K, kIsFp8<C> ? C : K>;  // store_kv_kernel's vectors in flight
  const int width = group_width(a.layout.head_dim, vec ? kVec : 1, kS);
  const int64_t g = grid(a.n * 2 * a.layout.num_kv_heads, width);
  if (a.rope.cos_sin_cache != nullptr) {
    if (vec && rope_pairs_in_thread(a.rope, a.layout.head_dim, width, kS))
      return dev::launch("store_kv_kernel", store_kv_kernel<K, Vd, C, kVec, R, kRopePairs>, g, o, a, width, st);
    return vec ? dev::launch("store_kv_kernel", store_kv_kernel<K, Vd, C, kVec, R, kRopeAny>, g, o, a, width, st)
               : dev::launch("store_kv_kernel", store_kv_kernel<K, Vd, C, 1, R, kRopeAny>, g, o, a, width, st);
  }
  return vec ? dev::launch("store_kv_kernel", store_kv_kernel<K, Vd, C, kVec, R, kNoRope>, g, o, a, width, st)
             : dev::launch("store_kv_kernel", store_kv_kernel<K, Vd, C, 1, R, kNoRope>, g, o, a, width, st);
}

const char* dtype_name(KvDevDtype d) {
  switch (d) {
    case KvDevDtype::kBF16: return "bf16";
    case KvDevDtype::kFP16: return "fp16";
    case KvDevDtype::kE4M3: return "e4m3";
    case KvDevDtype::kE5M2: return "e5m2";
    case KvDevDtype::kE2M1: return "e2m1";
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
    case KvDevDtype::kE2M1: return store_nvfp4_launch<M>(a, st, o);  // one recipe (SPEC §7.9)
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
  const int width = group_width(a.layout.head_dim, vec ? kVec : 1, kSteps<C, kIsFp8<C> ? K : C>);
  const int64_t g = grid(a.max_tokens * 2 * a.layout.num_kv_heads, width);
  return vec ? dev::launch("gather_kv_kernel", gather_kv_kernel<C, K, Vd, kVec>, g, o, a, width, st)
             : dev::launch("gather_kv_kernel", gather_kv_kernel<C, K, Vd, 1>, g, o, a, width, st);
}

template <KvDevDtype M>
std::string gather_by_cache(const GatherKvLaunch& a, const DeviceStatus* st, const LaunchOptions& o) {
  switch (a.layout.dtype) {
    case KvDevDtype::kE4M3: return gather_launch<KvDevDtype::kE4M3, M, M>(a, st, o);
    case KvDevDtype::kE5M2: return gather_launch<KvDevDtype::kE5M2, M, M>(a, st, o);
    case KvDevDtype::kE2M1: return gather_nvfp4_launch<M>(a, st, o);
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
