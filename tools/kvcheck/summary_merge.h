// `kvcheck summary merge`: the summary.json files of the N shards of one run
// (`kvcheck run --shard I/N`, campaign.h) joined into the whole run's summary.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kvcheck::tool {

/// The merged summary of shard summaries (parsed summary.json documents, `paths`
/// naming them in messages). Throws std::runtime_error naming the file and the field
/// when one is no summary of the schema (check_summary, report.h: unknown verdicts or
/// schema versions, wrong types, negative or too large counts), not a run summary of a
/// shard, when a shard disagrees with the first on anything its run records (commit,
/// seed, budget, options, backends, host properties left out, isolation, shard count,
/// pairs in the whole selection), when a result's pair is not one of its shard's, when
/// a shard index or a pair appears twice, or when a total overflows 2^63-1.
/// The result: the first shard's header (commit, seed, budget, options), "shard"
/// null, "shards" (index, file, run_dir, verdict of each), every result row in the
/// whole run's order, totals recomputed, "missing_shards" and "missing_pairs" (pair
/// indices no shard holds), and the verdict: "fail" when any row failed or a shard
/// failed; else "incomplete" when a shard is missing, did not finish ("running": its
/// worker died) or a pair is missing; "interrupted" when a shard was; "not_exercised"
/// when no row reached its backend; else "pass".
nlohmann::json merge_summaries(const std::vector<nlohmann::json>& shards, const std::vector<std::string>& paths);

/// Reads the files, merges them, writes the merged summary to `out_path` (and JUnit
/// to `junit_path` unless empty) and prints one line per shard and the verdict.
/// Returns 0 for "pass", 1 for any other verdict, 2 when a file cannot be read, the
/// shards do not belong together, or an output is one of the shards, is the other
/// output or cannot be written (check_output_paths: checked before anything is written).
int summary_merge(const std::vector<std::string>& paths, const std::string& out_path, const std::string& junit_path,
                  std::ostream& out, std::ostream& err);

}  // namespace kvcheck::tool
