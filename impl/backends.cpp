#include "impl/backend.h"
#include "impl/cpu/cpu_backend.h"
#include "impl/error.h"
#ifdef KVCHECK_HAVE_CUDA
#include "impl/cuda/cuda_backend.h"
#endif

namespace kvcheck {

std::vector<std::shared_ptr<const Backend>> available_backends(
    std::vector<std::string>* why_missing) {
  std::vector<std::shared_ptr<const Backend>> out{std::make_shared<cpu::CpuBackend>()};
#ifdef KVCHECK_HAVE_CUDA
  std::string why;
  if (auto cuda = cuda::make_cuda_backend(&why))
    out.push_back(std::move(cuda));
  else if (why_missing)
    why_missing->push_back("cuda: " + why);
#else
  if (why_missing) why_missing->push_back("cuda: not built (no nvcc when configured)");
#endif
  return out;
}

std::shared_ptr<const Backend> backend_by_name(const std::string& name) {
  std::string names;
  for (auto& b : available_backends()) {
    if (b->name() == name) return b;
    names += (names.empty() ? "" : ", ") + std::string(b->name());
  }
  throw Error(ErrorCode::kInvalidArgument,
              "no backend '" + name + "' here; available: " + names);
}

}  // namespace kvcheck
