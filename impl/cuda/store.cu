// store_kv_cache kernels (SPEC §4, §5.1).
//
// Fixed-format path (the quantised SPEC §2 formats, group size and element count known at
// compile time; FP8_DS_MLA's and MODEL1's BF16 tails copied by 16-byte lanes beside their
// tiles, NVFP4_DS_MLA's rope cast to e4m3 by 8-byte stores and its scales transposed): a token is handled by kLanes lanes of a warp, each lane holding 8
// BF16 elements (one 16-byte load) per step, so a warp instruction reads 512
// contiguous bytes; a scale group of G elements lives in G/8 neighbouring lanes and
// its amax is a shuffle reduction. No shared memory, no barrier, no integer division
// per element. Needs 16-byte aligned kv rows and cache base (checked at launch).
//
// Run-time path (custom formats, unaligned inputs): one CTA per token row, a warp per
// scale group, the group multipliers in shared memory.
//
// BF16 formats: a row copy by 16-byte (or narrower) accesses.
//
// Every kernel reads a row through StoreArgs' two sources (concat_and_cache_mla,
// docs/spec.md §8.2: elements [0, split) from kv, the rest from pe); launch_store makes a
// one-source store a two-source one with split = E, so there is one code path; the
// 16-byte paths are compiled for one source too (Src::kOne), without the per-chunk select.
//
// Fused RoPE (docs/spec.md §8.4, StoreArgs::rope): the second source's elements inside
// [rope_offset, rope_offset + rot_dim) are rotated as they are read — each element from
// itself and its pair partner, fp32 __fmul_rn / __fadd_rn (no FMA; a difference as the
// sum with the negated partner, dev::rope_value), then RNE to BF16 — so every kernel
// below stores the rotated row with no extra pass (Src::kRope on the 16-byte paths, a
// run-time test elsewhere). A 16-byte chunk inside the range is
// rotated as one (dev::rope_chunk_*: NeoX partners one 16-byte load, table as float4s);
// other chunks and the run-time paths go element by element (rope_elem).
#include "impl/cuda/common.cuh"
#include "impl/cuda/kernels.h"
#include "impl/cuda/launch.cuh"
#include "impl/cuda/numerics.cuh"

