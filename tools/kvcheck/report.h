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

/// The work area: $KVCHECK_WORK_DIR, else <source tree>/.kvcheck-work (git-ignored).
std::string default_work_dir();

/// Creates and returns <work_dir>/runs/<UTC time>-<kind>-<pid> and points the
/// <work_dir>/latest-<kind> symlink at it. Throws std::runtime_error on failure.
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
/// Returns false (errno kept) when it cannot.
bool write_file_atomically(const std::string& path, const std::string& content);

/// Writes `summary` (pretty JSON) atomically to every non-empty path of `json_paths`
/// and, when `junit_path` is not empty, its JUnit XML (write_junit) there. Returns ""
/// or the first path that could not be written.
std::string write_summary_files(const nlohmann::json& summary, const std::vector<std::string>& json_paths,
                                const std::string& junit_path);

/// JUnit XML of a summary: one <testcase> per result (classname = op or "fuzz"),
/// <failure> with each failure's message, seed and reproduce command, <skipped> for
/// results that did not run. The suite's <properties> hold commit, verdict and the
/// run's seed; a result with its own seed (a fuzz target) has it as a testcase property.
void write_junit(const nlohmann::json& summary, std::ostream& out);

/// `kvcheck junit SUMMARY OUT`: reads a summary file, writes OUT atomically.
/// Returns 0, or 2 with a message on `err` when SUMMARY is unreadable or OUT unwritable.
int junit_file(const std::string& summary_path, const std::string& out_path, std::ostream& err);

/// `kvcheck record start KIND`: for drivers outside this binary (tools/fuzz.sh).
/// Makes a run directory, writes its summary.json (header, verdict "running", no
/// results) and prints the directory. Returns 0, or 2 when it cannot.
int record_start(const std::string& kind, const std::string& work_dir, std::ostream& out, std::ostream& err);

/// `kvcheck record finish RUN_DIR VERDICT [--junit FILE]`: rewrites RUN_DIR/summary.json
/// atomically with the results in RUN_DIR/results.jsonl (one JSON object per line),
/// the verdict (pass | fail | interrupted | running), end time, seconds and totals;
/// writes JUnit XML when asked. Returns 0, or 2 when a file is unreadable/unwritable.
int record_finish(const std::string& run_dir, const std::string& verdict, const std::string& junit_path,
                  std::ostream& err);

}  // namespace kvcheck::tool
