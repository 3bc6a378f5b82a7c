#!/usr/bin/env bash
# ./kvcheck fuzz [TARGET...] [--seconds N] [--jobs J] [--junit FILE] [--work-dir DIR]
# Builds the libFuzzer targets (clang-14, ASan+UBSan) in build-fuzz if needed and runs
# each target for N seconds (default 60) with J workers (default 1; J > 1: libFuzzer
# fork mode). The tracked corpus/<target>/ is only read: everything a run makes goes
# to a run directory .kvcheck-work/runs/<time>-fuzz-<pid>/ (latest: .kvcheck-work/latest-fuzz):
# per target fuzz.log, coverage-start.log, coverage-end.log, merge.log, artifacts/,
# merged/ (new inputs that add coverage edges over the tracked corpus, most edges
# first, at most the room left in its corpus/BUDGET), over-budget/ (the other ones),
# crash-N.log (the sanitizer or kvcheck report of each minimised crash);
# regressions/<target>/ (the minimised crashes); summary.json (schema kvcheck-summary,
# rewritten after each target, "interrupted" on Ctrl-C, with the executions the
# interrupted target reached). Keep results with ./kvcheck corpus merge / keep.
# Env: KVCHECK_FUZZ_BACKEND (default: the first backend $KVCHECK_PLUGIN loads, else cpu), KVCHECK_FUZZ_MINIMIZE (crashes minimised per
# target, default 3), KVCHECK_FUZZ_KEEP_NEW=1 (keep the raw new/ inputs), KVCHECK_WORK_DIR.
# Exit status 0, 1 when a target crashed, 2 on bad options, 130 when interrupted.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=tools/lib.sh
source "$ROOT/tools/lib.sh"
USAGE="./kvcheck fuzz [TARGET...] [--seconds N] [--jobs J] [--junit FILE] [--work-dir DIR]"
SECONDS_PER_TARGET=60
JOBS=1
JUNIT=""
TARGETS=()

while (($#)); do
  case "$1" in
    --seconds | --jobs | --junit | --work-dir) need_value fuzz "$USAGE" "$1" $# ;;&
    --seconds) SECONDS_PER_TARGET="$2"; shift 2 ;;
    --seconds=*) SECONDS_PER_TARGET="${1#*=}"; shift ;;
    --jobs) JOBS="$2"; shift 2 ;;
    --jobs=*) JOBS="${1#*=}"; shift ;;
    --junit) JUNIT="$2"; shift 2 ;;
    --junit=*) JUNIT="${1#*=}"; shift ;;
    --work-dir) WORK_DIR="$2"; shift 2 ;;
    --work-dir=*) WORK_DIR="${1#*=}"; shift ;;
    -h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) bad_usage fuzz "$USAGE" "unknown option $1" ;;
    *) TARGETS+=("$1"); shift ;;
  esac