namespace kvcheck::cuda {
namespace {

using dev::kThreads;

/// How a kernel reads its rows: one source, two (concat_and_cache_mla), or two with the
/// second rotated (docs/spec.md §8.4).
// kRopeTail (store_fixed_kernel only): kRope where every quantised element comes from kv
// (split >= E, the engines' concat formats: the rotated k_pe is the BF16 or e4m3 tail),
// so the data chunks are read as kOne's and only the tail's go through the RoPE code.
enum class Src { kOne, kTwo, kRope, kRopeTail };

/// 16-byte chunk c of row r (the vector paths: split % 8 == 0, both sources aligned).
/// Src::kOne (a one-source store): kv's row only, no per-chunk select — on the H200
/// the select cost MXFP8_INDEX's store 8 points of the copy (64 % -> 56 %).
template <Src K>
__device__ __forceinline__ const uint4* row_chunk(const StoreArgs& a, int64_t r, int64_t c) {
  static_assert(K != Src::kRopeTail, "store_fixed_kernel maps kRopeTail to kOne / kRope");
  if constexpr (K == Src::kOne) return reinterpret_cast<const uint4*>(a.kv + r * a.kv_row_stride) + c;
  const int64_t sc = a.split / 8;
  return c < sc ? reinterpret_cast<const uint4*>(a.kv + r * a.kv_row_stride) + c
                : reinterpret_cast<const uint4*>(a.pe + r * a.pe_row_stride) + (c - sc);
}

/// docs/spec.md §8.4: element e of row r's k_pe (the second source) after the rotation;
/// x its source bits. Elements outside [rope_offset, rope_offset + rot_dim) as they are.
__device__ __forceinline__ uint16_t rope_elem(const StoreArgs& a, int64_t r, int64_t e, uint16_t x) {
  const RopeArgs& q = a.rope;
  const int64_t k = e - q.rope_offset;
  if (k < 0 || k >= q.rot_dim) return x;
  const dev::RopePlace p = dev::rope_place(static_cast<int32_t>(k), q.rot_dim, q.is_neox);
  const float* cs = q.cos_sin_cache + q.positions[r] * q.rot_dim;
  const float other = dev::bf16_to_f32(a.pe[r * a.pe_row_stride + q.rope_offset + p.partner]);
  return dev::f32_to_bf16(dev::rope_value(dev::bf16_to_f32(x), other, cs[p.j], cs[q.rot_dim / 2 + p.j], p.first));
}

/// load_chunk's fallback, for a chunk its 16-byte path does not take (on an end of the
/// rotated range, or a layout dev::rope_chunk_fast refuses): element by element, as
/// rope_elem. Out of line: inlined beside that path it took the fixed kernels to 255
/// registers and spills (sm_90 ptxas), for a case the common shapes never reach.
__device__ __noinline__ uint4 rope_chunk_slow(uint4 v, const uint16_t* pe_row, RopeArgs q, int64_t pos, int64_t e0) {
  const float* cs = q.cos_sin_cache + pos * q.rot_dim;
  uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int64_t k = e0 + i - q.rope_offset;
    if (k < 0 || k >= q.rot_dim) continue;  // outside the rotated range: as it is
    const dev::RopePlace p = dev::rope_place(static_cast<int32_t>(k), q.rot_dim, q.is_neox);
    const float x = dev::bf16_to_f32(static_cast<uint16_t>(w[i / 2] >> (16 * (i % 2))));
    const float other = dev::bf16_to_f32(pe_row[q.rope_offset + p.partner]);
    const uint32_t y = dev::f32_to_bf16(dev::rope_value(x, other, cs[p.j], cs[q.rot_dim / 2 + p.j], p.first));
    w[i / 2] = (w[i / 2] & (0xFFFF0000u >> (16 * (i % 2)))) | (y << (16 * (i % 2)));
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

/// Chunk c of row r as the store must see it: row_chunk's 16 bytes (streamed), the
/// second source's elements rotated for Src::kRope.
template <Src K>
__device__ __forceinline__ uint4 load_chunk(const StoreArgs& a, int64_t r, int64_t c) {
  uint4 v = __ldcs(row_chunk<K>(a, r, c));
  if constexpr (K == Src::kRope) {
    const RopeArgs& q = a.rope;
    const int64_t e0 = c * 8 - a.split;  // k_pe element of the chunk's first (< 0: kv_c's chunk)
    const int64_t k0 = e0 - q.rope_offset;
    if (k0 >= 0 && k0 + 8 <= q.rot_dim && dev::rope_chunk_fast(static_cast<int32_t>(k0), q.rot_dim, q.is_neox)) {
      // Inside the rotated range: the 8 at once, one position load, the NeoX partners by
      // one 16-byte load (e0 % 8 == 0 as split % 8 == 0, so the partner chunk is aligned).
      const int32_t k = static_cast<int32_t>(k0);
      uint4 p = make_uint4(0, 0, 0, 0);
      if (q.is_neox)
        p = *reinterpret_cast<const uint4*>(a.pe + r * a.pe_row_stride + e0 + dev::rope_partner_offset(k, q.rot_dim));
      float c[8] = {}, s[8] = {};
      dev::rope_chunk_table(q.cos_sin_cache + q.positions[r] * q.rot_dim, k, q.rot_dim, q.is_neox, c, s);
      const uint32_t w[4] = {v.x, v.y, v.z, v.w}, pw[4] = {p.x, p.y, p.z, p.w};
      float x[8], y[8];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        x[2 * i] = __uint_as_float(w[i] << 16);
        x[2 * i + 1] = __uint_as_float(w[i] & 0xFFFF0000u);
        y[2 * i] = __uint_as_float(pw[i] << 16);
        y[2 * i + 1] = __uint_as_float(pw[i] & 0xFFFF0000u);
      }
      dev::rope_chunk_apply(x, y, c, s, k, q.rot_dim, q.is_neox);
      v = make_uint4(dev::f32x2_to_bf16x2(x[0], x[1]), dev::f32x2_to_bf16x2(x[2], x[3]),
                     dev::f32x2_to_bf16x2(x[4], x[5]), dev::f32x2_to_bf16x2(x[6], x[7]));
    } else if (k0 + 8 > 0 && k0 < q.rot_dim) {  // a chunk on an end of the range, or no fast layout
      v = rope_chunk_slow(v, a.pe + r * a.pe_row_stride, q, q.positions[r], e0);
    }
  }
  return v;
}

/// Element e of row r (the run-time paths).
__device__ __forceinline__ uint16_t row_elem(const StoreArgs& a, int64_t r, int64_t e) {
  if (e < a.split) return a.kv[r * a.kv_row_stride + e];
  const uint16_t x = a.pe[r * a.pe_row_stride + (e - a.split)];
  return a.rope.cos_sin_cache ? rope_elem(a, r, e - a.split, x) : x;
}

/// Elements [from, from + count) of row r to dst, as bytes, each source's piece by the
/// widest access it allows; threads tid, tid + nt, ... share the work.
__device__ __forceinline__ void copy_row_range(uint8_t* dst, const StoreArgs& a, int64_t r, int64_t from,
                                               int64_t count, int tid, int nt) {
  const int64_t head = min(max(a.split - from, int64_t{0}), count);  // elements from kv
  if (head > 0)
    dev::copy_bytes(dst, reinterpret_cast<const uint8_t*>(a.kv + r * a.kv_row_stride + from), head * 2, tid, nt);
  if (count > head && a.rope.cos_sin_cache) {  // rotated k_pe: element by element, byte by byte (any alignment)
    for (int64_t i = head + tid; i < count; i += nt) {
      const uint16_t v = row_elem(a, r, from + i);
      dst[2 * i] = static_cast<uint8_t>(v & 0xFF);
      dst[2 * i + 1] = static_cast<uint8_t>(v >> 8);
    }
  } else if (count > head)
    dev::copy_bytes(dst + head * 2, reinterpret_cast<const uint8_t*>(a.pe + r * a.pe_row_stride + (from + head - a.split)),
                    (count - head) * 2, tid, nt);
}

/// One token's amax, scales and codes, from the kSteps 16-byte chunks this lane
/// holds (chunk = step*kLanes + sl). All lanes run the shuffles; only slot >= 0 writes.
template <int kLanes, int kSteps, int G, PagedDtype D, PagedSf S>
__device__ __forceinline__ void encode_token(const uint4 (&in)[kSteps], int sl, int32_t slot, uint8_t* data,
                                             uint8_t* scales) {
  constexpr int kGroupLanes = G / 8;  // lanes sharing one scale group
  constexpr int kScaleBytes = paged_scale_width(S);
  constexpr int kGroups = kSteps * kLanes * 8 / G;
  // §4.9's scales belong to NVFP4_DS_MLA only, whose scales are transposed (launch_store
  // sends no other record here with them).
  constexpr bool kTransposed = S == PagedSf::kE4M3RoundUp;
#pragma unroll
  for (int s = 0; s < kSteps; ++s) {
    const int chunk = s * kLanes + sl;
    const uint32_t w[4] = {in[s].x, in[s].y, in[s].z, in[s].w};
    uint32_t m = 0;
#pragma unroll
    for (int j = 0; j < 4; ++j) m = dev::abs_max_bf16x2(m, w[j]);
    m = max(m & 0xFFFFu, m >> 16);
#pragma unroll
    for (int off = 1; off < kGroupLanes; off <<= 1) m = max(m, __shfl_xor_sync(0xFFFFFFFFu, m, off));
    const dev::GroupScale gs = dev::group_scale<D, S>(__uint_as_float(m << 16));
    if (slot < 0) continue;  // -1 padding: nothing written (after the shuffles)
    if (chunk % kGroupLanes == 0) {
      const int g = chunk / kGroupLanes;
      dev::put_scale<S>(scales + (kTransposed ? transposed_scale(g, kGroups) : g) * kScaleBytes, gs.code);
    }
    if constexpr (D == PagedDtype::kE2M1 && S == PagedSf::kUE8M0) {
      // mult is 2^-k (a bf16 value): x * mult is exact in bf16x2 wherever the float
      // product is (a tiny or huge one codes 0 or 6 either way), no float needed.
      const uint32_t m2 = (__float_as_uint(gs.mult) >> 16) * 0x10001u;
      uint32_t b[4];  // element 2i in the low nibble of byte i, 2i+1 in the high (SPEC §2)
#pragma unroll
      for (int j = 0; j < 4; ++j) b[j] = dev::e2m1x2_of_bf16x2(dev::mul_bf16x2(w[j], m2));
      reinterpret_cast<uint32_t*>(data)[chunk] = dev::pack_bytes4(b[0], b[1], b[2], b[3]);
    } else {
      float f[8];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        f[2 * j] = __fmul_rn(__uint_as_float(w[j] << 16), gs.mult);
        f[2 * j + 1] = __fmul_rn(__uint_as_float(w[j] & 0xFFFF0000u), gs.mult);
      }
      if constexpr (D == PagedDtype::kE4M3) {  // 8 codes, element i in byte i
        uint2 q;
        q.x = dev::cvt_e4m3x2(f[0], f[1]) | (dev::cvt_e4m3x2(f[2], f[3]) << 16);
        q.y = dev::cvt_e4m3x2(f[4], f[5]) | (dev::cvt_e4m3x2(f[6], f[7]) << 16);
        reinterpret_cast<uint2*>(data)[chunk] = q;
      } else {
        uint32_t b[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) b[j] = dev::cvt_e2m1x2(f[2 * j], f[2 * j + 1]);
        reinterpret_cast<uint32_t*>(data)[chunk] = dev::pack_bytes4(b[0], b[1], b[2], b[3]);
      }
    }
  }
}

constexpr int kUnroll = 2;  // tokens per lane group per loop trip: loads in flight first

/// Lanes per token of a fixed store: the largest power of two <= 32 dividing the row's
/// 16-byte chunks (V41 64 -> 32, the index formats' 16 -> 16, MODEL1's 56 -> 8).
__host__ __device__ constexpr int lanes_for(int chunks) {
  int l = 32;
  while (chunks % l != 0) l /= 2;
  return l;
}

/// E quantised elements, then T BF16 tail elements (T/8 <= kLanes 16-byte chunks).
/// Tokens per lane group per trip of a fixed store: 2 (loads in flight first) unless a
/// lane already holds more than 2 chunks of a row (MODEL1's 7: 14 in flight took the
/// kernel to 101 registers and a quarter of the warps, H200 ncu 2026-12-05).
__host__ __device__ constexpr int fixed_unroll(int chunks) { return chunks / lanes_for(chunks) > 2 ? 1 : kUnroll; }

template <int E, int G, PagedDtype D, PagedSf S, int T, Src K>
__global__ void __launch_bounds__(kThreads)
    store_fixed_kernel(DeviceCache cache, StoreArgs a, SlotDivider split, const DeviceStatus* status) {
  constexpr int kChunks = E / 8;  // 16-byte chunks of a BF16 row
  constexpr int kLanes = lanes_for(kChunks);
  constexpr int kSteps = kChunks / kLanes;
  constexpr int kTokensPerWarp = 32 / kLanes;
  constexpr int kUnroll = fixed_unroll(kChunks);
  constexpr int kRowsPerTrip = kTokensPerWarp * kUnroll;
  static_assert(E % 8 == 0 && G % 8 == 0 && kChunks % kLanes == 0 && 32 % kLanes == 0 && G / 8 <= kLanes &&
                    E % G == 0 && T % 8 == 0 && T / 8 <= kLanes,
                "fixed store layout");
  constexpr int kTailChunks = T / 8;
  constexpr Src KData = K == Src::kRopeTail ? Src::kOne : K;   // chunks [0, E / 8)
  constexpr Src KTail = K == Src::kRopeTail ? Src::kRope : K;  // the tail's
  dev::pdl_wait();
  if (dev::failed(status)) return;
  const PagedLayout& L = cache.layout;
  const int lane = threadIdx.x & 31, sub = lane / kLanes, sl = lane % kLanes;
  const int64_t warp = (int64_t{blockIdx.x} * kThreads + threadIdx.x) >> 5;
  const int64_t num_warps = (int64_t{gridDim.x} * kThreads) >> 5;
  for (int64_t r0 = warp * kRowsPerTrip; r0 < a.num_tokens; r0 += num_warps * kRowsPerTrip) {
    int32_t slot[kUnroll];
    uint4 in[kUnroll][kSteps];
    uint4 tail[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {  // slot and kv loads in flight together
      const int64_t r = r0 + u * kTokensPerWarp + sub;
      const bool live = r < a.num_tokens;
      slot[u] = live ? __ldcs(a.slot_mapping + r) : -1;
#pragma unroll
      for (int s = 0; s < kSteps; ++s) in[u][s] = live ? load_chunk<KData>(a, r, s * kLanes + sl) : make_uint4(0, 0, 0, 0);
      if constexpr (kTailChunks > 0)
        tail[u] = live && sl < kTailChunks ? load_chunk<KTail>(a, r, kChunks + sl) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int32_t b = slot[u] >= 0 ? split.block(slot[u]) : 0, t = slot[u] >= 0 ? split.token(slot[u], b) : 0;
      encode_token<kLanes, kSteps, G, D, S>(in[u], sl, slot[u], cache.base + L.data_offset(b, t),
                                            cache.base + L.scale_offset(b, t));
      if constexpr (kTailChunks > 0 && S == PagedSf::kE4M3RoundUp) {  // NVFP4_DS_MLA: unscaled e4m3 (§4.9)
        if (slot[u] >= 0 && sl < kTailChunks) {
          const uint32_t w[4] = {tail[u].x, tail[u].y, tail[u].z, tail[u].w};
          // A NaN of either sign as +NaN first: §4 gives 0x7F, the pair cvt does not promise it.
          const auto pinned = [](uint32_t h) { return ((h & 0x7FFFu) > 0x7F80u ? 0x7FC0u : h) << 16; };
          uint32_t c[4];
#pragma unroll
          for (int j = 0; j < 4; ++j)
            c[j] = dev::cvt_e4m3x2(__uint_as_float(pinned(w[j] & 0xFFFFu)), __uint_as_float(pinned(w[j] >> 16)));
          reinterpret_cast<uint2*>(cache.base + L.tail_offset(b, t))[sl] =
              make_uint2(c[0] | (c[1] << 16), c[2] | (c[3] << 16));
        }
      } else if constexpr (kTailChunks > 0) {  // the row's last T elements as they are (SPEC §2)
        if (slot[u] >= 0 && sl < kTailChunks) reinterpret_cast<uint4*>(cache.base + L.tail_offset(b, t))[sl] = tail[u];
      }
    }
  }
  dev::pdl_trigger();
}

constexpr int kChunkGroups = 512;  // groups per shared-memory pass; even, so e2m1
                                   // bytes never straddle two passes

template <PagedDtype D, PagedSf S>
__global__ void __launch_bounds__(kThreads)
    store_runtime_kernel(DeviceCache cache, StoreArgs a, const DeviceStatus* status) {
  __shared__ float mult[kChunkGroups];
  dev::pdl_wait();
  if (dev::failed(status)) return;
  const PagedLayout& L = cache.layout;
  const int32_t G = L.group;
  const int32_t num_groups = L.quantized_elements() / G;
  constexpr int64_t kScaleBytes = paged_scale_width(S);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, num_warps = kThreads / 32;
  for (int64_t r = blockIdx.x; r < a.num_tokens; r += gridDim.x) {
    const int32_t slot = a.slot_mapping[r];
    if (slot < 0) continue;  // -1 padding: nothing written (uniform across the CTA)
    uint8_t* data = cache.base + L.slot_data_offset(slot);
    uint8_t* scales = cache.base + L.slot_scale_offset(slot);
    if (L.tail_elements > 0 && !L.e4m3_tail)  // the BF16 tail as it is (SPEC §2); the threads then quantise
      copy_row_range(cache.base + L.slot_tail_offset(slot), a, r, L.quantized_elements(), L.tail_elements,
                     threadIdx.x, kThreads);
    if (L.e4m3_tail)  // unscaled e4m3 casts (SPEC §4.9); a NaN of either sign -> 0x7F (§4)
      for (int32_t e = threadIdx.x; e < L.tail_elements; e += kThreads) {
        const float v = dev::bf16_to_f32(row_elem(a, r, int64_t{L.quantized_elements()} + e));
        cache.base[L.slot_tail_offset(slot) + e] = isnan(v) ? uint8_t{0x7F} : dev::cvt_e4m3(v);
      }
    for (int32_t g0 = 0; g0 < num_groups; g0 += kChunkGroups) {
      const int32_t g1 = min(num_groups, g0 + kChunkGroups);
      for (int32_t g = g0 + warp; g < g1; g += num_warps) {
        uint32_t m = 0;  // NaN-ignoring max |x| on the bf16 bits
        for (int32_t j = lane; j < G; j += 32) {
          const uint32_t v = row_elem(a, r, int64_t{g} * G + j) & 0x7FFFu;
          m = max(m, v > 0x7F80u ? 0u : v);
        }
        m = __reduce_max_sync(0xFFFFFFFFu, m);
        if (lane == 0) {
          const dev::GroupScale gs = dev::group_scale<D, S>(__uint_as_float(m << 16));
          dev::put_scale<S>(scales + (L.scales_last ? L.scale_byte(g) : g * kScaleBytes), gs.code);
          mult[g - g0] = gs.mult;
        }
      }
      __syncthreads();
      if constexpr (D == PagedDtype::kE4M3) {
        for (int32_t g = g0; g < g1; ++g)  // group by group: no division per element
          for (int32_t j = threadIdx.x; j < G; j += kThreads) {
            const int64_t i = int64_t{g} * G + j;
            data[i] = dev::cvt_e4m3(__fmul_rn(dev::bf16_to_f32(row_elem(a, r, i)), mult[g - g0]));
          }
      } else {  // an odd G puts a byte's two nibbles in two groups: one division per byte
        const int32_t e0 = g0 * G, e1 = g1 * G;
        for (int32_t b = e0 / 2 + threadIdx.x; b < e1 / 2; b += kThreads) {
          const uint8_t lo =
              dev::cvt_e2m1(__fmul_rn(dev::bf16_to_f32(row_elem(a, r, 2 * b)), mult[2 * b / G - g0]));
          const uint8_t hi =
              dev::cvt_e2m1(__fmul_rn(dev::bf16_to_f32(row_elem(a, r, 2 * b + 1)), mult[(2 * b + 1) / G - g0]));
          data[b] = static_cast<uint8_t>(lo | (hi << 4));
        }
      }
      __syncthreads();  // mult is rewritten by the next pass / row
    }
  }
  dev::pdl_trigger();
}

/// BF16 rows: kLanes lanes copy one row, kUnroll rows per trip; 16-byte accesses
/// when kVec, with all of a trip's loads in flight first for rows of up to
/// 2*kLanes chunks. With the fused RoPE it asks ptxas for 3 resident CTAs: the table
/// values in flight took it to 103-106 registers (2 CTAs an SM); at 3, 78 registers and
/// no spills. H100, 262,144 tokens, same process (2026-12-06): concat split rope
/// BF16(512) 82.9 -> 85.9 % of the copy. The fixed kernels keep ptxas's choice: with
/// Src::kRope 3 CTAs spill 88-368 bytes there (FP8_DS_MLA's concat rope 57.3 -> 58.4 %,
/// MODEL1's not measured); Src::kRopeTail needs 78-94 registers, no spills.
template <int kLanes, bool kVec, Src K>
__global__ void __launch_bounds__(kThreads, K == Src::kRope ? 3 : 1)
    store_copy_kernel(DeviceCache cache, StoreArgs a, SlotDivider split, const DeviceStatus* status) {
  dev::pdl_wait();
  if (dev::failed(status)) return;
  const PagedLayout& L = cache.layout;
  constexpr int kRowsPerWarp = 32 / kLanes, kRowsPerTrip = kRowsPerWarp * kUnroll;
  const int lane = threadIdx.x & 31, sub = lane / kLanes, sl = lane % kLanes;
  const int64_t warp = (int64_t{blockIdx.x} * kThreads + threadIdx.x) >> 5;
  const int64_t num_warps = (int64_t{gridDim.x} * kThreads) >> 5;
  const int64_t row_bytes = L.quantized_bytes, chunks = row_bytes / 16;
  for (int64_t r0 = warp * kRowsPerTrip; r0 < a.num_tokens; r0 += num_warps * kRowsPerTrip) {
    if constexpr (kVec) {
      if (chunks <= 2 * kLanes) {  // the common rows (BF16 up to 4 KiB per lane group): all loads first
        int32_t slot[kUnroll];
        uint4 v[kUnroll][2];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          const int64_t r = r0 + u * kRowsPerWarp + sub;
          const bool live = r < a.num_tokens;
          slot[u] = live ? __ldcs(a.slot_mapping + r) : -1;
#pragma unroll
          for (int k = 0; k < 2; ++k)
            v[u][k] = live && sl + k * kLanes < chunks ? load_chunk<K>(a, r, sl + k * kLanes) : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          if (slot[u] < 0) continue;
          const int32_t b = split.block(slot[u]);
          uint4* __restrict__ dst = reinterpret_cast<uint4*>(cache.base + L.data_offset(b, split.token(slot[u], b)));
#pragma unroll
          for (int k = 0; k < 2; ++k)
            if (sl + k * kLanes < chunks) dst[sl + k * kLanes] = v[u][k];
        }
        continue;
      }
    }
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t r = r0 + u * kRowsPerWarp + sub;
      const int32_t slot = r < a.num_tokens ? a.slot_mapping[r] : -1;
      if (slot < 0) continue;
      const int32_t b = split.block(slot);
      uint8_t* __restrict__ dst = cache.base + L.data_offset(b, split.token(slot, b));
      if constexpr (kVec) {
        for (int64_t c = sl; c < chunks; c += kLanes) reinterpret_cast<uint4*>(dst)[c] = load_chunk<K>(a, r, c);
      } else {
        copy_row_range(dst, a, r, 0, L.elements, sl, kLanes);
      }
    }
  }
  dev::pdl_trigger();
}

