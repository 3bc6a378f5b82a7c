#include "fuzzers/checks.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "impl/backends.h"  // backend_by_name, available_backends
#include "impl/plugin/watchdog.h"  // plugin_timeout_error

namespace kvcheck::fuzz {
namespace {
thread_local std::string last_skip;
}  // namespace

const std::vector<Target>& targets() {
  static const std::vector<Target> all = {
#define KVCHECK_FUZZ_TARGET(name) {#name, check_##name},
#include "fuzzers/fuzz_targets.inc"
#undef KVCHECK_FUZZ_TARGET
  };
  return all;
}

const Target* target_by_name(std::string_view name) {
  for (const auto& t : targets())
    if (t.name == name) return &t;
  return nullptr;
}

void check_setup() {
  // A bad limit is refused as kvcheck refuses it, not replaced by the default silently.
  if (const std::string bad = plugin::plugin_timeout_error(); !bad.empty()) {
    std::fprintf(stderr, "kvcheck: %s\n", bad.c_str());
    std::exit(2);
  }
}

const Backend& fuzz_backend() {
  static const std::shared_ptr<const Backend> backend = [] {
    const char* env = std::getenv("KVCHECK_FUZZ_BACKEND");
    // What cannot be set up is no finding: a message and exit 2 (a mismatch aborts).
    const auto refuse = [](const std::string& why) {
      std::fprintf(stderr, "kvcheck: the backend under test (KVCHECK_FUZZ_BACKEND / KVCHECK_PLUGIN): %s\n",
                   why.c_str());
      std::exit(2);
    };
    check_setup();
    try {
      // Default: the first backend $KVCHECK_PLUGIN loaded (a plugin under test), else cpu.
      std::string name = env && *env ? env : "cpu";
      // A plugin that was named but cannot run is never replaced by cpu silently.
      if (!(env && *env))
        if (const std::string why = user_plugins_unavailable(); !why.empty()) refuse(why);
      if (!(env && *env))
        for (const auto& b : available_backends())
          if (b->name() != "cpu" && b->name() != "cuda") {
            name = std::string(b->name());
            break;
          }
      auto b = backend_by_name(name);
      // Said once per process: tools/fuzz.sh reads it back from the log (summary.json).
      std::fprintf(stderr, "kvcheck: backend under test: %s\n", name.c_str());
      return b;
    } catch (const Error& e) {
      refuse(e.what());
    }
    return std::shared_ptr<const Backend>();
  }();
  return *backend;
}

const Backend* regression_backend(const std::string& failed_on, std::string* why_not) {
  if (why_not) why_not->clear();
  const char* forced = std::getenv("KVCHECK_FUZZ_BACKEND");
  if ((forced && *forced) || failed_on.find("-to-") == std::string::npos) return &fuzz_backend();
  try {
    return backend_by_name(failed_on).get();  // contract_backend keeps each pair alive
  } catch (const std::exception& e) {
    if (why_not) *why_not = fmt::format("it failed on {}, not here ({}): load both sides with --plugin", failed_on, e.what());
    return nullptr;
  }
}

const std::string& last_skipped() { return last_skip; }

int fuzz_one(std::string_view name, const uint8_t* data, size_t size) {
  const Target* t = target_by_name(name);
  if (t == nullptr) {
    std::fprintf(stderr, "kvcheck fuzz: no target '%.*s'\n", static_cast<int>(name.size()),
                 name.data());
    std::abort();
  }
  const Backend& backend = fuzz_backend();
  last_skip.clear();
  const CheckResult r = t->run(data, size, backend);
  last_skip = r.skipped;
  if (r.failure.empty()) return 0;
  std::fprintf(stderr, "\n==== kvcheck fuzz_%s: FAILED (backend %.*s) ====\n%s\n%s\n", t->name.c_str(),
               static_cast<int>(backend.name().size()), backend.name().data(),
               r.scenario.c_str(), r.failure.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace kvcheck::fuzz
