// kvcheck command line: parses options and calls the library (tools/kvcheck/*.h).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "impl/backends.h"
#include "impl/plugin/watchdog.h"
#include "impl/contract_backend.h"
#include "impl/plugin/loader.h"

#include "tools/kvcheck/campaign.h"
#include "tools/kvcheck/devices.h"
#include "tools/kvcheck/explain.h"
#include "tools/kvcheck/options.h"
#include "tools/kvcheck/report.h"
#include "tools/kvcheck/recipes.h"
#include "tools/kvcheck/summary_merge.h"

namespace {

using kvcheck::tool::OptionSpec;

// A CLI11 check: an integer from `min` to the largest value of T (of its element type
// for a repeatable option).
template <class T>
CLI::Validator integer_check(uint64_t min) {
  using V = std::conditional_t<std::is_integral_v<T>, T, uint64_t>;  // T is an integer wherever a count is declared
  return CLI::Validator(
      [min](std::string& v) {
        return kvcheck::tool::check_integer(v, min, static_cast<uint64_t>(std::numeric_limits<V>::max()));
      },
      "INT");
}

// The declared options (tools/kvcheck/options.txt): every add() below must name one,
// and every declared one must be added (checked at start, so the list and the parser
// cannot drift apart; CTest cli.options runs every --help).
class DeclaredOptions {
 public:
  DeclaredOptions() : specs_(kvcheck::tool::parse_option_specs(kvcheck::tool::option_specs_text())) {}

  // The command's description.
  std::string about(const std::string& command) { return take(command, "about").help; }

  // A value option (or a required positional) bound to `var`, validated by its type.
  template <class T>
  CLI::Option* add(CLI::App* cmd, const std::string& name, T& var) {
    const OptionSpec& s = take(cmd->get_name(), name);
    if (s.type == "flag") throw std::logic_error(name + " is declared a flag");
    CLI::Option* o = cmd->add_option(name, var, s.help);
    if (name.rfind("--", 0) != 0) o->required();
    if (s.type == "seconds")
      o->check(CLI::Validator(
          [](std::string& v) { return kvcheck::tool::check_seconds(v); }, "SECONDS"));
    else if (s.type == "count" || s.type == "uint")
      o->check(integer_check<T>(s.type == "count" ? 1 : 0));
    else if (s.type == "file")
      o->check(CLI::ExistingFile);
    else if (s.type == "plugin")  // a library, or python:SPEC (export_plugins)
      o->check([](const std::string& v) {
        return v.rfind("python:", 0) == 0 ? std::string() : CLI::ExistingFile(v);
      });
    else if (s.type == "path")
      o->check([](const std::string& f) { return f.empty() ? std::string("needs a file name") : std::string(); });
    return o;
  }

  CLI::Option* flag(CLI::App* cmd, const std::string& name, bool& var) {
    const OptionSpec& s = take(cmd->get_name(), name);
    if (s.type != "flag") throw std::logic_error(name + " is declared with a value");
    return cmd->add_flag(name, var, s.help);
  }

  // Throws when options.txt declares an option of `command` that was not added.
  void check_all_added(const std::string& command) const {
    for (const auto& s : specs_)
      if (s.command == command && !taken_.count(s.command + " " + s.name))
        throw std::logic_error("options.txt declares '" + command + " " + s.name + "' but main.cpp does not add it");
  }

 private:
  const OptionSpec& take(const std::string& command, const std::string& name) {
    for (const auto& s : specs_)
      if (s.command == command && s.name == name) {
        taken_.insert(command + " " + name);
        return s;
      }
    throw std::logic_error("tools/kvcheck/options.txt does not declare '" + command + " " + name + "'");
  }

