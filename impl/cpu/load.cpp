// CpuBackend::load_paged_kv_cache (SPEC §5.2): validate everything, then copy or
// dequantise (SPEC §4) each covered output row; the covered rows are split evenly
// across threads. do_cast kernels are compiled for baseline and AVX2.
#include <algorithm>
#include <cstring>
#include <vector>

#include "impl/cpu/cpu_backend.h"
#include "impl/cpu/fast_numerics.h"
#include "impl/cpu/isa.h"
#include "impl/cpu/kv_numerics.h"
#include "impl/cpu/parallel.h"
#include "impl/cpu/stream_copy.h"
#include "impl/validate_store_load.h"
#include "impl/error.h"

namespace kvcheck::cpu {
namespace {

using namespace fast;

struct LoadJob {
  const uint8_t* cache;
  const CacheLayout* layout;
  PagedLayout paged;             // layout->paged(), taken once: the inline offset formula
  const int32_t* segs;           // [S][4]
  const int64_t* first_row;      // [S+1]: work row where segment s starts (prefix of lengths)
  int64_t num_segments;
  LoadOutput out;
};

template <SfFormat S>
KVCHECK_CPU_INLINE float scale_value(const uint8_t* scale) {
  if constexpr (S == SfFormat::kUE8M0) {
    return ue8m0_to_f32(scale[0]);
  } else if constexpr (S == SfFormat::kE4M3) {
    return e4m3_to_f32(scale[0]);
  } else {
    static_assert(S == SfFormat::kFP32 || is_fp32_pow2(S));
    float s;
    std::memcpy(&s, scale, 4);
    return s;
  }
}

template <bool kE4M3Data>
KVCHECK_CPU_INLINE float decode(uint8_t code) {
  return kE4M3Data ? e4m3_to_f32(code) : e2m1_to_f32(code);
}

/// B groups of compile-time size G (even), codes at data, group k's scale bytes at
/// sf + k * sf_width(S): dequant = bf16_rn(float(q) * scale) (SPEC §4) to out. Each
/// step is a loop of fixed trip count over all B groups into fixed-size local arrays,
/// so each vectorises (isa.h's kGroupBatch says why B groups); data is read in place
/// (a local copy first is written and read back in different widths: a failed store
/// forward).
template <bool kE4M3Data, SfFormat S, int G, int B>
KVCHECK_CPU_INLINE void dequant_groups(const uint8_t* data, const uint8_t* sf, uint8_t* out) {
  constexpr int kN = G * B;
  float s[B];
  for (int k = 0; k < B; ++k) s[k] = scale_value<S>(sf + k * sf_width(S));
  uint8_t codes[kN];
  if constexpr (kE4M3Data) {
    for (int i = 0; i < kN; ++i) codes[i] = data[i];
  } else {
    for (int j = 0; j < kN / 2; ++j) {
      codes[2 * j] = data[j] & 0xF;
      codes[2 * j + 1] = static_cast<uint8_t>((data[j] & 0xF0) / 16u);  // no byte shifts on x86
    }
  }
  float v[kN];  // decoded over all kN (the byte codes' vector factor divides kN, not G)
  for (int i = 0; i < kN; ++i) v[i] = decode<kE4M3Data>(codes[i]);
  uint16_t values[kN];  // scaled per group (float and 16-bit lanes: G a multiple of the factor)
  for (int k = 0; k < B; ++k)
    for (int j = 0; j < G; ++j) values[k * G + j] = f32_to_bf16(v[k * G + j] * s[k]);
  std::memcpy(out, values, sizeof values);
}

/// Groups [g, g + B) of a token (G a compile-time size): their scale bytes gathered (in
/// group order, or transposed when scales_last: SPEC §2), then dequantised to out.
template <bool kE4M3Data, SfFormat S, int G, int B>
KVCHECK_CPU_INLINE void load_groups(const PagedLayout& p, const uint8_t* data, const uint8_t* scales, int64_t g,
                                    uint8_t* out) {
  constexpr int64_t kGroupDataBytes = kE4M3Data ? G : G / 2;
  constexpr int64_t kW = sf_width(S);
  uint8_t sf[B * kW];
  if (!p.scales_last) {
    std::memcpy(sf, scales + g * kW, sizeof sf);
  } else {
    for (int k = 0; k < B; ++k) std::memcpy(sf + k * kW, scales + p.scale_byte(g + k), kW);
  }
  dequant_groups<kE4M3Data, S, G, B>(data + g * kGroupDataBytes, sf, out + g * G * 2);
}

/// A token's quantised elements (data, scales) dequantised to out; G == 0: group size
/// known at run time.
template <bool kE4M3Data, SfFormat S, int G>
KVCHECK_CPU_INLINE void dequant_token(const KVCacheFormat& f, const PagedLayout& p, const uint8_t* data,
                                      const uint8_t* scales, uint8_t* out) {
  if constexpr (G != 0) {
    constexpr int B = kGroupBatch<G>;
    const int64_t groups = f.num_scales();
    int64_t g = 0;
    for (; g + B <= groups; g += B) load_groups<kE4M3Data, S, G, B>(p, data, scales, g, out);
    for (; g < groups; ++g) load_groups<kE4M3Data, S, G, 1>(p, data, scales, g, out);  // the rest
  } else {  // any group size
    for (int64_t i = 0; i < f.quantized_elements(); ++i) {
      const uint8_t code =
          kE4M3Data ? data[i] : static_cast<uint8_t>((data[i / 2] >> (4 * (i & 1))) & 0xF);
      const float s = scale_value<S>(scales + p.scale_byte(i / f.elements_per_sf));
      const uint16_t v = f32_to_bf16(decode<kE4M3Data>(code) * s);
      std::memcpy(out + 2 * i, &v, 2);
    }
  }
}

enum class Kind { kCopy, kDequant };

/// Work rows [rb, re) (row r = the r-th covered output row, in segment order);
/// kStream: a copy's rows written by streaming stores (stream_copy.h).
template <Kind K, bool kE4M3Data, SfFormat S, int G, bool kStream = false>
KVCHECK_CPU_INLINE void load_rows_impl(const LoadJob& job, int64_t rb, int64_t re) {
  const PagedLayout& layout = job.paged;
  const KVCacheFormat& f = job.layout->format;
  const LoadOutput& out = job.out;
  const size_t row_bytes = static_cast<size_t>(f.load_row_bytes());
  const size_t scale_row_bytes = static_cast<size_t>(f.load_scale_row_bytes());
  const bool index = f.is_index();
  int64_t s = std::upper_bound(job.first_row, job.first_row + job.num_segments + 1, rb) -
              job.first_row - 1;
  for (int64_t r = rb; r < re;) {
    while (job.first_row[s + 1] <= r) ++s;  // skip empty segments
    const int32_t* seg = job.segs + 4 * s;
    const int64_t block = seg[0], src_begin = seg[1], dst = seg[3];
    const int64_t k_end = std::min(re, job.first_row[s + 1]) - job.first_row[s];
    for (int64_t k = r - job.first_row[s]; k < k_end; ++k) {
      uint8_t* o = out.data + (dst + k) * out.data_row_stride;
      uint8_t* os = index ? out.scales + (dst + k) * out.scale_row_stride : nullptr;
      if (block < 0) {  // -1: zero fill (SPEC §5.2)
        std::memset(o, 0, row_bytes);
        if (index) std::memset(os, 0, scale_row_bytes);
        continue;
      }
      const uint8_t* data = job.cache + layout.data_offset(block, src_begin + k);
      if constexpr (K == Kind::kDequant) {
        dequant_token<kE4M3Data, S, G>(f, layout, data, job.cache + layout.scale_offset(block, src_begin + k),
                                       o);
        if (layout.tail_elements == 0) continue;
        uint8_t* ot = o + 2 * int64_t{layout.quantized_elements()};
        const uint8_t* tail = job.cache + layout.tail_offset(block, src_begin + k);
        if (!layout.e4m3_tail) {  // the BF16 tail after the dequantised elements, as stored
          std::memcpy(ot, tail, static_cast<size_t>(layout.tail_bytes()));
        } else {  // e4m3 casts decoded (exact in BF16, SPEC §4.9)
          convert_head<uint8_t, uint16_t>(tail, ot, layout.tail_elements, [](uint8_t c) KVCHECK_CPU_ALWAYS_INLINE {
            return f32_to_bf16(e4m3_to_f32(c));  // in vectorised chunks (kv_numerics.h)
          });
        }
      } else {
        copy_row<kStream>(o, data, row_bytes);
        if (index)
          std::memcpy(os, job.cache + layout.scale_offset(block, src_begin + k), scale_row_bytes);
      }
    }
    r = job.first_row[s] + k_end;
  }
}

using RowsFn = void (*)(const LoadJob&, int64_t, int64_t);

#if KVCHECK_CPU_X86
KVCHECK_CPU_TARGET_AVX2 void rows_copy_streaming(const LoadJob& job, int64_t rb, int64_t re) {
  load_rows_impl<Kind::kCopy, true, SfFormat::kNone, 0, true>(job, rb, re);
  stream_fence();
}
#endif

template <Kind K, bool D, SfFormat S, int G>
void rows_baseline(const LoadJob& job, int64_t rb, int64_t re) {
  load_rows_impl<K, D, S, G>(job, rb, re);
}
template <Kind K, bool D, SfFormat S, int G>
KVCHECK_CPU_TARGET_AVX2 void rows_avx2(const LoadJob& job, int64_t rb, int64_t re) {
  load_rows_impl<K, D, S, G>(job, rb, re);
}

template <bool D, SfFormat S>
RowsFn pick_group(int32_t group, bool avx2) {
  constexpr Kind K = Kind::kDequant;
  switch (group) {
    case 16: return avx2 ? &rows_avx2<K, D, S, 16> : &rows_baseline<K, D, S, 16>;
    case 32: return avx2 ? &rows_avx2<K, D, S, 32> : &rows_baseline<K, D, S, 32>;
    case 64: return avx2 ? &rows_avx2<K, D, S, 64> : &rows_baseline<K, D, S, 64>;  // MODEL1
    case 128: return avx2 ? &rows_avx2<K, D, S, 128> : &rows_baseline<K, D, S, 128>;
    default: return avx2 ? &rows_avx2<K, D, S, 0> : &rows_baseline<K, D, S, 0>;
  }
}

template <bool D>
RowsFn pick_scale(const KVCacheFormat& f, bool avx2) {
  switch (f.sf_format) {
    case SfFormat::kUE8M0:
    case SfFormat::kUE8M0FloorAfter:  // one encoding: the rules differ in the writer only
      return pick_group<D, SfFormat::kUE8M0>(f.elements_per_sf, avx2);
    case SfFormat::kE4M3:
    case SfFormat::kE4M3RoundUp:  // one encoding: the rules differ in the writer only
      return pick_group<D, SfFormat::kE4M3>(f.elements_per_sf, avx2);
    case SfFormat::kFP32: return pick_group<D, SfFormat::kFP32>(f.elements_per_sf, avx2);
    case SfFormat::kFP32Pow2:
    case SfFormat::kFP32Pow2FloorFirst:  // one encoding: the rules differ in the writer only
      if constexpr (D) return pick_group<D, SfFormat::kFP32Pow2>(f.elements_per_sf, avx2);
      break;  // e4m3 data only (validated)
    case SfFormat::kNone: break;
  }
  throw Error(ErrorCode::kUnsupported, "cpu load: no kernel for scale format " +
                                           to_string(f.sf_format) + " of " + f.name);
}

/// The kernel for format f; `output_bytes`: what the call writes (a large copy streams).
RowsFn pick_kernel(const KVCacheFormat& f, int64_t output_bytes) {
  const bool avx2 = use_avx2();
#if KVCHECK_CPU_X86
  if (!f.do_cast && avx2 && output_bytes >= stream_min_bytes()) return &rows_copy_streaming;
#else
  (void)output_bytes;
#endif
  if (!f.do_cast) return &rows_baseline<Kind::kCopy, true, SfFormat::kNone, 0>;
  switch (f.quantized_dtype) {
    case QuantizedDtype::kE4M3: return pick_scale<true>(f, avx2);
    case QuantizedDtype::kE2M1: return pick_scale<false>(f, avx2);
    case QuantizedDtype::kNone: break;
  }
  throw Error(ErrorCode::kUnsupported, "cpu load: no do_cast kernel for format " + f.name);
}

}  // namespace

void CpuBackend::load_paged_kv_cache(const ConstCacheView& cache,
                                     std::span<const int32_t> load_segments, int32_t total_k,
                                     const LoadOutput& out) const {
  const int64_t covered = validate_load(cache, load_segments, total_k, out);
  if (covered == 0) return;
  const KVCacheFormat& f = cache.layout.format;
  const int64_t output_bytes = covered * (f.load_row_bytes() + f.load_scale_row_bytes());
  const RowsFn rows = pick_kernel(f, output_bytes);
  const int64_t num_segments = static_cast<int64_t>(load_segments.size() / 4);
  std::vector<int64_t> first_row(static_cast<size_t>(num_segments + 1), 0);
  for (int64_t s = 0; s < num_segments; ++s)
    first_row[s + 1] = first_row[s] + load_segments[4 * s + 2] - load_segments[4 * s + 1];
  const LoadJob job{cache.base, &cache.layout, cache.layout.paged(), load_segments.data(), first_row.data(),
                    num_segments, out};
  parallel_for(covered, output_bytes, [&](int64_t rb, int64_t re) { rows(job, rb, re); });
}

}  // namespace kvcheck::cpu
