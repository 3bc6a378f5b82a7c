// A tiny fork-join parallel_for for the CPU kernels: threads are spawned only when
// the work is big enough to pay for them, so small (fuzz-sized) calls stay serial.
#pragma once

#include <cstdint>
#include <functional>

namespace kvcheck::cpu {

/// Bytes of output per extra thread below which no thread is spawned.
inline constexpr int64_t kMinBytesPerThread = int64_t{256} << 10;

/// Threads the kernels may use: the calling thread's test override (below) when set,
/// else env KVCHECK_THREADS when it is an integer >= 1, else
/// std::thread::hardware_concurrency() (at least 1).
int max_threads();

/// Bytes per extra thread in effect on the calling thread: its test override when
/// set, else kMinBytesPerThread.
int64_t min_bytes_per_thread();

/// Test hook (SPEC §6, the plugin ABI's set_test_parallelism): later parallel_for
/// calls made ON THIS THREAD split as if the machine had `threads` threads (1..1024)
/// and a thread paid for itself at `min_bytes` bytes (>= 1), so a property case of a
/// few rows runs in 2-4 chunks on a 1-core machine as well. 0, 0 clears the override.
/// Returns false (and changes nothing) for values outside those ranges.
bool set_thread_parallelism(int32_t threads, int64_t min_bytes);

/// Calls fn(begin, end) on contiguous chunks covering [0, n), one chunk per thread,
/// using min(max_threads(), n, total_bytes / min_bytes_per_thread()) threads (at least
/// one: the caller's). fn must not throw.
void parallel_for(int64_t n, int64_t total_bytes, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace kvcheck::cpu
