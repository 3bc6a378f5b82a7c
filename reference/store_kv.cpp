// Reference store_kv (SPEC §7.4): validate everything, then write one element at a time.
#include "reference/store_kv.h"

#include <map>
#include <string>
#include <vector>

#include "impl/error.h"
#include "reference/kv_layout.h"
#include "reference/kv_numerics.h"
#include "reference/rope.h"

namespace kvcheck::ref {
namespace {

using std::to_string;

void check_rows(const KvTokensIn& rows, int64_t n, const char* what) {
  if (rows.rows < n)
    throw Error(ErrorCode::kShapeMismatch, std::string(what) + " holds " + to_string(rows.rows) +
                                               " rows, slot_mapping has " + to_string(n));
  if (rows.token_stride < 0 || rows.head_stride < 0)
    throw Error(ErrorCode::kInvalidArgument, std::string(what) + " stride is negative");
  if (rows.data == nullptr) throw Error(ErrorCode::kShapeMismatch, std::string(what) + " is null");
  if (reinterpret_cast<uintptr_t>(rows.data) % 2 != 0)
    throw Error(ErrorCode::kInvalidArgument, std::string(what) + " is misaligned");
}

uint16_t load16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

}  // namespace

void store_kv(const KvTokensIn& key_in, const KvTokensIn& value, std::span<const int32_t> slot_mapping,
              const KvCacheView& cache, const RopeArgs* rope) {
  const KvCacheLayout& l = cache.layout;
  check_kv_cache(cache);
  check_model_dtype(l.dtype, key_in.dtype, "key");
  check_model_dtype(l.dtype, value.dtype, "value");
  check_same_model_dtype(key_in.dtype, value.dtype, "key", "value");
  if (rope) check_rope_shape(*rope, l.head_dim);
  const int64_t n = static_cast<int64_t>(slot_mapping.size());
  if (n == 0) return;
  check_rows(key_in, n, "key");
  check_rows(value, n, "value");
  if (rope) check_rope_inputs(*rope, n);
  // With a RoPE the key rows are rotated first (the definition), into rows of their own.
  std::vector<uint16_t> rotated;
  KvTokensIn key = key_in;
  if (rope) {
    const int64_t h_count = l.num_kv_heads, d = l.head_dim;
    rotated.resize(static_cast<size_t>(n * h_count * d));
    std::vector<uint16_t> head(static_cast<size_t>(d));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t h = 0; h < h_count; ++h) {
        for (int64_t e = 0; e < d; ++e)
          head[static_cast<size_t>(e)] = load16(key_in.data + 2 * (i * key_in.token_stride + h * key_in.head_stride + e));
        rope_row(head.data(), rotated.data() + (i * h_count + h) * d, static_cast<int32_t>(d), key_in.dtype, *rope,
                 rope->cos_sin_cache + rope->positions[i] * rope->rot_dim);
      }
    key = {reinterpret_cast<const uint8_t*>(rotated.data()), key_in.dtype, n, h_count * d, d};
  }
  const int64_t num_slots = l.num_blocks * l.block_size;
  std::map<int32_t, int64_t> first;  // slot -> first row storing it
  for (int64_t i = 0; i < n; ++i) {
    const int32_t slot = slot_mapping[static_cast<size_t>(i)];
    if (slot < -1 || slot >= num_slots)
      throw Error(ErrorCode::kSlotOutOfRange, "slot_mapping[" + to_string(i) + "] = " +
                                                  to_string(slot) + ": valid are -1 and [0, " +
                                                  to_string(num_slots) + ")");
    if (slot == -1) continue;
    const auto [it, inserted] = first.emplace(slot, i);
    if (!inserted)
      throw Error(ErrorCode::kDuplicateSlot, "slot_mapping[" + to_string(i) + "] = " +
                                                 to_string(slot) + " repeats slot_mapping[" +
                                                 to_string(it->second) + "]");
  }

  if (l.dtype == KvDtype::kE2M1) {
    // SPEC §7.9: per 16-element group, the e4m3 scale into the scale cache, then each
    // element's nibble (element d in the low nibble when d is even).
    for (int64_t i = 0; i < n; ++i) {
      const int32_t slot = slot_mapping[static_cast<size_t>(i)];
      if (slot == -1) continue;
      const int64_t block = slot / l.block_size, token = slot % l.block_size;
      for (int side = 0; side < 2; ++side) {
        const KvTokensIn& in = side == 0 ? key : value;
        uint8_t* base = side == 0 ? cache.k : cache.v;
        uint8_t* sf_base = side == 0 ? cache.k_sf : cache.v_sf;
        const float g = side == 0 ? cache.scales.k_scale[0] : cache.scales.v_scale[0];
        for (int64_t h = 0; h < l.num_kv_heads; ++h)
          for (int64_t grp = 0; grp < l.head_dim / 16; ++grp) {
            float x[16];
            for (int e = 0; e < 16; ++e)
              x[e] = model_to_float(in.dtype, load16(in.data + 2 * (i * in.token_stride + h * in.head_stride + 16 * grp + e)));
            const uint8_t sf = nvfp4_group_scale(x, g);
            sf_base[kv_sf_byte_offset(cache, block, token, h, grp)] = sf;
            const float inv = nvfp4_group_inv(x, sf, g);
            for (int e = 0; e < 16; ++e) {
              const int64_t d = 16 * grp + e;
              const int64_t el = kv_element_offset(l, block, token, h, d);
              uint8_t& byte = base[el / 2];
              const uint8_t code = nvfp4_code(x[e], inv);
              byte = (el % 2 == 0) ? static_cast<uint8_t>((byte & 0xF0) | code)
                                   : static_cast<uint8_t>((byte & 0x0F) | (code << 4));
            }
          }
      }
    }
    return;
  }
  const bool fp8 = l.dtype == KvDtype::kE4M3 || l.dtype == KvDtype::kE5M2;
  const int64_t out_bytes = fp8 ? 1 : 2;
  for (int64_t i = 0; i < n; ++i) {
    const int32_t slot = slot_mapping[static_cast<size_t>(i)];
    if (slot == -1) continue;  // padding: nothing written, slot 0 included
    const int64_t block = slot / l.block_size, token = slot % l.block_size;
    for (int side = 0; side < 2; ++side) {
      const KvTokensIn& in = side == 0 ? key : value;
      uint8_t* base = side == 0 ? cache.k : cache.v;
      for (int64_t h = 0; h < l.num_kv_heads; ++h) {
        for (int64_t d = 0; d < l.head_dim; ++d) {
          const uint8_t* src = in.data + 2 * (i * in.token_stride + h * in.head_stride + d);
          uint8_t* dst = base + out_bytes * kv_element_offset(l, block, token, h, d);
          const uint16_t x = load16(src);
          if (!fp8) {
            dst[0] = static_cast<uint8_t>(x & 0xFF);  // bits copied, little-endian
            dst[1] = static_cast<uint8_t>(x >> 8);
          } else {
            dst[0] = quantize_kv(l.dtype, model_to_float(in.dtype, x),
                                 head_scale(cache.scales, side == 1, h), cache.scales.recipe);
          }
        }
      }
    }
  }
}

}  // namespace kvcheck::ref
