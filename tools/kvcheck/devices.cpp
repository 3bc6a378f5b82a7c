#include "tools/kvcheck/devices.h"

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <stdexcept>

#include "tools/kvcheck/report.h"
#include "tools/kvcheck/summary_merge.h"

namespace kvcheck::tool {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(s);
  while (std::getline(in, item, sep)) out.push_back(item);
  return out;
}

std::string last_line(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  return last;
}

std::string exit_text(int status) {
  if (WIFEXITED(status)) return fmt::format("exit {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return fmt::format("killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  return "ended";
}

// No host has this many GPUs: a larger index is a typo (or an overflow), never a device.
constexpr int kMaxDeviceIndex = 1024;

// The GPUs `nvidia-smi -L` lists (0 when it is not there or lists none).
int gpus_listed() {
  FILE* p = popen("nvidia-smi -L 2>/dev/null", "r");
  char line[512];
  int n = 0;
  while (p && fgets(line, sizeof line, p))
    if (std::strncmp(line, "GPU ", 4) == 0) ++n;
  if (p) pclose(p);
  return n;
}

}  // namespace

std::vector<std::string> parse_devices(const std::string& text) {
  std::vector<std::string> devices;
  if (text == "all") {
    if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES"); v && *v) {
      devices = split(v, ',');
    } else {
      for (int i = 0, n = gpus_listed(); i < n; ++i) devices.push_back(std::to_string(i));
    }
    if (devices.empty())
      throw std::runtime_error("--devices all: no GPU found (CUDA_VISIBLE_DEVICES unset, nvidia-smi -L lists none); "
                               "name the devices: --devices 0,1");
  } else {
    devices = split(text, ',');
  }
  std::set<std::string> seen;
  for (const auto& d : devices) {
    const bool uuid = (d.rfind("GPU-", 0) == 0 || d.rfind("MIG-", 0) == 0) && d.size() > 4 && d.size() <= 64 &&
                      d.find_first_not_of("0123456789abcdefghijklmnopqrstuvwxyzGPUMI-", 4) == std::string::npos;
    const bool index = !d.empty() && d.find_first_not_of("0123456789") == std::string::npos;
    if (!uuid && !index)
      throw std::runtime_error("--devices: '" + d +
                               "' is not a device index (0, 1, ...) or UUID (GPU-..., MIG-...); want all or 0,1,...");
    if (index && (d.size() > 1 && d[0] == '0'))
      throw std::runtime_error("--devices: '" + d + "' is not a device index (no leading zeros)");
    if (index && (d.size() > 4 || std::stoi(d) >= kMaxDeviceIndex))
      throw std::runtime_error("--devices: device " + d + " cannot exist (an index is below " +
                               std::to_string(kMaxDeviceIndex) + ")");
    if (!seen.insert(d).second) throw std::runtime_error("--devices: device " + d + " twice");
  }
  if (devices.empty()) throw std::runtime_error("--devices: no device named");
  return devices;
}

