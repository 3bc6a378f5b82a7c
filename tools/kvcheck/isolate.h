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
#include <memory>
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
/// in one long-lived forked worker. A worker that dies makes a failed outcome: message
/// "CRASHED: ..." / "HUNG: ...", reproduce "seed=<seed>"; after a crash the chunk runs
/// again with per-case isolation (properties/case_isolation.h), and its minimal
/// crashing case — RapidCheck's message with the scenario, the "reproduce=..." token
/// and the scenario for a regression file — replaces the seed (properties without a
/// scenario replay keep the seed). The next chunk starts a new worker. `fresh_worker_per_chunk` = true forks a new child for every
/// chunk (kvcheck run --fork-per-chunk: for a failure that depends on earlier chunks).
/// The worker is forked lazily, on the first run(); the pairs must outlive the runner.
class ChunkRunner {
 public:
  using Pair = std::pair<const props::Property*, const Backend*>;
  ChunkRunner(std::vector<Pair> pairs, bool fresh_worker_per_chunk);
  ~ChunkRunner();  // ends the worker: it reads end-of-file and exits
  ChunkRunner(const ChunkRunner&) = delete;
  ChunkRunner& operator=(const ChunkRunner&) = delete;

  /// Runs `budget`'s cases of pairs[pair] in the worker (starting one if none is alive).
  props::PropertyOutcome run(size_t pair, const props::CaseBudget& budget);
  /// How many worker processes this runner started (crashes and failed chunks start
  /// new ones).
  int workers_started() const { return workers_started_; }
  /// Ends the worker now (the destructor does too).
  void stop() { stop_worker(); }

 private:
  bool start_worker();
  int stop_worker();  // the worker's wait status (0 when none)
  std::vector<Pair> pairs_;
  bool fresh_;
  pid_t pid_ = -1;
  int to_worker_ = -1, from_worker_ = -1;
  int workers_started_ = 0;
};

}  // namespace kvcheck::tool
