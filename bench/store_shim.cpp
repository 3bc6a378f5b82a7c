// libkvcheck_bench_store.so: kvcheck's unchecked BF16(E) store_kv_cache (SPEC §5.1) as one
// C function, so bench/compare_alternatives.py --shim can call it by ctypes on torch's
// stream and capture it in the same kind of CUDA graph, in the same process, as the
// Triton store it is compared with (issue 21: decode timed as engines run it). The
// layout is CacheLayout::make(BF16(E), num_blocks, block_size): packed blocks of
// block_size * E * 2 bytes, so a torch tensor cache.view(-1, E) indexed by slot is it.
// Benchmark-only: not part of any backend or ABI.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>

#include "impl/cuda/device_api.h"
#include "impl/format.h"
#include "impl/layout.h"

/// Enqueues store_kv_cache for num_tokens BF16 rows of E elements (kv + r*kv_row_stride
/// elements; slot_mapping[num_tokens] int32, -1 skipped) into a BF16(E) cache of
/// num_blocks blocks of block_size tokens at `cache` (device memory, 16-byte aligned for
/// the vector path), on `stream` (a cudaStream_t). Metadata is assumed valid, as on the
/// hot path. Returns 0, or 1 with the kvcheck::Error / CUDA message in err[err_len]
/// (nothing enqueued then).
extern "C" __attribute__((visibility("default"))) int kvcheck_bench_store_bf16(void* cache, int64_t num_blocks, int32_t block_size, int32_t E,
                                        const uint16_t* kv, int64_t kv_rows, int64_t kv_row_stride,
                                        const int32_t* slot_mapping, int64_t num_tokens, void* stream,
                                        char* err, size_t err_len) {
  try {
    using namespace kvcheck;
    const CacheLayout layout = CacheLayout::make(KVCacheFormat::BF16(E), num_blocks, block_size);
    const cuda::DeviceCache dc{static_cast<uint8_t*>(cache), layout.paged(), layout.size_bytes()};
    cuda::StoreArgs args;
    args.kv = kv;
    args.kv_rows = kv_rows;
    args.kv_row_stride = kv_row_stride;
    args.slot_mapping = slot_mapping;
    args.num_tokens = num_tokens;
    cuda::store_kv_cache(dc, args, cuda::LaunchOptions{stream, false});
    return 0;
  } catch (const std::exception& e) {
    if (err != nullptr && err_len > 0) std::snprintf(err, err_len, "%s", e.what());
    return 1;
  }
}
