// The fuzz targets as library functions: decode the input (decoders.h), run the
// reference and a backend, compare bit for bit and check the invariants (store, load and
// round_trip: the properties' own checks, properties/ops/store_load/op_checks.h). Shared by the
// libFuzzer binaries, their replay builds and `kvcheck explain`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "impl/backend.h"
#include "fuzzers/decoders.h"
#include "impl/error.h"
#include "properties/harness.h"

namespace kvcheck::fuzz {

/// Result of one input: the decoded scenario (always) and the failure report ("" when
/// every check passed). `skipped` names what the backend could not run (kUnsupported).
struct CheckResult {
  std::string scenario;
  std::string failure;
  std::string skipped;
};

/// One fuzz target: fuzz_<name> (fuzzers/fuzz_target.cpp) runs `run` on every input.
struct Target {
  std::string name;  // store, load, round_trip, format, numerics, plan, ...
  std::function<CheckResult(const uint8_t* data, size_t size, const Backend& backend)> run;
};

/// Every target built into this library (one per fuzzers/ops/<family>/check_<name>.cpp), by name.
const std::vector<Target>& targets();
/// nullptr when there is no target `name`.
const Target* target_by_name(std::string_view name);

/// Refuses, before any input runs, a setting that would make every run meaningless: a bad
/// $KVCHECK_PLUGIN_TIMEOUT (not a number of seconds in [0, 1e9]) prints why and exits 2,
/// as kvcheck does. LLVMFuzzerInitialize and the replay main call it first: an exit inside
/// an input is a libFuzzer crash (a crash-* file, exit 77), not a refusal.
void check_setup();

/// The backend under test: $KVCHECK_FUZZ_BACKEND, default the first plugin that
/// $KVCHECK_PLUGIN loads, else "cpu" (resolved once; an unknown name or a plugin that
/// does not load prints why and aborts).
const Backend& fuzz_backend();

/// The backend a property regression file (its failed_on) replays on: a
/// "<writer>-to-<reader>" pair's file on that pair when $KVCHECK_FUZZ_BACKEND is unset
/// (on the writer or the reader alone, or on cpu, a contract failure passes: each side
/// agrees with itself), nullptr when a side is not loaded here, with why in `why_not`
/// (the file is then not exercised, never a pass); anything else on fuzz_backend().
/// Shared by the replays and `kvcheck explain`.
const Backend* regression_backend(const std::string& failed_on, std::string* why_not);

/// LLVMFuzzerTestOneInput body: runs target `name`; on failure prints the scenario
/// and the decoded first difference to stderr and calls abort().
int fuzz_one(std::string_view name, const uint8_t* data, size_t size);
/// What the last fuzz_one call on this thread could not run on its backend
/// (CheckResult::skipped: kUnsupported), "" when it ran: the replay counts those apart.
const std::string& last_skipped();

/// The body of every target: decode the input with `decode`, run `check` (a callable
/// const S& -> props::Verdict) on the scenario, report the scenario's printer.
template <class S, class Check>
CheckResult decode_and_check(const uint8_t* data, size_t size, S (*decode)(ByteSource&), Check&& check) {
  ByteSource src(data, size);
  const S s = decode(src);
  const props::Verdict v = check(s);
  return {props::describe(s), v.failure, v.skipped};
}

// Per-target checks: check_<name> in fuzzers/ops/<family>/check_<name>.cpp, one per target.
#define KVCHECK_FUZZ_TARGET(name) CheckResult check_##name(const uint8_t* data, size_t size, const Backend& backend);
#include "fuzzers/fuzz_targets.inc"
#undef KVCHECK_FUZZ_TARGET

// Outcome capture is the properties' (properties/harness.h): one for both engines.
using props::capture;
using props::compare_outcomes;
using props::Outcome;
using props::show;

}  // namespace kvcheck::fuzz
