#include "tools/kvcheck/isolate.h"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>

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

// run_property(p, b, budget) in a forked child (per_case: with per-case isolation on in
// it). True with the child's outcome in `o`; false when the child died, with its wait
// status in `status`.
bool run_in_child(const props::Property& p, const Backend& b, const props::CaseBudget& budget, bool per_case,
                  props::PropertyOutcome& o, int& status) {
  std::string bytes;
  const bool forked = props::run_forked(
      [&] {
        const props::ScopedCaseIsolation isolation(per_case);
        return serialise(props::run_property(p, b, budget));
      },
      &bytes, &status);
  if (!forked) {  // no pipe or child: run here, unisolated
    o = props::run_property(p, b, budget);
    return true;
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 && deserialise(bytes, o);
}

}  // namespace

props::PropertyOutcome run_property_isolated(const props::Property& p, const Backend& b,
                                             const props::CaseBudget& budget) {
  // Read RapidCheck's configuration here, once: children then inherit it and do not
  // each echo "Using configuration".
  (void)props::configured_seed(0);
  const auto start = std::chrono::steady_clock::now();
  props::PropertyOutcome o;
  int status = 0;
  if (run_in_child(p, b, budget, false, o, status)) return o;
  o = {};
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
    const bool survived = run_in_child(p, b, budget, true, m, again);
    if (survived && m.failed) {
      o.message += "\nminimal crashing case (the chunk re-run with each case in its own process):\n" + m.message;
      o.reproduce = m.reproduce;
      o.scenario = m.scenario;
      o.cases = m.cases;
    } else if (!survived) {
      o.message += "\n(its checks do not run one case per process: reproduce the chunk with the seed)";
    } else {
      o.message += "\nre-running the chunk with each case in its own process did not fail: the crash depends "
                   "on earlier cases in the same process; reproduce the chunk with the seed";
    }
  }
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return o;
}

}  // namespace kvcheck::tool
