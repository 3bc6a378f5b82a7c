// SCAFFOLD: replaced by the CPU backend work (issue 3).
#include "impl/cpu/cpu_backend.h"
#include "impl/error.h"
namespace kvcheck::cpu {
void CpuBackend::load_paged_kv_cache(const ConstCacheView&, std::span<const int32_t>, int32_t,
                                     const LoadOutput&) const {
  throw Error(ErrorCode::kUnsupported, "cpu load_paged_kv_cache not implemented yet");
}
}  // namespace kvcheck::cpu