done
check_seconds fuzz "$USAGE" --seconds "$SECONDS_PER_TARGET"
check_int fuzz "$USAGE" --jobs "$JOBS" 1 256
SECONDS_PER_TARGET=$(whole_seconds "$SECONDS_PER_TARGET")  # libFuzzer's -max_total_time
JOBS=$((10#$JOBS))
((${#TARGETS[@]})) || mapfile -t TARGETS < <(all_targets)
check_targets fuzz "$USAGE" "${TARGETS[@]}"
if [[ -n $JUNIT ]]; then
  [[ -d $(dirname "$JUNIT") ]] || bad_usage fuzz "$USAGE" "--junit $JUNIT: no directory $(dirname "$JUNIT")"
  JUNIT="$(cd "$(dirname "$JUNIT")" && pwd)/$(basename "$JUNIT")"
fi

mkdir -p "$WORK_DIR"
WORK_DIR="$(cd "$WORK_DIR" && pwd)"  # the run directory's paths stay valid after cd
ensure_packages
build_fuzz "${TARGETS[@]}"
KVCHECK_TOOL="$FUZZ_BUILD/tools/kvcheck/kvcheck"
RUN="$("$KVCHECK_TOOL" record start fuzz --work-dir "$WORK_DIR")"
echo "kvcheck fuzz: run directory $RUN" >&2

# The plugins as absolute paths: each target runs from its own run directory.
absolute_plugin_paths
# reproduce_line INPUT: the command that replays INPUT on this target, every word quoted
# for the shell (a plugin path with a space or a quote pastes back as it is), the
# plugins named as KVCHECK_PLUGIN=... in front.
reproduce_line() {
  [[ -n ${KVCHECK_PLUGIN:-} ]] && printf 'KVCHECK_PLUGIN=%q ' "$KVCHECK_PLUGIN"
  printf '%q %q' "$bin" "$1"
}
# The backend the target said it tests (fuzzers/checks.cpp prints it once per process).
tested_backend() {
  local b
  b=$(sed -n 's/^kvcheck: backend under test: //p' "$dir/fuzz.log" "$dir/coverage-start.log" 2>/dev/null | head -1)
  echo "${b:-${KVCHECK_FUZZ_BACKEND:-cpu}}"
}

SUMMARY=()
status=0
child=""
finish() {  # finish VERDICT
  "$KVCHECK_TOOL" record finish "$RUN" "$1" ${JUNIT:+--junit "$JUNIT"} || status=2
}
on_signal() {
  if [[ -n $child ]]; then kill "$child" 2>/dev/null || true; wait "$child" 2>/dev/null || true; fi
  trap - INT TERM
  if [[ -n ${current:-} ]]; then  # the target that was running: not finished, logs kept
    # What it reached: the executions in its fuzz.log (libFuzzer prints its final stats
    # when the signal stops it), any raw crash not minimised; no merge.
    read -r execs rate seed <<<"$(fuzz_log_figures "$dir/fuzz.log")"
    verdict=not_run
    [[ $execs != null ]] && ((execs > 0)) && verdict=pass
    for a in "$dir"/artifacts/*; do
      [[ -f $a ]] || continue
      verdict=fail
      failures+=("$(jq -cn --arg artifact "$a" --arg reproduce "$(reproduce_line "$a")" \
        '{message: "crash (interrupted before minimisation)", artifact: $artifact, reproduce: $reproduce}')")
    done
    added=null
    record_result "$verdict" interrupted
  fi
  finish interrupted
  echo "kvcheck fuzz: interrupted; partial summary in $RUN/summary.json" >&2
  exit 130
}
trap on_signal INT TERM
# record_result VERDICT [WHY]: appends the current target's result (the figures so far,
# null where not reached) to results.jsonl.
record_result() {
  jq -cn --arg name "$t" --arg verdict "$1" --arg why "${2:-}" \
    --argjson seconds "$(($(date +%s) - start))" --argjson execs "${execs:-null}" --argjson rate "${rate:-null}" \
    --argjson seed "${seed:-null}" \
    --argjson cov0 "${cov0:-null}" --argjson ft0 "${ft0:-null}" --argjson cov1 "${cov1:-null}" \
    --argjson ft1 "${ft1:-null}" --argjson added "${added:-null}" --argjson jobs "$JOBS" \
    --argjson by_features "${by_features:-null}" --argjson by_edges "${by_edges:-null}" \
    --argjson over "${over:-null}" --argjson bi "${bi:-null}" --argjson bb "${bb:-null}" \
    --argjson tracked "${tracked:-null}" --argjson tracked_bytes "${tracked_bytes:-null}" \
    --argjson budget "$SECONDS_PER_TARGET" --arg dir "$dir" --arg backend "$(tested_backend)" \
    --arg replay "$replay" --argjson failures "[$(IFS=,; echo "${failures[*]:-}")]" \
    '{name: $name, kind: "fuzz_target", op: $name, backend: $backend, verdict: $verdict, seconds: $seconds,
      budget_seconds: $budget, jobs: $jobs, seed: $seed, execs: $execs, execs_per_second: $rate,
      coverage: {start: {edges: $cov0, features: $ft0}, end: {edges: $cov1, features: $ft1}},
      new_inputs: $added, new_inputs_dir: ($dir + "/merged"),
      new_inputs_adding_features: $by_features, new_inputs_adding_edges: $by_edges, new_inputs_over_budget: $over,
      corpus_budget: {max_inputs: $bi, max_bytes: $bb, tracked_inputs: $tracked, tracked_bytes: $tracked_bytes},
      tracked_corpus_replay: (if $replay == "" then null else $replay end), logs: $dir, failures: $failures}
     + (if $why == "" then {} else {why: $why} end)' \
    >>"$RUN/results.jsonl"
}
# run_logged LOG CMD...: runs CMD in the background (so a signal is handled at once)
# with its output in LOG; returns its exit status.
run_logged() {
  local log=$1
  shift
  "$@" >"$log" 2>&1 &
  child=$!
  local rc=0
  wait "$child" || rc=$?
  child=""
  return $rc
}

current=""
for t in "${TARGETS[@]}"; do
  current=$t
  bin="$FUZZ_BUILD/fuzzers/fuzz_$t"
  corpus="$ROOT/corpus/$t"
  dir="$RUN/$t"
  mkdir -p "$dir/new" "$dir/artifacts" "$dir/merged"
  # Every libFuzzer call of this target runs from its run directory: one given inputs to
  # run (the corpus replays, the minimised input's report) or minimising writes each
  # crashing input as crash-<sha1> into the working directory, which was the source
  # tree (a crashing target left 119 of them there, ignored by git, during the suite).
  cd "$dir"
  # This target's figures, null until reached (an interrupt records what is set).
  execs="" rate="" seed="" cov0="" ft0="" cov1="" ft1="" added="" by_features="" by_edges="" over=""
  bi="" bb="" tracked="" tracked_bytes="" replay="" failures=() start=$(date +%s)
  opts=()
  [[ -f $ROOT/fuzzers/fuzz_$t.options ]] &&
    mapfile -t opts < <(sed -n 's/^\([a-z_]*\) *= *\(.*\)$/-\1=\2/p' "$ROOT/fuzzers/fuzz_$t.options")
  echo "kvcheck fuzz: $t for ${SECONDS_PER_TARGET}s, $JOBS job(s)" >&2
  # Coverage of the tracked corpus alone (also a sanitizer replay of it).
  replay="pass"
  run_logged "$dir/coverage-start.log" "$bin" -runs=0 "$corpus" || replay="fail"
  read -r cov0 ft0 <<<"$(inited_coverage "$dir/coverage-start.log")" || true
  # A tracked input that crashes is a finding of its own (no coverage figure then).
  [[ $replay == pass ]] || echo "kvcheck fuzz: $t: the tracked corpus/$t/ itself fails (see $dir/coverage-start.log; ./kvcheck test -L replay)" >&2
  # New inputs go to the first corpus dir ($dir/new); corpus/<t> is only read.
  if ((JOBS > 1)); then
    mode=(-fork="$JOBS" -ignore_crashes=1)
  else
    mode=(-print_final_stats=1)
  fi
  run_logged "$dir/fuzz.log" "$bin" "${mode[@]}" "${opts[@]}" -max_total_time="$SECONDS_PER_TARGET" \
    -artifact_prefix="$dir/artifacts/" "$dir/new" "$corpus" || true
  # Figures: final stats (single job) or the last status line (fork mode).
  read -r execs rate seed <<<"$(fuzz_log_figures "$dir/fuzz.log")"
  run_logged "$dir/coverage-end.log" "$bin" -runs=0 "$corpus" "$dir/new" || true
  read -r cov1 ft1 <<<"$(inited_coverage "$dir/coverage-end.log")" || true
  # Which new inputs add coverage over the tracked corpus: merge into a copy of it
  # (libFuzzer keeps the inputs adding features, hit-count buckets included); its
  # control file says which add edges. merged/ gets those, most new edges first, up
  # to the room left in corpus/BUDGET; over-budget/ the rest (corpus merge --from).
  staging="$dir/staging"
  cp -r "$corpus/." "$staging/" 2>/dev/null || mkdir -p "$staging"
  before=$(find "$staging" -type f | wc -l)
  run_logged "$dir/merge.log" "$bin" -merge=1 -merge_control_file="$dir/merge.control" "$staging" "$dir/new" || true
  by_features=$(($(find "$staging" -type f | wc -l) - before))
  rm -rf "$staging"
  read -r bi bb <<<"$(corpus_budget "$t")"
  tracked=$(corpus_inputs "$t" | wc -l)
  tracked_bytes=$(bytes_of "$corpus")
  by_edges=0 added=0 over=0
  while read -r what _ _ f; do
    by_edges=$((by_edges + 1))
    if [[ $what == keep ]]; then
      added=$((added + 1))
    else
      over=$((over + 1))
      mkdir -p "$dir/over-budget"
    fi
    cp "$f" "$dir/$([[ $what == keep ]] && echo merged || echo over-budget)/cov-$(sha1sum "$f" | cut -c1-12)"
  done < <([[ -f $dir/merge.control ]] && budget_pick "$dir/merge.control" $((bi - tracked)) $((bb - tracked_bytes)))
  rm -f "$dir/merge.control"
  [[ ${KVCHECK_FUZZ_KEEP_NEW:-0} == 1 ]] || rm -rf "$dir/new"
  echo "kvcheck fuzz: $t: $by_features new input(s) add features over corpus/$t/, $by_edges of them edges;" \
    "kept $added in merged/ (budget $bi inputs, $tracked tracked)$( ((over)) &&
      echo "; $over over the budget in over-budget/ (./kvcheck corpus prune, or raise corpus/BUDGET)")" >&2
  crashes=0
  for a in "$dir"/artifacts/*; do
    [[ -f $a ]] || continue
    crashes=$((crashes + 1))
    status=1
    # Fork mode with -ignore_crashes collects a crash per failing job: minimise the first
    # few (KVCHECK_FUZZ_MINIMIZE, default 3); the others stay raw in artifacts/.
    if ((crashes > ${KVCHECK_FUZZ_MINIMIZE:-3})); then
      failures+=("$(jq -cn --arg artifact "$a" --arg reproduce "$(reproduce_line "$a")" \
        '{message: "not minimised (KVCHECK_FUZZ_MINIMIZE)", artifact: $artifact, reproduce: $reproduce}')")
      continue
    fi
    min="$dir/min-$crashes"
    run_logged "$dir/minimize-$crashes.log" "$bin" -minimize_crash=1 -runs=20000 -max_total_time=30 \
      -exact_artifact_path="$min" "$a" || true
    [[ -s $min ]] || cp "$a" "$min"
    name="$t-$(sha1sum "$min" | cut -c1-12)"
    mkdir -p "$RUN/regressions/$t"
    mv "$min" "$RUN/regressions/$t/$name"
    reg="$RUN/regressions/$t/$name"
    # The report of the minimised input: sanitizer output or kvcheck's decoded diff.
    run_logged "$dir/crash-$crashes.log" "$bin" "$reg" || true
    first="$(grep -m1 -E 'ERROR: (libFuzzer|AddressSanitizer|UndefinedBehaviorSanitizer|LeakSanitizer)|runtime error|==== kvcheck' \
      "$dir/crash-$crashes.log" || basename "$a")"
    # A kvcheck mismatch: add its decoded first difference to the one-line message.
    detail="$(grep -E '^(first differing|  at:|  expected:|  actual:|.*(differs|threw|changed))' \
      "$dir/crash-$crashes.log" | head -5 | sed 's/^ *//' | paste -sd ';' - || true)"
    [[ $first == *"==== kvcheck"* && -n $detail ]] && first="$first $detail"
    echo "kvcheck fuzz: $t crashed: $first" >&2
    echo "  minimised input: $reg" >&2
    echo "  triage: ./kvcheck explain $reg" >&2
    failures+=("$(jq -cn --arg message "$first" --arg artifact "$a" --arg file "$reg" \
      --arg log "$dir/crash-$crashes.log" \
      --arg reproduce "$(reproduce_line "$reg")" --arg explain "./kvcheck explain $reg" \
      '{message: $message, artifact: $artifact, regression_file: $file, log: $log,
        reproduce: $reproduce, explain: $explain}')")
  done
  cd "$ROOT"
  record_result "$([[ $crashes -gt 0 ]] && echo fail || echo pass)"
  current=""
  finish running
  SUMMARY+=("$(printf '%-12s %12s %10s %13s %13s %6s %8s' "$t" "${execs:-?}" "${rate:-?}" \
    "${cov0:-?}/${ft0:-?}" "${cov1:-?}/${ft1:-?}" "$added" "$crashes")")
done

trap - INT TERM
finish "$([[ $status -eq 1 ]] && echo fail || echo pass)"
printf '%-12s %12s %10s %13s %13s %6s %8s\n' target execs exec/s cov/ft-start cov/ft-end new crashes
printf '%s\n' "${SUMMARY[@]}"
echo "kvcheck fuzz: summary $RUN/summary.json${JUNIT:+, junit $JUNIT}" >&2
echo "kvcheck fuzz: keep what it found with ./kvcheck corpus merge (coverage) and ./kvcheck corpus keep $RUN (crashes)" >&2
exit $status
