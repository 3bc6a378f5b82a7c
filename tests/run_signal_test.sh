#!/usr/bin/env bash
# run_signal_test.sh KVCHECK SIGNAL [SLOW_PLUGIN [cpu|none]]: a `kvcheck run` sent SIGNAL
# mid-run exits 130 and leaves summary.json with verdict "interrupted" (docs/spec.md, the
# run record) — for SIGHUP too, where the run used to die with 129 and a summary still
# "running". With SLOW_PLUGIN (a plugin whose probe hangs, at KVCHECK_PLUGIN_TIMEOUT=60)
# the signal comes while the backends load, before any summary exists: the run used to
# die there by the signal, leaving no summary and an old --report in place. It must
# stop at once (the probe's child is killed), not at the 60 s limit; with `none` (no
# --backend: the hung plugin was the run's only backend) nothing can run and the
# report says interrupted all the same.
set -uo pipefail
kvcheck=$1 sig=$2 slow=${3:-} which=${4:-cpu}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [[ -n $slow ]]; then
  echo '{"verdict": "pass"}' > "$work/r.json"  # an old report, which must not survive as the answer
  backend=(--backend cpu)
  [[ $which == none ]] && backend=()
  KVCHECK_PLUGIN_TIMEOUT=60 KVCHECK_WORK_DIR="$work/w" "$kvcheck" run --plugin "$slow" "${backend[@]}" --cases 5 \
    --quiet --property prop_store_matches_reference --report "$work/r.json" > "$work/log" 2>&1 &
  pid=$!
  sleep 1  # inside the probe: nothing written yet
  [[ ! -e "$work/w" ]] || { echo "the run directory exists already: not the early window"; exit 1; }
else
  KVCHECK_WORK_DIR="$work/w" "$kvcheck" run --backend cpu --seconds 60 --quiet --report "$work/r.json" > "$work/log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do [[ -s "$work/r.json" ]] && break; sleep 0.1; done  # the run has started
  sleep 1
fi
kill "-$sig" "$pid"
t0=$SECONDS
wait "$pid"
rc=$?
if (( SECONDS - t0 > 10 )); then echo "the stop took $((SECONDS - t0)) s"; exit 1; fi
verdict=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["verdict"])' "$work/r.json")
echo "exit $rc, verdict $verdict"
tail -3 "$work/log"
[[ $rc -eq 130 && $verdict == interrupted ]]
