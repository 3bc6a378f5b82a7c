#!/usr/bin/env bash
# device_guard.sh KVCHECK PLUGIN: the oob-device-store plugin must fail the store
# property with the guard band's report. Exit 77 (skip) saying why without a GPU.
set -uo pipefail
kvcheck=$1 lib=$2
listing=$("$kvcheck" backends --plugin "$lib" 2>&1)
if ! grep -Eq '^oob-device-store +available' <<<"$listing"; then
  echo "SKIP: $(grep '^oob-device-store' <<<"$listing" || echo "$listing")"
  exit 77
fi
out=$("$kvcheck" run --plugin "$lib" --backend oob-device-store --property prop_store_matches_reference \
  --cases 20 --quiet --seed 1 2>&1)
rc=$?
echo "$out"
[[ $rc -eq 1 ]] && grep -q "wrote outside the cache" <<<"$out" && grep -q "reproduce: KVCHECK_PLUGIN=" <<<"$out"
