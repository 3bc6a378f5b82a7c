#!/usr/bin/env bash
# tools/gpu_check.sh [BUILD_DIR] [OUT_DIR] — everything kvcheck checks on a GPU machine,
# in one go, logs under OUT_DIR (default build-gpu, gpu-out):
#   1. ctest -L 'cuda|property|plugin': the CUDA suite, again with a grid cap of 2, under
#      the four compute-sanitizer tools, the PDL/graph tests, every property on cpu and
#      cuda, the plugin seam (the example plugin built and run on the GPU)
#   2. kvcheck run --backend cuda --seconds ${KVCHECK_GPU_CAMPAIGN_SECONDS:-120} (in
#      parallel with 1)
#   3. bench_cuda --json --check bench/baseline_<card>.json (the performance gate), then
#      bench/compare_alternatives.py when torch is importable; summary.json = the
#      campaign's summary with the benchmark's ratios
#   4. bench/ncu.sh for every 262,144-token row under 90 % of the copy (block size 64)
#   5. the Python bridge's tests (python/tests: numpy, torch and Triton backends, 1,000
#      cases per property on the GPU) when python3 has torch, Triton and pytest (in
#      parallel with 1 and 2: correctness only, nothing timed runs beside them)
# KVCHECK_GPU_BENCH=0 skips 3 and 4 (a correctness-only pass); KVCHECK_GPU_NCU=0 skips 4
# alone; KVCHECK_GPU_TESTS=0 skips 1, 2 and 5 (the timed stages only; summary.json then
# takes the campaign.json an earlier run left in OUT_DIR, named on the output, or is not
# written; both knobs 0: exit 2, nothing to run). A 10-minute slot no longer holds the whole check (H100, 2026-12-07: setup
# 128 s, stages 1, 2 and 5 done at 390 s, 3 alone 154 s and the comparison 21 s): run
# KVCHECK_GPU_BENCH=0 and then KVCHECK_GPU_TESTS=0 on the same warm machine. Each stage prints its seconds. JUnit: ctest-junit.xml,
# campaign-junit.xml, python-junit.xml in OUT_DIR (.github/workflows/gpu.yml uploads them).
# Exit 1 when a test, the campaign, the Python tests or the performance gate failed; 2
# where the cuda backend is not available (no GPU, no driver). The build dir must exist
# (cmake --preset gpu).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build=${1:-$root/build-gpu}
out=${2:-$root/gpu-out}
[[ -d $build ]] || { echo "gpu_check.sh: no build dir $build (cmake --preset gpu && cmake --build build-gpu -j first)" >&2; exit 2; }
mkdir -p "$out"
# Absolute, so the children that change folder (ctest, the Python tests' pytest runs in
# temporary folders) find them: a relative build dir broke the README example's test.
build=$(cd "$build" && pwd) out=$(cd "$out" && pwd)
kvcheck="$build/tools/kvcheck/kvcheck"
[[ -x $kvcheck ]] || { echo "gpu_check.sh: no $kvcheck (cmake --build $build -j first)" >&2; exit 2; }
if [[ ${KVCHECK_GPU_TESTS:-1} == 0 && ${KVCHECK_GPU_BENCH:-1} == 0 ]]; then
  echo "gpu_check.sh: KVCHECK_GPU_TESTS=0 and KVCHECK_GPU_BENCH=0: nothing to run (exit 2)" >&2
  exit 2
fi
# No usable GPU: every stage would skip or measure nothing, which is not a pass.
backends=$("$kvcheck" backends 2>&1)
echo "$backends"
grep -qE '^cuda +available' <<< "$backends" ||
  { echo "gpu_check.sh: the cuda backend is not available here: nothing checked (exit 2)" >&2; exit 2; }
seconds=${KVCHECK_GPU_CAMPAIGN_SECONDS:-120}
t0=$SECONDS
ctest_rc=0 python_rc=0 campaign_ok=1
if [[ ${KVCHECK_GPU_TESTS:-1} != 0 ]]; then
  # The campaign's run directory goes to the build tree: the suite beside it checks that
  # nothing writes into the source tree's .kvcheck-work/ while it runs.
  (KVCHECK_WORK_DIR="$build/gpu-check-work" "$kvcheck" run --backend cuda --seconds "$seconds" --report "$out/campaign.json" --junit "$out/campaign-junit.xml" > "$out/campaign.log" 2>&1
   echo "campaign exit $?" >> "$out/campaign.log") &
  # The Python tests beside them, in their own work dir (the campaign's run dirs are its own).
  python_pid=
  if python3 -c 'import torch, triton, pytest, numpy' 2> /dev/null; then
    (KVCHECK_BUILD_DIR="$build" KVCHECK_WORK_DIR="$build/gpu-check-work-python" PYTHONDONTWRITEBYTECODE=1 \
      python3 -m pytest -q -p no:cacheprovider "$root/python/tests" --junitxml "$out/python-junit.xml" \
      > "$out/python.log" 2>&1) &
    python_pid=$!
  fi
  (cd "$build" && ctest -L 'cuda|property|plugin' -j "$(nproc)" --timeout 600 --output-on-failure \
    --output-junit "$out/ctest-junit.xml" > "$out/ctest.log" 2>&1)
  ctest_rc=$?
  echo "ctest done in $((SECONDS - t0)) s"
  if [[ -n $python_pid ]]; then
    wait "$python_pid"
    python_rc=$?
    echo "python tests done in $((SECONDS - t0)) s: $(tail -1 "$out/python.log")"
  else
    echo "python: no torch/Triton/pytest in $(command -v python3): the Python bridge's GPU tests did not run"
  fi
  wait
  echo "campaign done in $((SECONDS - t0)) s"
  grep -E 'tests passed|\*\*\*Failed|Timeout' "$out/ctest.log"
  grep -hE 'ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY|no findings|^FAIL' "$out/ctest.log" | sort | uniq -c
  tail -3 "$out/campaign.log"
  campaign_ok=$(grep -c 'campaign exit 0' "$out/campaign.log")
