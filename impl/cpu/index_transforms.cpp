// SCAFFOLD: replaced by the metadata work (issue 4).
#include "impl/cpu/cpu_backend.h"
#include "impl/error.h"
namespace kvcheck::cpu {
void CpuBackend::convert_kv_index(const ConvertKvIndexArgs&, std::span<int32_t>) const {
  throw Error(ErrorCode::kUnsupported, "not implemented yet");
}
void CpuBackend::kv_index_cat(std::span<const int32_t>, int32_t, std::span<const int32_t>, int32_t,
                              int32_t, int32_t, int32_t, std::span<int32_t>) const {
  throw Error(ErrorCode::kUnsupported, "not implemented yet");
}
void CpuBackend::expand_swa_index(std::span<const int32_t>, int32_t, int32_t,
                                  std::span<int32_t>) const {
  throw Error(ErrorCode::kUnsupported, "not implemented yet");
}
void CpuBackend::swa_decode_index(std::span<const int32_t>, int32_t, int32_t, int32_t,
                                  std::span<int32_t>) const {
  throw Error(ErrorCode::kUnsupported, "not implemented yet");
}
}  // namespace kvcheck::cpu
