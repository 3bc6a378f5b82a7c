// `kvcheck explain FILE [--target T]`: decodes a corpus or crash file with the fuzzers'
// decoder into a readable scenario, runs it, and prints the decoded first difference
// when it fails.
#pragma once

#include <ostream>
#include <string>

namespace kvcheck {

/// Explains one fuzz input, or one property regression file (*.json, replayed
/// through its property: prints the scenario one field a line, long arrays and kv rows
/// abbreviated, then its decoded one-line form, and PASS or the failure). `target` "" = guess from the path: the directory after
/// corpus/ (corpus/<target>/..., regressions/ included), else a file name starting
/// with "<target>-" or "fuzz_<target>". Runs on the backend named by
/// $KVCHECK_FUZZ_BACKEND (default: the first plugin loaded, else cpu); a regression file
/// that failed on a "<writer>-to-<reader>" pair, on that pair when $KVCHECK_FUZZ_BACKEND
/// is unset, and not exercised (exit 1) when a side is not loaded. A pass on another
/// backend than the one it failed on reads "PASS on B (it failed on A)". Returns 0 when the input passes, 1 when it
/// fails (report written to `out`), 2 when the file or the target is unusable.
int explain_file(const std::string& path, const std::string& target, std::ostream& out);

}  // namespace kvcheck
