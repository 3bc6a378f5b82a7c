#include "impl/validate_store_load.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "impl/error.h"
#include "impl/validate_cache.h"
#include "impl/validate_errors.h"
#include "impl/validate_rope.h"
#include "impl/validate_slots.h"

namespace kvcheck {
namespace {

using std::to_string;

[[noreturn]] void fail(ErrorCode code, const std::string& message) { throw Error(code, message); }

// Bitmap of row/slot ids; cheap when the id space is not much larger than the input.
class Bitmap {
 public:
  explicit Bitmap(int64_t bits) : words_(static_cast<size_t>((bits + 63) / 64), 0) {}
  bool test_and_set(int64_t i) {
    uint64_t& w = words_[static_cast<size_t>(i >> 6)];
    const uint64_t bit = uint64_t{1} << (i & 63);
    const bool was = (w & bit) != 0;
    w |= bit;
    return was;
  }
  // True when any bit of [b, e) was set already; sets them all.
  bool test_and_set_range(int64_t b, int64_t e) {
    bool any = false;
    while (b < e) {
      const int64_t word_end = std::min(e, (b | 63) + 1);
      const uint64_t ones = word_end - b == 64 ? ~uint64_t{0}
                                               : ((uint64_t{1} << (word_end - b)) - 1);
      uint64_t& w = words_[static_cast<size_t>(b >> 6)];
      const uint64_t mask = ones << (b & 63);
      any |= (w & mask) != 0;
      w |= mask;
      b = word_end;
    }
    return any;
  }

