// The performance gate of bench_cuda --check (docs/cuda.md, "The performance gate"):
// this run's bandwidth rows against a baseline written by bench_cuda --json. Plain
// C++ (no CUDA), so the unit tests check the verdicts on machines without a GPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kvcheck::bench {

/// One measured row: ratio_to_copy is bytes/s over the same-process copy's (1 = the copy).
struct PerfRow {
  std::string op, format;
  int64_t tokens = 0, block_size = 0;
  double ratio_to_copy = 0;
  bool decode = false;  // a launch timed alone: not gated
};

struct PerfGateResult {
  bool ran = false;  // false: the baseline is from another device model (no verdict)
  int compared = 0, dropped = 0, not_measured = 0;
  int not_gated = 0;     // baseline rows below kMinGatedTokens or kMinGatedMs (launch-bound), listed only
  int not_in_baseline = 0;  // this run's gated-size rows the baseline lacks, listed only
  double tolerance = 0;  // the points in effect
  std::string report;    // the table and the verdict line, as printed
  /// 1 when the gate ran and compared nothing or found a drop, else 0.
  int exit_code() const { return ran && (compared == 0 || dropped > 0) ? 1 : 0; }
};

/// The fewest tokens of a gated row. Below, a call moves a few MiB in a few microseconds
/// and its ratio measures launch throughput, not the kernel: on the H200 (2026-12-06)
/// unchanged stores kept their 65,536- and 262,144-token ratios within 1.3 points of
/// the baseline while their 4,096-token rows fell by up to 19 (docs/cuda.md).
constexpr int64_t kMinGatedTokens = 65536;
/// The shortest gated row, by the baseline's "ms" (a launch, batched). Under it the
/// gaps between back-to-back launches are a large, varying part of the time: the
/// 65,536-token FP4_INDEX load at block 64 (8.5 MiB, 4.8-5.7 us a launch) read 51.5, 60.5, 55.1 and
/// 51.2 % of the copy in four runs in a row on one H100 (2026-12-07), where every row
/// of 10 us or more stayed within 2.6 points of the baseline in the same run. The same
/// kernel is gated at 262,144 tokens. A baseline row without "ms" is gated.
constexpr double kMinGatedMs = 0.010;

/// Compares `rows` with `baseline` (bench_cuda --json's object: "device", "rows" with
/// op, format, tokens, block_size, ratio_to_copy, decode; optional "tolerance_points").
/// tolerance < 0: the baseline's tolerance_points, else 5. A baseline row whose ratio
/// this run fell below by more than `tolerance` percentage points is DROPPED; one this
/// run did not measure is counted as not measured (never a pass); decode rows are
/// skipped; rows under kMinGatedTokens, or whose baseline "ms" is under kMinGatedMs,
/// are listed "not gated" and never fail; this
/// run's rows of kMinGatedTokens or more that the baseline lacks are listed "not in the
/// baseline" and counted (never a pass, never a failure). A
/// baseline from a device other than `device`, or measured otherwise than the gate's way
/// (its "slots" other than scattered: bench_cuda --slots blocks; its "launch" other than
/// plain: --pdl), is not compared (ran false).
/// Throws nlohmann::json::exception on a baseline without those fields.
PerfGateResult check_perf_baseline(const std::vector<PerfRow>& rows, const nlohmann::json& baseline, double tolerance,
                                   const std::string& device, const std::string& baseline_name);

/// A baseline file: its name (for the report) and its parsed --json object.
struct NamedBaseline {
  std::string name;
  nlohmann::json json;
};

/// How a bench_cuda run (its --json object, or one holding just "slots" and "launch")
/// was measured where that is not the gate's way, scattered slots and plain launches: its
/// options, e.g. "--slots blocks --pdl"; "" for the gated way (a file without "slots" or
/// "launch" is of it). Throws nlohmann::json::exception on a value that is not a string.
std::string ungated_options(const nlohmann::json& run);

/// The gate over several baselines, one per GPU model (bench/baseline_<card>.json): the
/// first whose "device" is `device` and whose rows are of scattered slots and plain
/// launches (no "slots" or "scattered", no "launch" or "plain") is compared as
/// check_perf_baseline does; with none,
/// ran is false and the report names each file's device (ratios to the copy differ
/// between models, so another card's file gives no verdict). Every file needs a
/// "device"; a file without one, or a matching file without check_perf_baseline's
/// fields, throws std::invalid_argument naming the file.
PerfGateResult check_perf_baselines(const std::vector<PerfRow>& rows, const std::vector<NamedBaseline>& baselines,
                                    double tolerance, const std::string& device);

}  // namespace kvcheck::bench
