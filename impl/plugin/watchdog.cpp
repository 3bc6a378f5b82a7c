#include "impl/plugin/watchdog.h"

#include <pthread.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <new>
#include <thread>

namespace kvcheck::plugin {
namespace {

using Clock = std::chrono::steady_clock;

// One watcher thread per process, started on the first armed call. After fork() the
// child has no watcher thread: the atfork handler rebuilds the state so it starts one.
struct State {
  std::mutex mu;
  std::condition_variable cv;
  bool started = false, armed = false;
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

void watch() {
  State& s = *state;
  std::unique_lock lock(s.mu);
  for (;;) {
    if (!s.armed) {
      s.cv.wait(lock);
      continue;
    }
    if (s.cv.wait_until(lock, s.deadline) == std::cv_status::timeout && s.armed && Clock::now() >= s.deadline) {
      const std::string msg = "\nkvcheck: HANG: " + s.what + " did not return within " +
                              std::to_string(call_timeout_seconds()) +
                              " s (KVCHECK_PLUGIN_TIMEOUT); the process exits " + std::to_string(kHangExitCode) + "\n";
      (void)!write(STDERR_FILENO, msg.data(), msg.size());
      _exit(kHangExitCode);
    }
  }
}

}  // namespace

double call_timeout_seconds() {
  static const double t = [] {
    const char* env = std::getenv("KVCHECK_PLUGIN_TIMEOUT");
    if (!env || !*env) return 60.0;
    char* end = nullptr;
    const double v = std::strtod(env, &end);
    return end != env && *end == '\0' && v >= 0 ? v : 60.0;
  }();
  return t;
}

WatchdogScope::WatchdogScope(const std::string& backend, const char* op) {
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
  s.cv.notify_all();
}

WatchdogScope::~WatchdogScope() {
  if (call_timeout_seconds() <= 0) return;
  State& s = get();
  std::lock_guard lock(s.mu);
  s.armed = false;
  s.cv.notify_all();
}

}  // namespace kvcheck::plugin
