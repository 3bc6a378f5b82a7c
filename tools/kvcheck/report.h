// Run records shared by `kvcheck run` and `kvcheck fuzz` (tools/fuzz.sh): the run
// directory under the git-ignored work area, the JSON summary's common header
// (schema "kvcheck-summary", docs/spec.md §6), JUnit XML from a summary, and
// atomic file writes.
#pragma once

#include <nlohmann/json.hpp>

#include <iosfwd>
#include <string>
#include <vector>

namespace kvcheck::tool {

/// Version of the summary layout; bump when a field changes meaning or goes away.
inline constexpr int kSummaryVersion = 1;

/// The most shards a run is cut into (`kvcheck run --shard I/N`, parse_shard).
inline constexpr int kMaxShards = 10000;
/// The most (property, backend) pairs a summary's shard.pairs_total may name: far above
/// any real selection (hundreds), low enough that merge's per-pair bookkeeping is cheap.
inline constexpr int64_t kMaxPairs = int64_t{1} << 20;

/// The work area: $KVCHECK_WORK_DIR, else <source tree>/.kvcheck-work (git-ignored).
std::string default_work_dir();

/// Creates and returns <work_dir>/runs/<UTC time>-<kind>-<pid> and points the
/// <work_dir>/latest-<kind> symlink at it (where latest-<kind> is anything but a
/// symlink it is left alone, with a line on stderr). Throws std::runtime_error when the
/// directory cannot be made.
std::string make_run_dir(const std::string& work_dir, const std::string& kind);

/// "2026-12-01T09:30:00Z" for now.
std::string utc_now();

/// The source tree's commit: $KVCHECK_COMMIT, else `git rev-parse HEAD` of the
/// source tree, with "-dirty" when tracked files changed; "unknown" without git.
std::string source_commit();

/// The header every summary starts with: schema, schema_version, kind, commit,
/// start_time, host (isa, threads). `kind` is "run" or "fuzz".
nlohmann::json summary_header(const std::string& kind, const std::string& start_time);

/// Writes `content` to `path` through a temporary file in the same directory and
/// rename(2), so a reader sees the old file or the new one, never a truncated one.
/// A symlink (dangling or to a regular file) stays: the file it finally names is
/// replaced that way. What is no regular file (a character device such as /dev/null,
/// a FIFO, a pipe behind /dev/fd/N) is written straight through, never replaced; a
/// directory is refused. Returns false (errno kept) when it cannot.
bool write_file_atomically(const std::string& path, const std::string& content);

/// A file a command reads or writes, with how its command line names it ("--junit",
/// "the shard"), for messages.
struct NamedPath {
  std::string label;
  std::string path;
};

/// Checks the files a command will write (`outputs`; empty paths ignored) before it
/// writes any: two outputs, or an output and an input, that are one regular file are
/// refused (the same device and inode where it exists, so a symlink, `./` or a hard
/// link is no way around it; else the same absolute path once symlinks are followed);
/// each output must be writable (an existing one no directory, else its directory
/// exists and is writable). Devices, FIFOs and pipes are written through and may be
/// named twice. Returns "" or what is wrong, naming the paths.
std::string check_output_paths(const std::vector<NamedPath>& inputs, const std::vector<NamedPath>& outputs);

/// The pass rule of docs/spec.md §6, in one place for the campaign, `record finish` and
/// the JUnit writer: a finished run with a failing result is "fail", one with no passing
/// result (none, or only ones not run) "not_exercised", else "pass". Counts are results.
std::string finished_verdict(int64_t failing, int64_t passing);

/// Checks a parsed summary.json (docs/spec.md §6) before anything reads it: an object
/// with schema "kvcheck-summary", schema_version kSummaryVersion (a number), kind run |
/// fuzz, a known verdict and results[], each result an object with a name, a verdict
/// (pass | fail | not_run), a kind that fits the summary's, failures[] of objects, and
/// non-negative integer counts (index, cases, execs, backend_calls; at most 2^63-1);
/// the header's shard, totals, seed, seconds, backends, missing_shards/missing_pairs
/// of their types where present. Throws std::runtime_error "PATH: FIELD: what".
void check_summary(const nlohmann::json& summary, const std::string& path);

/// Writes `summary` (pretty JSON) atomically to every non-empty path of `json_paths`
/// and, when `junit_path` is not empty, its JUnit XML (write_junit) there. Returns "",
/// or "PATH: reason" (strerror) for the first path that could not be written.
std::string write_summary_files(const nlohmann::json& summary, const std::vector<std::string>& json_paths,
                                const std::string& junit_path);

/// JUnit XML of a summary: one <testcase> per result (classname = op or "fuzz"),
/// <failure> with each failure's message, seed and reproduce command, <skipped> for
/// results that did not run. The suite's <properties> hold commit, verdict and the
/// run's seed; a result with its own seed (a fuzz target) has it as a testcase property.
/// A run verdict other than pass that no failing result already says (running,
/// interrupted, not_exercised, incomplete, fail without a failing row, none) is one
/// more failing testcase, "kvcheck verdict", whose message says which and why (for
/// incomplete: the missing shards and pairs, the shards that did not finish).
/// `kvcheck run --junit`, `summary merge --junit`, `record finish --junit` and
/// `kvcheck junit` all write through this function.
void write_junit(const nlohmann::json& summary, std::ostream& out);

/// `kvcheck junit SUMMARY OUT`: reads a summary file, checks it (check_summary),
/// writes OUT atomically. Returns 0, or 2 with a message on `err` when SUMMARY is
/// unreadable or no summary, OUT is SUMMARY or unwritable.
int junit_file(const std::string& summary_path, const std::string& out_path, std::ostream& err);

/// `kvcheck record start KIND`: for drivers outside this binary (tools/fuzz.sh).
/// Makes a run directory, writes its summary.json (header, verdict "running", no
/// results) and prints the directory. Returns 0, or 2 when it cannot.
int record_start(const std::string& kind, const std::string& work_dir, std::ostream& out, std::ostream& err);

/// `kvcheck record finish RUN_DIR VERDICT [--junit FILE]`: rewrites RUN_DIR/summary.json
/// atomically with the results in RUN_DIR/results.jsonl (one JSON object per line),
/// the verdict (pass | fail | interrupted | running), end time, seconds and totals;
/// writes JUnit XML when asked. Only a run that `record start fuzz` began and that is
/// still "running" is rewritten. Pass is never written over a failed result (fail is
/// written) or when no result passed (not_exercised is written); either is said on
/// `err` and returns 1. Returns 0, or 2 (nothing written) when a file is missing,
/// unreadable, no summary or results of the schema, or unwritable, or the totals
/// overflow.
int record_finish(const std::string& run_dir, const std::string& verdict, const std::string& junit_path,
                  std::ostream& err);

}  // namespace kvcheck::tool
