#!/usr/bin/env bash
# contract_reproduce.sh KVCHECK BAD_READER_PLUGIN: a failure of `kvcheck contract
# --format F` prints a reproduce line that reruns the contract in the same scope (it
# named `kvcheck run --backend W-to-R`, whose pair covers every format: RapidCheck drew
# another case, "Unable to reproduce minimum value"), and that line, run as printed,
# fails again on the same minimal case.
set -uo pipefail
kvcheck=$1 plugin=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export KVCHECK_WORK_DIR=$work
report=$("$kvcheck" contract --writer cpu --reader bad-reader --plugin "$plugin" --format FP8_DS_MLA \
         --property prop_round_trip_matches_reference --cases 20 --seed 3 --quiet 2>&1)
rc=$?
printf '%s\n' "$report"
fail() { echo "contract_reproduce.sh: $*" >&2; exit 1; }
[[ $rc -eq 1 ]] || fail "the contract exited $rc, expected 1"
line=$(grep -E '^reproduce: ' <<<"$report" | head -1 | sed 's/^reproduce: //')
grep -Eq -- '\./kvcheck contract --writer cpu --reader bad-reader --format FP8_DS_MLA --property prop_round_trip_matches_reference$' \
  <<<"$line" || fail "the reproduce line does not rerun the contract in its scope: $line"
case=$(grep -Eo '^store \{format FP8_DS_MLA[^}]*\} n=[0-9]+' <<<"$report" | head -1)
[[ -n $case ]] || fail "no FP8_DS_MLA minimal case in the report"
# The line as printed, ./kvcheck being this build's binary.
again=$(eval "${line/.\/kvcheck/\"\$kvcheck\"} --quiet" 2>&1)
rc=$?
printf -- '--- reproduce:\n%s\n' "$again"
[[ $rc -eq 1 ]] || fail "the reproduce line exited $rc, expected 1"
grep -q 'Unable to reproduce' <<<"$again" && fail "RapidCheck could not reproduce the case"
grep -Fq -- "$case" <<<"$again" || fail "the reproduce run shows another case than: $case"
echo "the reproduce line reran the contract in its scope and failed on the same case"
