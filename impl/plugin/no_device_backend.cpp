// Builds without CUDA: load_library() already refuses device plugins; this keeps the
// transport's symbol defined.
#include <stdexcept>

#include "impl/plugin/plugin_backend.h"

namespace kvcheck::plugin {

std::unique_ptr<DeviceTransport> make_device_transport() {
  throw std::runtime_error("device plugins need a kvcheck built with CUDA");
}

TransportProfile transport_profile() { return {}; }

}  // namespace kvcheck::plugin
