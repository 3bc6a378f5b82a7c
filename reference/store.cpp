// Reference store_kv_cache (SPEC §5.1): validate everything, then quantise and write
// one row, one group, one element at a time.
#include "reference/store.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "impl/error.h"
#include "reference/layout.h"
#include "reference/numerics.h"
#include "reference/rope.h"

namespace kvcheck::ref {
namespace {

// Throws for every rule of SPEC §5.1 in the order docs/spec.md §5.2 [decided] fixes:
// format and geometry, the buffer's size, kv shape and pointers, then rows in index
// order (range, then repeat of an earlier row's slot); the smallest failing row wins.
void validate_store(const KVInput& kv, std::span<const int32_t> slot_mapping,
                    std::span<const uint8_t> cache, const KVCacheFormat& format, int64_t num_blocks,
                    int32_t block_size, int64_t stride) {
  check_cache_geometry(format, num_blocks, block_size, stride);
  check_cache_bytes(format, num_blocks, block_size, cache, stride);
  const int64_t n = static_cast<int64_t>(slot_mapping.size());
  if (n == 0) return;
  if (kv.rows < n)
    throw Error(ErrorCode::kShapeMismatch, "kv has " + std::to_string(kv.rows) +
                                               " rows but slot_mapping has " +
                                               std::to_string(n) + " entries");
  if (kv.row_stride < format.elements)
    throw Error(ErrorCode::kInvalidArgument,
                "kv row_stride " + std::to_string(kv.row_stride) + " elements < E = " +
                    std::to_string(format.elements));
  if (kv.data == nullptr) throw Error(ErrorCode::kShapeMismatch, "kv data is null");
  if (cache.data() == nullptr) throw Error(ErrorCode::kShapeMismatch, "cache is null");

  const int64_t num_slots = num_blocks * block_size;
  std::unordered_map<int32_t, int64_t> first_row;  // slot -> first row storing it
  first_row.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int32_t slot = slot_mapping[i];
    if (slot < -1 || slot >= num_slots)
      throw Error(ErrorCode::kSlotOutOfRange,
                  "slot_mapping[" + std::to_string(i) + "] = " + std::to_string(slot) +
                      ": valid are -1 and [0, " + std::to_string(num_slots) + ")");
    if (slot == -1) continue;
    const auto [it, inserted] = first_row.emplace(slot, i);
    if (!inserted)
      throw Error(ErrorCode::kDuplicateSlot,
                  "slot_mapping[" + std::to_string(i) + "] = " + std::to_string(slot) +
                      " repeats slot_mapping[" + std::to_string(it->second) + "]");
  }
}

void write_bf16_row(const bf16_bits* x, int64_t elements, uint8_t* dst) {
  for (int64_t e = 0; e < elements; ++e) {
    dst[2 * e] = static_cast<uint8_t>(x[e] & 0xFF);  // little-endian
    dst[2 * e + 1] = static_cast<uint8_t>(x[e] >> 8);
  }
}

// One token's record: data at `data`, scales at `scales` (SPEC §2, §4; FP4 packing:
// element 2i in the low nibble of byte i, 2i+1 in the high nibble).
void write_quantized_row(const KVCacheFormat& format, const bf16_bits* x, uint8_t* data,
                         uint8_t* scales) {
  const int64_t group = format.elements_per_sf;
  const int64_t scale_bytes = format.scale_width();
  const bool fp4 = format.quantized_dtype == QuantizedDtype::kE2M1;
  std::vector<uint8_t> codes(static_cast<size_t>(group));
  for (int64_t g = 0; g < format.num_scales(); ++g) {
    const int64_t first = g * group;
    quantize_group(format, std::span<const bf16_bits>(x + first, static_cast<size_t>(group)),
                   codes, std::span<uint8_t>(scales + scale_byte(format, g),
                                             static_cast<size_t>(scale_bytes)));
    for (int64_t i = 0; i < group; ++i) {
      const int64_t e = first + i;
      if (!fp4) {
        data[e] = codes[static_cast<size_t>(i)];
      } else if (e % 2 == 0) {
        data[e / 2] = static_cast<uint8_t>((data[e / 2] & 0xF0) | codes[static_cast<size_t>(i)]);
      } else {
        data[e / 2] =
            static_cast<uint8_t>((data[e / 2] & 0x0F) | (codes[static_cast<size_t>(i)] << 4));
      }
    }
  }
}

// docs/spec.md §8.2's checks of the two sources for n > 0 rows: each one's rows
// (kShapeMismatch) and stride (kInvalidArgument), kv_c before k_pe, then null data.
void check_concat_sources(const KVInput& kv_c, const KVInput& k_pe, int32_t kv_lora_rank, int32_t rope_dim,
                          int64_t n) {
  const KVInput* sources[2] = {&kv_c, &k_pe};
  const int32_t widths[2] = {kv_lora_rank, rope_dim};
  for (int k = 0; k < 2; ++k) {
    const char* name = k == 0 ? "kv_c" : "k_pe";
    if (sources[k]->rows < n)
      throw Error(ErrorCode::kShapeMismatch, std::string(name) + " has " + std::to_string(sources[k]->rows) +
                                                 " rows < n = " + std::to_string(n));
    if (sources[k]->row_stride < widths[k])
      throw Error(ErrorCode::kInvalidArgument, std::string(name) + " row_stride " +
                                                   std::to_string(sources[k]->row_stride) + " < its width " +
                                                   std::to_string(widths[k]));
  }
  if (kv_c.data == nullptr || k_pe.data == nullptr)
    throw Error(ErrorCode::kShapeMismatch, std::string(kv_c.data == nullptr ? "kv_c" : "k_pe") + " data is null");
}

}  // namespace

