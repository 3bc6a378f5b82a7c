// Run-time instruction-set choice for the CPU kernels: each kernel is compiled twice
// (baseline x86-64 and AVX2, via KVCHECK_CPU_TARGET_AVX2) and picked per call.
#pragma once

#include <cstdlib>
#include <cstring>

namespace kvcheck::cpu {

#if defined(__x86_64__) || defined(__i386__)
#define KVCHECK_CPU_X86 1
#define KVCHECK_CPU_TARGET_AVX2 __attribute__((target("avx2")))
#else
#define KVCHECK_CPU_X86 0
#define KVCHECK_CPU_TARGET_AVX2
#endif

/// Groups of a compile-time size G that the quantising stores and loads take per step:
/// 128 elements' worth (one group when G >= 128). At -O2 GCC vectorises a loop only when
/// the vector factor divides its trip count, and a loop with byte codes has a factor of
/// 32 in 256-bit vectors: over one 16-element group every step ran in 128-bit vectors
/// even under AVX2, and each group's scale was worked out alone (scalar).
template <int G>
constexpr int kGroupBatch = G >= 128 ? 1 : 128 / G;

/// True when the AVX2 kernels may run: the CPU has AVX2 and env KVCHECK_CPU_ISA is
/// not "baseline" (tests use that to cover the other path). Both give identical bytes.
inline bool use_avx2() {
#if KVCHECK_CPU_X86
  const char* isa = std::getenv("KVCHECK_CPU_ISA");
  if (isa != nullptr && std::strcmp(isa, "baseline") == 0) return false;
  return __builtin_cpu_supports("avx2");
#else
  return false;
#endif
}

}  // namespace kvcheck::cpu
