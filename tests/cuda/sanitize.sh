#!/usr/bin/env bash
# tests/cuda/sanitize.sh TOOL KVCHECK CUDA_TESTS — CTest's cuda.sanitize.TOOL: runs the
# CUDA test suite and a short cuda property campaign under
#   compute-sanitizer --tool TOOL --error-exitcode 9
# with a grid cap of 2 CTAs (KVCHECK_CUDA_MAX_GRID), so every grid-stride loop runs
# several rows per CTA. Any finding fails the test. Exit 77 (CTest: skipped) with the
# reason when there is no GPU or no compute-sanitizer. The campaign runs --in-process
# (no child per property), so the sanitizer sees every kernel in the one process.
set -uo pipefail
tool=$1 kvcheck=$2 tests=$3
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
[[ -x $sanitizer ]] || { echo "SKIP: no compute-sanitizer on this machine"; exit 77; }
why=$("$kvcheck" backends 2>&1 | grep '^cuda' || true)
[[ $why == *available* ]] || { echo "SKIP: ${why:-no cuda backend in this build}"; exit 77; }
export KVCHECK_CUDA_MAX_GRID=2
args=(--tool "$tool" --error-exitcode 9)
[[ $tool == memcheck ]] && args+=(--leak-check full)
# The 4 GiB cache test is memcheck-slow and adds nothing the small caches miss.
"$sanitizer" "${args[@]}" "$tests" --gtest_filter='-*Over4GiB*:*DeviceConversionsMatchReference*' --gtest_brief=1 ||
  { echo "FAIL: compute-sanitizer $tool found errors in the CUDA tests"; exit 1; }
"$sanitizer" "${args[@]}" "$kvcheck" run --backend cuda --cases 10 --seed 1 --quiet --in-process ||
  { echo "FAIL: compute-sanitizer $tool found errors in the cuda campaign"; exit 1; }
echo "compute-sanitizer $tool: no findings"
