// Builds without CUDA: load_library() already refuses device plugins; this keeps the
// adapter's symbol defined.
#include <stdexcept>

#include "impl/plugin/loader.h"

namespace kvcheck::plugin {

std::shared_ptr<const Backend> make_device_backend(std::shared_ptr<Library> lib) {
  throw std::runtime_error("plugin " + lib->path + ": device plugins need a kvcheck built with CUDA");
}

}  // namespace kvcheck::plugin
