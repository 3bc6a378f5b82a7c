// The per-call watchdog of plugin calls: a call that has not returned after
// $KVCHECK_PLUGIN_TIMEOUT seconds (default 60, 600 in sanitizer builds; 0 = off) is
// reported as hung (the harness's limit, said so in the message), with
// the plugin, the operation and the reproduce hint, and the process exits with
// kHangExitCode (the campaign's parent, libFuzzer's driver or CTest sees it).
#pragma once

#include <sys/types.h>

#include <string>

namespace kvcheck::plugin {

constexpr int kHangExitCode = 124;
/// The exit status when a plugin ends the process (exit(), quick_exit()) inside a call:
/// said on stderr and never status 0, so no caller mistakes it for a clean finish.
constexpr int kPluginExitExitCode = 125;

/// Arms the watchdog for one plugin call; disarms when destroyed. Not re-entrant.
/// While armed, a process exit from inside the call (the plugin calling exit())
/// prints which call it was and exits kPluginExitExitCode.
class WatchdogScope {
 public:
  WatchdogScope(const std::string& backend, const char* op);
  ~WatchdogScope();
  WatchdogScope(const WatchdogScope&) = delete;
  WatchdogScope& operator=(const WatchdogScope&) = delete;

 private:
  const char* previous_ = nullptr;
};

/// "" when $KVCHECK_PLUGIN_TIMEOUT is unset, empty or a number of seconds in [0, 1e9],
/// else why not (kvcheck refuses to start on it: "3s" or "abc" used to mean the default).
std::string plugin_timeout_error();
/// The limit in seconds ($KVCHECK_PLUGIN_TIMEOUT; default 60, 600 under ASan/UBSan; 0 = none).
double call_timeout_seconds();

/// In a child forked to run plugin code (a load probe, a case, a campaign worker): the
/// child gets SIGKILL when its parent dies (PR_SET_PDEATHSIG), so a hung call never
/// outlives a killed kvcheck holding its output pipe open; if `parent` (getpid() before
/// the fork) is already gone, it _exits with `exit_code` at once.
void die_with_parent(pid_t parent, int exit_code);

}  // namespace kvcheck::plugin
