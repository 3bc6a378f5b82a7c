// RapidCheck generators for store/load scenarios (SPEC §6 "Generators must reach").
// They build on earlier draws rather than filtering, and shrink towards small
// caches, few rows and plain values.
#pragma once

#include <rapidcheck.h>

#include <cstdint>
#include <iosfwd>
#include <vector>

#include "impl/backend.h"
#include "impl/format.h"
#include "properties/gen/splitmix.h"

namespace kvcheck {
void showValue(const KVCacheFormat& f, std::ostream& os);
}  // namespace kvcheck

namespace kvcheck::props {

/// A cache shape: format, block_size (1, 2, 16, 64, 133, 256, odd, random ≤ 300),
/// num_blocks, and a seed for the cache's prior contents.
struct CacheShape {
  KVCacheFormat format;
  int32_t block_size = 1;
  int32_t num_blocks = 1;
  uint32_t fill_seed = 0;  // prior cache bytes: a pattern, so untouched bytes are visible
};

struct StoreScenario {
  CacheShape shape;
  std::vector<int32_t> slot_mapping;  // n rows, -1 = padding
  int64_t row_stride = 0;             // elements, >= E (rows may be padded)
  std::vector<bf16_bits> kv;          // n * row_stride
};

struct LoadScenario {
  CacheShape shape;
  std::vector<int32_t> load_segments;  // S * 4, LoadSegment order
  int32_t total_k = 0;
  int64_t out_rows = 0;                // >= total_k
  uint32_t out_seed = 0;               // prior output contents
};

void showValue(const CacheShape& s, std::ostream& os);
void showValue(const StoreScenario& s, std::ostream& os);
void showValue(const LoadScenario& s, std::ostream& os);

rc::Gen<KVCacheFormat> gen_format();
rc::Gen<int32_t> gen_block_size();
rc::Gen<CacheShape> gen_cache_shape();
/// Valid store: distinct valid slots mixed with -1 (none, some, all; -1 next to slot 0).
rc::Gen<StoreScenario> gen_store_scenario();
rc::Gen<StoreScenario> gen_store_scenario(const CacheShape& shape);
/// Valid load plan: zero-fill segments, gaps, shuffled order.
rc::Gen<LoadScenario> gen_load_scenario();


}  // namespace kvcheck::props
