#include "tools/kvcheck/isolate.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "impl/plugin/plugin_backend.h"
#include "impl/plugin/watchdog.h"
#include "properties/case_isolation.h"

namespace kvcheck::tool {
namespace {

void put(std::string& out, const std::string& s) {
  const uint64_t n = s.size();
  out.append(reinterpret_cast<const char*>(&n), sizeof n);
  out += s;
}

bool get(const std::string& in, size_t& at, std::string& s) {
  uint64_t n = 0;
  if (in.size() < at + sizeof n) return false;
  std::memcpy(&n, in.data() + at, sizeof n);
  at += sizeof n;
  if (in.size() < at + n) return false;
  s = in.substr(at, n);
  at += n;
  return true;
}

std::string serialise(const props::PropertyOutcome& o) {
  std::string out;
  for (const std::string* s : {&o.property, &o.op, &o.backend, &o.message, &o.reproduce, &o.not_exercised, &o.scenario})
    put(out, *s);
  put(out, fmt::format("{} {} {} {}", o.cases, o.failed ? 1 : 0, o.seconds, o.backend_calls));
  put(out, props::encode_class_counts(o.classes));
  put(out, fmt::format("{} {} {}", o.class_context.unrestricted ? 1 : 0, o.class_context.thread_knob ? 1 : 0,
                       o.class_context.host_memory ? 1 : 0));
  return out;
}

bool deserialise(const std::string& in, props::PropertyOutcome& o) {
  size_t at = 0;
  std::string nums;
  for (std::string* s : {&o.property, &o.op, &o.backend, &o.message, &o.reproduce, &o.not_exercised, &o.scenario})
    if (!get(in, at, *s)) return false;
  if (!get(in, at, nums)) return false;
  int failed = 0;
  long long calls = 0;
  if (std::sscanf(nums.c_str(), "%d %d %lf %lld", &o.cases, &failed, &o.seconds, &calls) != 4) return false;
  o.backend_calls = calls;
  o.failed = failed != 0;
  std::string classes, context;
  if (!get(in, at, classes) || !get(in, at, context)) return false;
  o.classes = props::decode_class_counts(classes);
  int unrestricted = 1, knob = 1, host = 1;
  if (std::sscanf(context.c_str(), "%d %d %d", &unrestricted, &knob, &host) != 3) return false;
  o.class_context = {unrestricted != 0, knob != 0, host != 0};
  return true;
}

// run_property(p, b, budget) in a forked child with per-case isolation on in it. True
// with the child's outcome in `o`; false when the child died, with its wait status in
// `status`.
bool run_per_case(const props::Property& p, const Backend& b, const props::CaseBudget& budget,
                  props::PropertyOutcome& o, int& status) {
  std::string bytes;
  const bool forked = props::run_forked(
      [&] {
        const props::ScopedCaseIsolation isolation;
        return serialise(props::run_property(p, b, budget));
      },
      &bytes, &status);
  if (!forked) {  // no pipe or child: run here, unisolated
    o = props::run_property(p, b, budget);
    return true;
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 && deserialise(bytes, o);
}

bool send_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t k = send(fd, p, n, MSG_NOSIGNAL);  // a dead worker is EPIPE, not SIGPIPE
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

bool recv_all(int fd, void* data, size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t k = read(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;  // end of file: the other side is gone
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

// A worker's exit status when its channel to kvcheck failed (a bad request, or its
// result could not be sent): death_text says why.
constexpr int kWorkerChannelLost = 3;

// One chunk request to the worker.
struct Request {
  uint64_t pair, seed;
  int32_t cases, max_size;
};

// What a wait status says, as the reports word it.
std::string death_text(int status) {
  if (WIFSIGNALED(status)) return fmt::format("signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  if (WIFEXITED(status) && WEXITSTATUS(status) == plugin::kPluginExitExitCode)
    return "the plugin ended the process (exit() inside a call)";
  if (WIFEXITED(status) && WEXITSTATUS(status) == kWorkerChannelLost)
    return "exit status 3: the worker lost its channel to kvcheck (a plugin that closes file descriptors it did not "
           "open?)";
  return fmt::format("exit status {}", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

bool died_badly(int status) { return !(WIFEXITED(status) && WEXITSTATUS(status) == 0); }

// "; before it, this worker process ran N chunks (rows ...)" when it ran any.
std::string earlier_chunks(const std::vector<std::string>& ran) {
  if (ran.empty()) return "";
  std::string rows;
  size_t shown = 0;
  for (size_t i = ran.size(); i-- > 0 && shown < 4; ++shown) rows += (shown ? ", " : "") + ran[i];
  return fmt::format("; before it, this worker process ran {} chunk{} (last: {}{})", ran.size(),
                     ran.size() == 1 ? "" : "s", rows, ran.size() > 4 ? ", ..." : "");
}

// The failed outcome of a chunk whose child died with wait status `status` (after
// `seconds`), with the chunk re-run one case per process after a crash. `ran`: the
// rows of the chunks the same process ran before.
props::PropertyOutcome died(const props::Property& p, const Backend& b, const props::CaseBudget& budget, int status,
                            std::chrono::steady_clock::time_point start, const std::vector<std::string>& ran) {
  props::PropertyOutcome o;
  o.property = p.name;
  o.op = p.op;
  o.backend = props::backend_label(p, b);
  o.failed = true;
  o.reproduce = fmt::format("seed={}", budget.seed);
  const std::string where = fmt::format("backend {} during {} (a chunk of {} cases from seed {}){}", b.name(), p.name,
                                        budget.cases, budget.seed, earlier_chunks(ran));
  const bool hung = WIFEXITED(status) && WEXITSTATUS(status) == plugin::kHangExitCode;
  if (hung)
    o.message = fmt::format("HUNG: a plugin call exceeded KVCHECK_PLUGIN_TIMEOUT={} s in {}",
                            plugin::call_timeout_seconds(), where);
  else
    o.message = fmt::format("CRASHED: {} in {}", death_text(status), where);
  if (!hung) {
    // The minimal crashing case: the same chunk again, each case in its own process,
    // so a crash fails that case only and RapidCheck shrinks it like any failure.
    // (Properties without a regression replay shrink too, through require_isolated;
    // they then have no regression file, only the reproduce line.)
    props::PropertyOutcome m;
    int again = 0;
    const bool survived = run_per_case(p, b, budget, m, again);
    if (survived && m.failed) {
      o.message += "\nminimal crashing case (the chunk re-run with each case in its own process):\n" + m.message;
      o.reproduce = m.reproduce;
      o.scenario = m.scenario;
      o.cases = m.cases;
    } else if (!survived) {
      o.message += "\n(its checks do not run one case per process: reproduce the chunk with the seed)";
    } else {
      o.message += fmt::format(
          "\nre-running the chunk with each case in its own process did not fail: the crash depends on earlier "
          "cases{} in the same process; reproduce the chunk with the seed, or run with --fork-per-chunk",
          ran.empty() ? "" : " or the earlier chunks");
    }
  }
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return o;
}

// Waits for `pid` (reaping it); SIGKILLs it first when `kill_it`. Its wait status, or 0
// when it is not our child any more (SIGCHLD ignored behind our back).
int reap(pid_t pid, bool kill_it) {
  if (kill_it) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return 0;
  return status;
}

}  // namespace

void ChunkStats::add(const props::PropertyOutcome& o) {
  ++chunks;
  cases += o.cases;
  seconds += o.seconds;
}

bool profile_requested() {
  const char* v = std::getenv("KVCHECK_PROFILE");
  return v && *v && std::string(v) != "0";
}

void print_profile(std::FILE* to, const char* who, const ChunkStats& c) {
  const plugin::TransportProfile t = plugin::transport_profile();
  const double device = t.init + t.upload + t.call + t.wait + t.download + t.free;
  const auto per_case = [&](double s) { return c.cases ? 1e6 * s / c.cases : 0.0; };
  fmt::print(to,
             "kvcheck profile ({}, pid {}): {} chunks, {} cases in {:.2f} s = {:.0f} us a case; {} device calls: "
             "CUDA start-up {:.3f} s; per case: allocate+upload {:.0f} us, call {:.0f} us, wait {:.0f} us, "
             "download+compare {:.0f} us, free {:.0f} us; the rest (generation, reference, comparison; a host "
             "backend's kernels) {:.0f} us\n",
             who, getpid(), c.chunks, c.cases, c.seconds, per_case(c.seconds), t.calls, t.init, per_case(t.upload),
             per_case(t.call), per_case(t.wait), per_case(t.download), per_case(t.free),
             per_case(std::max(0.0, c.seconds - device)));
  std::fflush(to);
}

ChunkRunner::ChunkRunner(std::vector<Pair> pairs, bool fresh_worker_per_chunk, std::function<bool()> stop_requested)
    : pairs_(std::move(pairs)), fresh_(fresh_worker_per_chunk), stop_requested_(std::move(stop_requested)) {
  // A plugin's constructor may have set SIGCHLD to SIG_IGN: children would then be
  // reaped by the kernel and every crash read as "exit status 0".
  signal(SIGCHLD, SIG_DFL);
}

ChunkRunner::~ChunkRunner() { stop(); }

std::string ChunkRunner::start_worker(Worker& w) {
  // Read RapidCheck's configuration here, once: workers then inherit it and do not
  // each echo "Using configuration".
  (void)props::configured_seed(0);
  signal(SIGCHLD, SIG_DFL);
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
    return fmt::format("socketpair: {}", std::strerror(errno));
  std::fflush(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    const int e = errno;
    close(fds[0]);
    close(fds[1]);
    return fmt::format("fork: {}", std::strerror(e));
  }
  if (pid == 0) {  // the worker: chunk after chunk until the parent closes its end
    close(fds[0]);
    // The other workers' ends too: a copy held here would keep their end-of-file away.
    for (const auto& [backend, other] : workers_)
      if (other.fd >= 0 && &other != &w) close(other.fd);
    const int fd = fds[1];
    // Stopping is the parent's: it ends the worker (SIGKILL) rather than have a
    // plugin call see an interrupted system call and fail a case.
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    // A closed stdout fails a write (EPIPE), never kills the worker mid-chunk (a false
    // CRASHED); a handler, not SIG_IGN, so what a plugin execs starts with the default.
    signal(SIGPIPE, +[](int) {});
    // ... and when kvcheck itself is killed, the worker goes too (it went on running
    // the backend's call, orphaned, holding kvcheck's output open).
    plugin::die_with_parent(parent, 1);
    const pid_t self = getpid();
    const props::ScopedCaseIsolation no_per_case(false);
    Request q;
    ChunkStats stats;
    while (recv_all(fd, &q, sizeof q)) {
      if (q.pair >= pairs_.size()) _exit(kWorkerChannelLost);
      const auto& [p, b] = pairs_[q.pair];
      const props::PropertyOutcome o = props::run_property(*p, *b, {q.seed, q.cases, q.max_size});
      if (getpid() != self) _exit(0);  // a plugin forked and its child returned into us
      stats.add(o);
      const std::string out = serialise(o);
      std::fflush(nullptr);
      const uint64_t n = out.size();
      if (!send_all(fd, &n, sizeof n) || !send_all(fd, out.data(), out.size())) _exit(kWorkerChannelLost);
    }
    if (profile_requested()) print_profile(stderr, "worker", stats);
    _exit(0);
  }
  close(fds[1]);
  w.pid = pid;
  w.fd = fds[0];
  w.ran.clear();
  ++workers_started_;
  return "";
}

int ChunkRunner::end_worker(Worker& w, End how) {
  if (w.fd >= 0) close(w.fd);  // a live worker reads end-of-file and exits
  const int status = how == End::kReaped ? 0 : reap(w.pid, how == End::kKill);
  w = Worker{};
  return status;
}

void ChunkRunner::note_idle_death(const Worker& w, int status) {
  idle_deaths_.push_back({w.last_pair, fmt::format("CRASHED after its chunk had passed: the {}'s worker process "
                                                    "ended with {} while idle (a thread the backend left running, "
                                                    "or a kill from outside)",
                                                    pairs_[w.last_pair].second->name(), death_text(status))});
}

void ChunkRunner::retire(Worker& w, bool kill_it) {
  if (w.pid < 0) return;
  if (kill_it) {
    end_worker(w, End::kKill);
    return;
  }
  close(w.fd);  // a live worker reads end-of-file and exits
  w.fd = -1;
  // Give it a moment to print its profile and exit; one that does not (stopped) is killed.
  for (int i = 0;; ++i) {
    int status = 0;
    const pid_t r = waitpid(w.pid, &status, WNOHANG);
    if (r == w.pid || (r < 0 && errno != EINTR)) {
      if (r == w.pid && died_badly(status) && !w.ran.empty()) note_idle_death(w, status);
      end_worker(w, End::kReaped);
      return;
    }
    if (i == 500) {
      end_worker(w, End::kKill);
      return;
    }
    usleep(10000);
  }
}

void ChunkRunner::stop() {
  for (auto& [backend, w] : workers_) retire(w, false);
}

std::vector<ChunkRunner::IdleDeath> ChunkRunner::take_idle_deaths() { return std::exchange(idle_deaths_, {}); }

// Reads the worker's answer, watching it every 50 ms: a worker that exits, is stopped,
// or is asked to stop (stop_requested) ends the wait. 1: answered; 0: it died (status
// set, reaped); -1: stop requested (killed and reaped).
int ChunkRunner::await(Worker& w, std::string& bytes, int& status) {
  for (;;) {
    pollfd pfd{w.fd, POLLIN, 0};
    const int r = poll(&pfd, 1, 50);
    if (r > 0) {  // an answer, or end-of-file from a dead worker
      uint64_t n = 0;
      if (recv_all(w.fd, &n, sizeof n)) {
        bytes.resize(n);
        if (recv_all(w.fd, bytes.data(), n)) return 1;
      }
      status = end_worker(w, End::kWait);
      return 0;
    }
    if (stop_requested_ && stop_requested_()) {
      end_worker(w, End::kKill);
      return -1;
    }
    // Dead while something else (a helper it forked) holds the socket open, or stopped.
    const pid_t d = waitpid(w.pid, &status, WNOHANG | WUNTRACED);
    if (d == w.pid && WIFSTOPPED(status)) {
      // A plugin's raise(SIGSTOP), or Ctrl-Z then fg of the whole run: carry on, do not
      // wait for ever (and never fail a chunk the user only paused).
      kill(w.pid, SIGCONT);
    } else if (d == w.pid) {
      end_worker(w, End::kReaped);
      return 0;
    }
  }
}

props::PropertyOutcome ChunkRunner::run(size_t pair, const props::CaseBudget& budget, bool* interrupted) {
  if (interrupted) *interrupted = false;
  const props::Property* const p = pairs_.at(pair).first;  // not a structured binding: lambdas below capture it
  const Backend* const b = pairs_[pair].second;
  const auto start = std::chrono::steady_clock::now();
  Worker& w = workers_[b];  // one worker per backend: one backend's leftovers never reach another's rows
  if (w.pid >= 0) {  // died while idle (a thread it left running, a kill from outside)?
    int status = 0;
    const pid_t d = waitpid(w.pid, &status, WNOHANG);
    if (d == w.pid) {
      note_idle_death(w, status);
      end_worker(w, End::kReaped);
    }
  }
  if (w.pid < 0) {
    if (std::string why = start_worker(w); !why.empty()) {
      props::PropertyOutcome o;
      o.property = p->name;
      o.op = p->op;
      o.backend = props::backend_label(*p, *b);
      o.not_exercised = "kvcheck could not start a worker process (" + why + ")";
      return o;
    }
  }
  const std::vector<std::string> ran = w.ran;
  const Request q{pair, budget.seed, budget.cases, budget.max_size};
  std::string bytes;
  int status = 0;
  int answered = 0;
  if (send_all(w.fd, &q, sizeof q)) {
    answered = await(w, bytes, status);
  } else {  // it died between the check above and the request
    status = end_worker(w, End::kWait);
  }
  if (answered < 0) {
    if (interrupted) *interrupted = true;
    return {};
  }
  props::PropertyOutcome o;
  if (answered == 0 || !deserialise(bytes, o)) {
    if (w.pid >= 0) status = end_worker(w, End::kKill);
    return died(*p, *b, budget, status, start, ran);
  }
  w.ran.push_back(props::backend_label(*p, *b) == b->name() ? p->name : p->name + "/" + props::backend_label(*p, *b));
  w.last_pair = pair;
  if (o.failed) {
    // A failed chunk may have left the worker's process or device broken (a sticky
    // CUDA error): the next chunk gets a fresh one.
    retire(w, false);
    if (!ran.empty()) {
      // ... and it may itself owe its failure to the chunks this process ran before (a
      // rounding mode, a heap, a device the backend left changed): the chunk alone, in
      // a fresh process, tells.
      std::string alone;
      int alone_status = 0;
      const bool forked = props::run_forked([&] { return serialise(props::run_property(*p, *b, budget)); }, &alone,
                                            &alone_status);
      props::PropertyOutcome fresh;
      if (forked && !died_badly(alone_status) && deserialise(alone, fresh) && !fresh.failed)
        o.message += fmt::format(
            "\nSTATE FROM EARLIER CHUNKS: the same chunk alone in a fresh process passes{}. The backend keeps state "
            "between calls (a rounding mode, a heap, a device it left changed) that breaks later cases: the "
            "reproduce line and regression file pass alone; rerun the whole command, or with --fork-per-chunk",
            earlier_chunks(ran));
    }
  } else if (fresh_) {
    retire(w, false);
  }
  return o;
}

}  // namespace kvcheck::tool
