// Reference store_kv (SPEC §7.4): validate everything, then write one element at a time.
#include "reference/store_kv.h"

#include <map>
#include <string>

#include "impl/error.h"
#include "reference/kv_layout.h"
#include "reference/kv_numerics.h"

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

void store_kv(const KvTokensIn& key, const KvTokensIn& value, std::span<const int32_t> slot_mapping,
              const KvCacheView& cache) {
  const KvCacheLayout& l = cache.layout;
  check_kv_cache(cache);
  check_model_dtype(l.dtype, key.dtype, "key");
  check_model_dtype(l.dtype, value.dtype, "value");
  check_same_model_dtype(key.dtype, value.dtype, "key", "value");
  const int64_t n = static_cast<int64_t>(slot_mapping.size());
  if (n == 0) return;
  check_rows(key, n, "key");
  check_rows(value, n, "value");
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
