#!/usr/bin/env bash
# reproduce_quoting.sh KVCHECK FAULTY_PLUGIN WORKDIR: a plugin whose path has a space
# and a quote fails a row; the row's reproduce line, given to a shell, must set
# KVCHECK_PLUGIN to that very path (it printed the path bare: a copied line ran
# another command).
set -euo pipefail
kvcheck=$1 plugin=$2 work=$3
dir="$work/reproduce quoting"
rm -rf "$dir" && mkdir -p "$dir"
odd="$dir/lib it's.so"
cp "$plugin" "$odd"
out=$(KVCHECK_WORK_DIR="$dir/work" "$kvcheck" run --plugin "$odd" --backend faulty-bf16-store --cases 50 --seed 1 \
        --property store_matches --quiet 2>&1 || true)
line=$(grep -m1 '^reproduce: ' <<<"$out") || { printf '%s\n' "$out"; echo "no reproduce line" >&2; exit 1; }
env_part=${line#reproduce: }
env_part=${env_part%% RC_PARAMS=*}
echo "reproduce environment: $env_part"
got=$(eval "$env_part printenv KVCHECK_PLUGIN")
rm -rf "$dir"
[[ $got == *"$odd" || $got == "$odd" ]] || { echo "KVCHECK_PLUGIN from the line: '$got', want '$odd'" >&2; exit 1; }
echo "the reproduce line names the plugin: $got"
