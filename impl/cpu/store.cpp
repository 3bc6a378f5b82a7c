// CpuBackend::store_kv_cache (SPEC §5.1): validate everything, then quantise each
// valid row's record (SPEC §4) straight into its slot, rows split across threads.
// Kernels are templated on what changes the generated code (data dtype, scale format,
// group size 16/32/128 or any at run time) and compiled for baseline and AVX2.
#include <cstring>
#include <vector>

#include "impl/cpu/cpu_backend.h"
#include "impl/cpu/fast_numerics.h"
#include "impl/cpu/isa.h"
#include "impl/cpu/kv_numerics.h"
#include "impl/cpu/parallel.h"
#include "impl/cpu/rope.h"
#include "impl/cpu/stream_copy.h"
#include "impl/validate_store_load.h"
#include "impl/error.h"

namespace kvcheck::cpu {
namespace {

using namespace fast;

struct StoreJob {
  const uint16_t* kv;  // bf16 bits, row r at kv + r*row_stride
  int64_t row_stride;  // elements
  const int32_t* slots;
  uint8_t* cache;
  const CacheLayout* layout;
  PagedLayout paged;  // layout->paged(), taken once: the inline offset formula
  // concat_and_cache_mla (docs/spec.md §8.2): elements [split, E) of row r are at
  // pe + r*pe_stride (kv holds the first split); pe == nullptr: one source.
  const uint16_t* pe = nullptr;
  int64_t pe_stride = 0;
  int64_t split = 0;
};

/// Row r's E elements: in place, or (two sources) joined into `joined` (E elements),
/// so every kernel below reads one contiguous row.
KVCHECK_CPU_INLINE const uint16_t* row_of(const StoreJob& job, int64_t r, uint16_t* joined) {
  const uint16_t* x = job.kv + r * job.row_stride;
  if (job.pe == nullptr) return x;
  const int64_t e = job.layout->format.elements;
  std::memcpy(joined, x, static_cast<size_t>(job.split) * 2);
  std::memcpy(joined + job.split, job.pe + r * job.pe_stride, static_cast<size_t>(e - job.split) * 2);
  return joined;
}

/// One group's scale from its amax (SPEC §4.1-4.4): writes the scale bytes, returns
/// the multiplier applied to every element (2^-k or RN(1/sf)).
template <bool kE4M3Data, SfFormat S>
KVCHECK_CPU_INLINE float group_scale(float amax, uint8_t* scale) {
  if constexpr (S == SfFormat::kUE8M0) {
    const float a = amax < kAmaxMargin ? kAmaxMargin : amax;
    int32_t k = ceil_log2(a * (kE4M3Data ? kInv448 : kInv6));
    k = k < -126 ? -126 : (k > 126 ? 126 : k);
    *scale = static_cast<uint8_t>(k + 127);
    return exp2_neg(k);
  } else if constexpr (S == SfFormat::kE4M3) {
    // Blends (fast_numerics.h), not ?:, so the scales of a batch vectorise.
    const float t = at_most(at_least(amax, kFp4AmaxFloor) * kInv6, 448.0f);
    const uint8_t sf = f32_to_e4m3(t);
    *scale = sf;
    return 1.0f / e4m3_to_f32(sf);
  } else if constexpr (S == SfFormat::kE4M3RoundUp) {
    // SPEC §4.9 (vLLM nvfp4_ds_mla): the 2^-9 floor after the IEEE division, then the
    // next e4m3 code up when the rounded one decodes below t (never past 0x7E = 448).
    const float t = at_least(amax / 6.0f, 0x1p-9f);
    uint8_t sf = f32_to_e4m3(t);
    sf = static_cast<uint8_t>(sf + (e4m3_to_f32(sf) < t && sf < 0x7E ? 1 : 0));
    *scale = sf;
    return 1.0f / e4m3_to_f32(sf);
  } else if constexpr (is_fp32_pow2(S) || S == SfFormat::kUE8M0FloorAfter) {
    // SPEC §4.6 (fp8_ds_mla) and §4.8 (MODEL1, the exponent as a ue8m0 byte): the 1e-4
    // floor after the IEEE division; §4.7 (the indexer's ue8m0 option): before it.
    float t;
    if constexpr (S != SfFormat::kFP32Pow2FloorFirst) {
      t = amax / 448.0f;
      t = t < kAmaxMargin ? kAmaxMargin : t;
    } else {
      t = (amax < kAmaxMargin ? kAmaxMargin : amax) / 448.0f;
    }
    const int32_t k = ceil_log2(t);  // -22 / -13 .. 120, or 128 for an Inf amax
    if constexpr (S == SfFormat::kUE8M0FloorAfter) {
      *scale = static_cast<uint8_t>(k + 127);  // k = 128: 0xFF
    } else {
      const uint32_t bits = static_cast<uint32_t>(k + 127) << 23;  // 2^k; k = 128: +Inf
      std::memcpy(scale, &bits, 4);
    }
    return k == 128 ? 0.0f : exp2_neg(k);  // x * 2^-k == x / 2^k; x / Inf == x * 0
  } else {
    static_assert(S == SfFormat::kFP32);
    const float sf = (amax < kAmaxMargin ? kAmaxMargin : amax) * kInv448;
    std::memcpy(scale, &sf, 4);
    return 1.0f / sf;
  }
}

template <bool kE4M3Data>
KVCHECK_CPU_INLINE uint8_t encode(float y) {
  return kE4M3Data ? f32_to_e4m3(y) : f32_to_e2m1(y);
}

/// B groups of compile-time size G (even) at x: their codes to data, group k's scale
/// bytes to sf + k * sf_width(S). Each step below is a loop of fixed trip count over
/// all B groups into fixed-size local arrays (no alias checks), so each vectorises. x
/// is read in place: a copy to a local array first was stored in 16-byte halves and
/// read back 32 bytes at a time, a failed store forward (40% of FP8_FP32SF_INDEX's
/// time under AVX2, perf).
template <bool kE4M3Data, SfFormat S, int G, int B>
KVCHECK_CPU_INLINE void quantize_groups(const uint16_t* x, uint8_t* data, uint8_t* sf) {
  constexpr int kN = G * B;
  uint32_t amax[B];
  for (int k = 0; k < B; ++k) amax[k] = bf16_amax_bits(x + k * G, G) << 16;
  float mult[B];  // all B side by side: the e4m3 recipes' divisions in one vector
  for (int k = 0; k < B; ++k) mult[k] = group_scale<kE4M3Data, S>(bits_f(amax[k]), sf + k * sf_width(S));
  // Scaled per group (float lanes only: G a multiple of the vector factor), encoded
  // over all kN (the byte codes' factor divides kN, not G).
  float y[kN];
  for (int k = 0; k < B; ++k)
    for (int j = 0; j < G; ++j) y[k * G + j] = bf16_to_f32(x[k * G + j]) * mult[k];
  uint8_t codes[kN];
  for (int i = 0; i < kN; ++i) codes[i] = encode<kE4M3Data>(y[i]);
  if constexpr (kE4M3Data) {
    std::memcpy(data, codes, kN);
  } else {
    uint8_t packed[kN / 2];  // element 2i low nibble, 2i+1 high (SPEC §2)
    for (int j = 0; j < kN / 2; ++j)  // x16 not << 4: x86 has no byte shifts
      packed[j] = static_cast<uint8_t>(codes[2 * j] + codes[2 * j + 1] * 16u);
    std::memcpy(data, packed, kN / 2);
  }
}

/// Groups [g, g + B) of the row x (G a compile-time size): codes into the token's data,
/// scales to their bytes (SPEC §2: in group order, or transposed when scales_last).
template <bool kE4M3Data, SfFormat S, int G, int B>
KVCHECK_CPU_INLINE void store_groups(const uint16_t* x, int64_t g, uint8_t* data, uint8_t* scales,
                                     const PagedLayout& p) {
  constexpr int64_t kGroupDataBytes = kE4M3Data ? G : G / 2;
  constexpr int64_t kW = sf_width(S);
  uint8_t sf[B * kW];
  quantize_groups<kE4M3Data, S, G, B>(x + g * G, data + g * kGroupDataBytes, sf);
  if (!p.scales_last) {
    std::memcpy(scales + g * kW, sf, sizeof sf);
  } else {
    for (int k = 0; k < B; ++k) std::memcpy(scales + p.scale_byte(g + k), sf + k * kW, kW);
  }
}

/// Any group size (the generic fallback): codes for the whole token, then packed.
template <bool kE4M3Data, SfFormat S>
KVCHECK_CPU_INLINE void quantize_token_any(const uint16_t* x, const KVCacheFormat& f, const PagedLayout& p,
                                           uint8_t* data, uint8_t* scales, std::vector<uint8_t>& codes) {
  const int32_t gs = f.elements_per_sf;
  for (int64_t g = 0; g < f.num_scales(); ++g) {
    const uint16_t* xg = x + g * gs;
    const float mult =
        group_scale<kE4M3Data, S>(bits_f(bf16_amax_bits(xg, gs) << 16), scales + p.scale_byte(g));
    for (int32_t j = 0; j < gs; ++j)
      codes[static_cast<size_t>(g * gs + j)] = encode<kE4M3Data>(bf16_to_f32(xg[j]) * mult);
  }
  if constexpr (kE4M3Data) {
    std::memcpy(data, codes.data(), static_cast<size_t>(f.quantized_elements()));
  } else {
    for (int64_t i = 0; i < f.quantized_elements() / 2; ++i)
      data[i] = static_cast<uint8_t>(codes[static_cast<size_t>(2 * i)] |
                                     (codes[static_cast<size_t>(2 * i + 1)] << 4));
  }
}

/// Rows [begin, end) of a quantised store; G == 0: group size known at run time.
template <bool kE4M3Data, SfFormat S, int G>
KVCHECK_CPU_INLINE void store_rows_impl(const StoreJob& job, int64_t begin, int64_t end) {
  const KVCacheFormat& f = job.layout->format;
  const int64_t groups = f.num_scales();
  const size_t tail_bytes = static_cast<size_t>(f.tail_bytes());
  std::vector<uint8_t> codes(G == 0 ? static_cast<size_t>(f.elements) : 0);
  std::vector<uint16_t> joined(job.pe != nullptr ? static_cast<size_t>(f.elements) : 0);
  for (int64_t r = begin; r < end; ++r) {
    const int32_t slot = job.slots[r];
    if (slot < 0) continue;  // -1 padding: touches nothing (validated: nothing else < 0)
    uint8_t* data = job.cache + job.paged.slot_data_offset(slot);
    uint8_t* scales = job.cache + job.paged.slot_scale_offset(slot);
    const uint16_t* x = row_of(job, r, joined.data());
    if constexpr (G != 0) {
      constexpr int B = kGroupBatch<G>;
      int64_t g = 0;
      for (; g + B <= groups; g += B) store_groups<kE4M3Data, S, G, B>(x, g, data, scales, job.paged);
      for (; g < groups; ++g) store_groups<kE4M3Data, S, G, 1>(x, g, data, scales, job.paged);  // the rest
    } else {
      quantize_token_any<kE4M3Data, S>(x, f, job.paged, data, scales, codes);
    }
    if (tail_bytes == 0) continue;
    uint8_t* tail = job.cache + job.paged.slot_tail_offset(slot);
    if (!f.e4m3_tail) {  // the row's last elements as they are (SPEC §2)
      std::memcpy(tail, x + f.quantized_elements(), tail_bytes);
    } else {  // unscaled e4m3 casts (SPEC §4.9), in vectorised chunks (kv_numerics.h)
      convert_head<uint16_t, uint8_t>(reinterpret_cast<const uint8_t*>(x + f.quantized_elements()), tail,
                                      f.bf16_tail_elements, [](uint16_t v) KVCHECK_CPU_ALWAYS_INLINE {
                                        return f32_to_e4m3(bf16_to_f32(v));
                                      });
    }
  }
}

/// BF16 rows [begin, end): copies; kStream: by streaming stores (stream_copy.h).
template <bool kStream>
KVCHECK_CPU_INLINE void store_rows_bf16_impl(const StoreJob& job, int64_t begin, int64_t end) {
  const size_t row_bytes = static_cast<size_t>(job.layout->format.elements) * 2;
  for (int64_t r = begin; r < end; ++r) {
    const int32_t slot = job.slots[r];
    if (slot < 0) continue;
    uint8_t* dst = job.cache + job.paged.slot_data_offset(slot);
    const auto* src = reinterpret_cast<const uint8_t*>(job.kv + r * job.row_stride);
    if (job.pe == nullptr) {
      copy_row<kStream>(dst, src, row_bytes);
    } else {  // the two sources side by side (docs/spec.md §8.2)
      const size_t first = static_cast<size_t>(job.split) * 2;
      copy_row<kStream>(dst, src, first);
      copy_row<kStream>(dst + first, reinterpret_cast<const uint8_t*>(job.pe + r * job.pe_stride), row_bytes - first);
    }
  }
}
void store_rows_bf16(const StoreJob& job, int64_t begin, int64_t end) { store_rows_bf16_impl<false>(job, begin, end); }
#if KVCHECK_CPU_X86
KVCHECK_CPU_TARGET_AVX2 void store_rows_bf16_streaming(const StoreJob& job, int64_t begin, int64_t end) {
  store_rows_bf16_impl<true>(job, begin, end);
  stream_fence();
}
#endif

using RowsFn = void (*)(const StoreJob&, int64_t, int64_t);

template <bool D, SfFormat S, int G>
void rows_baseline(const StoreJob& job, int64_t begin, int64_t end) {
  store_rows_impl<D, S, G>(job, begin, end);
}
template <bool D, SfFormat S, int G>
KVCHECK_CPU_TARGET_AVX2 void rows_avx2(const StoreJob& job, int64_t begin, int64_t end) {
  store_rows_impl<D, S, G>(job, begin, end);
}

template <bool D, SfFormat S>
RowsFn pick_group(int32_t group, bool avx2) {
  switch (group) {
    case 16: return avx2 ? &rows_avx2<D, S, 16> : &rows_baseline<D, S, 16>;
    case 32: return avx2 ? &rows_avx2<D, S, 32> : &rows_baseline<D, S, 32>;
    case 64: return avx2 ? &rows_avx2<D, S, 64> : &rows_baseline<D, S, 64>;  // MODEL1
    case 128: return avx2 ? &rows_avx2<D, S, 128> : &rows_baseline<D, S, 128>;
    default: return avx2 ? &rows_avx2<D, S, 0> : &rows_baseline<D, S, 0>;
  }
}

template <bool D>
RowsFn pick_scale(const KVCacheFormat& f, bool avx2) {
  switch (f.sf_format) {
    case SfFormat::kUE8M0: return pick_group<D, SfFormat::kUE8M0>(f.elements_per_sf, avx2);
    case SfFormat::kE4M3: return pick_group<D, SfFormat::kE4M3>(f.elements_per_sf, avx2);
    case SfFormat::kFP32: return pick_group<D, SfFormat::kFP32>(f.elements_per_sf, avx2);
    case SfFormat::kFP32Pow2:
      if constexpr (D) return pick_group<D, SfFormat::kFP32Pow2>(f.elements_per_sf, avx2);
      break;  // e4m3 data only (validated)
    case SfFormat::kFP32Pow2FloorFirst:
      if constexpr (D) return pick_group<D, SfFormat::kFP32Pow2FloorFirst>(f.elements_per_sf, avx2);
      break;
    case SfFormat::kUE8M0FloorAfter:
      if constexpr (D) return pick_group<D, SfFormat::kUE8M0FloorAfter>(f.elements_per_sf, avx2);
      break;
    case SfFormat::kE4M3RoundUp:
      if constexpr (!D) return pick_group<D, SfFormat::kE4M3RoundUp>(f.elements_per_sf, avx2);
      break;  // e2m1 data only (validated)
    case SfFormat::kNone: break;
  }
  throw Error(ErrorCode::kUnsupported, "cpu store: no kernel for scale format " +
                                           to_string(f.sf_format) + " of " + f.name);
}

/// The kernel for format f; `output_bytes`: what the call writes (a large copy streams).
RowsFn pick_kernel(const KVCacheFormat& f, int64_t output_bytes) {
  const bool avx2 = use_avx2();
  switch (f.quantized_dtype) {
    case QuantizedDtype::kNone:
#if KVCHECK_CPU_X86
      if (avx2 && output_bytes >= stream_min_bytes()) return &store_rows_bf16_streaming;
#else
      (void)output_bytes;
#endif
      return &store_rows_bf16;
    case QuantizedDtype::kE4M3: return pick_scale<true>(f, avx2);
    case QuantizedDtype::kE2M1: return pick_scale<false>(f, avx2);
  }
  throw Error(ErrorCode::kUnsupported, "cpu store: no kernel for format " + f.name);
}

/// A validated store of n rows (one source or two): the format's kernel, rows split
/// across threads.
void run_store(const StoreJob& job, int64_t n) {
  if (n == 0) return;
  const int64_t output_bytes = n * job.layout->format.bytes_per_token();
  const RowsFn rows = pick_kernel(job.layout->format, output_bytes);
  parallel_for(n, output_bytes, [&](int64_t begin, int64_t end) { rows(job, begin, end); });
}

/// docs/spec.md §8.4: k_pe's rows [0, n) rotated into a buffer of n rows of rope_dim
/// elements (validated input).
std::vector<uint16_t> rotate_k_pe(const KVInput& k_pe, int32_t rope_dim, int64_t n, const RopeArgs& rope) {
  std::vector<uint16_t> out(static_cast<size_t>(n * rope_dim));
  parallel_for(n, n * rope_dim * 4, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r)
      rope_row<KvDtype::kBF16>(k_pe.data + r * k_pe.row_stride, out.data() + r * rope_dim, rope_dim, rope,
                               rope.cos_sin_cache + rope.positions[r] * rope.rot_dim);
  });
  return out;
}

}  // namespace