void store_kv_cache(const KVInput& kv, std::span<const int32_t> slot_mapping, std::span<uint8_t> buffer,
                    const KVCacheFormat& format, int64_t num_blocks, int32_t block_size, int64_t block_stride) {
  validate_store(kv, slot_mapping, buffer, format, num_blocks, block_size, block_stride);
  uint8_t* cache = buffer.data();
  for (size_t r = 0; r < slot_mapping.size(); ++r) {
    const int32_t slot = slot_mapping[r];
    if (slot == -1) continue;  // padding: nothing is written, slot 0 included
    const int64_t block = slot / block_size, token = slot % block_size;
    const bf16_bits* x = kv.data + static_cast<int64_t>(r) * kv.row_stride;
    uint8_t* data = cache + data_offset(format, block_size, block, token, block_stride);
    if (format.is_bf16()) {
      write_bf16_row(x, format.elements, data);
    } else {
      write_quantized_row(format, x, data,
                          cache + scale_offset(format, block_size, block, token, block_stride));
      // The last bf16_tail_elements of the row, as they are (SPEC §2: fp8_ds_mla's
      // rope), or as unscaled e4m3 casts (NVFP4_DS_MLA's).
      uint8_t* tail = cache + tail_offset(format, block_size, block, token, block_stride);
      if (format.bf16_tail_elements > 0 && !format.e4m3_tail)
        write_bf16_row(x + format.quantized_elements(), format.bf16_tail_elements, tail);
      if (format.e4m3_tail)
        for (int32_t e = 0; e < format.bf16_tail_elements; ++e)
          tail[e] = cvt_e4m3(bf16_to_float(x[format.quantized_elements() + e]));
    }
  }
}

void concat_and_cache_mla(const KVInput& kv_c, const KVInput& k_pe, int32_t kv_lora_rank, int32_t rope_dim,
                          std::span<const int32_t> slot_mapping, std::span<uint8_t> buffer,
                          const KVCacheFormat& format, int64_t num_blocks, int32_t block_size,
                          int64_t block_stride, const RopeArgs* rope) {
  check_cache_geometry(format, num_blocks, block_size, block_stride);
  check_cache_bytes(format, num_blocks, block_size, buffer, block_stride);
  if (kv_lora_rank < 1 || rope_dim < 1)
    throw Error(ErrorCode::kInvalidArgument, "kv_lora_rank " + std::to_string(kv_lora_rank) + " or rope_dim " +
                                                 std::to_string(rope_dim) + " < 1");
  if (int64_t{kv_lora_rank} + rope_dim != format.elements)
    throw Error(ErrorCode::kShapeMismatch, "kv_lora_rank + rope_dim != E = " + std::to_string(format.elements));
  if (rope) check_rope_shape(*rope, rope_dim);
  const int64_t n = static_cast<int64_t>(slot_mapping.size());
  if (n == 0) return;
  check_concat_sources(kv_c, k_pe, kv_lora_rank, rope_dim, n);
  if (buffer.data() == nullptr) throw Error(ErrorCode::kShapeMismatch, "cache is null");
  if (rope) check_rope_inputs(*rope, n);
  // The rows as one source (the definition; k_pe rotated first with rope), then the
  // store with its slot rules.
  std::vector<bf16_bits> rotated;
  const KVInput pe = rope ? rotated_input(k_pe, rope_dim, n, *rope, rotated) : k_pe;
  std::vector<bf16_bits> rows(static_cast<size_t>(n * format.elements));
  for (int64_t i = 0; i < n; ++i) {
    bf16_bits* row = rows.data() + i * format.elements;
    for (int32_t e = 0; e < kv_lora_rank; ++e) row[e] = kv_c.data[i * kv_c.row_stride + e];
    for (int32_t e = 0; e < rope_dim; ++e) row[kv_lora_rank + e] = pe.data[i * pe.row_stride + e];
  }
  store_kv_cache({rows.data(), n, format.elements}, slot_mapping, buffer, format, num_blocks, block_size,
                 block_stride);
}

