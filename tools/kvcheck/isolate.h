// Crash isolation of `kvcheck run`: the (property, backend) chunks of cases run in a
// child process, so a plugin that crashes (a signal) or hangs (the per-call watchdog,
// impl/plugin/watchdog.h, exits 124) fails its row with what happened and how to
// reproduce it while the campaign goes on with the next row. The parent loads the
// plugins but never calls one (and never initialises CUDA: device probes run in
// children too).
//
// The child is long-lived (ChunkRunner): one worker runs chunk after chunk, so a device
// backend pays its CUDA start-up once per worker rather than once per chunk of 20
// cases. A worker that dies is replaced by a fresh one for the next chunk; a worker
// whose chunk failed is replaced too, so a failure (a sticky CUDA error, a corrupted
// heap) never leaks into another row's cases.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "impl/backend.h"
#include "properties/runner.h"

namespace kvcheck::tool {

/// What a process ran: chunks, their successful cases and seconds.
struct ChunkStats {
  int64_t chunks = 0, cases = 0;
  double seconds = 0;
  void add(const props::PropertyOutcome& o);
};
/// KVCHECK_PROFILE is set (and not 0): workers and in-process runs print where their
/// time went (print_profile) when they end.
bool profile_requested();
/// One line on `to`: the chunks' cases and time, and per case the device transport's
/// phases (impl/plugin/plugin_backend.h transport_profile) and the host's rest.
void print_profile(std::FILE* to, const char* who, const ChunkStats& c);

/// Runs chunks of the (property, backend) pairs it was made with (props::run_property)
/// in long-lived forked workers, one per backend, so one backend's leftovers never
/// reach another's rows. A worker that dies or hangs past the per-call watchdog makes a
/// failed outcome: message "CRASHED: ..." / "HUNG: ...", reproduce "seed=<seed>" (a
/// stopped one is sent SIGCONT); after a crash the chunk runs again with per-case
/// isolation (properties/case_isolation.h), and its minimal crashing case —
/// RapidCheck's message with the scenario, the "reproduce=..." token and the scenario
/// for a regression file — replaces the seed (properties without a scenario replay keep
/// the seed). A chunk that fails retires its worker; when that worker had run earlier
/// chunks the chunk runs once more alone in a fresh process, and a pass there is said
/// ("STATE FROM EARLIER CHUNKS"). `fresh_worker_per_chunk` = true forks a new worker for
/// every chunk (kvcheck run --fork-per-chunk). `stop_requested` is polled while a chunk
/// runs: true kills the worker and run() reports the chunk interrupted. Workers are
/// forked lazily; the pairs must outlive the runner.
class ChunkRunner {
 public:
  using Pair = std::pair<const props::Property*, const Backend*>;
  /// A worker that ended badly while idle, after its chunk of pairs[pair] had passed
  /// (a thread the backend left running, a kill from outside): that row's failure.
  struct IdleDeath {
    size_t pair;
    std::string message;
  };
  ChunkRunner(std::vector<Pair> pairs, bool fresh_worker_per_chunk, std::function<bool()> stop_requested = {});
  ~ChunkRunner();  // stop()
  ChunkRunner(const ChunkRunner&) = delete;
  ChunkRunner& operator=(const ChunkRunner&) = delete;

  /// Runs `budget`'s cases of pairs[pair] in its backend's worker (starting one if none
  /// is alive). A worker that cannot be started leaves the chunk not exercised, saying
  /// why. *interrupted (when given): stop_requested ended the chunk; the outcome is
  /// empty.
  props::PropertyOutcome run(size_t pair, const props::CaseBudget& budget, bool* interrupted = nullptr);
  /// Ends every worker (each reads end-of-file and exits).
  void stop();
  /// The idle deaths found since the last call (by run() and stop()).
  std::vector<IdleDeath> take_idle_deaths();
  /// How many worker processes this runner started.
  int workers_started() const { return workers_started_; }

 private:
  struct Worker {
    pid_t pid = -1;
    int fd = -1;
    std::vector<std::string> ran;  // the rows of the chunks it answered
    size_t last_pair = 0;
  };
  std::string start_worker(Worker& w);  // "" or why not
  void retire(Worker& w, bool kill_it);
  // How end_worker treats the process: already reaped, waited for, or SIGKILLed first.
  enum class End { kReaped, kWait, kKill };
  int end_worker(Worker& w, End how);  // closes, reaps and forgets w; its wait status (0 if kReaped)
  void note_idle_death(const Worker& w, int status);  // the CRASHED-while-idle failure of w's last row
  int await(Worker& w, std::string& bytes, int& status);
  std::vector<Pair> pairs_;
  bool fresh_;
  std::function<bool()> stop_requested_;
  std::map<const Backend*, Worker> workers_;
  std::vector<IdleDeath> idle_deaths_;
  int workers_started_ = 0;
};

}  // namespace kvcheck::tool
