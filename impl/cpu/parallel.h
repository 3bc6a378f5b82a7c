// A tiny fork-join parallel_for for the CPU kernels: threads are spawned only when
// the work is big enough to pay for them, so small (fuzz-sized) calls stay serial.
#pragma once

#include <cstdint>
#include <functional>

namespace kvcheck::cpu {

/// Bytes of output per extra thread below which no thread is spawned.
inline constexpr int64_t kMinBytesPerThread = int64_t{256} << 10;

/// Threads the kernels may use: env KVCHECK_THREADS when it is an integer >= 1,
/// else std::thread::hardware_concurrency() (at least 1).
int max_threads();

/// Calls fn(begin, end) on contiguous chunks covering [0, n), one chunk per thread,
/// using min(max_threads(), n, total_bytes / kMinBytesPerThread) threads (at least
/// one: the caller's). fn must not throw.
void parallel_for(int64_t n, int64_t total_bytes, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace kvcheck::cpu
