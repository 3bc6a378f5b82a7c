// CpuBackend::store_kv (SPEC §7.4): validate everything (impl/validate_kv), then write
// each valid row's K and V records, rows split across threads. Kernels are templated
// on the (model dtype, cache dtype) pair, compiled for baseline and AVX2; FP8 heads
// are quantised in chunks of 64 elements through fixed-size local arrays so the
// conversion loops vectorise whatever the alignment of the rows.
#include <algorithm>
#include <cstring>
#include <vector>

#include "impl/cpu/cpu_backend.h"
#include "impl/cpu/kv_dispatch.h"
#include "impl/cpu/kv_numerics.h"
#include "impl/cpu/parallel.h"
#include "impl/cpu/rope.h"
#include "impl/kv_layout.h"
#include "impl/validate_kv.h"

namespace kvcheck::cpu {
namespace {

using namespace fast;

struct StoreKvJob {
  const KvTokensIn* rows[2];  // key, value
  uint8_t* base[2];           // k_cache, v_cache
  const float* scale[2];      // k_scale, v_scale (FP8) or null
  bool per_head = false;
  KvRecipe recipe = KvRecipe::kSpec;
  const int32_t* slots;
  const KvPagedLayout* layout;
  uint8_t* sf_base[2] = {nullptr, nullptr};  // e2m1: k_sf, v_sf (SPEC §7.9)
  KvSfDevLayout sf{};
};

/// One head: D model elements at src -> D FP8 codes at dst under the recipe (SPEC
/// §7.3.1): q = cvt(x / scale), or for kSglang q = cvt(x * RN(1 / scale)) with a NaN
/// product sent to +max (the fminf/fmaxf clamp; ±Inf and overflow saturate in cvt).
template <KvDtype In, KvDtype Cache>
KVCHECK_CPU_INLINE void quantize_head(const uint8_t* src, uint8_t* dst, int64_t d, float scale, KvRecipe recipe) {
  if (recipe == KvRecipe::kSglang) {
    const float inv = 1.0f / scale;
    constexpr uint32_t kMaxBits = Cache == KvDtype::kE4M3 ? 0x43E00000u : 0x47600000u;  // 448, 57344
    convert_head<uint16_t, uint8_t>(src, dst, d, [inv](uint16_t x) KVCHECK_CPU_ALWAYS_INLINE {
      const float y = model_to_f32<In>(x) * inv;
      return f32_to_fp8<Cache>(bits_f(sel((f_bits(y) & 0x7FFFFFFFu) > 0x7F800000u, kMaxBits, f_bits(y))));
    });
    return;
  }
  convert_head<uint16_t, uint8_t>(src, dst, d, [scale](uint16_t x) KVCHECK_CPU_ALWAYS_INLINE {
    return f32_to_fp8<Cache>(model_to_f32<In>(x) / scale);
  });
}

template <KvDtype In, KvDtype Cache>
KVCHECK_CPU_INLINE void store_rows_impl(const StoreKvJob& job, int64_t begin, int64_t end) {
  const KvPagedLayout& l = *job.layout;
  constexpr bool kFp8 = Cache == KvDtype::kE4M3 || Cache == KvDtype::kE5M2;
  constexpr bool kNvfp4 = Cache == KvDtype::kE2M1;
  constexpr int64_t kOut = kFp8 ? 1 : 2;
  const int64_t d = l.head_dim;
  if constexpr (kNvfp4) {
    for (int64_t r = begin; r < end; ++r) {
      const int32_t slot = job.slots[r];
      if (slot < 0) continue;
      const KvSlotPos p = l.split(slot);
      for (int side = 0; side < 2; ++side) {
        const KvTokensIn& in = *job.rows[side];
        const float g = job.scale[side][0];
        for (int64_t h = 0; h < l.num_kv_heads; ++h) {
          const uint8_t* src = in.data + 2 * (r * in.token_stride + h * in.head_stride);
          uint8_t* dst = job.base[side] + kv_dev_byte_offset(l.dtype, l.offset(side, p.block, p.token, h));
          for (int64_t grp = 0; grp < d / 16; grp += kNvfp4Groups) {
            const int64_t k_end = std::min<int64_t>(kNvfp4Groups, d / 16 - grp);
            uint8_t sf[kNvfp4Groups];
            if (k_end == kNvfp4Groups) {
              nvfp4_groups<In>(src + 32 * grp, dst + 8 * grp, sf, g);
            } else {  // a head's last groups (head_dim / 16 % 8 != 0): through zero-padded copies
              uint8_t in[32 * kNvfp4Groups] = {}, out[8 * kNvfp4Groups];
              std::memcpy(in, src + 32 * grp, static_cast<size_t>(32 * k_end));
              nvfp4_groups<In>(in, out, sf, g);
              std::memcpy(dst + 8 * grp, out, static_cast<size_t>(8 * k_end));
            }
            for (int64_t k = 0; k < k_end; ++k) job.sf_base[side][job.sf.offset(p.block, p.token, h, grp + k)] = sf[k];
          }
        }
      }
    }
    return;
  }
  for (int64_t r = begin; r < end; ++r) {
    const int32_t slot = job.slots[r];
    if (slot < 0) continue;  // -1 padding (validated: nothing else is negative)
    for (int side = 0; side < 2; ++side) {
      const KvTokensIn& in = *job.rows[side];
      for (int64_t h = 0; h < l.num_kv_heads; ++h) {
        const uint8_t* src = in.data + 2 * (r * in.token_stride + h * in.head_stride);
        uint8_t* dst = job.base[side] + kOut * l.slot_offset(side, slot, h);
        if constexpr (kFp8)
          quantize_head<In, Cache>(src, dst, d, job.scale[side][job.per_head ? h : 0], job.recipe);
        else
          std::memcpy(dst, src, static_cast<size_t>(2 * d));
      }
    }
  }
}

/// The row loop for the dispatch (kv_dispatch.h).
template <KvDtype In, KvDtype Cache>
struct StoreRows {
  static KVCHECK_CPU_INLINE void run(const StoreKvJob& job, int64_t begin, int64_t end) {
    store_rows_impl<In, Cache>(job, begin, end);
  }
};

}  // namespace

void CpuBackend::store_kv(const KvTokensIn& key_in, const KvTokensIn& value, std::span<const int32_t> slot_mapping,
                          const KvCacheView& cache, const RopeArgs* rope) const {
  validate_store_kv(key_in, value, slot_mapping, cache, rope);
  const int64_t n = static_cast<int64_t>(slot_mapping.size());
  if (n == 0) return;
  const KvCacheLayout& l = cache.layout;
  // Fused RoPE (docs/spec.md §8.4): every head of the key rows rotated into a buffer of
  // [n][H][D] first (the key buffer only read), stored as any key rows.
  std::vector<uint16_t> rotated;
  KvTokensIn key = key_in;
  if (rope) {
    const int64_t heads = l.num_kv_heads, d = l.head_dim;
    rotated.resize(static_cast<size_t>(n * heads * d));
    const auto* in = reinterpret_cast<const uint16_t*>(key_in.data);  // 2-byte aligned (validated)
    const bool bf16 = key_in.dtype == KvDtype::kBF16;
    parallel_for(n, n * heads * d * 4, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        for (int64_t h = 0; h < heads; ++h) {
          const uint16_t* row = in + i * key_in.token_stride + h * key_in.head_stride;
          uint16_t* out = rotated.data() + (i * heads + h) * d;
          const float* cs = rope->cos_sin_cache + rope->positions[i] * rope->rot_dim;
          if (bf16) rope_row<KvDtype::kBF16>(row, out, static_cast<int32_t>(d), *rope, cs);
          else rope_row<KvDtype::kFP16>(row, out, static_cast<int32_t>(d), *rope, cs);
        }
    });
    key = {reinterpret_cast<const uint8_t*>(rotated.data()), key_in.dtype, n, heads * d, d};
  }
  const KvPagedLayout paged = kv_paged_layout(l);
  // validate_store_kv checked that key and value share one model dtype the cache takes.
  const bool scaled = is_quantized_kv(l.dtype);
  const StoreKvJob job{{&key, &value},
                       {cache.k, cache.v},
                       {scaled ? cache.scales.k_scale.data() : nullptr, scaled ? cache.scales.v_scale.data() : nullptr},
                       cache.scales.kind == KvScaleKind::kPerHead,
                       cache.scales.recipe,
                       slot_mapping.data(),
                       &paged,
                       {cache.k_sf, cache.v_sf},
                       kv_sf_layout(l, cache.sf)};
  const int64_t row_bytes = 2 * kv_bytes(l.dtype, int64_t{l.num_kv_heads} * l.head_dim);
  const auto rows = pick_kv_rows<StoreRows, StoreKvJob>(key.dtype, l.dtype, use_avx2());
  parallel_for(n, n * row_bytes, [&](int64_t b, int64_t e) { rows(job, b, e); });
}

}  // namespace kvcheck::cpu
