// The engine side: a vLLM-style slot_mapping store (reshape_and_cache /
// concat_and_cache_mla shape) for a BF16 cache, as an engine exposes it. Nothing here
// knows kvcheck; plugin.cpp adapts it to the ABI.
#pragma once

#include <cstdint>

/// kv[num_tokens][kv_stride] BF16 bits -> cache: token i goes to slot slot_mapping[i]
/// (block = slot / block_size, offset = slot % block_size), entry_size elements at
/// cache + block*block_stride + offset*entry_stride (strides in ELEMENTS); a slot of
/// -1 is padding and skipped. Metadata is assumed valid, as engine kernels assume it.
/// stream: a cudaStream_t (host-only build: ignored, runs synchronously).
void reshape_and_cache_bf16(const uint16_t* kv, uint16_t* cache, const int32_t* slot_mapping,
                            int64_t num_tokens, int64_t kv_stride, int64_t block_stride,
                            int64_t entry_stride, int32_t entry_size, int32_t block_size, void* stream);