int run_on_devices(const std::string& self, const std::vector<std::string>& run_args,
                   const std::vector<std::string>& named, size_t pairs, uint64_t seed, const std::string& work_dir,
                   const std::string& report_path, const std::string& junit_path, std::ostream& out) {
  if (const std::string bad = check_output_paths({}, {{"--report", report_path}, {"--junit", junit_path}});
      !bad.empty()) {
    fmt::print(out, "kvcheck run: {}\n", bad);
    return 2;
  }
  // A reader that went away (`kvcheck run --devices 0,1 | head`) must not kill this
  // parent before it merges the workers' summaries (it died with 141, leaving none):
  // its writes to stdout then fail, the workers (their output in files) go on.
  struct IgnorePipe {
    void (*old)(int) = std::signal(SIGPIPE, SIG_IGN);
    ~IgnorePipe() { std::signal(SIGPIPE, old); }
  } const ignore_pipe;
  // A worker per pair at most: the shard of any further one would hold none.
  const std::vector<std::string> devices(named.begin(), named.begin() + static_cast<std::ptrdiff_t>(
                                                                          std::max<size_t>(1, std::min(named.size(), pairs))));
  std::string run_dir;
  try {
    run_dir = make_run_dir(work_dir.empty() ? default_work_dir() : work_dir, "run");
  } catch (const std::exception& e) {
    fmt::print(out, "kvcheck run: {}\n", e.what());
    return 2;
  }
  const int n = static_cast<int>(devices.size());
  fmt::print(out, "kvcheck run: {} workers, one per device [{}], seed {}; run directory {}\n", n,
             fmt::join(devices, ", "), seed, run_dir);
  if (devices.size() < named.size())
    fmt::print(out, "  {} (property, backend) pair{} for {} devices: device{} [{}] left idle\n", pairs,
               pairs == 1 ? "" : "s", named.size(), named.size() - devices.size() == 1 ? "" : "s",
               fmt::join(named.begin() + static_cast<std::ptrdiff_t>(devices.size()), named.end(), ", "));
  out.flush();
  struct Worker {
    std::string device, log, report;
    int shard = 0;
    pid_t pid = -1;
    int status = 0;
  };
  std::vector<Worker> workers;
  const auto start = std::chrono::steady_clock::now();
  for (int j = 0; j < n; ++j) {
    Worker w;
    w.device = devices[j];
    w.shard = j + 1;
    w.log = run_dir + "/device-" + w.device + ".log";
    w.report = run_dir + "/device-" + w.device + ".summary.json";
    std::vector<std::string> args = {self, "run"};
    args.insert(args.end(), run_args.begin(), run_args.end());
    for (const std::string& a : {std::string("--shard"), fmt::format("{}/{}", j + 1, n), std::string("--seed"),
                                 std::to_string(seed), std::string("--work-dir"), run_dir + "/device-" + w.device,
                                 std::string("--report"), w.report})
      args.push_back(a);
    out.flush();
    w.pid = fork();
    if (w.pid < 0) {
      fmt::print(out, "kvcheck run: cannot start the worker of device {}: {}\n", w.device, std::strerror(errno));
      w.status = -1;
    } else if (w.pid == 0) {
      // Test hook (tests/devices_test.py): this device's worker dies at once.
      if (const char* v = std::getenv("KVCHECK_TEST_KILL_WORKER"); v && w.device == v) raise(SIGKILL);
      setenv("CUDA_VISIBLE_DEVICES", w.device.c_str(), 1);
      std::signal(SIGPIPE, SIG_DFL);  // the parent's SIG_IGN would survive exec
      FILE* f = std::freopen(w.log.c_str(), "w", stdout);
      if (f == nullptr || dup2(fileno(stdout), STDERR_FILENO) < 0) _exit(127);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(self.c_str(), argv.data());
      std::fprintf(stderr, "kvcheck run: cannot run %s: %s\n", self.c_str(), std::strerror(errno));
      _exit(127);
    }
    workers.push_back(std::move(w));
  }
  // Each worker's end, as it comes: the others go on whatever one does.
  for (size_t left = workers.size(); left > 0;) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) break;
    for (Worker& w : workers)
      if (w.pid == pid) {
        w.status = status;
        --left;
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const bool clean = WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 1);
        fmt::print(out, "device {} (shard {}/{}): {} after {:.1f} s{}\n", w.device, w.shard, n, exit_text(status), s,
                   clean ? "" : fmt::format(" -- WORKER DIED; last: {}", last_line(w.log)));
        out.flush();
      }
  }
  // One campaign.log, one regressions/ and one summary.
  std::ofstream log(run_dir + "/campaign.log");
  std::vector<nlohmann::json> shards;
  std::vector<std::string> paths;
  nlohmann::json device_list = nlohmann::json::array();
  for (const Worker& w : workers) {
    log << "==== device " << w.device << " (shard " << w.shard << "/" << n << "), " << exit_text(w.status) << " ====\n";
    std::ifstream in(w.log);
    log << in.rdbuf() << "\n";
    device_list.push_back({{"device", w.device}, {"shard", w.shard}, {"exit", exit_text(w.status)},
                           {"log", w.log}, {"last_line", last_line(w.log)}});
    std::ifstream rs(w.report);
    if (!rs) continue;  // died before its first summary: its shard is missing
    try {
      nlohmann::json s = nlohmann::json::parse(rs);
      if (s.contains("run_dir") && s["run_dir"].is_string()) {
        const fs::path regressions = fs::path(s["run_dir"].get<std::string>()) / "regressions";
        std::error_code ec;
        if (fs::exists(regressions, ec))
          fs::copy(regressions, fs::path(run_dir) / "regressions",
                   fs::copy_options::recursive | fs::copy_options::skip_existing, ec);
      }
      shards.push_back(std::move(s));
      paths.push_back(w.report);
    } catch (const std::exception& e) {
      fmt::print(out, "device {}: unreadable summary {}: {}\n", w.device, w.report, e.what());
    }
  }
  nlohmann::json merged;
  if (shards.empty()) {
    merged = summary_header("run", utc_now());
    merged["verdict"] = "incomplete";
    merged["results"] = nlohmann::json::array();
    merged["seed"] = seed;
  } else {
    try {
      merged = merge_summaries(shards, paths);
    } catch (const std::exception& e) {
      fmt::print(out, "kvcheck run: the workers' summaries do not merge: {}\n", e.what());
      return 1;
    }
  }
  merged["run_dir"] = run_dir;
  merged["devices"] = device_list;
  for (const Worker& w : workers)
    if (!(WIFEXITED(w.status) && (WEXITSTATUS(w.status) == 0 || WEXITSTATUS(w.status) == 1)) &&
        merged["verdict"] == "pass")
      merged["verdict"] = "incomplete";  // a worker that died never passes
  const std::string bad = write_summary_files(merged, {run_dir + "/summary.json", report_path}, junit_path);
  const auto& t = merged.value("totals", nlohmann::json::object());
  fmt::print(out, "{} (property, backend) pairs on {} devices, {} cases, {} failing; verdict {}\nsummary: {}\n",
             t.value("results", 0), n, t.value("execs", int64_t{0}), t.value("failures", 0),
             merged["verdict"].get<std::string>(), run_dir + "/summary.json");
  if (!bad.empty()) {
    fmt::print(out, "kvcheck run: cannot write {}\n", bad);
    return 2;
  }
  return merged["verdict"] == "pass" ? 0 : 1;
}

}  // namespace kvcheck::tool
