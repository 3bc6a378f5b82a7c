// Per-case isolation: each case's check of a backend in its own forked process, so a
// backend that crashes makes an ordinary RapidCheck failure ("the backend crashed:
// signal 11 (Segmentation fault)") that RapidCheck shrinks like any other, and the
// minimal crashing case, its reproduce token and its regression file reach the report.
// `kvcheck run` turns it on when a chunk of cases crashed (tools/kvcheck/isolate.cpp)
// and around replaying a new regression file in the campaign's parent.
//
// The forking process must not have initialised CUDA (a CUDA context does not survive
// fork): each case's process initialises its own, so a device plugin's cases run one by
// one at the cost of one CUDA start-up each.
#pragma once

#include <functional>
#include <string>

namespace kvcheck::props {

/// Turns per-case isolation on (or, `on` = false, off) on this thread until destroyed.
class ScopedCaseIsolation {
 public:
  explicit ScopedCaseIsolation(bool on = true);
  ~ScopedCaseIsolation();
  ScopedCaseIsolation(const ScopedCaseIsolation&) = delete;
  ScopedCaseIsolation& operator=(const ScopedCaseIsolation&) = delete;

 private:
  bool previous_;
};

/// Whether per-case isolation is on on this thread.
bool case_isolation();

/// Runs `body` in a forked child and returns its bytes (what the child's body
/// returned, read from a pipe) and wait status in *bytes / *status; false, with
/// nothing run, when no pipe or child could be made. The child exits 0 after writing,
/// 3 when the pipe broke; a signal or another exit is the body's own death.
bool run_forked(const std::function<std::string()>& body, std::string* bytes, int* status);

/// How a run_forked child that left no result ended, from its wait status: "the backend
/// crashed: signal N (name)", "the backend hung: a plugin call exceeded
/// KVCHECK_PLUGIN_TIMEOUT=S s", "the backend ended the process: exit() inside a plugin
/// call", else "the backend's process exited with status N and no result".
std::string died_how(int status);

/// Runs `check`, one case's check of a backend (the one place a scenario property or a
/// regression replay calls it): directly, or with case_isolation() in a forked child
/// whose result (pass, RapidCheck failure or discard, UnsupportedCase, exception) is
/// thrown again here. A child that dies throws a RapidCheck failure naming the signal
/// or exit status ("the backend crashed: ...", "the backend hung: ...").
void run_case(const std::function<void()>& check);

}  // namespace kvcheck::props
