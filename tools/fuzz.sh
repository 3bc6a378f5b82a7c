#!/usr/bin/env bash
# ./kvcheck fuzz [TARGET...] [--seconds N] [--jobs J]
# Builds the libFuzzer targets (clang-14, ASan+UBSan) in build-fuzz if needed, runs each
# target for N seconds with J workers (libFuzzer fork mode), merges inputs that add
# coverage into corpus/<target>/ (-merge=1), minimises every crash into
# corpus/<target>/regressions/<target>-<sha1 prefix>, and prints a summary.
# Exit status 1 when any target crashed. Env: KVCHECK_FUZZ_BUILD_DIR, KVCHECK_FUZZ_BACKEND.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${KVCHECK_FUZZ_BUILD_DIR:-$ROOT/build-fuzz}"
SECONDS_PER_TARGET=60
JOBS=1
TARGETS=()

all_targets() {
  local f
  for f in "$ROOT"/fuzzers/fuzz_*.cpp; do
    f="$(basename "$f" .cpp)"
    [[ $f == fuzz_data ]] || echo "${f#fuzz_}"
  done
}

while (($#)); do
  case "$1" in
    --seconds) SECONDS_PER_TARGET="$2"; shift 2 ;;
    --seconds=*) SECONDS_PER_TARGET="${1#*=}"; shift ;;
    --jobs) JOBS="$2"; shift 2 ;;
    --jobs=*) JOBS="${1#*=}"; shift ;;
    -h | --help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "kvcheck fuzz: unknown option $1" >&2; exit 2 ;;
    *) TARGETS+=("$1"); shift ;;
  esac
done
((${#TARGETS[@]})) || mapfile -t TARGETS < <(all_targets)
for t in "${TARGETS[@]}"; do
  [[ -f $ROOT/fuzzers/fuzz_$t.cpp ]] || {
    echo "kvcheck fuzz: no target '$t' (have: $(all_targets | tr '\n' ' '))" >&2
    exit 2
  }
done

if [[ ! -f $BUILD/build.ninja ]]; then
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
    -DKVCHECK_FUZZ=ON -DKVCHECK_CUDA=OFF -DKVCHECK_BENCH=OFF >&2
fi
cmake --build "$BUILD" -j "${KVCHECK_JOBS:-$(nproc)}" --target "${TARGETS[@]/#/fuzz_}" >&2

WORK="$(mktemp -d "${TMPDIR:-/tmp}/kvcheck-fuzz.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
SUMMARY=()
status=0

for t in "${TARGETS[@]}"; do
  bin="$BUILD/fuzzers/fuzz_$t"
  corpus="$ROOT/corpus/$t"
  mkdir -p "$corpus/regressions" "$WORK/$t/new" "$WORK/$t/artifacts"
  opts=()
  [[ -f $ROOT/fuzzers/fuzz_$t.options ]] &&
    mapfile -t opts < <(sed -n 's/^\([a-z_]*\) *= *\(.*\)$/-\1=\2/p' "$ROOT/fuzzers/fuzz_$t.options")
  echo "kvcheck fuzz: $t for ${SECONDS_PER_TARGET}s, $JOBS job(s)" >&2
  log="$WORK/$t/log"
  # New inputs go to the first corpus dir ($WORK/.../new); corpus/<t> is read only here.
  if ((JOBS > 1)); then
    mode=(-fork="$JOBS" -ignore_crashes=1)
  else
    mode=(-print_final_stats=1)
  fi
  set +e
  (cd "$WORK/$t" && "$bin" "${mode[@]}" "${opts[@]}" -max_total_time="$SECONDS_PER_TARGET" \
    -artifact_prefix="$WORK/$t/artifacts/" "$WORK/$t/new" "$corpus") >"$log" 2>&1
  set -e
  # Figures: final stats (single job) or the last fork status line "#N: ... exec/s E".
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
  rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)"
  if [[ -z $execs ]]; then
    line="$(grep -E '^#[0-9]+: cov' "$log" | tail -1 || true)"
    execs="$(sed -n 's/^#\([0-9]*\):.*/\1/p' <<<"$line")"
    rate="$(sed -n 's/.*exec\/s \([0-9]*\).*/\1/p' <<<"$line")"
  fi
  before=$(find "$corpus" -type f | wc -l)
  "$bin" -merge=1 "$corpus" "$WORK/$t/new" >"$WORK/$t/merge.log" 2>&1 || true
  # Merged files land at the top of corpus/<t>; regressions stay where they are.
  added=$(($(find "$corpus" -type f | wc -l) - before))
  crashes=0
  for a in "$WORK/$t"/artifacts/*; do
    [[ -f $a ]] || continue
    crashes=$((crashes + 1))
    min="$WORK/$t/min-$crashes"
    "$bin" -minimize_crash=1 -runs=20000 -max_total_time=60 -exact_artifact_path="$min" "$a" \
      >"$WORK/$t/minimize-$crashes.log" 2>&1 || true
    [[ -s $min ]] || cp "$a" "$min"
    name="$t-$(sha1sum "$min" | cut -c1-12)"
    cp "$min" "$corpus/regressions/$name"
    echo "kvcheck fuzz: $t crashed; minimised input: corpus/$t/regressions/$name" >&2
    echo "  triage: ./kvcheck explain corpus/$t/regressions/$name" >&2
    grep -m1 -E 'ERROR: (libFuzzer|AddressSanitizer|UndefinedBehaviorSanitizer)|runtime error|==== kvcheck' \
      "$log" >&2 || true
    status=1
  done
  SUMMARY+=("$(printf '%-12s %12s %10s %8s %8s' "$t" "${execs:-?}" "${rate:-?}" "$added" "$crashes")")
done

printf '%-12s %12s %10s %8s %8s\n' target execs exec/s new crashes
printf '%s\n' "${SUMMARY[@]}"
exit $status