  std::vector<OptionSpec> specs_;
  std::set<std::string> taken_;
};

// --plugin python:SPEC: a kvcheck.Backend in Python (docs/python.md), run by
// libkvcheck_python.so, which finds it through $KVCHECK_PYTHON_BACKEND (one per run:
// the library holds one interpreter). Returns the library's path; other values as given.
std::string python_backend_plugin(const std::string& value) {
  if (value.rfind("python:", 0) != 0) return value;
  const std::string spec = value.substr(7);
  if (spec.find(':') == std::string::npos || spec.front() == ':' || spec.back() == ':')
    throw CLI::ValidationError("--plugin", value + ": want python:path/to/file.py:ATTR or python:package.module:ATTR");
  const char* had = std::getenv("KVCHECK_PYTHON_BACKEND");
  if (had && *had && spec != had)
    throw CLI::ValidationError("--plugin", value + ": a run takes one Python backend, and " +
                                               std::string(had) + " is already named (KVCHECK_PYTHON_BACKEND)");
  const std::string lib = kvcheck::plugin::builtin_plugin_dir() + "/libkvcheck_python.so";
  if (!std::filesystem::exists(lib))
    throw CLI::ValidationError("--plugin", value + ": this kvcheck has no Python bridge (" + lib +
                                               " was not built: no python3 development files at configure time)");
  setenv("KVCHECK_PYTHON_BACKEND", spec.c_str(), 1);
  return lib;
}

// Absolute paths, so the reproduce lines (which echo $KVCHECK_PLUGIN) work from any
// directory; a library already in $KVCHECK_PLUGIN is not loaded twice.
void export_plugins(const std::vector<std::string>& plugins) {
  if (plugins.empty()) return;
  namespace fs = std::filesystem;
  const auto same = [](const std::string& a, const std::string& b) {
    std::error_code ea, eb;
    const fs::path ca = fs::weakly_canonical(a, ea), cb = fs::weakly_canonical(b, eb);
    return !ea && !eb ? ca == cb : a == b;
  };
  std::vector<std::string> have = kvcheck::plugin::env_plugins();  // $KVCHECK_PLUGIN's paths
  const char* env = std::getenv("KVCHECK_PLUGIN");
  std::string value = env ? env : "";
  for (const auto& given : plugins) {
    const std::string p = python_backend_plugin(given);
    std::error_code ec;
    const std::string abs = fs::absolute(p, ec).lexically_normal().string();
    const std::string path = ec ? p : abs;
    if (std::any_of(have.begin(), have.end(), [&](const std::string& h) { return same(h, path); })) continue;
    have.push_back(path);
    value += (value.empty() ? "" : ":") + path;
  }
  setenv("KVCHECK_PLUGIN", value.c_str(), 1);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kvcheck: differential testing of paged KV-cache kernels against a scalar reference"};
  // A parse error names the command it belongs to, as the wrapper's own errors do
  // ("kvcheck contract: --reader is required").
  app.failure_message([](const CLI::App* a, const CLI::Error& e) {
    std::string who = "kvcheck";
    for (const CLI::App* s = a; !s->get_subcommands().empty();) {
      s = s->get_subcommands().front();
      who += " " + s->get_name();
    }
    return who + ": " + CLI::FailureMessage::simple(a, e);
  });
  app.require_subcommand(1);

  DeclaredOptions declared;
  kvcheck::tool::CampaignOptions run;
  uint64_t seed = 0;
  bool list = false, quiet = false;
  std::vector<std::string> plugins;  // --plugin PATH: appended to $KVCHECK_PLUGIN (impl/plugin/loader.h)
  bool in_process = false;
  auto* run_cmd = app.add_subcommand("run", declared.about("run"));
  auto* seconds_opt = declared.add(run_cmd, "--seconds", run.seconds);
  declared.add(run_cmd, "--cases", run.cases)->excludes(seconds_opt);
  auto* seed_opt = declared.add(run_cmd, "--seed", seed);
  declared.add(run_cmd, "--backend", run.backends);
  declared.add(run_cmd, "--property", run.properties)->check([](const std::string& v) {
    return v.empty() ? std::string("needs a text (an empty one would match every property)") : std::string();
  });
  declared.add(run_cmd, "--report", run.report_path);
  declared.add(run_cmd, "--junit", run.junit_path);
  declared.add(run_cmd, "--work-dir", run.work_dir);
  declared.flag(run_cmd, "--fail-fast", run.fail_fast);
  declared.flag(run_cmd, "--list", list);
  declared.flag(run_cmd, "--quiet", quiet);
  declared.flag(run_cmd, "--verbose", run.verbose);
  declared.add(run_cmd, "--plugin", plugins);
  auto* in_process_opt = declared.flag(run_cmd, "--in-process", in_process);
  declared.flag(run_cmd, "--fork-per-chunk", run.fork_per_chunk)->excludes(in_process_opt);
  std::string devices_text;
  auto* devices_opt = declared.add(run_cmd, "--devices", devices_text);
  std::string shard;
  declared.add(run_cmd, "--shard", shard)->excludes(devices_opt)->check([](const std::string& v) {
    return kvcheck::tool::parse_shard(v) ? std::string() : "want I/N with 1 <= I <= N <= 10000, got '" + v + "'";
  });

  auto* backends_cmd = app.add_subcommand("backends", declared.about("backends"));
  declared.add(backends_cmd, "--plugin", plugins);

  std::string explain_path, explain_target;
  auto* explain_cmd = app.add_subcommand("explain", declared.about("explain"));
  declared.add(explain_cmd, "FILE", explain_path);
  declared.add(explain_cmd, "--target", explain_target);
  declared.add(explain_cmd, "--plugin", plugins);
  for (const char* c : {"run", "backends", "explain"}) declared.check_all_added(c);

  // An output path given as "" wrote nothing and said "summary: " (merge --out) or was ignored.
  const auto file_name = [](const std::string& f) { return f.empty() ? std::string("needs a file name") : std::string(); };
  std::string junit_summary, junit_out;
  auto* junit_cmd = app.add_subcommand("junit", "Convert a kvcheck summary.json (run or fuzz) to JUnit XML");
  junit_cmd->add_option("SUMMARY", junit_summary, "A summary.json of a run directory")->required()->check(CLI::ExistingFile);
  junit_cmd->add_option("OUT", junit_out, "The JUnit XML file to write")->required()->check(file_name);

  // Run records for drivers outside this binary (tools/fuzz.sh).
  std::string record_kind, record_dir, record_verdict, record_junit, record_work;
  std::vector<std::string> merge_inputs;
  std::string merge_out, merge_junit;
  auto* summary_cmd = app.add_subcommand("summary", "Work with summary.json files");
  summary_cmd->require_subcommand(1);
  auto* merge_cmd = summary_cmd->add_subcommand(
      "merge", "Join the summary.json files of the N shards of one run (kvcheck run --shard I/N) into one verdict");
  merge_cmd->add_option("SUMMARY", merge_inputs, "The shards' summary.json files")->required()->check(CLI::ExistingFile);
  merge_cmd->add_option("--out", merge_out, "Write the merged summary.json here")->required()->check(file_name);
  merge_cmd->add_option("--junit", merge_junit, "Also write the merged summary as JUnit XML")->check(file_name);

  // Writer x reader contracts (docs/spec.md §6.2): the round-trip and K/V-step
  // properties on the contract backend "<writer>-to-<reader>" (impl/contract_backend.h).
  kvcheck::tool::CampaignOptions contract;
  contract.command = "contract";
  std::string contract_writer, contract_reader;
  uint64_t contract_seed = 0;
  bool contract_quiet = false;
  auto* contract_cmd = app.add_subcommand(
      "contract", "Store with one backend, load/gather with another, against the reference (exit 1 on a break)");
  contract_cmd->add_option("--writer", contract_writer, "The backend that stores (store_kv_cache, store_kv)")->required();
  contract_cmd->add_option("--reader", contract_reader, "The backend that reads (load_paged_kv_cache, gather_kv)")
      ->required();
  auto* contract_seconds = contract_cmd->add_option("--seconds", contract.seconds, "Time budget in seconds")
                               ->check(CLI::Validator([](std::string& v) { return kvcheck::tool::check_seconds(v); },
                                                      "SECONDS"));
  contract_cmd->add_option("--cases", contract.cases, "Cases per property (default 200)")
      ->check(integer_check<decltype(contract.cases)>(1))
      ->excludes(contract_seconds);
  auto* contract_seed_opt = contract_cmd->add_option("--seed", contract_seed, "RapidCheck seed (default: the clock)")
                                ->check(integer_check<decltype(contract_seed)>(0));
  contract_cmd->add_option("--plugin", plugins, "Load a backend plugin (repeatable), as for run");
  contract_cmd->add_option("--report", contract.report_path, "Also write the JSON summary to this file")
      ->check(file_name);
  contract_cmd->add_option("--junit", contract.junit_path, "Also write the summary as JUnit XML to this file")
      ->check(file_name);
  contract_cmd->add_option("--work-dir", contract.work_dir, "Work area for run directories");
  contract_cmd->add_flag("--quiet", contract_quiet, "No progress line");
  contract_cmd->add_option("--property", contract.properties,
                           "Only the contract properties (round_trip, kv_step) matching this substring of a name or op "
                           "(repeatable)");
  std::vector<std::string> contract_formats, contract_kv_dtypes;
  contract_cmd->add_option("--format", contract_formats,
                           "Only this paged format (repeatable, any case): " + kvcheck::quantized_format_names() +
                               ", BF16, or OTHER (custom records, where both sides take every format); the K/V rows "
                               "then run only with --kv-dtype");
  contract_cmd->add_option("--kv-dtype", contract_kv_dtypes,
                           "Only this K/V cache dtype (repeatable): bf16, fp16, e4m3, e5m2, e2m1; the paged rows then run "
                           "only with --format");

  // The FP8 K/V store recipes of docs/spec.md §7.3.1 (tools/kvcheck/recipes.h).
  kvcheck::tool::RecipeDiffOptions recipe_diff;
  auto* recipes_cmd = app.add_subcommand("recipes", "The engines' FP8 K/V store recipes (docs/spec.md §7.3.1)");
  recipes_cmd->require_subcommand(1);
  auto* recipes_list = recipes_cmd->add_subcommand("list", "Print the recipes and how each stores an element");
  auto* recipes_diff = recipes_cmd->add_subcommand(
      "diff", "Print the smallest inputs on which two recipes store different bytes (exit 1 when they differ)");
  recipes_diff->add_option("R1", recipe_diff.a, "A recipe (spec, vllm, sglang) or a paged format (V41_FP4, NVFP4_DS_MLA, ...: its scale rule)")->required();
  recipes_diff->add_option("R2", recipe_diff.b, "Another recipe")->required();
  recipes_diff->add_option("--dtype", recipe_diff.dtype, "The FP8 cache dtype: e4m3 (default) or e5m2");
  recipes_diff->add_option("--model", recipe_diff.model, "The model dtype of the inputs: bf16 (default) or fp16");
  recipes_diff->add_option("--scale", recipe_diff.scales, "A k_scale/v_scale to compare at (repeatable; default 1, 3, 7, 0.1)");
  recipes_diff->add_option("--count", recipe_diff.count, "Inputs printed per scale (default 5)")
      ->check(integer_check<decltype(recipe_diff.count)>(1));

  auto* record_cmd = app.add_subcommand("record", "Run directory and summary.json for tools/fuzz.sh");
  record_cmd->require_subcommand(1);
  auto* record_start = record_cmd->add_subcommand("start", "Make a run directory, print it, write summary.json");
  record_start->add_option("KIND", record_kind, "fuzz (record finish rewrites only what record start fuzz began)")
      ->required()
      ->check(CLI::IsMember({"fuzz"}));
  record_start->add_option("--work-dir", record_work, "Work area (default $KVCHECK_WORK_DIR or <source>/.kvcheck-work)");
  auto* record_finish = record_cmd->add_subcommand("finish", "Write summary.json from results.jsonl");
  record_finish->add_option("RUN_DIR", record_dir, "The run directory")->required()->check(CLI::ExistingDirectory);
  record_finish->add_option("VERDICT", record_verdict, "pass, fail, interrupted or running")
      ->required()
      ->check(CLI::IsMember({"pass", "fail", "interrupted", "running"}));
  record_finish->add_option("--junit", record_junit, "Also write JUnit XML to this file")->check(file_name);

  // `kvcheck help [COMMAND]`, as the ./kvcheck script takes it: the same as --help.
  if (argc >= 2 && std::string(argv[1]) == "help") {
    CLI::App* of = &app;  // help [COMMAND [SUBCOMMAND]]
    for (int at = 2; at < argc && at < 4; ++at) {
      CLI::App* sub = nullptr;
      for (CLI::App* c : of->get_subcommands({}))
        if (c->get_name() == argv[at]) sub = c;
      if (sub == nullptr) {
        std::cerr << "kvcheck help: unknown command '" << argv[at] << "'\n";
        return 2;
      }
      of = sub;
    }
    std::cout << of->help();
    return 0;
  }
  // An unknown word where a subcommand goes is named (CLI11 said "A subcommand is required").
  for (CLI::App* parent : {&app, summary_cmd, recipes_cmd, record_cmd}) {
    int at = 1;  // argv position of parent's subcommand: after the parent's own name
    if (parent != &app) {
      while (at < argc && argv[at] != parent->get_name()) ++at;
      if (at == argc || at != 1) continue;  // not this parent (a top-level word is at argv[1])
      ++at;
    }
    if (at >= argc || argv[at][0] == '-') continue;
    std::string names;
    bool known = false;
    for (const CLI::App* c : parent->get_subcommands({})) {
      names += (names.empty() ? "" : ", ") + c->get_name();
      known |= c->get_name() == argv[at];
    }
    if (!known) {
      std::cerr << "kvcheck" << (parent == &app ? "" : " " + parent->get_name()) << ": unknown command '" << argv[at]
                << "' (one of: " << names << ")\n";
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
    export_plugins(plugins);  // a bad python:SPEC is a bad option too
  } catch (const CLI::ParseError& e) {
    // --help exits 0; every bad option exits 2 (README), whatever CLI11's own code.
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (const std::string bad = kvcheck::plugin::plugin_timeout_error(); !bad.empty()) {
    std::cerr << "kvcheck: " << bad << "\n";
    return 2;
  }
  for (size_t i = 0; i < run.backends.size(); ++i)  // each pair would run twice, under one name
    if (std::find(run.backends.begin(), run.backends.begin() + static_cast<std::ptrdiff_t>(i), run.backends[i]) !=
        run.backends.begin() + static_cast<std::ptrdiff_t>(i)) {
      std::cerr << "kvcheck run: --backend: '" << run.backends[i]
                << "' is given twice\nRun with --help for more information.\n";
      return 2;
    }
  // A campaign in this process stops on Ctrl-C from here on, while the plugins load too
  // (--devices runs its workers as processes of their own; --list runs nothing).
  std::optional<kvcheck::tool::StopSignals> stop;
  if ((run_cmd->parsed() && !list && devices_opt->count() == 0) || contract_cmd->parsed()) stop.emplace();
  try {
    (void)kvcheck::available_backends();  // a plugin that does not load: say why, exit 2
  } catch (const std::exception& e) {
    std::cerr << "kvcheck: " << e.what() << "\n";
    if (stop && kvcheck::tool::stop_requested())
      return kvcheck::tool::interrupted_before_run(contract_cmd->parsed() ? contract : run, std::cout);
    return 2;
  }

  if (backends_cmd->parsed()) {
    kvcheck::tool::list_backends(std::cout);
    return 0;
  }
  if (explain_cmd->parsed()) return kvcheck::explain_file(explain_path, explain_target, std::cout);
  if (junit_cmd->parsed()) return kvcheck::tool::junit_file(junit_summary, junit_out, std::cerr);
  if (merge_cmd->parsed())
    return kvcheck::tool::summary_merge(merge_inputs, merge_out, merge_junit, std::cout, std::cerr);
  if (contract_cmd->parsed()) {
    for (const std::string& name : {contract_writer, contract_reader}) try {
        // backend_by_name takes "<writer>-to-<reader>" pairs too; a side is one backend.
        if (name.find("-to-") != std::string::npos)
          throw std::invalid_argument("'" + name + "' is a writer-to-reader pair: --writer and --reader each name one backend");
        (void)kvcheck::backend_by_name(name);
      } catch (const std::exception& e) {
        std::cerr << "kvcheck contract: " << e.what() << "\n";
        return 2;
      }
    try {  // a family named by neither option is left out when the other is given
      if (!contract_formats.empty() || !contract_kv_dtypes.empty()) contract.contract_scope = {0, 0};
      for (const std::string& f : contract_formats) contract.contract_scope.formats |= kvcheck::format_bit_by_name(f);
      for (const std::string& d : contract_kv_dtypes)
        contract.contract_scope.kv_dtypes |= kvcheck::kv_dtype_bit_by_name(d);
    } catch (const std::exception& e) {
      std::cerr << "kvcheck contract: " << e.what() << "\n";
      return 2;
    }
    contract.backends = {kvcheck::contract_name(contract_writer, contract_reader)};
    contract.within = {"round_trip", "kv_step"};
    // A failure's reproduce line reruns this command, scope included: the same case is
    // drawn only inside the same --format/--kv-dtype scope ("Unable to reproduce" under
    // `run --backend W-to-R`, whose pair covers everything).
    contract.rerun = fmt::format("./kvcheck contract --writer {} --reader {}", kvcheck::tool::shell_word(contract_writer),
                                 kvcheck::tool::shell_word(contract_reader));
    for (const std::string& f : contract_formats) contract.rerun += " --format " + kvcheck::tool::shell_word(f);
    for (const std::string& d : contract_kv_dtypes) contract.rerun += " --kv-dtype " + kvcheck::tool::shell_word(d);
    contract.plugin_run = true;
    contract.progress = !contract_quiet;
    if (contract_seed_opt->count() > 0) contract.seed = contract_seed;
    return kvcheck::tool::run_campaign(contract, std::cout, std::cerr);
  }
  if (recipes_list->parsed()) {
    kvcheck::tool::list_recipes(std::cout);
    return 0;
  }
  if (recipes_diff->parsed()) return kvcheck::tool::diff_recipes(recipe_diff, std::cout, std::cerr);
  if (record_start->parsed()) return kvcheck::tool::record_start(record_kind, record_work, std::cout, std::cerr);
  if (record_finish->parsed())
    return kvcheck::tool::record_finish(record_dir, record_verdict, record_junit, std::cerr);

  if (run_cmd->parsed()) {
    if (list) return kvcheck::tool::list_properties(run.properties, std::cout);
    if (seed_opt->count() > 0) run.seed = seed;
    run.progress = !quiet;
    run.plugin_run = !plugins.empty();
    run.isolate = !in_process;
    if (const auto s = kvcheck::tool::parse_shard(shard)) std::tie(run.shard_index, run.shard_count) = *s;
    if (devices_opt->count() > 0) {
      std::vector<std::string> devices;
      try {
        devices = kvcheck::tool::parse_devices(devices_text);
      } catch (const std::exception& e) {
        std::cerr << "kvcheck run: " << e.what() << "\n";
        return 2;
      }
      // The workers get this run's options but the ones each worker is given its own of.
      std::vector<std::string> worker_args;
      const std::set<std::string> own = {"--devices", "--report", "--junit", "--work-dir", "--seed"};
      for (int i = 2; i < argc; ++i) {
        const std::string a = argv[i];
        const std::string name = a.substr(0, a.find('='));
        if (own.count(name)) {
          if (a.find('=') == std::string::npos) ++i;  // and its value
          continue;
        }
        worker_args.push_back(a);
      }
      // The pairs the workers share: nothing to share is refused as the run itself would.
      const int pairs = kvcheck::tool::selected_pairs(run);
      if (pairs <= 0) return kvcheck::tool::run_campaign(run, std::cout, std::cerr);
      const uint64_t worker_seed =
          run.seed.value_or(static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count()));
      return kvcheck::tool::run_on_devices("/proc/self/exe", worker_args, devices, static_cast<size_t>(pairs),
                                           worker_seed, run.work_dir,
                                           run.report_path, run.junit_path, std::cout);
    }
    return kvcheck::tool::run_campaign(run, std::cout, std::cerr);
  }
  return 0;
}
