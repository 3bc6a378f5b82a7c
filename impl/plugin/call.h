// One plugin call: watchdog armed, status turned into the harness's outcome.
#pragma once

#include <stdexcept>
#include <string>

#include "impl/error.h"
#include "impl/plugin/abi_convert.h"
#include "impl/plugin/watchdog.h"

namespace kvcheck::plugin {

/// Calls fn(context, &args, stream, msg, size) under the watchdog. A refusal status
/// throws Error(code, plugin message) — the message as the plugin wrote it, less a
/// leading "<code name>: " (a C++ plugin writing Error::what()), so a refusal reads
/// exactly as the reference's and error checks can compare the blamed index and value;
/// reports name the backend themselves. INTERNAL or an unknown status throws
/// std::runtime_error naming the backend and op (a backend failure, never a refusal).
template <typename Fn, typename Args>
void call_plugin(const std::string& backend, const char* op, Fn fn, void* context, const Args& args,
                 void* stream) {
  char msg[2048] = {0};
  int st;
  {
    const WatchdogScope watchdog(backend, op);
    st = fn(context, &args, stream, msg, sizeof msg);
  }
  msg[sizeof msg - 1] = '\0';
  if (st == KVCHECK_STATUS_OK) return;
  ErrorCode code;
  if (to_error_code(st, &code)) {
    std::string text = msg;
    const std::string prefix = std::string(to_string(code)) + ": ";
    if (text.rfind(prefix, 0) == 0) text.erase(0, prefix.size());
    throw Error(code, text);
  }
  throw std::runtime_error("plugin '" + backend + "' " + op + " failed (status " + std::to_string(st) +
                           "): " + (msg[0] != '\0' ? std::string(msg) : std::string("(it wrote no message)")));
}

}  // namespace kvcheck::plugin
