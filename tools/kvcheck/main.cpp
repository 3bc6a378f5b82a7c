// kvcheck command line: parses options and calls the library (tools/kvcheck/*.h).
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "impl/backend.h"

#include "tools/kvcheck/campaign.h"
#include "tools/kvcheck/explain.h"
#include "tools/kvcheck/report.h"

namespace {

// CLI::PositiveNumber lets NaN through (every comparison with NaN is false).
const CLI::Validator kFinitePositive(
    [](std::string& s) -> std::string {
      try {
        const double v = std::stod(s);
        return std::isfinite(v) && v > 0 ? "" : "must be a finite number > 0, got " + s;
      } catch (const std::exception&) {
        return "must be a finite number > 0, got " + s;
      }
    },
    "POSITIVE");

// --plugin PATH (repeatable): appended to $KVCHECK_PLUGIN, which the registry, the
// campaign's children and the fuzz/replay binaries all read (impl/plugin/loader.h).
void add_plugin_option(CLI::App* cmd, std::vector<std::string>& plugins) {
  cmd->add_option("--plugin", plugins,
                  "Load a backend plugin (a shared library implementing include/kvcheck/backend_abi.h; repeatable)")
      ->check(CLI::ExistingFile);
}

void export_plugins(const std::vector<std::string>& plugins) {
  if (plugins.empty()) return;
  const char* env = std::getenv("KVCHECK_PLUGIN");
  std::string value = env ? env : "";
  for (const auto& p : plugins) value += (value.empty() ? "" : ":") + p;
  setenv("KVCHECK_PLUGIN", value.c_str(), 1);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kvcheck: differential testing of paged KV-cache kernels against a scalar reference"};
  app.require_subcommand(1);

  kvcheck::tool::CampaignOptions run;
  uint64_t seed = 0;
  bool list = false, quiet = false;
  auto* run_cmd = app.add_subcommand("run", "Run every property on every available backend (the main job)");
  auto* seconds_opt = run_cmd->add_option("--seconds", run.seconds, "Time budget in seconds (repeats rounds of 20 cases)")
      ->check(kFinitePositive);
  run_cmd->add_option("--cases", run.cases, "Cases per (property, backend) (default 200); not with --seconds")
      ->check(CLI::PositiveNumber)
      ->excludes(seconds_opt);
  auto* seed_opt = run_cmd->add_option("--seed", seed, "RapidCheck seed (default: from the clock; printed)");
  run_cmd->add_option("--backend", run.backends, "Backend(s) to test (default: all available)");
  run_cmd->add_option("--property", run.properties, "Only properties whose name contains this text, or whose op is this (repeatable)");
  run_cmd->add_option("--report", run.report_path, "Also write the JSON summary (summary.json) to this file")
      ->check([](const std::string& f) { return f.empty() ? std::string("needs a file name") : std::string(); });
  run_cmd->add_option("--junit", run.junit_path, "Also write the summary as JUnit XML to this file")
      ->check([](const std::string& f) { return f.empty() ? std::string("needs a file name") : std::string(); });
  run_cmd->add_option("--work-dir", run.work_dir,
                      "Work area for run directories (default $KVCHECK_WORK_DIR or <source>/.kvcheck-work)");
  run_cmd->add_flag("--fail-fast", run.fail_fast, "Stop at the first failing (property, backend) pair");
  run_cmd->add_flag("--list", list, "List the properties and exit");
  run_cmd->add_flag("--quiet", quiet, "No progress line");
  std::vector<std::string> plugins;
  bool in_process = false;
  add_plugin_option(run_cmd, plugins);
  run_cmd->add_flag("--in-process", in_process,
                    "Run the properties in this process (default: each (property, backend) in a child, so a "
                    "crashing plugin fails its row and the campaign goes on)");

  auto* backends_cmd = app.add_subcommand("backends", "List the backends built here and why any cannot run");
  add_plugin_option(backends_cmd, plugins);

  std::string explain_path, explain_target;
  auto* explain_cmd = app.add_subcommand(
      "explain", "Decode a corpus or crash file into a readable scenario; run it and show the first difference");
  explain_cmd->add_option("FILE", explain_path, "A file under corpus/<target>/ or a libFuzzer crash file")
      ->required()
      ->check(CLI::ExistingFile);
  explain_cmd->add_option("--target", explain_target,
                          "Fuzz target (store, load, round_trip, format, numerics, index, plan, prefill, "
                          "store_kv, gather_kv, slot_mapping); "
                          "default: guessed from the path");
  add_plugin_option(explain_cmd, plugins);

  std::string junit_summary, junit_out;
  auto* junit_cmd = app.add_subcommand("junit", "Convert a kvcheck summary.json (run or fuzz) to JUnit XML");
  junit_cmd->add_option("SUMMARY", junit_summary, "A summary.json of a run directory")->required()->check(CLI::ExistingFile);
  junit_cmd->add_option("OUT", junit_out, "The JUnit XML file to write")->required();

  // Run records for drivers outside this binary (tools/fuzz.sh).
  std::string record_kind, record_dir, record_verdict, record_junit, record_work;
  auto* record_cmd = app.add_subcommand("record", "Run directory and summary.json for tools/fuzz.sh");
  record_cmd->require_subcommand(1);
  auto* record_start = record_cmd->add_subcommand("start", "Make a run directory, print it, write summary.json");
  record_start->add_option("KIND", record_kind, "fuzz or run")->required()->check(CLI::IsMember({"fuzz", "run"}));
  record_start->add_option("--work-dir", record_work, "Work area (default $KVCHECK_WORK_DIR or <source>/.kvcheck-work)");
  auto* record_finish = record_cmd->add_subcommand("finish", "Write summary.json from results.jsonl");
  record_finish->add_option("RUN_DIR", record_dir, "The run directory")->required()->check(CLI::ExistingDirectory);
  record_finish->add_option("VERDICT", record_verdict, "pass, fail, interrupted or running")
      ->required()
      ->check(CLI::IsMember({"pass", "fail", "interrupted", "running"}));
  record_finish->add_option("--junit", record_junit, "Also write JUnit XML to this file");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help exits 0; every bad option exits 2 (README), whatever CLI11's own code.
    return app.exit(e) == 0 ? 0 : 2;
  }
  export_plugins(plugins);
  try {
    (void)kvcheck::available_backends();  // a plugin that does not load: say why, exit 2
  } catch (const std::exception& e) {
    std::cerr << "kvcheck: " << e.what() << "\n";
    return 2;
  }

  if (backends_cmd->parsed()) {
    kvcheck::tool::list_backends(std::cout);
    return 0;
  }
  if (explain_cmd->parsed()) return kvcheck::explain_file(explain_path, explain_target, std::cout);
  if (junit_cmd->parsed()) return kvcheck::tool::junit_file(junit_summary, junit_out, std::cerr);
  if (record_start->parsed()) return kvcheck::tool::record_start(record_kind, record_work, std::cout, std::cerr);
  if (record_finish->parsed())
    return kvcheck::tool::record_finish(record_dir, record_verdict, record_junit, std::cerr);

  if (run_cmd->parsed()) {
    if (list) {
      kvcheck::tool::list_properties(std::cout);
      return 0;
    }
    if (seed_opt->count() > 0) run.seed = seed;
    run.progress = !quiet;
    run.isolate = !in_process;
    return kvcheck::tool::run_campaign(run, std::cout, std::cerr);
  }
  return 0;
}
