// The one dispatch of the K/V family's cpu kernels (store_kv.cpp, gather_kv.cpp): the
// row function for a (model dtype, cache dtype) pair and the ISA. FP8 and e2m1 caches get the
// quantising / dequantising rows compiled for baseline x86-64 and AVX2; a bf16 or
// fp16 cache holds the model dtype itself (SPEC §7.1), so its rows are a copy and
// need no AVX2 build.
#pragma once

#include <cstdint>

#include "impl/cpu/isa.h"
#include "impl/kv_format.h"

namespace kvcheck::cpu {

/// Rows<Model, Cache>::run(job, begin, end) is a kernel's row loop; the two builds.
template <template <KvDtype, KvDtype> class Rows, KvDtype Model, KvDtype Cache, class Job>
void kv_rows_baseline(const Job& job, int64_t begin, int64_t end) {
  Rows<Model, Cache>::run(job, begin, end);
}
template <template <KvDtype, KvDtype> class Rows, KvDtype Model, KvDtype Cache, class Job>
KVCHECK_CPU_TARGET_AVX2 void kv_rows_avx2(const Job& job, int64_t begin, int64_t end) {
  Rows<Model, Cache>::run(job, begin, end);
}

template <class Job>
using KvRowsFn = void (*)(const Job&, int64_t, int64_t);

template <template <KvDtype, KvDtype> class Rows, class Job, KvDtype Model>
KvRowsFn<Job> pick_kv_rows_for(KvDtype cache, bool avx2) {
  constexpr KvDtype kE4M3 = KvDtype::kE4M3, kE5M2 = KvDtype::kE5M2, kE2M1 = KvDtype::kE2M1;
  switch (cache) {
    case kE2M1: return avx2 ? &kv_rows_avx2<Rows, Model, kE2M1, Job> : &kv_rows_baseline<Rows, Model, kE2M1, Job>;
    case kE4M3: return avx2 ? &kv_rows_avx2<Rows, Model, kE4M3, Job> : &kv_rows_baseline<Rows, Model, kE4M3, Job>;
    case kE5M2: return avx2 ? &kv_rows_avx2<Rows, Model, kE5M2, Job> : &kv_rows_baseline<Rows, Model, kE5M2, Job>;
    default: return &kv_rows_baseline<Rows, Model, Model, Job>;
  }
}

/// The row function for rows of `model` dtype (bf16 or fp16, validated) and a cache of
/// `cache` dtype, AVX2 when `avx2`.
template <template <KvDtype, KvDtype> class Rows, class Job>
KvRowsFn<Job> pick_kv_rows(KvDtype model, KvDtype cache, bool avx2) {
  return model == KvDtype::kBF16 ? pick_kv_rows_for<Rows, Job, KvDtype::kBF16>(cache, avx2)
                                 : pick_kv_rows_for<Rows, Job, KvDtype::kFP16>(cache, avx2);
}

}  // namespace kvcheck::cpu
