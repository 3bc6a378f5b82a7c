// `kvcheck run`: the differential campaign. Runs every registered property on every
// available backend for a time or case budget, shows live progress, prints a
// table and writes a JSON report.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "impl/contract_backend.h"  // ContractScope

namespace kvcheck::tool {

struct CampaignOptions {
  double seconds = 0;                  // time budget; 0 = use `cases`
  int cases = 0;                       // cases per (property, backend); 0 with seconds 0 = 200
  std::optional<uint64_t> seed;        // default: from the clock, printed for replay
  std::vector<std::string> backends;   // empty = every available backend
  std::vector<std::string> properties; // substrings of property names or ops; empty = all
  std::string command = "run";         // the subcommand its messages name ("kvcheck contract: ...")
  std::string report_path;             // a copy of the JSON summary; empty = none
  std::string junit_path;              // JUnit XML of the summary; empty = none
  std::string work_dir;                // run directories go under <work_dir>/runs; "" = default_work_dir()
  std::string run_dir;                 // exact run directory; "" = a new one under work_dir
  bool fail_fast = false;              // stop at the first failing (property, backend) pair
  bool progress = true;                // live progress line on the progress stream
  bool isolate = true;                 // (property, backend) chunks in a worker process (isolate.h)
  bool fork_per_chunk = false;         // ... a fresh one for every chunk
  bool verbose = false;                // case-class tables of every pair, not only failing ones
  bool plugin_run = false;             // --plugin given: host properties are left out unless --backend host
  int shard_index = 0;                 // --shard I/N: 1-based I; 0 = the whole run
  int shard_count = 0;                 // N; 0 = the whole run
  bool contract_pairs = true;          // without `backends`: also every writer x reader pair (docs/spec.md §6.2)
  ContractScope contract_scope;        // what the contract backends cover (`kvcheck contract --format/--kv-dtype`)
  std::vector<std::string> within;     // a property must match these too (contract: round_trip, kv_step); empty = any
  std::string rerun;                   // the command a reproduce line reruns a row with, before its " --property P";
                                       // "" = "./kvcheck run --property P --backend B" (contract: its options)
};

/// `s` as one word for a POSIX shell: as it is when it holds only characters no shell
/// reads specially, else in single quotes (a plugin path with a space or a quote).
std::string shell_word(const std::string& s);

/// "I/N" (1 <= I <= N <= 10000) -> {I, N}; nullopt for anything else.
std::optional<std::pair<int, int>> parse_shard(const std::string& text);

/// Runs the campaign. Host properties (Property::per_backend false) never call a
/// backend: when `backends` names backends, or `plugin_run` is set without them, they
/// are left out (said in the header) unless `backends` holds "host". In a timed run a
/// property that declares a per-case cost (Property::seconds_per_case) runs only
/// while the budget left fits one case; otherwise its row is "not exercised".
/// Every run leaves a run directory: campaign.log (the output),
/// summary.json (schema "kvcheck-summary", rewritten atomically as the run goes and
/// at the end; verdict "interrupted" after SIGINT/SIGTERM/SIGHUP) and, per failing pair
/// whose property has a scenario replay, regressions/<op>/<name>.json (regression.h)
/// for `./kvcheck corpus keep`. Returns 0 when every property held, 1 on any
/// failure, 2 when the options select nothing runnable or an output path cannot be
/// written (checked before anything runs), 130 when interrupted.
/// With a shard I/N, the run holds the (property, backend) pairs whose index in the
/// whole selection is I-1 modulo N, each with the seeds it has in the whole run, and
/// its summary says so ("shard": index, count, pairs in the whole selection), so the
/// N shards' summaries merge (`kvcheck summary merge`, summary_merge.h) into the
/// whole run's set of pairs. A shard with no pair is exit 2.
int run_campaign(const CampaignOptions& options, std::ostream& out, std::ostream& progress);

/// How many (property, backend) pairs the options select in the whole run (before
/// --shard), as run_campaign counts them; -1 when run_campaign would refuse the options
/// before selecting (an unknown backend, plugins none of which can run here).
int selected_pairs(const CampaignOptions& options);

/// While alive, SIGINT/SIGTERM/SIGHUP/SIGPIPE only ask the campaign to stop (SIGHUP: the
/// terminal or ssh session of a long run went away; SIGPIPE: the reader of its output,
/// as in `kvcheck run | head`): run_campaign then ends with an
/// "interrupted" summary and exit 130. The outermost of nested ones installs the
/// handlers and clears what an earlier one saw; main holds one from before the backends
/// load, so a Ctrl-C there is not lost.
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
};

/// Whether a StopSignals saw a stop signal.
bool stop_requested();

/// A run stopped before it could start (a stop signal while the backends loaded): says
/// so, writes an "interrupted" summary with no results to --report / --junit (an old
/// report must not stay as the answer) and returns 130 (2 when those cannot be written).
int interrupted_before_run(const CampaignOptions& options, std::ostream& out);

/// Prints the registered properties (name, op, per-backend or host, invariant), only
/// those `filters` select (--property: substrings or ops) when there are any. Returns 0,
/// or 2 (said on `out`) when a filter matches no property.
int list_properties(const std::vector<std::string>& filters, std::ostream& out);

/// Prints the backends built into this binary: "available" or why not (e.g. no GPU).
void list_backends(std::ostream& out);

}  // namespace kvcheck::tool
