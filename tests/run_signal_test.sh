#!/usr/bin/env bash
# run_signal_test.sh KVCHECK SIGNAL: a `kvcheck run` sent SIGNAL mid-run exits 130 and
# leaves summary.json with verdict "interrupted" (docs/spec.md, the run record) — for
# SIGHUP too, where the run used to die with 129 and a summary still "running".
set -uo pipefail
kvcheck=$1 sig=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
KVCHECK_WORK_DIR="$work/w" "$kvcheck" run --backend cpu --seconds 60 --quiet --report "$work/r.json" > "$work/log" 2>&1 &
pid=$!
for _ in $(seq 100); do [[ -s "$work/r.json" ]] && break; sleep 0.1; done  # the run has started
sleep 1
kill "-$sig" "$pid"
wait "$pid"
rc=$?
verdict=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["verdict"])' "$work/r.json")
echo "exit $rc, verdict $verdict"
tail -3 "$work/log"
[[ $rc -eq 130 && $verdict == interrupted ]]
