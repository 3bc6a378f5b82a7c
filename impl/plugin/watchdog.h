// The per-call watchdog of plugin calls: a call that has not returned after
// $KVCHECK_PLUGIN_TIMEOUT seconds (default 60, 600 in sanitizer builds; 0 = off) is
// reported as hung (the harness's limit, said so in the message), with
// the plugin, the operation and the reproduce hint, and the process exits with
// kHangExitCode (the campaign's parent, libFuzzer's driver or CTest sees it).
#pragma once

#include <string>

namespace kvcheck::plugin {

constexpr int kHangExitCode = 124;

/// Arms the watchdog for one plugin call; disarms when destroyed. Not re-entrant.
class WatchdogScope {
 public:
  WatchdogScope(const std::string& backend, const char* op);
  ~WatchdogScope();
  WatchdogScope(const WatchdogScope&) = delete;
  WatchdogScope& operator=(const WatchdogScope&) = delete;
};

/// The limit in seconds ($KVCHECK_PLUGIN_TIMEOUT; default 60, 600 under ASan/UBSan; 0 = none).
double call_timeout_seconds();

}  // namespace kvcheck::plugin
