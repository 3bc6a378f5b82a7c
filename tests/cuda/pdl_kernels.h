// Host interface of tests/cuda/pdl_kernels.cu: producer and checker kernels for the
// programmatic-dependent-launch tests (C++ side stays free of CUDA headers).
#pragma once

#include <cstdint>
#include <string>

#include "impl/paged_layout.h"

namespace kvcheck::cuda_test {

/// The BF16 element a PDL test round `round` puts at (row r, element e).
uint16_t pdl_value(int32_t round, int64_t r, int64_t e);
/// The slot of row r in round `round`: a permutation of [0, num_slots) (a power of 2).
int32_t pdl_slot(int32_t round, int64_t r, int64_t num_slots);

/// Enqueues a producer on `stream` that lets its dependents launch at once, spins
/// for about `spin_ns`, then writes round `round`'s kv rows [n][elements] and
/// slot_mapping[n] (and, for loads, one segment per block: block b's tokens to rows
/// [pdl_slot-permuted block * block_size ...) into segments[num_blocks][4]).
std::string launch_producer(int32_t round, uint16_t* kv, int64_t elements, int32_t* slot_mapping, int64_t n,
                            int32_t* segments, int64_t num_blocks, int32_t block_size, int64_t spin_ns,
                            void* stream);
/// Enqueues a checker that adds to *mismatches the cache elements (BF16 layout) that
/// are not round `round`'s rows at round `round`'s slots.
std::string launch_check_store(int32_t round, const uint8_t* cache, PagedLayout layout, int64_t n,
                               unsigned long long* mismatches, void* stream);
/// Enqueues a checker that adds to *mismatches the load-output elements (BF16 rows
/// of `elements`) that are not the cache token its round-`round` segment names.
std::string launch_check_load(int32_t round, const uint8_t* cache, PagedLayout layout, const uint16_t* out,
                              int64_t total_k, unsigned long long* mismatches, void* stream);

}  // namespace kvcheck::cuda_test