/// Decode-size BF16 stores (launch_store: at most kDecodeRows rows of at most
/// kDecodeChunks 16-byte chunks, the 16-byte path): kDecodeRowsPerCta rows a CTA, a
/// thread per chunk, no loop. A decode step's store is one short dependent chain (slot and row loads, one
/// store) inside a CUDA graph, so its time is the chain's, not bandwidth.
constexpr int64_t kDecodeRows = 256;
constexpr int64_t kDecodeChunks = kThreads;
// Rows a CTA (blockDim.y), as many of the 4 as fit kThreads: 1 KiB rows in CTAs of 4 x 64
// threads replayed in 1.47-1.48 us at 256 rows against 1.57 with a CTA per row, and 8
// rows (512 threads) in 1.50 (H100, graph replays beside Triton's 1.43; docs/cuda.md).
constexpr int kDecodeRowsPerCta = 4;
template <Src K>
__global__ void __launch_bounds__(kThreads)
    store_copy_row_kernel(DeviceCache cache, StoreArgs a, SlotDivider split, const DeviceStatus* status) {
  dev::pdl_wait();
  if (dev::failed(status)) return;
  const PagedLayout& L = cache.layout;
  const int32_t r = static_cast<int32_t>(blockIdx.x * blockDim.y + threadIdx.y), c = static_cast<int32_t>(threadIdx.x);
  if (r >= a.num_tokens) return;  // the last CTA's rows past the end
  const int32_t chunks = static_cast<int32_t>(L.quantized_bytes / 16);
  const int32_t slot = a.slot_mapping[r];
  const uint4 v = c < chunks ? load_chunk<K>(a, r, c) : make_uint4(0, 0, 0, 0);  // with the slot's load
  if (slot >= 0 && c < chunks) {
    const int32_t b = split.block(slot);
    reinterpret_cast<uint4*>(cache.base + L.data_offset(b, split.token(slot, b)))[c] = v;
  }
  dev::pdl_trigger();
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

/// CTAs for n rows handled `rows_per_cta` at a time.
int64_t grid(int64_t n, int64_t rows_per_cta) { return dev::grid_for((n + rows_per_cta - 1) / rows_per_cta); }

template <int E, int G, PagedDtype D, PagedSf S, int T = 0>
std::string fixed(const DeviceCache& c, const StoreArgs& a, Src src, const DeviceStatus* st, const LaunchOptions& o) {
  constexpr int kLanes = lanes_for(E / 8);
  const int64_t g = grid(a.num_tokens, (kThreads / 32) * (32 / kLanes) * fixed_unroll(E / 8));
  const SlotDivider d = SlotDivider::of(c.layout.block_size);
  switch (src) {
    case Src::kOne: return dev::launch_grid("store_fixed_kernel", store_fixed_kernel<E, G, D, S, T, Src::kOne>, g, false, o, c, a, d, st);
    case Src::kTwo: return dev::launch_grid("store_fixed_kernel", store_fixed_kernel<E, G, D, S, T, Src::kTwo>, g, false, o, c, a, d, st);
    default:
      if constexpr (T > 0)  // without a tail, split >= E leaves no k_pe (validated: rope_dim >= 1)
        if (a.split >= E)   // every quantised element from kv: the RoPE code for the tail only
          return dev::launch_grid("store_fixed_kernel", store_fixed_kernel<E, G, D, S, T, Src::kRopeTail>, g, false, o, c, a, d, st);
      return dev::launch_grid("store_fixed_kernel", store_fixed_kernel<E, G, D, S, T, Src::kRope>, g, false, o, c, a, d, st);
  }
}

template <PagedDtype D>
std::string runtime(const DeviceCache& c, const StoreArgs& a, const DeviceStatus* st, const LaunchOptions& o) {
  const int64_t g = grid(a.num_tokens, 1);
  switch (c.layout.sf) {
    case PagedSf::kUE8M0: return dev::launch("store_runtime_kernel", store_runtime_kernel<D, PagedSf::kUE8M0>, g, o, c, a, st);
    case PagedSf::kE4M3: return dev::launch("store_runtime_kernel", store_runtime_kernel<D, PagedSf::kE4M3>, g, o, c, a, st);
    case PagedSf::kFP32: return dev::launch("store_runtime_kernel", store_runtime_kernel<D, PagedSf::kFP32>, g, o, c, a, st);
    case PagedSf::kFP32Pow2: return dev::launch("store_runtime_kernel", store_runtime_kernel<D, PagedSf::kFP32Pow2>, g, o, c, a, st);
    case PagedSf::kFP32Pow2FloorFirst:
      return dev::launch("store_runtime_kernel", store_runtime_kernel<D, PagedSf::kFP32Pow2FloorFirst>, g, o, c, a, st);
    case PagedSf::kUE8M0FloorAfter:
      if constexpr (D == PagedDtype::kE4M3)  // e4m3 data only (SPEC §2)
        return dev::launch("store_runtime_kernel", store_runtime_kernel<D, PagedSf::kUE8M0FloorAfter>, g, o, c, a, st);
      return "cuda store: ue8m0_floor_after scales need e4m3 data";
    case PagedSf::kE4M3RoundUp:
      if constexpr (D == PagedDtype::kE2M1)  // e2m1 data only (SPEC §2)
        return dev::launch("store_runtime_kernel", store_runtime_kernel<D, PagedSf::kE4M3RoundUp>, g, o, c, a, st);
      return "cuda store: e4m3_round_up scales need e2m1 data";
    default: return "cuda store: no kernel for scale format " + std::to_string(int(c.layout.sf));
  }
}

template <int kLanes>
std::string copy(const DeviceCache& c, const StoreArgs& a, Src src, const DeviceStatus* st, const LaunchOptions& o,
                 bool vec) {
  const int64_t g = grid(a.num_tokens, (kThreads / 32) * (32 / kLanes) * kUnroll);
  const SlotDivider d = SlotDivider::of(c.layout.block_size);
  // The byte path reads through copy_row_range (RoPE at run time): Src matters on the 16-byte path only.
  if (!vec) return dev::launch_grid("store_copy_kernel", store_copy_kernel<kLanes, false, Src::kTwo>, g, false, o, c, a, d, st);
  switch (src) {
    case Src::kOne: return dev::launch_grid("store_copy_kernel", store_copy_kernel<kLanes, true, Src::kOne>, g, false, o, c, a, d, st);
    case Src::kTwo: return dev::launch_grid("store_copy_kernel", store_copy_kernel<kLanes, true, Src::kTwo>, g, false, o, c, a, d, st);
    default: return dev::launch_grid("store_copy_kernel", store_copy_kernel<kLanes, true, Src::kRope>, g, false, o, c, a, d, st);
  }
}

/// Whether store_copy_row_kernel applies (kDecodeRowsPerCta rows a CTA) to rows of `chunks` 16-byte
/// chunks: at most kDecodeRows rows of at most kDecodeChunks chunks, and no grid cap
/// (KVCHECK_CUDA_MAX_GRID) below the row count (the capped runs test the grid-stride loops).
bool copy_rows_fit(const StoreArgs& a, int64_t chunks) {
  return a.num_tokens <= kDecodeRows && chunks <= kDecodeChunks && dev::grid_for(a.num_tokens) >= a.num_tokens;
}

/// store_copy_row_kernel's launch (where copy_rows_fit) for rows of `chunks` chunks: its
/// error, "" when none.
std::string copy_rows(const DeviceCache& c, const StoreArgs& a, int64_t chunks, Src src, const DeviceStatus* st,
                      const LaunchOptions& o) {
  const int threads = static_cast<int>((chunks + 31) / 32 * 32);
  const int rows = static_cast<int>(std::min<int64_t>(kDecodeRowsPerCta, kThreads / threads));
  const SlotDivider d = SlotDivider::of(c.layout.block_size);
  const auto kernel = src == Src::kOne   ? store_copy_row_kernel<Src::kOne>
                      : src == Src::kTwo ? store_copy_row_kernel<Src::kTwo>
                                         : store_copy_row_kernel<Src::kRope>;
  return dev::launch_exactly("store_copy_row_kernel", kernel, (a.num_tokens + rows - 1) / rows,
                             dim3(static_cast<unsigned>(threads), static_cast<unsigned>(rows)), o, c, a, d, st);
}

}  // namespace

