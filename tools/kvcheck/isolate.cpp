#include "tools/kvcheck/isolate.h"

#include <fmt/format.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>

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

// One chunk request to the worker.
struct Request {
  uint64_t pair, seed;
  int32_t cases, max_size;
};

// The failed outcome of a chunk whose child died with wait status `status` (after
// `seconds`), with the chunk re-run one case per process after a crash.
props::PropertyOutcome died(const props::Property& p, const Backend& b, const props::CaseBudget& budget, int status,
                            std::chrono::steady_clock::time_point start) {
  props::PropertyOutcome o;
  o.property = p.name;
  o.op = p.op;
  o.backend = props::backend_label(p, b);
  o.failed = true;
  o.reproduce = fmt::format("seed={}", budget.seed);
  const std::string where = fmt::format("backend {} during {} (a chunk of {} cases from seed {})", b.name(), p.name,
                                        budget.cases, budget.seed);
  const bool hung = WIFEXITED(status) && WEXITSTATUS(status) == plugin::kHangExitCode;
  if (WIFSIGNALED(status))
    o.message = fmt::format("CRASHED: signal {} ({}) in {}; the campaign went on with the next row",
                            WTERMSIG(status), strsignal(WTERMSIG(status)), where);
  else if (hung)
    o.message = fmt::format("HUNG: a plugin call exceeded KVCHECK_PLUGIN_TIMEOUT={} s in {}",
                            plugin::call_timeout_seconds(), where);
  else if (WIFEXITED(status) && WEXITSTATUS(status) == plugin::kPluginExitExitCode)
    o.message = fmt::format("CRASHED: the plugin ended the process (exit() inside a call) in {}", where);
  else
    o.message = fmt::format("CRASHED: the child exited with status {} in {}",
                            WIFEXITED(status) ? WEXITSTATUS(status) : -1, where);
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
      o.message += "\nre-running the chunk with each case in its own process did not fail: the crash depends "
                   "on earlier cases in the same process; reproduce the chunk with the seed, or run with "
                   "--fork-per-chunk";
    }
  }
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return o;
}

}  // namespace

bool profile_requested() {
  const char* v = std::getenv("KVCHECK_PROFILE");
  return v && *v && std::string(v) != "0";
}

void ChunkStats::add(const props::PropertyOutcome& o) {
  ++chunks;
  cases += o.cases;
  seconds += o.seconds;
}

void print_profile(std::FILE* to, const char* who, const ChunkStats& c) {
  const plugin::TransportProfile t = plugin::transport_profile();
  const double device = t.init + t.upload + t.call + t.wait + t.download + t.free;
  const auto per_case = [&](double s) { return c.cases ? 1e6 * s / c.cases : 0.0; };
  fmt::print(to,
             "kvcheck profile ({}, pid {}): {} chunks, {} cases in {:.2f} s = {:.0f} us a case; {} device calls: "
             "CUDA start-up {:.3f} s; per case: allocate+upload {:.0f} us, call {:.0f} us, wait {:.0f} us, "
             "download+compare {:.0f} us, free {:.0f} us; the rest (generation, reference, comparison; a host backend's kernels) {:.0f} us\n",
             who, getpid(), c.chunks, c.cases, c.seconds, per_case(c.seconds), t.calls, t.init, per_case(t.upload),
             per_case(t.call), per_case(t.wait), per_case(t.download), per_case(t.free),
             per_case(std::max(0.0, c.seconds - device)));
  std::fflush(to);
}

ChunkRunner::ChunkRunner(std::vector<Pair> pairs, bool fresh_worker_per_chunk)
    : pairs_(std::move(pairs)), fresh_(fresh_worker_per_chunk) {}

ChunkRunner::~ChunkRunner() { stop_worker(); }

bool ChunkRunner::start_worker() {
  // Read RapidCheck's configuration here, once: workers then inherit it and do not
  // each echo "Using configuration".
  (void)props::configured_seed(0);
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) return false;
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return false;
  }
  if (pid == 0) {  // the worker: chunk after chunk until the parent closes its end
    close(fds[0]);
    const int fd = fds[1];
    const props::ScopedCaseIsolation no_per_case(false);
    Request q;
    ChunkStats stats;
    while (recv_all(fd, &q, sizeof q)) {
      if (q.pair >= pairs_.size()) _exit(3);
      const auto& [p, b] = pairs_[q.pair];
      const props::PropertyOutcome o = props::run_property(*p, *b, {q.seed, q.cases, q.max_size});
      stats.add(o);
      const std::string out = serialise(o);
      std::fflush(nullptr);
      const uint64_t n = out.size();
      if (!send_all(fd, &n, sizeof n) || !send_all(fd, out.data(), out.size())) _exit(3);
    }
    if (profile_requested()) print_profile(stderr, "worker", stats);
    _exit(0);
  }
  close(fds[1]);
  pid_ = pid;
  to_worker_ = from_worker_ = fds[0];
  ++workers_started_;
  return true;
}

int ChunkRunner::stop_worker() {
  int status = 0;
  if (pid_ < 0) return status;
  close(to_worker_);  // a live worker reads end-of-file and exits
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  to_worker_ = from_worker_ = -1;
  return status;
}

props::PropertyOutcome ChunkRunner::run(size_t pair, const props::CaseBudget& budget) {
  const auto& [p, b] = pairs_.at(pair);
  const auto start = std::chrono::steady_clock::now();
  const Request q{pair, budget.seed, budget.cases, budget.max_size};
  // A worker that ended between chunks (killed from outside) is replaced once.
  bool sent = false;
  int status = 0;
  for (int attempt = 0; attempt < 2 && !sent; ++attempt) {
    if (pid_ < 0 && !start_worker()) return props::run_property(*p, *b, budget);  // no child: run here, unisolated
    sent = send_all(to_worker_, &q, sizeof q);
    if (!sent) status = stop_worker();
  }
  uint64_t n = 0;
  std::string bytes;
  bool answered = sent && recv_all(from_worker_, &n, sizeof n);
  if (answered) {
    bytes.resize(n);
    answered = recv_all(from_worker_, bytes.data(), n);
  }
  props::PropertyOutcome o;
  if (answered && deserialise(bytes, o)) {
    // A failed chunk may have left the worker's process or device broken (a sticky
    // CUDA error): the next chunk gets a fresh one.
    if (o.failed || fresh_) stop_worker();
    return o;
  }
  if (pid_ >= 0) status = stop_worker();  // it died in the chunk: its wait status says how
  return died(*p, *b, budget, status, start);
}

}  // namespace kvcheck::tool
