// The project's own plugins' side of the ABI: run a C++ call and turn its outcome into
// a status (kvcheck::Error -> its code, anything else -> INTERNAL), the message into
// the harness's buffer. No exception crosses the C boundary.
#pragma once

#include <exception>

#include "impl/error.h"
#include "impl/plugin/abi_convert.h"

namespace kvcheck::plugin {

template <typename F>
int guarded(char* msg, size_t msg_size, F&& f) noexcept {
  try {
    f();
    return KVCHECK_STATUS_OK;
  } catch (const Error& e) {
    write_message(e.what(), msg, msg_size);
    return to_status(e.code());
  } catch (const std::exception& e) {
    write_message(e.what(), msg, msg_size);
    return KVCHECK_STATUS_INTERNAL;
  } catch (...) {
    write_message("unknown exception", msg, msg_size);
    return KVCHECK_STATUS_INTERNAL;
  }
}

}  // namespace kvcheck::plugin
