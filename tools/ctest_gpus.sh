#!/usr/bin/env bash
# tools/ctest_gpus.sh [COUNT] > gpus.json — a CTest resource spec file naming the GPUs
# of this machine (one line of `nvidia-smi -L` each), or COUNT simulated ones, one slot
# each. Then `ctest --resource-spec-file gpus.json -j N -L cuda` spreads the CUDA tests
# (RESOURCE_GROUPS "gpus:1") over every GPU, never two on one (docs/nightly.md).
set -euo pipefail
if (($# > 1)) || [[ ${1:-} == -h || ${1:-} == --help ]]; then
  echo "usage: tools/ctest_gpus.sh [COUNT] > gpus.json" >&2
  exit 2
fi
if (($# == 1)); then
  [[ $1 =~ ^[1-9][0-9]{0,2}$ ]] || { echo "tools/ctest_gpus.sh: COUNT must be 1..999, got '$1'" >&2; exit 2; }
  count=$1
else
  count=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
  ((count > 0)) || { echo "tools/ctest_gpus.sh: nvidia-smi lists no GPU here (give a COUNT to simulate)" >&2; exit 1; }
fi
printf '{"version": {"major": 1, "minor": 0}, "local": [{"gpus": ['
for ((i = 0; i < count; i++)); do
  ((i > 0)) && printf ', '
  printf '{"id": "%d", "slots": 1}' "$i"
done
printf ']}]}\n'
