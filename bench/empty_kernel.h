// The launch-latency baseline of bench_cuda: an empty kernel (bench/empty_kernel.cu).
#pragma once

namespace kvcheck::bench {
/// Enqueues an empty 1-CTA kernel on `stream` (a cudaStream_t).
void launch_empty(void* stream);
}  // namespace kvcheck::bench
