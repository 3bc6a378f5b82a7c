// The cuda backend of the CUDA tests: the cuda PLUGIN (libkvcheck_cuda.so) loaded
// through the registry, so these tests run the same seam as the properties.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "impl/backends.h"

namespace kvcheck::cuda {

/// The cuda backend when it runs here, else nullptr and (when why_not is given) why.
/// Resolved once per process: the registry probes the plugin in a forked child,
/// which cannot use CUDA once this process has initialised it, so the first call
/// must come before any test touches the device (kCudaPluginResolved below).
inline std::shared_ptr<const Backend> make_cuda_backend(std::string* why_not) {
  static const std::pair<std::shared_ptr<const Backend>, std::string> found = [] {
    std::vector<std::string> missing;
    for (auto& b : available_backends(&missing))
      if (b->name() == "cuda") return std::pair<std::shared_ptr<const Backend>, std::string>{b, ""};
    std::string why = "cuda backend not loaded";
    for (const auto& m : missing)
      if (m.rfind("cuda", 0) == 0) why = m;
    return std::pair<std::shared_ptr<const Backend>, std::string>{nullptr, why};
  }();
  if (!found.first && why_not) *why_not = found.second;
  return found.first;
}

/// Resolves the plugin during static initialisation, before main() and any test.
inline const bool kCudaPluginResolved = (make_cuda_backend(nullptr), true);

}  // namespace kvcheck::cuda
