#include "impl/plugin/watchdog.h"

#include <pthread.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <chrono>
#include <cmath>
#include <cstring>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <new>
#include <optional>
#include <thread>

// Sanitizer builds run the same calls several times slower: their default limit is
// kSanitizerFactor times longer, so a verdict does not depend on the build type.
#if defined(__SANITIZE_ADDRESS__)
#define KVCHECK_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(undefined_behavior_sanitizer)
#define KVCHECK_SANITIZED 1
#endif
#endif

namespace kvcheck::plugin {
namespace {

#ifdef KVCHECK_SANITIZED
constexpr double kDefaultTimeout = 600;
#else
constexpr double kDefaultTimeout = 60;
#endif

using Clock = std::chrono::steady_clock;

// One watcher thread per process, started on the first armed call. After fork() the
// child has no watcher thread: the atfork handler rebuilds the state so it starts one.
// While the watcher waits for a deadline (`timing`), a call that arms it again only moves
// the deadline later (a fixed limit on a steady clock) and one that disarms it changes
// nothing it must act on before then: neither wakes it. It wakes at the old deadline,
// finds the new one (or none) and waits again. So a call costs no context switch to
// the watcher, only the first after it went idle (2 per call before: ~5 % of a fuzz
// target's time on 2 cores).
struct State {
  std::mutex mu;
  std::condition_variable cv;
  bool started = false, armed = false, timing = false;
  Clock::time_point deadline;
  std::string what;
};

alignas(State) unsigned char storage[sizeof(State)];
State* state = nullptr;

void reset_after_fork() { state = new (storage) State(); }  // the old one's mutex may be held

State& get() {
  static std::once_flag once;
  std::call_once(once, [] {
    state = new (storage) State();
    pthread_atfork(nullptr, nullptr, reset_after_fork);
  });
  return *state;
}

std::string fmt_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

void watch() {
  State& s = *state;
  std::unique_lock lock(s.mu);
  for (;;) {
    if (!s.armed) {
      s.cv.wait(lock);
      continue;
    }
    s.timing = true;
    const std::cv_status status = s.cv.wait_until(lock, s.deadline);
    s.timing = false;
    if (status == std::cv_status::timeout && s.armed && Clock::now() >= s.deadline) {
      const std::string msg =
          "\nkvcheck: HANG: " + s.what + " did not return within " + fmt_seconds(call_timeout_seconds()) +
          " s, the harness's per-call limit (KVCHECK_PLUGIN_TIMEOUT, default " + fmt_seconds(kDefaultTimeout) +
          " s in this build, 0 = off: raise it for a slow build or a loaded machine); the process exits " +
          std::to_string(kHangExitCode) + "\n";
      (void)!write(STDERR_FILENO, msg.data(), msg.size());
      _exit(kHangExitCode);
    }
  }
}

// The call in progress, for the exit guard: a fixed buffer, so the handler reads it
// without allocating. Written by WatchdogScope on the calling thread.
std::atomic<const char*> g_in_call{nullptr};
thread_local char g_call_text[256];

void on_exit_inside_call() {
  const char* what = g_in_call.load();
  if (what == nullptr) return;
  const char head[] = "\nkvcheck: ";
  const char tail[] = " ended the process (exit() inside the call) instead of returning a status; the process exits 125\n";
  (void)!write(STDERR_FILENO, head, sizeof head - 1);
  (void)!write(STDERR_FILENO, what, std::strlen(what));
  (void)!write(STDERR_FILENO, tail, sizeof tail - 1);
  _exit(kPluginExitExitCode);
}

void install_exit_guard() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::atexit(on_exit_inside_call);
    std::at_quick_exit(on_exit_inside_call);
  });
}

}  // namespace

namespace {
// The largest limit: a steady_clock deadline past about 9.2e9 s overflows its
// nanoseconds and lies in the past (a limit of 1e11 s said HANG at once).
constexpr double kMaxTimeout = 1e9;

// $KVCHECK_PLUGIN_TIMEOUT as seconds; nullopt when it is set but not a number in [0, kMaxTimeout].
std::optional<double> env_timeout() {
  const char* env = std::getenv("KVCHECK_PLUGIN_TIMEOUT");
  if (!env || !*env) return kDefaultTimeout;
  char* end = nullptr;
  const double v = std::strtod(env, &end);
  if (end == env || *end != '\0' || !std::isfinite(v) || v < 0 || v > kMaxTimeout) return std::nullopt;
  return v;
}
}  // namespace

std::string plugin_timeout_error() {
  if (env_timeout()) return "";
  return std::string("KVCHECK_PLUGIN_TIMEOUT='") + std::getenv("KVCHECK_PLUGIN_TIMEOUT") +
         "' is not a number of seconds in [0, 1e9] (0 = no limit; e.g. 60 or 2.5)";
}

double call_timeout_seconds() {
  static const double t = env_timeout().value_or(kDefaultTimeout);
  return t;
}

WatchdogScope::WatchdogScope(const std::string& backend, const char* op) {
  install_exit_guard();
  std::snprintf(g_call_text, sizeof g_call_text, "plugin '%s' %s", backend.c_str(), op);
  previous_ = g_in_call.exchange(g_call_text);
  const double limit = call_timeout_seconds();
  if (limit <= 0) return;
  State& s = get();
  std::lock_guard lock(s.mu);
  if (!s.started) {
    std::thread(watch).detach();
    s.started = true;
  }
  s.armed = true;
  s.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limit));
  s.what = "plugin '" + backend + "' " + op;
  if (!s.timing) s.cv.notify_all();  // a watcher waiting for a deadline wakes at it (State)
}

WatchdogScope::~WatchdogScope() {
  g_in_call.store(previous_);
  if (call_timeout_seconds() <= 0) return;
  State& s = get();
  std::lock_guard lock(s.mu);
  s.armed = false;  // no wake-up: the watcher finds it at its deadline (State)
}

void die_with_parent(pid_t parent, int exit_code) {
  (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(exit_code);  // the parent died before the line above
}

}  // namespace kvcheck::plugin
