// `kvcheck run --devices all|0,1,...`: one worker process per GPU, each pinned with
// CUDA_VISIBLE_DEVICES and running one shard of the (property, backend) pairs
// (campaign.h --shard), merged into one run directory (summary_merge.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace kvcheck::tool {

/// The devices "all" or "0,1,..." names: for "all", $CUDA_VISIBLE_DEVICES's entries
/// when set, else one per line of `nvidia-smi -L`. Throws std::runtime_error when the
/// list is empty, has a repeat or a bad entry, or "all" finds no GPU. An entry is a
/// device index (decimal, no sign or leading zero, below 1024; not checked against the
/// GPUs here, so a simulated machine runs the cpu backend) or a UUID (GPU-..., MIG-...).
std::vector<std::string> parse_devices(const std::string& text);

/// Runs on the first min(devices, pairs) devices (at least one; `pairs`: how many
/// (property, backend) pairs the run selects, campaign.h selected_pairs), saying which
/// are left idle: a shard with no pair would have nothing to run.
/// Runs `self run <run_args> --shard j/N --seed seed --work-dir <run_dir>/device-<d>
/// --report <run_dir>/device-<d>.summary.json` for each device d (the j-th of N) at
/// once, with CUDA_VISIBLE_DEVICES=d, output to <run_dir>/device-<d>.log; then one
/// run directory: summary.json (the merge, plus "devices": each worker's device,
/// shard, exit status, log and last progress line), campaign.log (the workers' logs
/// in turn) and regressions/ (every worker's). A worker that dies is said with its
/// device, exit status and last line; the others go on. `report_path` / `junit_path`:
/// copies of the merged summary when not empty. Returns 0 for a "pass" verdict, 1
/// for any other, 2 when the run directory cannot be made.
int run_on_devices(const std::string& self, const std::vector<std::string>& run_args,
                   const std::vector<std::string>& devices, size_t pairs, uint64_t seed,
                   const std::string& work_dir, const std::string& report_path, const std::string& junit_path, std::ostream& out);

}  // namespace kvcheck::tool
