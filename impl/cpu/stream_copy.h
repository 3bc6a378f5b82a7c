// Row copies for outputs too large to stay in cache (the BF16 copy kernels' big
// calls): the 32-byte-aligned middle of each destination written with non-temporal
// stores, so the destination lines are not first read for ownership (3 memory
// transfers per byte become 2). On the 2-core machine, 16k rows of 1 KiB: memcpy per
// row 1.92 ms one thread / 1.06 ms two, streamed 0.90 / 0.73 ms, one memcpy of the
// whole 16 MiB 1.05 ms. Bytes written are memcpy's.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "impl/cpu/isa.h"
#include "impl/cpu/parallel.h"

#if KVCHECK_CPU_X86
#include <immintrin.h>
#endif

namespace kvcheck::cpu {

/// Output bytes of one call from which the copy kernels stream their stores: 32 times
/// the bytes a thread must have (8 MiB by default: past a last-level cache's share, the
/// rows will be read from memory anyway). Tied to the thread threshold so the
/// properties' parallelism hook (set_thread_parallelism, 1 byte a thread) takes the
/// streaming path on small cases too: both sides of this threshold get tested.
inline int64_t stream_min_bytes() { return 32 * min_bytes_per_thread(); }

#if KVCHECK_CPU_X86
/// memcpy(dst, src, n) (no overlap), the 32-byte-aligned middle of dst by streaming
/// stores. A thread calls stream_fence() after its last streamed row, before another
/// thread may read dst (streaming stores are weakly ordered).
KVCHECK_CPU_TARGET_AVX2 inline void copy_streaming(uint8_t* dst, const uint8_t* src, size_t n) {
  const size_t head = std::min(n, (32 - reinterpret_cast<uintptr_t>(dst) % 32) % 32);
  std::memcpy(dst, src, head);
  size_t i = head;
  for (; i + 32 <= n; i += 32)
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i)));
  std::memcpy(dst + i, src + i, n - i);
}
KVCHECK_CPU_TARGET_AVX2 inline void stream_fence() { _mm_sfence(); }
#endif

/// One row: copy_streaming when kStream (x86: callers pick it only where AVX2 runs),
/// else memcpy. Always inlined, so the streaming form lands in its AVX2 caller.
template <bool kStream>
inline __attribute__((always_inline)) void copy_row(uint8_t* dst, const uint8_t* src, size_t n) {
#if KVCHECK_CPU_X86
  if constexpr (kStream) {
    copy_streaming(dst, src, n);
    return;
  }
#endif
  std::memcpy(dst, src, n);
}

}  // namespace kvcheck::cpu
