#include "impl/cpu/parallel.h"

#include <algorithm>
#include <cstdlib>
#include <thread>
#include <vector>

namespace kvcheck::cpu {
namespace {

struct Override {
  int32_t threads = 0;    // 0: no override
  int64_t min_bytes = 0;
};

Override& thread_override() {
  thread_local Override o;
  return o;
}

}  // namespace

int max_threads() {
  if (thread_override().threads > 0) return thread_override().threads;
  if (const char* env = std::getenv("KVCHECK_THREADS")) {
    char* end = nullptr;
    const long v = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && v >= 1) return static_cast<int>(std::min(v, 1024L));
  }
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

int64_t min_bytes_per_thread() {
  return thread_override().threads > 0 ? thread_override().min_bytes : kMinBytesPerThread;
}

bool set_thread_parallelism(int32_t threads, int64_t min_bytes) {
  if (threads == 0 && min_bytes == 0) {
    thread_override() = {};
    return true;
  }
  if (threads < 1 || threads > 1024 || min_bytes < 1) return false;
  thread_override() = {threads, min_bytes};
  return true;
}

void parallel_for(int64_t n, int64_t total_bytes,
                  const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  const int64_t threads =
      std::clamp<int64_t>(std::min<int64_t>(total_bytes / min_bytes_per_thread(), n), 1, max_threads());
  if (threads == 1) {
    fn(0, n);
    return;
  }
  std::vector<std::jthread> workers;
  workers.reserve(static_cast<size_t>(threads - 1));
  for (int64_t t = 1; t < threads; ++t)
    workers.emplace_back([&fn, n, threads, t] { fn(n * t / threads, n * (t + 1) / threads); });
  fn(0, n / threads);
}  // jthreads join here

}  // namespace kvcheck::cpu
