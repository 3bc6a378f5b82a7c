#!/usr/bin/env bash
# device_guard.sh KVCHECK PLUGIN BACKEND MESSAGE: the misbehaving device store plugin
# (oob_device_plugin.cu) must fail the store property with the device transport's
# report MESSAGE. Exit 77 (skip) saying why without a GPU.
set -uo pipefail
kvcheck=$1 lib=$2 backend=$3 message=$4
listing=$("$kvcheck" backends --plugin "$lib" 2>&1)
if ! grep -Eq "^$backend +available" <<<"$listing"; then
  echo "SKIP: $(grep "^$backend" <<<"$listing" || echo "$listing")"
  exit 77
fi
out=$("$kvcheck" run --plugin "$lib" --backend "$backend" --property prop_store_matches_reference \
  --cases 20 --quiet --seed 1 2>&1)
rc=$?
echo "$out"
[[ $rc -eq 1 ]] && grep -qF "$message" <<<"$out" && grep -q "reproduce: KVCHECK_PLUGIN=" <<<"$out"