else
  echo "KVCHECK_GPU_TESTS=0: the tests, the campaign and the Python tests did not run"
fi
if [[ ${KVCHECK_GPU_BENCH:-1} == 0 ]]; then
  ((ctest_rc == 0 && campaign_ok == 1 && python_rc == 0))
  exit
fi
# The performance gate: every bandwidth row against the committed baseline's ratio to
# the copy (bench_cuda --check, docs/cuda.md, "The performance gate"); exit 1 on a drop.
# One baseline per GPU model (bench/baseline_<card>.json): bench_cuda takes the one from
# this device; with none it says so and gives no verdict.
checks=()
for f in "$root"/bench/baseline_*.json; do [[ -f $f ]] && checks+=(--check "$f"); done
((${#checks[@]})) || echo "performance gate: not run: no bench/baseline_*.json in $root"
"$build/bench/bench_cuda" --json "$out/bench.json" "${checks[@]}" > "$out/bench.txt" 2>&1
bench_rc=$?
echo "bench_cuda done in $((SECONDS - t0)) s"
grep -E '^performance gate' "$out/bench.txt" || echo "bench_cuda failed (exit $bench_rc; see $out/bench.txt)"
# summary.json: the campaign's summary with the benchmark's ratios, so the nightly's
# artifacts show a trend per row.
if [[ ! -f $out/campaign.json ]]; then
  echo "summary.json not written: no campaign.json in $out (a KVCHECK_GPU_TESTS=0 run into a fresh OUT_DIR)"
elif ! python3 - "$out/campaign.json" "$out/bench.json" "$out/summary.json" <<'PY'; then
import json, sys
summary = json.load(open(sys.argv[1]))
print(f"summary.json: the campaign of {summary.get('commit', '?')[:12]} at {summary.get('start_time', '?')} "
      f"({sys.argv[1]}) with this run's benchmark")
bench = json.load(open(sys.argv[2]))
summary["bench"] = {"device": bench["device"], "copy_gbps": bench["copy_gbps"],
                    "rows": [{k: r[k] for k in ("op", "format", "tokens", "block_size", "ratio_to_copy",
                                                "ratio_to_empty_kernel", "decode")} for r in bench["rows"]]}
json.dump(summary, open(sys.argv[3], "w"), indent=1)
PY
  echo "summary.json not written"
fi
if python3 -c 'import torch, triton' 2> /dev/null; then
  # --shim: kvcheck's decode store timed beside Triton's in this one process (issue 21).
  shim=()
  [[ -f $build/bench/libkvcheck_bench_store.so ]] && shim=(--shim "$build/bench/libkvcheck_bench_store.so")
  python3 "$root/bench/compare_alternatives.py" --ours "$out/bench.json" "${shim[@]}" > "$out/compare.txt" 2>&1 ||
    echo "compare_alternatives failed (see $out/compare.txt)"
  grep -E '^(alternative|Triton store \(graph\)|kvcheck store)' "$out/compare.txt"
  echo "compare_alternatives done in $((SECONDS - t0)) s"
fi
misses=$(python3 - "$out/bench.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
print(" ".join(sorted({f"{r['format']}:{r['op']}" for r in rows
                       if r["tokens"] == 262144 and r["block_size"] == 64 and r["ratio_to_copy"] < 0.9
                       and not r["format"].startswith("kv ")})))
PY
)
if [[ -n $misses && ${KVCHECK_GPU_NCU:-1} != 0 ]]; then
  bash "$root/bench/ncu.sh" "$build" $misses > "$out/ncu.txt" 2>&1
  echo "ncu.sh done in $((SECONDS - t0)) s (rows under 90 %: $misses)"
fi
((ctest_rc == 0 && campaign_ok == 1 && python_rc == 0 && bench_rc == 0))
