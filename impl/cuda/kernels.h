// Internal launchers of the CUDA kernels (store.cu, load.cu, index_transforms.cu,
// validate.cu), called by device_api.cpp after its host checks. C++17, no CUDA
// headers. Every pointer is a DEVICE pointer; each launcher only enqueues on
// opts.stream and returns "" or the CUDA error text. `status` (nullable) is the
// checked call's status word: data kernels return early when it holds an error.
#pragma once

#include <cstdint>
#include <string>

#include "impl/cuda/device_api.h"

namespace kvcheck::cuda {

std::string launch_store(const DeviceCache& cache, const StoreArgs& a, const DeviceStatus* status,
                         const LaunchOptions& opts);
std::string launch_load(const DeviceCache& cache, const LoadArgs& a, const DeviceStatus* status,
                        const LaunchOptions& opts);

/// Validation kernels (validate.cu). `owner`: one uint64 per cache slot (slots) or
/// output row (load); status already reset to kStatusOk. launch_validate_slots
/// checks slot_mapping[n] against [0, num_slots) and for duplicates (SPEC §5.1,
/// §7.4: store_kv_cache and store_kv).
std::string launch_validate_slots(const int32_t* slot_mapping, int64_t n, int64_t num_slots,
                                  unsigned long long* owner, DeviceStatus* status,
                                  const LaunchOptions& opts);
std::string launch_validate_load(const DeviceCache& cache, const LoadArgs& a,
                                 unsigned long long* owner, DeviceStatus* status,
                                 const LaunchOptions& opts);
std::string launch_validate_convert(const ConvertArgs& a, int64_t num_seqs, DeviceStatus* status,
                                    const LaunchOptions& opts);
std::string launch_validate_cat(const int32_t* right, int32_t wr, int32_t num_q, int64_t shift,
                                DeviceStatus* status, const LaunchOptions& opts);
std::string launch_validate_expand(const int32_t* pivots, int32_t num_q, int32_t width,
                                   DeviceStatus* status, const LaunchOptions& opts);
std::string launch_validate_swa_decode(const int32_t* start_len, int32_t num_q, int32_t width,
                                       int32_t ring_size, DeviceStatus* status,
                                       const LaunchOptions& opts);

/// SPEC §5.5 data kernels.
std::string launch_convert_kv_index(const ConvertArgs& a, const DeviceStatus* status,
                                    const LaunchOptions& opts);
std::string launch_kv_index_cat(const int32_t* left, int32_t wl, const int32_t* right, int32_t wr,
                                int32_t num_q, int32_t shift, int32_t* out,
                                const DeviceStatus* status, const LaunchOptions& opts);
std::string launch_expand_swa_index(const int32_t* pivots, int32_t num_q, int32_t width,
                                    int32_t* out, const DeviceStatus* status,
                                    const LaunchOptions& opts);
std::string launch_swa_decode_index(const int32_t* start_len, int32_t num_q, int32_t width,
                                    int32_t ring_size, int32_t* out, const DeviceStatus* status,
                                    const LaunchOptions& opts);

/// Which rule a validation kernel found broken (DeviceStatus::check); v[] holds
/// the values the matching impl/validate_errors.h builder takes.
enum class Check : int32_t {
  kNone = 0,
  kSlotRange,      // v: row, slot
  kSlotDuplicate,  // v: row, slot, first row
  kSegBlock,       // v: s, seg[4]
  kSegRange,
  kSegDestination,
  kSegNullCache,
  kSegOverlap,  // v: s, seg[4], t, seg_t[4]
  kConvSeqId,   // v: q, seq
  kConvContextLen,  // v: q, context_len
  kConvNegative,    // v: q, c, x
  kConvMissingBlock,  // v: q, c, x, seq, index, block
  kConvOverflow,      // v: q, c, block
  kCatNegative,       // v: i, x
  kCatOverflow,       // v: i, x
  kExpandLengths,     // v: q, p[4]
  kExpandPiece,       // v: q, p[4], piece
  kSwaLen,            // v: q, len
  kSwaStart,          // v: q, start
  kSwaRing,           // v: q, start
};

/// PendingCheck::op values.
enum class CheckedOp : int32_t { kStore = 1, kLoad, kConvert, kCat, kExpand, kSwaDecode };

}  // namespace kvcheck::cuda
