// C++17 launch API of the CUDA kernels (store.cu, load.cu, index_transforms.cu). No
// CUDA or C++20 headers: the C++20 host side (cuda_backend.cpp) and the nvcc side
// (CUDA_STANDARD 17) both include it. Every pointer here is a DEVICE pointer; the
// caller has validated all metadata (SPEC §5) before launching. Each launcher
// enqueues on `stream` (a cudaStream_t; nullptr = the default stream) and returns ""
// or the CUDA error text of the launch.
#pragma once

#include <cstdint>
#include <string>

namespace kvcheck::cuda {

/// Data dtype / scale format codes (mirror QuantizedDtype / SfFormat).
enum class DevDtype : int32_t { kBF16 = 0, kE4M3 = 1, kE2M1 = 2 };
enum class DevSf : int32_t { kNone = 0, kUE8M0 = 1, kE4M3 = 2, kFP32 = 3 };

/// A cache layout as runtime strides (FlashInfer style), all in bytes (SPEC §3):
/// data of (block b, token t) at b*block_stride + t*data_token_stride; scales at
/// b*block_stride + scale_base + t*scale_token_stride.
struct DevLayout {
  DevDtype dtype = DevDtype::kBF16;
  DevSf sf = DevSf::kNone;
  int32_t elements = 0;      // per token
  int32_t group = 0;         // elements_per_sf (0 for BF16)
  int32_t block_size = 0;    // tokens
  int64_t block_stride = 0;  // bytes
  int64_t data_token_stride = 0, scale_base = 0, scale_token_stride = 0;
  int64_t quantized_bytes = 0, sf_bytes = 0;  // per token
};

/// store_kv_cache body: rows r < n with slots[r] >= 0 are written (SPEC §4, §5.1).
/// kv row r starts at kv + r*kv_row_stride (elements).
struct StoreLaunch {
  const uint16_t* kv = nullptr;
  int64_t kv_row_stride = 0;
  const int32_t* slots = nullptr;
  int64_t n = 0;
  uint8_t* cache = nullptr;
  DevLayout layout;
};
std::string launch_store(const StoreLaunch& a, void* stream);

/// load_paged_kv_cache body (SPEC §5.2): segments[S][4]; max_len = the longest
/// segment. do_cast: dequantise to BF16 rows; else copy data (and, when index,
/// scales) bytes. Output strides in bytes.
struct LoadLaunch {
  const uint8_t* cache = nullptr;
  DevLayout layout;
  bool do_cast = false, index = false;
  const int32_t* segments = nullptr;
  int64_t num_segments = 0;
  int32_t max_len = 0;
  uint8_t* out_data = nullptr;
  int64_t out_data_stride = 0;
  uint8_t* out_scales = nullptr;
  int64_t out_scale_stride = 0;
};
std::string launch_load(const LoadLaunch& a, void* stream);

/// SPEC §5.5 transforms; sizes as in impl/backend.h. seq_ids may be null (row q).
std::string launch_convert_kv_index(const int32_t* topk, int32_t num_q, int32_t k,
                                    const int32_t* block_table, int32_t max_blocks,
                                    const int32_t* seq_ids, const int32_t* context_lens,
                                    int32_t block_size, int32_t* out, void* stream);
std::string launch_kv_index_cat(const int32_t* left, int32_t wl, const int32_t* right, int32_t wr,
                                int32_t num_q, int32_t shift, int32_t* out, void* stream);
std::string launch_expand_swa_index(const int32_t* pivots, int32_t num_q, int32_t width,
                                    int32_t* out, void* stream);
std::string launch_swa_decode_index(const int32_t* start_len, int32_t num_q, int32_t width,
                                    int32_t ring_size, int32_t* out, void* stream);

/// "" when a device exists and runs this build's kernels (e.g. an sm_90 image on an
/// sm_90 GPU), else why not.
std::string probe_device();
/// Free bytes of device memory (0 when there is no device).
int64_t device_free_bytes();

}  // namespace kvcheck::cuda
