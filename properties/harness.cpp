#include "properties/harness.h"

#include <fmt/format.h>

#include "reference/load.h"
#include "reference/store.h"

namespace kvcheck::props {

KVCache make_cache(const CacheShape& shape) {
  KVCache cache = KVCache::with_canaries(CacheLayout::make(shape.format, shape.num_blocks, shape.block_size));
  fill_pattern(cache.bytes(), shape.fill_seed);
  return cache;
}

CacheView view(KVCache& cache) { return cache.view(); }
ConstCacheView const_view(const KVCache& cache) { return cache.view(); }

KVInput kv_input(const StoreScenario& s) {
  // rows is what the buffer holds; the op must take its row count from slot_mapping.
  const int64_t rows = s.row_stride > 0 ? static_cast<int64_t>(s.kv.size()) / s.row_stride : 0;
  return {s.kv.data(), rows, s.row_stride};
}

LoadBuffers::LoadBuffers(const KVCacheFormat& format, int64_t rows, uint32_t seed) {
  const int64_t row = format.load_row_bytes() + 16;
  const int64_t sf_row = format.load_scale_row_bytes() > 0 ? format.load_scale_row_bytes() + 16 : 0;
  data.resize(static_cast<size_t>(std::max<int64_t>(1, rows * row)));
  scales.resize(static_cast<size_t>(std::max<int64_t>(1, rows * sf_row)));
  fill_pattern(data, seed);
  fill_pattern(scales, seed ^ 0x5CA1E5u);
  out = {data.data(), row, sf_row > 0 ? scales.data() : nullptr, sf_row, rows};
}

std::optional<ErrorCode> run_store(const Backend* backend, const StoreScenario& s, KVCache& cache) {
  try {
    if (backend)
      backend->store_kv_cache(kv_input(s), s.slot_mapping, view(cache));
    else
      ref::store_kv_cache(kv_input(s), s.slot_mapping, cache.bytes(), s.shape.format,
                          s.shape.num_blocks, s.shape.block_size);
  } catch (const Error& e) {
    return e.code();
  }
  return std::nullopt;
}

std::optional<ErrorCode> run_load(const Backend* backend, const LoadScenario& s, const KVCache& cache,
                                  LoadBuffers& out) {
  try {
    if (backend)
      backend->load_paged_kv_cache(const_view(cache), s.load_segments, s.total_k, out.out);
    else
      ref::load_paged_kv_cache(cache.bytes(), s.shape.format, s.shape.num_blocks, s.shape.block_size,
                               s.load_segments, s.total_k, out.out);
  } catch (const Error& e) {
    return e.code();
  }
  return std::nullopt;
}

std::string context(const std::string& op, const CacheShape& shape, std::string_view backend) {
  return fmt::format("op={} format={} backend={} block_size={} num_blocks={}", op, shape.format.name,
                     backend, shape.block_size, shape.num_blocks);
}

std::string show_error(const std::optional<ErrorCode>& e) {
  return e ? fmt::format("threw {}", to_string(*e)) : std::string("returned normally");
}

}  // namespace kvcheck::props