void concat_and_cache_mla_split(const KVInput& kv_c, const KVInput& k_pe, int32_t kv_lora_rank, int32_t rope_dim,
                                std::span<const int32_t> slot_mapping, const PagedBuffer& cache,
                                const PagedBuffer& pe_cache, const RopeArgs* rope) {
  check_cache_geometry(cache.format, cache.num_blocks, cache.block_size, cache.block_stride);
  check_cache_bytes(cache.format, cache.num_blocks, cache.block_size, cache.bytes, cache.block_stride);
  try {
    check_cache_geometry(pe_cache.format, pe_cache.num_blocks, pe_cache.block_size, pe_cache.block_stride);
    check_cache_bytes(pe_cache.format, pe_cache.num_blocks, pe_cache.block_size, pe_cache.bytes,
                      pe_cache.block_stride);
  } catch (const Error& e) {
    throw Error(e.code(), std::string("pe_cache: ") + e.what());
  }
  if (pe_cache.num_blocks != cache.num_blocks || pe_cache.block_size != cache.block_size)
    throw Error(ErrorCode::kShapeMismatch, "pe_cache's num_blocks and block_size differ from the cache's");
  if (kv_lora_rank < 1 || rope_dim < 1)
    throw Error(ErrorCode::kInvalidArgument, "kv_lora_rank " + std::to_string(kv_lora_rank) + " or rope_dim " +
                                                 std::to_string(rope_dim) + " < 1");
  if (kv_lora_rank != cache.format.elements)
    throw Error(ErrorCode::kShapeMismatch, "kv_lora_rank != the cache's E = " + std::to_string(cache.format.elements));
  if (rope_dim != pe_cache.format.elements)
    throw Error(ErrorCode::kShapeMismatch, "rope_dim != pe_cache's E = " + std::to_string(pe_cache.format.elements));
  if (rope) check_rope_shape(*rope, rope_dim);
  const int64_t n = static_cast<int64_t>(slot_mapping.size());
  if (n == 0) return;
  check_concat_sources(kv_c, k_pe, kv_lora_rank, rope_dim, n);
  if (cache.bytes.data() == nullptr) throw Error(ErrorCode::kShapeMismatch, "cache is null");
  if (pe_cache.bytes.data() == nullptr) throw Error(ErrorCode::kShapeMismatch, "pe_cache is null");
  // Byte by byte: does any byte of one buffer lie in the other? (The definition; the
  // validators decide it in closed form.)
  const auto inside = [](const uint8_t* p, std::span<const uint8_t> buf) {
    for (const uint8_t& b : buf)
      if (&b == p) return true;
    return false;
  };
  if (!cache.bytes.empty() && !pe_cache.bytes.empty() &&
      (inside(pe_cache.bytes.data(), cache.bytes) || inside(cache.bytes.data(), pe_cache.bytes)))
    throw Error(ErrorCode::kInvalidArgument, "the cache and pe_cache share a byte");
  if (rope) check_rope_inputs(*rope, n);
  std::vector<bf16_bits> rotated;
  const KVInput pe = rope ? rotated_input(k_pe, rope_dim, n, *rope, rotated) : k_pe;
  // The first store checks the slots before it writes; the second then cannot fail.
  store_kv_cache(kv_c, slot_mapping, cache.bytes, cache.format, cache.num_blocks, cache.block_size,
                 cache.block_stride);
  store_kv_cache(pe, slot_mapping, pe_cache.bytes, pe_cache.format, pe_cache.num_blocks, pe_cache.block_size,
                 pe_cache.block_stride);
}

}  // namespace kvcheck::ref
