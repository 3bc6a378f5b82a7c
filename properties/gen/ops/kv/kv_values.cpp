// The K/V family's bulk contents: element values with specials mixed in, FP8 scales,
// strided rows. Deterministic in their seeds, so a scenario's printed seeds are enough
// to rebuild its buffers.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "properties/gen/ops/kv/kv_gen.h"
#include "properties/gen/splitmix.h"
#include "reference/kv_numerics.h"

namespace kvcheck::props {
namespace {

KVCHECK_BULK uint64_t mix(uint64_t seed, int64_t a, int64_t b, int64_t h, int64_t d) {
  SplitMix64 r{seed ^ (uint64_t(a) * 0x9E3779B97F4A7C15ull) ^ (uint64_t(b) << 40) ^ (uint64_t(h) << 20) ^
               uint64_t(d)};
  r.next();
  return r.next();
}

}  // namespace

KVCHECK_BULK uint16_t kv_value_bits(KvDtype dtype, uint64_t seed, int64_t a, int64_t b, int64_t h, int64_t d) {
  const uint64_t r = mix(seed, a, b, h, d);
  const int roll = static_cast<int>(r % 100);
  // Rows of a wrong dtype (an error path) get bf16 bits: every dtype but fp16 does, here
  // and in kv_normal_bits (no is_model_dtype call per element: a comparison hook each).
  const bool fp16 = dtype == KvDtype::kFP16;
  const uint16_t sign = (r >> 8) & 1 ? 0x8000 : 0;
  if (roll < 3) {  // specials
    switch ((r >> 9) % 5) {
      case 0: return static_cast<uint16_t>(sign | (fp16 ? 0x7C00 : 0x7F80));          // ±Inf
      case 1: return static_cast<uint16_t>(sign | (fp16 ? 0x7E00 : 0x7FC0));          // NaN
      case 2: return static_cast<uint16_t>(sign | (fp16 ? 0x7C01 : 0x7F81));          // NaN payload
      default: return sign;                                                           // ±0
    }
  }
  if (roll < 5) return static_cast<uint16_t>(sign | ((r >> 12) & (fp16 ? 0x3FF : 0x7F)) | 1);  // subnormal
  if (roll < 7) return static_cast<uint16_t>(sign | (fp16 ? 0x7BFF : 0x7F7F));  // largest finite
  // |x| = m * 2^e, e in [-12, 10): spans the FP8 range for the scales kv_scales draws.
  return kv_normal_bits(dtype, sign != 0, static_cast<int>((r >> 16) % 22) - 12, static_cast<uint32_t>(r >> 24) & 0xFFFF);
}

KVCHECK_BULK uint16_t kv_normal_bits(KvDtype dtype, bool negative, int e, uint32_t k) {
  // x = ±(1 + k/2^16) * 2^e as float bits, exact; then round-to-nearest-even to 16 bits
  // as an integer add on those bits (x and its rounding are normal in both dtypes).
  const uint32_t fb = (negative ? 0x80000000u : 0u) | static_cast<uint32_t>(e + 127) << 23 | (k & 0xFFFF) << 7;
  if (dtype != KvDtype::kFP16) return static_cast<uint16_t>((fb + 0x7FFF + ((fb >> 16) & 1)) >> 16);
  const uint32_t mant = fb & 0x7FFFFF;
  const uint32_t rounded = (mant + 0xFFF + ((mant >> 13) & 1)) >> 13;  // 1024: the carry raises the exponent
  return static_cast<uint16_t>(((fb >> 16) & 0x8000) | ((static_cast<uint32_t>(e + 15) << 10) + rounded));
}

std::vector<float> kv_scales(KvScaleKind kind, int32_t num_kv_heads, uint64_t seed) {
  if (kind == KvScaleKind::kNone) return {};
  const size_t n = kind == KvScaleKind::kPerHead ? static_cast<size_t>(num_kv_heads) : 1;
  static const float kNice[] = {1.0f, 2.0f, 0.5f, 3.0f, 7.0f, 0.1f, 1.0f / 448.0f, 0.0078125f};
  std::vector<float> s(n);
  SplitMix64 r{seed};
  for (auto& x : s) {
    const uint64_t v = r.next();
    x = v % 3 == 0 ? kNice[(v >> 8) % 8]
                   : std::ldexp(1.0f + static_cast<float>((v >> 16) & 0xFFFFF) / 1048576.0f,
                                static_cast<int>((v >> 40) % 16) - 10);
  }
  return s;
}

namespace {

// `size` NaN bits of `dtype` (fp16 0x7E00, else bf16 0x7FC0), copied from a per-thread
// row of them: std::vector's own fill is a loop through a comparison hook per element.
std::vector<uint16_t> nan_elements(KvDtype dtype, size_t size) {
  thread_local std::vector<uint16_t> rows[2];
  const bool fp16 = dtype == KvDtype::kFP16;
  std::vector<uint16_t>& row = rows[fp16 ? 1 : 0];
  if (row.size() < size) row.assign(size, fp16 ? 0x7E00 : 0x7FC0);
  return std::vector<uint16_t>(row.begin(), row.begin() + static_cast<std::ptrdiff_t>(size));
}

}  // namespace

KVCHECK_BULK KvRows make_kv_rows(KvDtype dtype, int64_t rows, int64_t token_stride, int64_t head_stride,
                    int32_t num_kv_heads, int32_t head_dim, uint64_t seed) {
  KvRows r{dtype, rows, token_stride, head_stride, {}};
  const int64_t size = rows == 0 ? 0 : (rows - 1) * token_stride + (num_kv_heads - 1) * head_stride + head_dim;
  r.data = nan_elements(dtype, static_cast<size_t>(std::max<int64_t>(size, 0)));  // stride gaps: NaN
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t h = 0; h < num_kv_heads; ++h)
      for (int64_t d = 0; d < head_dim; ++d)
        r.data[static_cast<size_t>(i * token_stride + h * head_stride + d)] = kv_value_bits(dtype, seed, i, 0, h, d);
  return r;
}

}  // namespace kvcheck::props
