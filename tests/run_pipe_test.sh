#!/usr/bin/env bash
# run_pipe_test.sh KVCHECK [pass | devices | fail PLUGIN]: `kvcheck ... | head -1` — the
# reader goes away after the first line, so later writes meet a closed pipe (SIGPIPE).
#   pass     `run` used to die of it (exit 141) and could leave summary.json "running";
#            it now finishes with its results' verdict, and campaign.log holds the table.
#   devices  `run --devices 0,1`: the parent died with 141 before merging (no report).
#   fail     a failing `contract` (the bad-reader PLUGIN): a flush after the FAIL block
#            met the closed pipe, the stream went bad and campaign.log stopped there; the
#            log now ends with the verdict and the summary line.
set -uo pipefail
kvcheck=$1 mode=${2:-pass} plugin=${3:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
case $mode in
  pass) args=(run --backend cpu --property store --cases 3 --seed 1) ;;
  devices) args=(run --backend cpu --property store --cases 3 --seed 1 --devices 0,1) ;;
  fail) args=(contract --writer cpu --reader bad-reader --plugin "$plugin" --format FP8_DS_MLA
              --property prop_round_trip_matches_reference --cases 20 --seed 3) ;;
  *) echo "run_pipe_test.sh: mode pass, devices or fail"; exit 2 ;;
esac
KVCHECK_WORK_DIR="$work/w" "$kvcheck" "${args[@]}" --report "$work/r.json" | head -1 > "$work/first"
rc=${PIPESTATUS[0]}
verdict=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["verdict"])' "$work/r.json" 2>&1)
echo "exit $rc, verdict $verdict; first line: $(cat "$work/first")"
case $mode in
  pass)
    log=$(ls "$work"/w/runs/*/campaign.log)
    tail -2 "$log"
    [[ $rc -eq 0 && $verdict == pass ]] && grep -q "^all properties held" "$log" && grep -q "^summary: " "$log" ;;
  devices) [[ $rc -eq 0 && $verdict == pass ]] ;;
  fail)
    log=$(ls "$work"/w/runs/*/campaign.log)
    tail -3 "$log"
    # 1 when the pipe closed only at the end, 130 when the FAIL block's flush met it.
    [[ ($rc -eq 1 && $verdict == fail) || ($rc -eq 130 && $verdict == interrupted) ]] &&
      grep -Eq "^(FAILED|INTERRUPTED) in " "$log" && grep -q "^summary: " "$log" ;;
esac
