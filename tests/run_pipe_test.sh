#!/usr/bin/env bash
# run_pipe_test.sh KVCHECK: `kvcheck run | head -1` — the reader goes away after the first
# line, so the run's later writes meet a closed pipe (SIGPIPE). The run used to die of it
# (exit 141) and leave summary.json at verdict "running" for good; it now finishes: its
# verdict is the results' (pass), the --report is complete and campaign.log holds the
# whole table the terminal did not get.
set -uo pipefail
kvcheck=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
KVCHECK_WORK_DIR="$work/w" "$kvcheck" run --backend cpu --property store --cases 3 --seed 1 --report "$work/r.json" |
  head -1 > "$work/first"
rc=${PIPESTATUS[0]}
verdict=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["verdict"])' "$work/r.json")
log=$(ls "$work"/w/runs/*/campaign.log)
echo "exit $rc, verdict $verdict; first line: $(cat "$work/first")"
tail -2 "$log"
[[ $rc -eq 0 && $verdict == pass ]] && grep -q "^all properties held" "$log"
