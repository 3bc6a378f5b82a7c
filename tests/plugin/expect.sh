#!/usr/bin/env bash
# expect.sh EXIT REGEX [REGEX...] -- COMMAND...: runs COMMAND, passes when it exits
# EXIT and its output (stdout + stderr) matches every REGEX (grep -E). Prints the output.
set -uo pipefail
want=$1
shift
regexes=()
while [[ $# -gt 0 && $1 != -- ]]; do
  regexes+=("$1")
  shift
done
shift
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [[ $rc -ne $want ]]; then
  echo "expect.sh: exit status $rc, expected $want" >&2
  exit 1
fi
for r in "${regexes[@]}"; do
  if ! grep -Eq -- "$r" <<<"$out"; then
    echo "expect.sh: output does not match: $r" >&2
    exit 1
  fi
done
