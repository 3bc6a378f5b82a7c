// CpuBackend::gather_kv (SPEC §7.5): validate everything (impl/validate_kv), then
// copy or dequantise each output row, rows split across threads (each chunk finds its
// first sequence by binary search in cu_seqlens_k, then walks). Kernels are templated
// on the (cache dtype, model dtype) pair and compiled for baseline and AVX2.
#include <algorithm>
#include <cstring>
#include <vector>

#include "impl/cpu/cpu_backend.h"
#include "impl/cpu/kv_dispatch.h"
#include "impl/cpu/kv_numerics.h"
#include "impl/cpu/parallel.h"
#include "impl/kv_layout.h"
#include "impl/kv_rules.h"
#include "impl/validate_kv.h"

namespace kvcheck::cpu {
namespace {

using namespace fast;

struct GatherKvJob {
  const KvTokensOut* out[2];  // out_k, out_v
  const uint8_t* base[2];     // k_cache, v_cache
  const float* scale[2];      // FP8 only
  bool per_head = false;
  const int32_t* block_table;
  int32_t max_blocks;
  const int32_t* cu;  // cu_seqlens_k
  const int32_t* seq_starts;  // nullptr: every sequence starts at table position 0
  bool block_unit;            // seq_starts rounded down to their block (SPEC §7.5)
  int64_t num_seqs;
  const KvPagedLayout* layout;
  const uint8_t* sf_base[2] = {nullptr, nullptr};  // e2m1: k_sf, v_sf (SPEC §7.9)
  KvSfDevLayout sf{};
  const uint16_t* nvfp4_lut[2] = {nullptr, nullptr};  // e2m1: each side's nvfp4_lut
};

/// SPEC §7.9 load of one head of an e2m1 cache: element d = RN(RN(e2m1 * e4m3(sf)) * g)
/// (the first product exact) rounded to the model dtype, read from `lut`, the side's
/// [256 scale bytes][16 codes] table of those values (nvfp4_lut).
KVCHECK_CPU_INLINE void dequantize_nvfp4_head(const uint8_t* src, const uint8_t* sf_base, const KvSfDevLayout& sf,
                                              int64_t block, int64_t token, int64_t head, uint8_t* dst, int64_t d,
                                              const uint16_t* lut) {
  for (int64_t grp = 0; grp < d / 16; ++grp) {
    const uint16_t* t = lut + 16 * sf_base[sf.offset(block, token, head, grp)];
    uint16_t y[16];
    for (int i = 0; i < 8; ++i) {
      const uint8_t b = src[8 * grp + i];
      y[2 * i] = t[b & 0x0F];
      y[2 * i + 1] = t[b >> 4];
    }
    std::memcpy(dst + 32 * grp, y, sizeof y);
  }
}

/// Every value an e2m1 gather can write with global scale g: [scale byte][code] ->
/// the model-dtype bits of RN(RN(e2m1(code) * e4m3(byte)) * g) (SPEC §7.9), 4,096 entries.
std::vector<uint16_t> nvfp4_lut(KvDtype out, float g) {
  std::vector<uint16_t> t(256 * 16);
  for (int sf = 0; sf < 256; ++sf)
    for (int c = 0; c < 16; ++c) {
      const float y = e2m1_to_f32(static_cast<uint8_t>(c)) * e4m3_to_f32(static_cast<uint8_t>(sf)) * g;
      t[static_cast<size_t>(16 * sf + c)] = out == KvDtype::kBF16 ? f32_to_model<KvDtype::kBF16>(y)
                                                                  : f32_to_model<KvDtype::kFP16>(y);
    }
  return t;
}

/// One head: D FP8 codes at src -> D model elements at dst, round(float(q) * scale).
template <KvDtype Cache, KvDtype Out>
KVCHECK_CPU_INLINE void dequantize_head(const uint8_t* src, uint8_t* dst, int64_t d, float scale) {
  convert_head<uint8_t, uint16_t>(src, dst, d, [scale](uint8_t q) KVCHECK_CPU_ALWAYS_INLINE {
    return f32_to_model<Out>(fp8_to_f32<Cache>(q) * scale);
  });
}

template <KvDtype Cache, KvDtype Out>
KVCHECK_CPU_INLINE void gather_rows_impl(const GatherKvJob& job, int64_t begin, int64_t end) {
  const KvPagedLayout& l = *job.layout;
  constexpr bool kFp8 = Cache == KvDtype::kE4M3 || Cache == KvDtype::kE5M2;
  constexpr bool kNvfp4 = Cache == KvDtype::kE2M1;
  constexpr int64_t kIn = kFp8 ? 1 : 2;
  const int64_t d = l.head_dim;
  // The sequence holding row `begin`: the last i with cu[i] <= begin and a non-empty range.
  int64_t seq = std::upper_bound(job.cu, job.cu + job.num_seqs + 1, static_cast<int32_t>(begin)) - job.cu - 1;
  int64_t start = -1;  // table position of seq's token 0, once seq is known
  for (int64_t r = begin; r < end; ++r) {
    while (job.cu[seq + 1] <= r) ++seq, start = -1;
    if (start < 0) start = job.seq_starts ? kv_seq_start(job.seq_starts[seq], job.block_unit, l.block_size) : 0;
    const KvSlotPos p = l.split(start + r - job.cu[seq]);  // (table column, token in its block)
    const int64_t block = job.block_table[seq * job.max_blocks + p.block];
    for (int side = 0; side < 2; ++side) {
      const KvTokensOut& o = *job.out[side];
      for (int64_t h = 0; h < l.num_kv_heads; ++h) {
        uint8_t* dst = o.data + 2 * (r * o.token_stride + h * o.head_stride);
        if constexpr (kNvfp4) {
          const uint8_t* src = job.base[side] + kv_dev_byte_offset(l.dtype, l.offset(side, block, p.token, h));
          dequantize_nvfp4_head(src, job.sf_base[side], job.sf, block, p.token, h, dst, d, job.nvfp4_lut[side]);
          continue;
        }
        const uint8_t* src = job.base[side] + kIn * l.offset(side, block, p.token, h);
        if constexpr (kFp8)
          dequantize_head<Cache, Out>(src, dst, d, job.scale[side][job.per_head ? h : 0]);
        else
          std::memcpy(dst, src, static_cast<size_t>(2 * d));
      }
    }
  }
}

/// The row loop for the dispatch (kv_dispatch.h): rows of model dtype Out.
template <KvDtype Out, KvDtype Cache>
struct GatherRows {
  static KVCHECK_CPU_INLINE void run(const GatherKvJob& job, int64_t begin, int64_t end) {
    gather_rows_impl<Cache, Out>(job, begin, end);
  }
};

}  // namespace

void CpuBackend::gather_kv(const GatherKvArgs& a) const {
  const int64_t total = validate_gather_kv(a);
  if (total == 0) return;
  const KvCacheLayout& l = a.cache.layout;
  const KvPagedLayout paged = kv_paged_layout(l);
  const bool scaled = is_quantized_kv(l.dtype);
  const KvScales& sc = a.cache.scales;
  GatherKvJob job{{&a.out_k, &a.out_v},
                        {a.cache.k, a.cache.v},
                        {scaled ? sc.k_scale.data() : nullptr, scaled ? sc.v_scale.data() : nullptr},
                        sc.kind == KvScaleKind::kPerHead,
                        a.block_table.data(),
                        a.max_blocks,
                        a.cu_seqlens_k.data(),
                        a.seq_starts.empty() ? nullptr : a.seq_starts.data(),
                        a.seq_start_unit == SeqStartUnit::kBlock,
                        static_cast<int64_t>(a.cu_seqlens_k.size()) - 1,
                        &paged,
                        {a.cache.k_sf, a.cache.v_sf},
                        kv_sf_layout(l, a.cache.sf)};
  // e2m1: every output value is one of 256 x 16 per side, tabulated once per call.
  std::vector<uint16_t> lut_k, lut_v;
  if (is_nvfp4(l.dtype)) {
    lut_k = nvfp4_lut(a.out_k.dtype, sc.k_scale[0]);
    lut_v = nvfp4_lut(a.out_k.dtype, sc.v_scale[0]);
    job.nvfp4_lut[0] = lut_k.data();
    job.nvfp4_lut[1] = lut_v.data();
  }
  const int64_t row_bytes = 2 * int64_t{l.num_kv_heads} * l.head_dim * 2;
  // validate_gather_kv checked that out_k and out_v share one model dtype.
  const auto rows = pick_kv_rows<GatherRows, GatherKvJob>(a.out_k.dtype, l.dtype, use_avx2());
  parallel_for(total, total * row_bytes, [&](int64_t b, int64_t e) { rows(job, b, e); });
}

}  // namespace kvcheck::cpu
