// The cuda backend of the CUDA tests: the cuda PLUGIN (libkvcheck_cuda.so) loaded
// through the registry, so these tests run the same seam as the properties.
#pragma once

#include <memory>
#include <string>

#include "impl/backend.h"

namespace kvcheck::cuda {

/// The cuda backend when it runs here, else nullptr and (when why_not is given) why.
inline std::shared_ptr<const Backend> make_cuda_backend(std::string* why_not) {
  std::vector<std::string> missing;
  for (auto& b : available_backends(&missing))
    if (b->name() == "cuda") return b;
  if (why_not) {
    *why_not = "cuda backend not loaded";
    for (const auto& m : missing)
      if (m.rfind("cuda", 0) == 0) *why_not = m;
  }
  return nullptr;
}

}  // namespace kvcheck::cuda
