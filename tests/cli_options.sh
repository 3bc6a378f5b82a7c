#!/usr/bin/env bash
# CTest cli.options (issue 12): every bad option of every command exits 2 with a
# usage line, before anything is built or run; every --help exits 0 and prints one.
# Usage: tests/cli_options.sh SOURCE_DIR KVCHECK_BINARY
set -uo pipefail
src=$1
bin=$2
failed=0

# expect CODE PATTERN CMD...: CMD exits CODE and its output matches PATTERN.
expect() {
  local code=$1 pattern=$2
  shift 2
  local out rc
  out="$(timeout 20 "$@" 2>&1 </dev/null)"
  rc=$?
  if [[ $rc != "$code" ]] || ! grep -qiE "$pattern" <<<"$out"; then
    echo "FAIL: '$*' exited $rc (want $code), output must match /$pattern/:"
    sed 's/^/    /' <<<"$out" | head -5
    failed=$((failed + 1))
  else
    echo "ok:   '$*' -> $rc"
  fi
}

k="$src/kvcheck"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

# quick CODE PATTERN ARGS...: `./kvcheck ARGS` in a tree with no build directory exits
# CODE with output matching PATTERN within a second, and builds nothing (issue 23).
quick() {
  local code=$1 pattern=$2 none="$scratch/no-build" t0 ms
  shift 2
  t0=$(date +%s%N)
  KVCHECK_BUILD_DIR="$none" expect "$code" "$pattern" "$k" "$@"
  ms=$((($(date +%s%N) - t0) / 1000000))
  if [[ -e $none ]] || ((ms >= 1000)); then
    echo "FAIL: './kvcheck $*' on an unbuilt tree took ${ms} ms and $([[ -e $none ]] && echo built || echo did not build)"
    failed=$((failed + 1))
  fi
}
quick 0 '^ +--seconds SECONDS +Time budget' run --help
quick 0 'usage: ./kvcheck explain \[options\] FILE' explain --help
quick 0 '^ +--plugin PLUGIN +Load' backends -h
quick 2 "unknown option '--bogus'" run --bogus
quick 2 'seconds must be a decimal number' run --seconds 1e3
quick 2 'seconds must be a decimal number' run --seconds=-1
quick 2 'cases must be an integer' run --cases 0
quick 2 'seed needs a value' run --seed
quick 2 'quiet takes no value' run --quiet=yes
quick 2 'plugin: File does not exist' backends --plugin /nonexistent/lib.so
quick 2 'FILE: is a directory, not a file: ' explain "$src/corpus"
quick 2 'missing FILE' explain
quick 2 "unexpected argument 'b'" explain "$src/README.md" b
quick 2 'seconds excludes --cases' run --cases 5 --seconds 3
quick 2 'report: cannot write /nonexistent-dir/x.json' run --report /nonexistent-dir/x.json
quick 2 'junit: cannot write /nonexistent-dir/x.xml' run --junit=/nonexistent-dir/x.xml

# Build output goes to stderr: stdout of ./kvcheck backends is the binary's alone
# (the build tree is the one $bin is in, up to date: nothing to rebuild).
bin_build="$(cd "$(dirname "$bin")/../.." && pwd)"
want="$("$bin" backends 2>/dev/null)"
got="$(KVCHECK_BUILD_DIR="$bin_build" "$k" backends 2>/dev/null </dev/null)"
if [[ $got != "$want" ]]; then
  echo "FAIL: ./kvcheck backends printed more than the binary on stdout:"
  diff <(echo "$want") <(echo "$got") | head -5 | sed 's/^/    /'
  failed=$((failed + 1))
else
  echo "ok:   ./kvcheck backends: stdout is the command's output only"
fi

# Driver commands whose options are checked by the shell scripts (no build happens).
expect 2 'usage:' "$k" fuzz --seconds abc store
expect 2 'usage:' "$k" fuzz --seconds
expect 2 'usage:' "$k" fuzz --seconds 0
expect 2 'usage:' "$k" fuzz --seconds 1e3
expect 2 'decimal number' "$k" fuzz --seconds 1234567890
expect 2 "no target 'no_such_target'" "$k" fuzz --seconds 2.5 no_such_target  # 2.5 is a budget
expect 2 'usage:' "$k" fuzz --jobs -1
expect 2 'usage:' "$k" fuzz --jobs two
expect 2 'usage:' "$k" fuzz --junit
expect 2 'usage:' "$k" fuzz --junit /nonexistent-dir/x.xml store
expect 2 'usage:.*|no target' "$k" fuzz no_such_target
expect 2 'usage:' "$k" fuzz --bogus
expect 2 'usage:' "$k" coverage --bogus
expect 2 'usage:' "$k" coverage no_such_target
expect 2 'usage:' "$k" bench --bogus
expect 2 'usage:' "$k" bench --benchmark_filter=x extra
expect 2 'usage:' "$k" corpus
expect 2 'usage:' "$k" corpus bogus
expect 2 'usage:' "$k" corpus stats no_such_target
expect 2 'usage:' "$k" corpus merge --from /nonexistent-dir
expect 2 'usage:' "$k" corpus merge --from
expect 2 'not a run directory' "$k" corpus merge --from "$src/corpus/store"
expect 2 'usage:' "$k" corpus keep
expect 2 'usage:' "$k" corpus keep /nonexistent-run
expect 2 'usage:' "$k" corpus stats --dry-run
expect 2 'usage:' "$k" corpus prune --bogus
expect 2 'usage:' "$k" build extra
expect 2 'usage:' "$k" test --bogus
expect 2 'usage:' "$k" test -R
expect 2 'usage:|unknown command' "$k" bogus
# --help of every driver command that does not need a build.
expect 0 'usage:|kvcheck fuzz' "$k" fuzz --help
expect 0 'kvcheck coverage' "$k" coverage --help
expect 0 'kvcheck corpus' "$k" corpus --help
expect 0 'kvcheck corpus' "$k" corpus merge --help
expect 0 'usage:' "$k" bench --help
expect 0 'usage:' "$k" test --help
expect 0 'kvcheck test' "$k" help
# The binary's own commands (CLI11), checked before anything runs.
expect 2 'seconds' "$bin" run --seconds abc
# The binary's own parse errors name their command, as the wrapper's do.
expect 2 '^kvcheck contract: --reader is required' "$bin" contract --writer cpu
expect 2 '^kvcheck summary merge: SUMMARY is required' "$bin" summary merge
expect 2 "^kvcheck run: --backend: 'cpu' is given twice" "$bin" run --backend cpu --backend cpu --cases 1
expect 2 'seconds' "$bin" run --seconds
expect 2 'decimal number' "$bin" run --seconds 1e3
expect 2 'decimal number' "$bin" run --seconds nan
expect 2 '' "$bin" run --cases 5 --seconds 5
expect 2 'junit' "$bin" run --junit ''
expect 2 'cannot write' "$bin" run --cases 1 --property layout --junit /nonexistent-dir/x.xml
expect 2 'cannot write' "$bin" run --cases 1 --property layout --report /nonexistent-dir/x.json
expect 2 '' "$bin" run --bogus
expect 2 '' "$bin" junit /nonexistent/summary.json out.xml
expect 2 '' "$bin" record finish /nonexistent-run pass
expect 2 '' "$bin" record finish "$src" maybe
expect 2 '' "$bin" record start neither
for sub in run explain backends junit record; do
  expect 0 'usage|options' "$bin" "$sub" --help
done

if ((failed)); then
  echo "$failed check(s) failed"
  exit 1
fi
echo "all option checks passed"
