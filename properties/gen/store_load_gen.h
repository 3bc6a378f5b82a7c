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
  std::vector<bf16_bits> kv;          // rows * row_stride; rows >= n (more: CUDA-graph padding rows)
  // Fields below default to the plain case (and are left out of JSON at their defaults).
  int32_t threads = 0;                // > 0: the backend splits the call as on `threads` threads
  std::vector<int32_t> slot_tail;     // entries after slot_mapping in its buffer: a kernel must not read them
  int64_t far_row_stride = 0;         // > 0: kv row r sits at element r*far_row_stride of a sparse buffer
};

struct LoadScenario {
  CacheShape shape;
  std::vector<int32_t> load_segments;  // S * 4, LoadSegment order
  int32_t total_k = 0;
  int64_t out_rows = 0;                // >= total_k
  uint32_t out_seed = 0;               // prior output contents
  // Fields below default to the plain case (and are left out of JSON at their defaults).
  int32_t threads = 0;                 // > 0: the backend splits the call as on `threads` threads
  int64_t out_data_pad = 16;           // bytes of each output data row stride past load_row_bytes
  int64_t out_scale_pad = 16;          // the same for the scale rows (index formats)
  int32_t out_offset = 0;              // bytes the output rows start past an aligned allocation
};

void showValue(const CacheShape& s, std::ostream& os);
void showValue(const StoreScenario& s, std::ostream& os);
void showValue(const LoadScenario& s, std::ostream& os);

rc::Gen<KVCacheFormat> gen_format();
/// A valid format no named one matches (SPEC §2 fields, any dtype / scale / group
/// combination, group sizes the fixed kernels lack): the run-time group kernels.
rc::Gen<KVCacheFormat> gen_custom_format();
/// Whether f is one of the named formats (SPEC §2 table, BF16(E) included).
bool is_named_format(const KVCacheFormat& f);
rc::Gen<int32_t> gen_block_size();
rc::Gen<CacheShape> gen_cache_shape();
/// Valid store: distinct valid slots mixed with -1 (none, some, all; -1 next to slot 0).
rc::Gen<StoreScenario> gen_store_scenario();
rc::Gen<StoreScenario> gen_store_scenario(const CacheShape& shape);
/// Valid load plan: zero-fill segments, gaps, shuffled order, odd output strides and
/// misaligned output bases.
rc::Gen<LoadScenario> gen_load_scenario();
/// A row count in [1, max_rows] scaled by the case size from size 30 up (shrinks to 1).
rc::Gen<int> gen_row_count(int max_rows);
/// The work split of one case: 0 (the backend's own) or 1-4 threads.
rc::Gen<int32_t> gen_threads();
/// A row stride past 2^30 elements for rows placed in a sparse buffer (so row offsets
/// pass 2^31 elements), or 0 for plain rows; only for host-memory backends.
rc::Gen<int64_t> gen_far_row_stride();


}  // namespace kvcheck::props
