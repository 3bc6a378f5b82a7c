#!/usr/bin/env bash
# tests/fuzz_script_test.sh ROOT KVCHECK_BIN PLUGIN: the parts of ./kvcheck fuzz (tools/fuzz.sh,
# tools/lib.sh) that a normal build tree can check without build-fuzz:
#  - fuzz_log_figures reads execs, exec/s and the seed off libFuzzer logs: final stats,
#    fork-mode status lines, a run killed before its final stats;
#  - budget_pick keeps the inputs adding the most edges within the corpus budget;
#  - the whole script, with a tiny libFuzzer target built here (clang-14) standing in for
#    build-fuzz (KVCHECK_FUZZ_NO_BUILD=1): Ctrl-C (SIGINT to the process group) after a
#    few seconds leaves summary.json "interrupted" with the executions reached; a short
#    clean run keeps at most the budget's room in merged/; a crash under a plugin path with
#    a space and a quote gives a reproduce line that splits back into its words.
# Prints "all fuzz script checks passed" (CTest's pass expression).
set -uo pipefail
ROOT=$1
KVCHECK_BIN=$2
PLUGIN=$3  # any plugin kvcheck loads (copied under an awkward name below)
# shellcheck source=tools/lib.sh
source "$ROOT/tools/lib.sh"
# Resolved (TMPDIR=/tmp/ or a symlink): the script writes the plugin path through
# realpath, and the reproduce line's check compares it as text.
TMP="$(cd "$(mktemp -d "${TMPDIR:-/tmp}/kvcheck-fuzz-test.XXXXXX")" && pwd -P)"
trap 'rm -rf "$TMP"' EXIT
fails=0
check() {  # check WHAT EXPECTED ACTUAL
  if [[ $2 == "$3" ]]; then echo "ok: $1"; else echo "FAIL: $1: expected '$2', got '$3'"; fails=$((fails + 1)); fi
}

# --- fuzz_log_figures on canned logs (known answers written by hand) ---
cat >"$TMP/final.log" <<'EOF'
INFO: Seed: 2638148355
#2	INITED cov: 10 ft: 11 corp: 1/2b exec/s: 0 rss: 26Mb
#65536	pulse  cov: 12 ft: 50 corp: 30/900b lim: 652 exec/s: 32768 rss: 27Mb
==9410== libFuzzer: run interrupted; exiting
stat::number_of_executed_units: 90210
stat::average_exec_per_sec:     30070
stat::new_units_added:          160
EOF
check "final stats win over status lines" "90210 30070 2638148355" "$(fuzz_log_figures "$TMP/final.log")"
cat >"$TMP/killed.log" <<'EOF'
INFO: Seed: 77
#2	INITED cov: 10 ft: 11 corp: 1/2b exec/s: 0 rss: 26Mb
#968992	REDUCE cov: 12 ft: 61 corp: 40/1140b lim: 4096 exec/s: 968992 rss: 27Mb L: 130/136 MS: 5 ChangeBit-
#1281179	NEW    cov: 12 ft: 62 corp: 41/1139b lim: 4096 exec/s: 640589 rss: 27Mb L: 135/135 MS: 2 CopyPart-Erase
EOF
check "killed before the final stats: the last status line" "1281179 640589 77" "$(fuzz_log_figures "$TMP/killed.log")"
cat >"$TMP/fork.log" <<'EOF'
INFO: Seed: 5
#100: cov: 1200 ft: 2600 corp: 20 exec/s 100 oom/timeout/crash: 0/0/0 time: 2s job: 1 dft_time: 0
#38372: cov: 1244 ft: 2735 corp: 30 exec/s 332 oom/timeout/crash: 0/0/0 time: 61s job: 12 dft_time: 0
EOF
check "fork mode: the last '#N:' line" "38372 332 5" "$(fuzz_log_figures "$TMP/fork.log")"
check "no log: every figure null" "null null null" "$(fuzz_log_figures "$TMP/no-such.log")"

# --- budget_pick on a canned control file: 2 tracked files, 4 new ones (sizes 9, 3, 5, 4) ---
cat >"$TMP/control" <<EOF
6
2
t/seed-a
t/seed-b
n/one
n/two
n/three
n/four
STARTED 0 10
FT 0 1 2 3
COV 0 1 2
STARTED 1 12
FT 1 4
COV 1 3
STARTED 2 9
FT 2 5 6 7
COV 2 4 5 6
STARTED 3 3
FT 3 8
STARTED 4 5
FT 4 9 10
COV 4 7
STARTED 5 4
FT 5 11
COV 5 8
EOF
# Edge-adders: one (3 edges, 9 B), three (1, 5 B), four (1, 4 B); two adds features only.
check "room 2: most edges first, then the smaller" "keep 3 9 n/one|keep 1 4 n/four|over 1 5 n/three" \
  "$(budget_pick "$TMP/control" 2 1000 | paste -sd '|' -)"
check "room in bytes: 8 bytes skip the 9-byte input" "over 3 9 n/one|keep 1 4 n/four|over 1 5 n/three" \
  "$(budget_pick "$TMP/control" 5 8 | paste -sd '|' -)"
check "no room: everything over" "3" "$(budget_pick "$TMP/control" -4 1000 | grep -c '^over')"

