// SCAFFOLD: replaced by the CPU backend work (issue 3).
#include "impl/cpu/cpu_backend.h"
#include "impl/error.h"
namespace kvcheck::cpu {
void CpuBackend::store_kv_cache(const KVInput&, std::span<const int32_t>, const CacheView&) const {
  throw Error(ErrorCode::kUnsupported, "cpu store_kv_cache not implemented yet");
}
}  // namespace kvcheck::cpu
