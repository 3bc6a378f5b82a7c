#!/usr/bin/env bash
# CTest ctest.gpu_resources: `ctest -j 6 --resource-spec-file` over a simulated
# two-GPU machine (tools/ctest_gpus.sh 2) runs six GPU tests (RESOURCE_GROUPS
# "gpus:1", each the pinning probe tests/ctest_gpu_probe.cpp holding its GPU 400 ms),
# every one on GPU 0 or 1, never two at once on one, both GPUs used.
# Usage: ctest_gpus_test.sh ROOT PROBE WORK_DIR
set -uo pipefail
root=$1 probe=$2 work=$3
rm -rf "$work" && mkdir -p "$work/suite"
"$root/tools/ctest_gpus.sh" 2 > "$work/gpus.json" || exit 1
{
  for i in 1 2 3 4 5 6; do
    echo "add_test(gpu_probe_$i \"$probe\" \"$work/out.$i\" 400)"
    echo "set_tests_properties(gpu_probe_$i PROPERTIES RESOURCE_GROUPS \"gpus:1\")"
  done
} > "$work/suite/CTestTestfile.cmake"
(cd "$work/suite" && ctest -j 6 --resource-spec-file "$work/gpus.json" --output-on-failure) > "$work/ctest.log" 2>&1 ||
  { cat "$work/ctest.log"; echo "FAIL: the nested ctest failed"; exit 1; }
python3 - "$work" <<'PY'
import sys
work = sys.argv[1]
runs = []
for i in range(1, 7):
    gpu, start, end = open(f"{work}/out.{i}").read().split()
    runs.append((gpu, int(start), int(end)))
bad = [r for r in runs if r[0] not in ("0", "1")]
assert not bad, f"tests without a pinned GPU: {bad}"
for a in runs:
    for b in runs:
        if a is not b and a[0] == b[0]:
            assert a[2] <= b[1] or b[2] <= a[1], f"two tests on GPU {a[0]} at once: {a} {b}"
assert {r[0] for r in runs} == {"0", "1"}, f"not both GPUs used: {runs}"
print(f"ok: 6 tests on 2 simulated GPUs, {sum(r[0] == '0' for r in runs)} on GPU 0, never two on one")
PY