# --- the whole script with a stand-in target (real libFuzzer, real kvcheck record) ---
FB="$TMP/build-fuzz"
mkdir -p "$FB/fuzzers" "$FB/tools/kvcheck"
cat >"$TMP/standin.c" <<'EOF'
#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) {
  int s = 0;
  for (size_t i = 0; i < n; i++) s += d[i] == 'k' ? 2 : d[i] == 'v' && s > 3 ? 5 : 0;
  return s > 1000000;
}
EOF
clang-14 -fsanitize=fuzzer "$TMP/standin.c" -o "$FB/fuzzers/fuzz_store" || { echo "FAIL: clang-14 -fsanitize=fuzzer"; exit 1; }
ln -s "$KVCHECK_BIN" "$FB/tools/kvcheck/kvcheck"
export KVCHECK_FUZZ_NO_BUILD=1 KVCHECK_FUZZ_BUILD_DIR="$FB"

# A merge control file of this libFuzzer has the layout budget_pick reads.
mkdir -p "$TMP/c0" "$TMP/c1"
echo k >"$TMP/c0/seed"
"$FB/fuzzers/fuzz_store" -max_total_time=2 "$TMP/c1" >/dev/null 2>&1
"$FB/fuzzers/fuzz_store" -merge=1 -merge_control_file="$TMP/real.control" "$TMP/c0" "$TMP/c1" >/dev/null 2>&1
edges_new="$(budget_pick "$TMP/real.control" 1000 100000000 | awk '{s += $2} END {print s + 0}')"
check "real control file: c0 is the first directory" "1" "$(sed -n 2p "$TMP/real.control")"
((edges_new > 0)) && echo "ok: real control file: $edges_new new edges read" ||
  { echo "FAIL: no new edges read from $TMP/real.control"; fails=$((fails + 1)); }

# Ctrl-C: SIGINT to the script's process group (job control gives it its own).
set -m
KVCHECK_WORK_DIR="$TMP/work" "$ROOT/kvcheck" fuzz store --seconds 30 >"$TMP/int.out" 2>&1 &
pid=$!
set +m
for _ in $(seq 100); do [[ -f $TMP/work/latest-fuzz/store/fuzz.log ]] && break; sleep 0.2; done
sleep 3
kill -INT -- "-$pid"
wait "$pid"
check "interrupted run: exit 130" 130 $?
S="$TMP/work/latest-fuzz/summary.json"
check "interrupted run: summary verdict" interrupted "$(jq -r .verdict "$S")"
check "interrupted run: target cut short" "store interrupted pass" "$(jq -r '.results[0] | "\(.name) \(.why) \(.verdict)"' "$S")"
check "interrupted run: execs reached > 0" true "$(jq '.results[0].execs > 0 and .totals.execs == .results[0].execs' "$S")"
check "interrupted run: the seed" true "$(jq '.results[0].seed | type == "number"' "$S")"

# A short clean run: merged/ holds what it says, within the budget's room.
KVCHECK_WORK_DIR="$TMP/work" "$ROOT/kvcheck" fuzz store --seconds 2 >"$TMP/clean.out" 2>&1
check "clean run: exit 0" 0 $?
S="$TMP/work/latest-fuzz/summary.json"
R="$(jq '.results[0]' "$S")"
check "clean run: new_inputs = files in merged/" "$(find "$TMP/work/latest-fuzz/store/merged" -type f | wc -l)" \
  "$(jq .new_inputs <<<"$R")"
check "clean run: within the budget's room" true \
  "$(jq '.new_inputs <= .corpus_budget.max_inputs - .corpus_budget.tracked_inputs and
         .new_inputs + .new_inputs_over_budget == .new_inputs_adding_edges and
         .new_inputs_adding_edges <= .new_inputs_adding_features' <<<"$R")"
grep -q "kvcheck fuzz: store: .* add features over corpus/store/, .* edges; kept" "$TMP/clean.out" &&
  echo "ok: clean run: says what it kept" || { echo "FAIL: no kept line in"; cat "$TMP/clean.out"; fails=$((fails + 1)); }

# A crash with plugins whose path has a space and a quote: the reproduce line in
# summary.json splits back into the plugin path, the target and the regression file
# (a stand-in for fuzz_load that aborts on every input; kvcheck loads the plugin to
# record the run's backends).
cat >"$TMP/crash.c" <<'EOF'
#include <stdint.h>
#include <stdlib.h>
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) {
  if (n > 0) abort();
  return 0;
}
EOF
clang-14 -fsanitize=fuzzer "$TMP/crash.c" -o "$FB/fuzzers/fuzz_load" || { echo "FAIL: clang-14 crash stand-in"; exit 1; }
odd="$TMP/plugin dir/it's.so"
mkdir -p "$TMP/plugin dir" && cp "$PLUGIN" "$odd"
KVCHECK_PLUGIN="$odd" KVCHECK_FUZZ_BACKEND=cpu KVCHECK_WORK_DIR="$TMP/work" "$ROOT/kvcheck" fuzz load --seconds 5 \
  >"$TMP/crash.out" 2>&1
rc=$?
check "crashing run: exit 1" 1 "$rc"
((rc == 1)) || tail -20 "$TMP/crash.out"
S="$TMP/work/latest-fuzz/summary.json"
line="$(jq -r '.results[0].failures[0].reproduce' "$S")"
eval "words=($line)"
check "reproduce line: the plugin path as one word" "KVCHECK_PLUGIN=$odd" "${words[0]:-}"
check "reproduce line: the target" "$FB/fuzzers/fuzz_load" "${words[1]:-}"
check "reproduce line: the regression file" "$(jq -r '.results[0].failures[0].regression_file' "$S") 3" \
  "${words[2]:-} ${#words[@]}"

((fails == 0)) || { echo "$fails check(s) failed"; exit 1; }
echo "all fuzz script checks passed"
