#!/usr/bin/env bash
# crash_reproduce.sh KVCHECK PLUGIN REPLAY_STORE: a crashing plugin's campaign report
# names the minimal case (one row), and what it hands the user reproduces the crash:
# the `reproduce:` command fails again with the same crash, and the regression file
# crashes the store replay. Run directories go to a temporary work area.
set -euo pipefail
kvcheck=$1 plugin=$2 replay=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export KVCHECK_WORK_DIR=$work
set +e
report=$("$kvcheck" run --plugin "$plugin" --backend crash --property prop_store_matches_reference --cases 5 \
         --quiet --seed 1 2>&1)
rc=$?
set -e
printf '%s\n' "$report"
[[ $rc -eq 1 ]] || { echo "crash_reproduce.sh: the campaign exited $rc, expected 1" >&2; exit 1; }
need() { grep -Eq -- "$1" <<<"$2" || { echo "crash_reproduce.sh: no match for: $1" >&2; exit 1; }; }
crash='the backend crashed: (signal 11 [(]Segmentation fault[)]|signal 6 [(]Aborted[)]|the case.s process exited with status 1)'
need 'minimal crashing case' "$report"
need ' n=1 row_stride=[0-9]+ .*slot_mapping=\[-?[0-9]+\]' "$report"
need "$crash" "$report"
need 'replayed from the file: fails, as it should' "$report"
scenario=$(grep -Eo ' n=1 row_stride=[0-9]+ .*slot_mapping=\[-?[0-9]+\]' <<<"$report" | head -1)
params=$(grep -Eo 'RC_PARAMS="reproduce=[^"]*"' <<<"$report" | head -1 | sed 's/^RC_PARAMS="//; s/"$//')
[[ -n $params ]] || { echo "crash_reproduce.sh: no RC_PARAMS=\"reproduce=...\" in the report" >&2; exit 1; }
# The reproduce line, as printed (./kvcheck is this build's binary).
set +e
again=$(KVCHECK_PLUGIN=$plugin RC_PARAMS=$params "$kvcheck" run --property prop_store_matches_reference --backend crash \
        --quiet 2>&1)
rc=$?
set -e
printf '%s\n' "--- reproduce:" "$again"
[[ $rc -eq 1 ]] || { echo "crash_reproduce.sh: the reproduce command exited $rc, expected 1" >&2; exit 1; }
need "$crash" "$again"
grep -Fq -- "$scenario" <<<"$again" || { echo "crash_reproduce.sh: the reproduce run shows another case" >&2; exit 1; }
# The regression file replays as a crash (a signal, or ASan's exit status).
file=$(grep -Eo 'regression file: [^ ]+\.json' <<<"$report" | head -1 | sed 's/^regression file: //')
set +e
replayed=$(KVCHECK_PLUGIN=$plugin "$replay" "$file" 2>&1)
rc=$?
set -e
echo "--- the store replay of $file exited $rc"
if (( rc < 128 )) && ! grep -q AddressSanitizer <<<"$replayed"; then
  printf '%s\n' "$replayed"
  echo "crash_reproduce.sh: replaying the regression file did not crash (exit $rc)" >&2
  exit 1
fi
echo "the minimal crashing case reached the report and reproduces the crash"
