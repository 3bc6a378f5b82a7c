// The declared options of `kvcheck run`, `backends` and `explain`
// (tools/kvcheck/options.txt, embedded at build time): main.cpp builds its CLI11
// parser from them; the ./kvcheck driver reads the same file before any build.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kvcheck::tool {

struct OptionSpec {
  std::string command;  // run | backends | explain
  std::string name;     // --seconds, FILE (positional) or "about" (the command's description)
  std::string type;     // flag | seconds | count | uint | text | file | path | -
  std::string help;
};

/// Parses the options.txt format (one spec per command of a COMMAND[,COMMAND] list);
/// throws std::runtime_error naming the line when one is malformed.
std::vector<OptionSpec> parse_option_specs(std::string_view text);

/// The text of tools/kvcheck/options.txt as this binary was built with it.
std::string_view option_specs_text();

/// "" when `value` is a decimal number > 0 and below 10^9, without sign or exponent (10,
/// 2.5, .5), else why not: the one rule for every --seconds (`run` here; the driver and
/// `fuzz` in tools/lib.sh check_seconds).
std::string check_seconds(const std::string& value);

/// "" when `value` is a decimal integer in [min, max] (digits only: no sign, no exponent,
/// nothing CLI11 would wrap or clamp: --seed 18446744073709551616 ran seed 2^64 - 1),
/// else why not: every count, seed and cases option.
std::string check_integer(const std::string& value, uint64_t min, uint64_t max);

}  // namespace kvcheck::tool