void CpuBackend::store_kv_cache(const KVInput& kv, std::span<const int32_t> slot_mapping,
                                const CacheView& cache) const {
  validate_store(kv, slot_mapping, cache);
  run_store(StoreJob{kv.data, kv.row_stride, slot_mapping.data(), cache.base, &cache.layout, cache.layout.paged()},
            static_cast<int64_t>(slot_mapping.size()));
}

void CpuBackend::concat_and_cache_mla(const ConcatMlaArgs& a) const {
  validate_concat_mla(a);
  const CacheView& cache = a.cache;
  const int64_t n = static_cast<int64_t>(a.slot_mapping.size());
  // Fused RoPE (docs/spec.md §8.4): the rotated k_pe rows replace k_pe's (its buffer is only read).
  std::vector<uint16_t> rotated;
  KVInput k_pe = a.k_pe;
  if (a.rope && n > 0) {
    rotated = rotate_k_pe(a.k_pe, a.rope_dim, n, *a.rope);
    k_pe = {rotated.data(), n, a.rope_dim};
  }
  if (a.pe_cache) {  // split caches: two one-source stores at the same slots
    const CacheView& pe = *a.pe_cache;
    run_store(StoreJob{a.kv_c.data, a.kv_c.row_stride, a.slot_mapping.data(), cache.base, &cache.layout,
                       cache.layout.paged()},
              n);
    run_store(StoreJob{k_pe.data, k_pe.row_stride, a.slot_mapping.data(), pe.base, &pe.layout, pe.layout.paged()},
              n);
    return;
  }
  run_store(StoreJob{a.kv_c.data, a.kv_c.row_stride, a.slot_mapping.data(), cache.base, &cache.layout,
                     cache.layout.paged(), k_pe.data, k_pe.row_stride, a.kv_lora_rank},
            n);
}

}  // namespace kvcheck::cpu