 private:
  std::vector<uint64_t> words_;
};

}  // namespace

void validate_layout(const CacheLayout& layout) {
  // Format and geometry first (their codes come first), then the stride (SPEC §3).
  const CacheLayout packed = CacheLayout::make(layout.format, layout.num_blocks, layout.block_size);
  if (layout.block_stride <= 0)
    fail(ErrorCode::kInvalidArgument, "cache layout block_stride " + to_string(layout.block_stride) +
                                          " is not positive (the packed stride is " +
                                          to_string(packed.block_stride) + ", SPEC §3)");
  CacheLayout::make(layout.format, layout.num_blocks, layout.block_size, layout.block_stride);
}

void validate_store_rows(const KVInput& kv, int64_t n, int64_t elements, const void* cache_base) {
  if (n == 0) return;
  if (kv.rows < n)
    fail(ErrorCode::kShapeMismatch, "kv has " + to_string(kv.rows) +
                                        " rows but slot_mapping has " + to_string(n));
  if (kv.row_stride < elements)
    fail(ErrorCode::kInvalidArgument, "kv.row_stride " + to_string(kv.row_stride) +
                                          " is smaller than the format's " +
                                          to_string(elements) + " elements");
  if (kv.data == nullptr) fail(ErrorCode::kShapeMismatch, "kv.data is null");
  if (cache_base == nullptr) fail(ErrorCode::kShapeMismatch, "cache base is null");
}

void validate_store_shape(const KVInput& kv, int64_t n, const CacheView& cache) {
  validate_layout(cache.layout);
  validate_cache_bytes(cache.layout, cache.base, cache.size_bytes);
  validate_store_rows(kv, n, cache.layout.format.elements, cache.base);
}

void validate_store(const KVInput& kv, std::span<const int32_t> slot_mapping,
                    const CacheView& cache) {
  const int64_t n = static_cast<int64_t>(slot_mapping.size());
  validate_store_shape(kv, n, cache);
  if (n == 0) return;
  validate_slot_mapping(slot_mapping, cache.layout.num_blocks, cache.layout.block_size);
}

void rethrow_for_pe_cache(const Error& e) {
  const std::string what = e.what(), code = std::string(to_string(e.code())) + ": ";
  fail(e.code(), "pe_cache: " + (what.rfind(code, 0) == 0 ? what.substr(code.size()) : what));
}

void validate_concat_pe_cache(const CacheLayout& cache, const CacheLayout& pe, const void* pe_base,
                              int64_t pe_size_bytes) {
  try {
    validate_layout(pe);
    validate_cache_bytes(pe, pe_base, pe_size_bytes);
  } catch (const Error& e) {
    rethrow_for_pe_cache(e);
  }
  validate_concat_pe_geometry(cache.num_blocks, cache.block_size, pe.num_blocks, pe.block_size);
}

void validate_concat_pe_geometry(int64_t num_blocks, int32_t block_size, int64_t pe_num_blocks,
                                 int32_t pe_block_size) {
  if (pe_num_blocks != num_blocks || pe_block_size != block_size)
    fail(ErrorCode::kShapeMismatch, "pe_cache has " + to_string(pe_num_blocks) + " blocks of " +
                                        to_string(pe_block_size) + " tokens but the cache " + to_string(num_blocks) +
                                        " of " + to_string(block_size) + " (one slot_mapping addresses both)");
}

void validate_concat_mla_rows(const KVInput& kv_c, const KVInput& k_pe, int32_t kv_lora_rank, int32_t rope_dim,
                              int64_t n, const ConcatCacheExtents& c, const RopeArgs* rope) {
  const bool split = c.split;
  if (kv_lora_rank < 1 || rope_dim < 1)
    fail(ErrorCode::kInvalidArgument, "kv_lora_rank = " + to_string(kv_lora_rank) + ", rope_dim = " +
                                          to_string(rope_dim) + ": both must be at least 1");
  if (!split && int64_t{kv_lora_rank} + rope_dim != c.elements)
    fail(ErrorCode::kShapeMismatch, "kv_lora_rank + rope_dim = " + to_string(kv_lora_rank) + " + " +
                                        to_string(rope_dim) + " but the format's rows have " + to_string(c.elements) +
                                        " elements");
  if (split && kv_lora_rank != c.elements)
    fail(ErrorCode::kShapeMismatch, "kv_lora_rank = " + to_string(kv_lora_rank) + " but the cache's rows have " +
                                        to_string(c.elements) + " elements");
  if (split && rope_dim != c.pe_elements)
    fail(ErrorCode::kShapeMismatch, "rope_dim = " + to_string(rope_dim) + " but pe_cache's rows have " +
                                        to_string(c.pe_elements) + " elements");
  if (rope) validate_rope_shape(*rope, rope_dim, "rope_dim");
  if (n == 0) return;
  const auto rows = [&](const KVInput& x, const char* name, const char* width_name, int32_t width) {
    if (x.rows < n)
      fail(ErrorCode::kShapeMismatch, std::string(name) + " has " + to_string(x.rows) +
                                          " rows but slot_mapping has " + to_string(n));
    if (x.row_stride < width)
      fail(ErrorCode::kInvalidArgument, std::string(name) + ".row_stride " + to_string(x.row_stride) +
                                            " is smaller than " + width_name + " = " + to_string(width));
  };
  rows(kv_c, "kv_c", "kv_lora_rank", kv_lora_rank);
  rows(k_pe, "k_pe", "rope_dim", rope_dim);
  if (kv_c.data == nullptr) fail(ErrorCode::kShapeMismatch, "kv_c.data is null");
  if (k_pe.data == nullptr) fail(ErrorCode::kShapeMismatch, "k_pe.data is null");
  if (c.base == nullptr) fail(ErrorCode::kShapeMismatch, "cache base is null");
  if (split) {
    if (c.pe_base == nullptr) fail(ErrorCode::kShapeMismatch, "pe_cache base is null");
    // Addresses as integers (two buffers: no pointer order is defined), wide enough that a
    // buffer claimed to end past the address space cannot wrap.
    const auto a = static_cast<__int128>(reinterpret_cast<uintptr_t>(c.base));
    const auto b = static_cast<__int128>(reinterpret_cast<uintptr_t>(c.pe_base));
    if (c.size_bytes > 0 && c.pe_size_bytes > 0 && a < b + c.pe_size_bytes && b < a + c.size_bytes)
      fail(ErrorCode::kInvalidArgument,
           b >= a ? "pe_cache starts " + to_string(static_cast<int64_t>(b - a)) +
                        " bytes into the cache: the two caches must not share a byte"
                  : "the cache starts " + to_string(static_cast<int64_t>(a - b)) +
                        " bytes into pe_cache: the two caches must not share a byte");
  }
  if (rope) validate_rope_inputs(*rope, n);
}

void validate_concat_mla_shape(const ConcatMlaArgs& a) {
  validate_layout(a.cache.layout);
  validate_cache_bytes(a.cache.layout, a.cache.base, a.cache.size_bytes);
  ConcatCacheExtents c{a.cache.base, a.cache.size_bytes, a.cache.layout.format.elements};
  if (a.pe_cache) {
    validate_concat_pe_cache(a.cache.layout, a.pe_cache->layout, a.pe_cache->base, a.pe_cache->size_bytes);
    c.split = true;
    c.pe_base = a.pe_cache->base;
    c.pe_size_bytes = a.pe_cache->size_bytes;
    c.pe_elements = a.pe_cache->layout.format.elements;
  }
  validate_concat_mla_rows(a.kv_c, a.k_pe, a.kv_lora_rank, a.rope_dim, static_cast<int64_t>(a.slot_mapping.size()),
                           c, a.rope ? &*a.rope : nullptr);
}

void validate_concat_mla(const ConcatMlaArgs& a) {
  validate_concat_mla_shape(a);
  if (a.slot_mapping.empty()) return;
  if (a.rope) validate_rope_positions(*a.rope, static_cast<int64_t>(a.slot_mapping.size()));
  validate_slot_mapping(a.slot_mapping, a.cache.layout.num_blocks, a.cache.layout.block_size);
}

void validate_load_outputs(int64_t num_ints, int32_t total_k, const LoadOutput& out, int64_t row_bytes,
                           int64_t scale_row_bytes) {
  if (num_ints % 4 != 0)
    fail(ErrorCode::kInvalidArgument, "load_segments has " + to_string(num_ints) +
                                          " int32, not a multiple of 4");
  if (total_k < 0) fail(ErrorCode::kInvalidArgument, "total_k = " + to_string(total_k) + " < 0");
  if (out.rows < total_k)
    fail(ErrorCode::kShapeMismatch,
         "out has " + to_string(out.rows) + " rows but total_k = " + to_string(total_k));
  if (total_k > 0 && (out.data == nullptr || out.data_row_stride < row_bytes))
    fail(ErrorCode::kShapeMismatch,
         "out.data needs rows of >= " + to_string(row_bytes) + " bytes, got stride " +
             to_string(out.data_row_stride) + (out.data == nullptr ? " and a null pointer" : ""));
  if (total_k > 0 && scale_row_bytes > 0 &&
      (out.scales == nullptr || out.scale_row_stride < scale_row_bytes))
    fail(ErrorCode::kShapeMismatch,
         "out.scales needs rows of >= " + to_string(scale_row_bytes) +
             " bytes, got stride " + to_string(out.scale_row_stride) +
             (out.scales == nullptr ? " and a null pointer" : ""));
}

void validate_load_shape(const ConstCacheView& cache, int64_t num_ints, int32_t total_k,
                         const LoadOutput& out) {
  validate_layout(cache.layout);
  validate_cache_bytes(cache.layout, cache.base, cache.size_bytes);
  const KVCacheFormat& f = cache.layout.format;
  validate_load_outputs(num_ints, total_k, out, f.load_row_bytes(), f.is_index() ? f.load_scale_row_bytes() : 0);
}

int64_t validate_load(const ConstCacheView& cache, std::span<const int32_t> segs,
                      int32_t total_k, const LoadOutput& out) {
  validate_load_shape(cache, static_cast<int64_t>(segs.size()), total_k, out);
  const CacheLayout& layout = cache.layout;
  const size_t num_segments = segs.size() / 4;

  // Overlap detection: a bitmap over output rows when that is small relative to the
  // work, else an ordered map of the disjoint row ranges seen so far.
  const bool use_bitmap = total_k <= (int64_t{1} << 22) ||
                          total_k <= 64 * static_cast<int64_t>(num_segments) * layout.block_size;
  Bitmap rows(use_bitmap ? total_k : 0);
  std::map<int64_t, std::pair<int64_t, size_t>> ranges;  // begin -> (end, segment)
  int64_t covered = 0;
  for (size_t s = 0; s < num_segments; ++s) {
    const int32_t block = segs[4 * s], begin = segs[4 * s + 1], end = segs[4 * s + 2];
    const int64_t dst = segs[4 * s + 3];
    if (block != -1 && (block < 0 || block >= layout.num_blocks))
      throw segment_block_error(s, &segs[4 * s], layout.num_blocks);
    if (!(0 <= begin && begin <= end && end <= layout.block_size))
      throw segment_range_error(s, &segs[4 * s], layout.block_size);
    const int64_t len = int64_t{end} - begin;
    if (dst < 0 || dst + len > total_k)
      throw segment_destination_error(s, &segs[4 * s], total_k);
    if (len == 0) continue;
    if (block >= 0 && cache.base == nullptr)
      throw segment_null_cache_error(s, &segs[4 * s]);
    bool overlap = false;
    if (use_bitmap) {
      overlap = rows.test_and_set_range(dst, dst + len);
    } else {
      auto next = ranges.upper_bound(dst);
      overlap = next != ranges.end() && next->first < dst + len;
      if (!overlap && next != ranges.begin()) overlap = std::prev(next)->second.first > dst;
      if (!overlap) ranges.emplace(dst, std::make_pair(dst + len, s));
    }
    if (overlap) {
      size_t t = 0;
      for (;; ++t) {
        const int64_t t_dst = segs[4 * t + 3];
        const int64_t t_len = int64_t{segs[4 * t + 2]} - segs[4 * t + 1];
        if (t_len > 0 && t_dst < dst + len && dst < t_dst + t_len) break;
      }
      throw segment_overlap_error(s, &segs[4 * s], t, &segs[4 * t]);
    }
    covered += len;
  }
  return covered;
}

}  // namespace kvcheck
