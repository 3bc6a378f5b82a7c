#include "properties/case_isolation.h"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

#include "impl/error.h"
#include "impl/plugin/watchdog.h"
#include "properties/harness.h"
#include "properties/rapidcheck_bridge.h"

namespace kvcheck::props {
namespace {

thread_local bool isolate_cases = false;

// The child's result: one kind byte, then the description.
enum Kind : char {
  kPassed = 'P',
  kSucceeded = 'S',  // RC_SUCCEED
  kFailed = 'F',
  kDiscarded = 'D',
  kUnsupported = 'U',
  kKvcheckError = 'E',  // then the ErrorCode as one byte
  kException = 'X',
};

std::string tagged(Kind k, const std::string& description) { return static_cast<char>(k) + description; }

std::string run_here(const std::function<void()>& check) {
  try {
    check();
    return tagged(kPassed, "");
  } catch (const UnsupportedCase& r) {
    return tagged(kUnsupported, r.description);
  } catch (const Error& e) {
    std::string msg = e.what();
    const std::string prefix = std::string(to_string(e.code())) + ": ";
    if (msg.rfind(prefix, 0) == 0) msg.erase(0, prefix.size());
    return tagged(kKvcheckError, static_cast<char>(e.code()) + msg);
  } catch (const std::exception& e) {
    return tagged(kException, e.what());
  } catch (...) {
    // RapidCheck's case result (RC_FAIL, RC_ASSERT, RC_DISCARD, RC_SUCCEED) is no
    // std::exception: it lands here.
    if (const auto r = rapidcheck_case_result(std::current_exception()))
      return tagged(r->type == RcCaseType::kFailure   ? kFailed
                    : r->type == RcCaseType::kDiscard ? kDiscarded
                                                      : kSucceeded,
                    r->description);
    return tagged(kException, "an unknown object was thrown");
  }
}

[[noreturn]] void rethrow(const std::string& r) {
  const std::string desc = r.substr(1);
  switch (r[0]) {
    case kSucceeded:
      throw_rapidcheck_case_result(RcCaseType::kSuccess, desc);
    case kFailed:
      throw_rapidcheck_case_result(RcCaseType::kFailure, desc);
    case kDiscarded:
      throw_rapidcheck_case_result(RcCaseType::kDiscard, desc);
    case kUnsupported:
      throw UnsupportedCase(desc);
    case kKvcheckError:
      throw Error(static_cast<ErrorCode>(desc.empty() ? 0 : desc[0]), desc.empty() ? "" : desc.substr(1));
    default:
      throw std::runtime_error(desc);
  }
}

[[noreturn]] void fail(const std::string& why) {
  throw_rapidcheck_case_result(RcCaseType::kFailure, why + " (this case ran in its own process)");
}

}  // namespace

bool run_forked(const std::function<std::string()>& body, std::string* bytes, int* status) {
  *status = 0;
  bytes->clear();
  int fds[2];
  if (pipe(fds) != 0) return false;
  signal(SIGCHLD, SIG_DFL);  // a plugin's SIG_IGN would have the kernel reap the child: every status 0
  std::fflush(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return false;
  }
  if (pid == 0) {
    close(fds[0]);
    plugin::die_with_parent(parent, 3);  // a hung case dies with its parent, never orphaned
    const std::string out = body();
    for (size_t done = 0; done < out.size();) {
      const ssize_t n = write(fds[1], out.data() + done, out.size() - done);
      if (n <= 0) _exit(3);
      done += static_cast<size_t>(n);
    }
    std::fflush(nullptr);
    _exit(0);
  }
  close(fds[1]);
  char buf[65536];
  for (;;) {
    const ssize_t n = read(fds[0], buf, sizeof buf);
    if (n > 0)
      bytes->append(buf, static_cast<size_t>(n));
    else if (n < 0 && errno == EINTR)
      continue;
    else
      break;
  }
  close(fds[0]);
  while (waitpid(pid, status, 0) < 0 && errno == EINTR) {
  }
  return true;
}

ScopedCaseIsolation::ScopedCaseIsolation(bool on) : previous_(isolate_cases) { isolate_cases = on; }
ScopedCaseIsolation::~ScopedCaseIsolation() { isolate_cases = previous_; }

bool case_isolation() { return isolate_cases; }

void run_case(const std::function<void()>& check) {
  if (!isolate_cases) {
    check();
    return;
  }
  std::string bytes;
  int status = 0;
  if (!run_forked(
          [&] {
            isolate_cases = false;
            return run_here(check);
          },
          &bytes, &status))
    fail(fmt::format("cannot fork the case's process: {}", std::strerror(errno)));
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && !bytes.empty()) {
    if (bytes[0] == kPassed) return;
    rethrow(bytes);
  }
  fail(died_how(status));
}

std::string died_how(int status) {
  if (WIFSIGNALED(status))
    return fmt::format("the backend crashed: signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  if (WIFEXITED(status) && WEXITSTATUS(status) == plugin::kHangExitCode)
    return fmt::format("the backend hung: a plugin call exceeded KVCHECK_PLUGIN_TIMEOUT={} s",
                       plugin::call_timeout_seconds());
  if (WIFEXITED(status) && WEXITSTATUS(status) == plugin::kPluginExitExitCode)
    return "the backend ended the process: exit() inside a plugin call";
  return fmt::format("the backend's process exited with status {} and no result",
                     WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

}  // namespace kvcheck::props