std::string launch_store(const DeviceCache& c, const StoreArgs& args, const DeviceStatus* st,
                         const LaunchOptions& o) {
  if (args.num_tokens == 0) return "";
  const PagedLayout& L = c.layout;
  StoreArgs a = args;
  const bool two = args.pe != nullptr;  // concat_and_cache_mla (the flag, not pe == kv: k_pe may alias kv_c)
  if (!two) {  // one source: every element before the split, nothing rotated
    a.pe = a.kv;
    a.pe_row_stride = a.kv_row_stride;
    a.split = L.elements;
    a.rope = RopeArgs{};
  }
  const Src src = !two ? Src::kOne : a.rope.cos_sin_cache ? Src::kRope : Src::kTwo;
  const bool vec = aligned16(a.kv) && (a.kv_row_stride * 2) % 16 == 0 && aligned16(c.base) && aligned16(a.pe) &&
                   (a.pe_row_stride * 2) % 16 == 0 && a.split % 8 == 0;
  if (L.dtype == PagedDtype::kBF16) {
    const bool v = vec && L.quantized_bytes % 16 == 0;
    const int64_t chunks = L.quantized_bytes / 16;
    if (v && copy_rows_fit(a, chunks)) return copy_rows(c, a, chunks, src, st, o);
    if (chunks <= 4) return copy<4>(c, a, src, st, o, v);
    if (chunks <= 8) return copy<8>(c, a, src, st, o, v);
    if (chunks <= 16) return copy<16>(c, a, src, st, o, v);
    return copy<32>(c, a, src, st, o, v);
  }
  // The quantised SPEC §2 formats; their strides keep every 8-byte (e4m3) / 4-byte (e2m1)
  // data store (and FP8_DS_MLA's 16-byte tail stores) aligned once the cache base is 16-byte aligned. A custom format with a
  // named one's dtype, scales, E and G need not (interleaved e4m3 128 x32: 132-byte
  // records, every odd token 4-byte aligned): the strides are checked, else the
  // run-time path (H200, seed 4 of a 300-case run: "misaligned address").
  const auto is = [&](PagedDtype d, PagedSf s, int32_t e, int32_t g, int32_t tail = 0) {
    const int64_t store_bytes = tail > 0 ? 16 : d == PagedDtype::kE4M3 ? 8 : 4;
    return vec && !L.scales_last && !L.e4m3_tail && L.dtype == d && L.sf == s && L.quantized_elements() == e &&
           L.tail_elements == tail &&
           L.group == g && L.data_token_stride % store_bytes == 0 && L.block_stride % store_bytes == 0 &&
           (tail == 0 || L.tail_in_record() % 16 == 0);
  };
  using Dt = PagedDtype;
  using Sf = PagedSf;
  if (is(Dt::kE4M3, Sf::kUE8M0, 512, 32)) return fixed<512, 32, Dt::kE4M3, Sf::kUE8M0>(c, a, src, st, o);  // V41
  if (is(Dt::kE2M1, Sf::kE4M3, 512, 16)) return fixed<512, 16, Dt::kE2M1, Sf::kE4M3>(c, a, src, st, o);   // V41_FP4
  if (is(Dt::kE2M1, Sf::kUE8M0, 128, 32) && L.scale_token_stride % 4 == 0)
    return fixed<128, 32, Dt::kE2M1, Sf::kUE8M0>(c, a, src, st, o);  // FP4_INDEX
  if (is(Dt::kE4M3, Sf::kFP32, 128, 128) && L.scale_token_stride % 4 == 0 && L.scale_region % 4 == 0)
    return fixed<128, 128, Dt::kE4M3, Sf::kFP32>(c, a, src, st, o);  // FP8_FP32SF_INDEX
  if (is(Dt::kE4M3, Sf::kUE8M0, 128, 32)) return fixed<128, 32, Dt::kE4M3, Sf::kUE8M0>(c, a, src, st, o);  // MXFP8_INDEX
  if (is(Dt::kE4M3, Sf::kFP32Pow2FloorFirst, 128, 128) && L.scale_token_stride % 4 == 0 && L.scale_region % 4 == 0)
    return fixed<128, 128, Dt::kE4M3, Sf::kFP32Pow2FloorFirst>(c, a, src, st, o);  // FP8_POW2SF_INDEX
  if (is(Dt::kE4M3, Sf::kFP32Pow2, 512, 128, 64))
    return fixed<512, 128, Dt::kE4M3, Sf::kFP32Pow2, 64>(c, a, src, st, o);  // FP8_DS_MLA
  if (is(Dt::kE4M3, Sf::kUE8M0FloorAfter, 448, 64, 64))
    return fixed<448, 64, Dt::kE4M3, Sf::kUE8M0FloorAfter, 64>(c, a, src, st, o);  // MODEL1
  // NVFP4_DS_MLA (§4.9): its e4m3 rope by 8-byte stores at data + 256, its transposed
  // scales by bytes; the kernel takes both from the scale format.
  if (vec && L.scales_last && L.e4m3_tail && L.dtype == Dt::kE2M1 && L.sf == Sf::kE4M3RoundUp &&
      L.quantized_elements() == 512 && L.tail_elements == 64 && L.group == 16 && L.data_token_stride % 8 == 0 &&
      L.block_stride % 8 == 0)
    return fixed<512, 16, Dt::kE2M1, Sf::kE4M3RoundUp, 64>(c, a, src, st, o);
  switch (L.dtype) {
    case Dt::kE4M3: return runtime<Dt::kE4M3>(c, a, st, o);
    case Dt::kE2M1: return runtime<Dt::kE2M1>(c, a, st, o);
    default: return "cuda store: no kernel for data dtype " + std::to_string(int(L.dtype));
  }
}

}  // namespace kvcheck::cuda
