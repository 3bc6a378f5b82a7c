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
# The GPU CTest gave this test under --resource-spec-file (tests/ctest_gpu.h's rule).
if [[ ${CTEST_RESOURCE_GROUP_0:-} == gpus && ${CTEST_RESOURCE_GROUP_0_GPUS:-} == id:* ]]; then
  gpu=${CTEST_RESOURCE_GROUP_0_GPUS#id:}
  export CUDA_VISIBLE_DEVICES=${gpu%%,*}
fi
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
[[ -x $sanitizer ]] || { echo "SKIP: no compute-sanitizer on this machine"; exit 77; }
why=$("$kvcheck" backends 2>&1 | grep '^cuda' || true)
[[ $why == *available* ]] || { echo "SKIP: ${why:-no cuda backend in this build}"; exit 77; }
export KVCHECK_CUDA_MAX_GRID=2
export KVCHECK_DEVICE_POOL=0  # every harness buffer its own allocation, bounds and all
args=(--tool "$tool" --error-exitcode 9)
[[ $tool == memcheck ]] && args+=(--leak-check full)
# The 4 GiB cache test is memcheck-slow and adds nothing the small caches miss;
# LaunchLeavesTheCallersPendingErrorAlone makes a failing API call on purpose (memcheck
# reports every API error).
# compute-sanitizer exits 9 on a finding, anything else non-zero is the program's own failure.
verdict() {
  case $1 in
    0) ;;
    9) echo "FAIL: compute-sanitizer $tool found errors in $2"; exit 1 ;;
    *) echo "FAIL: $2 failed (exit $1) under compute-sanitizer $tool"; exit 1 ;;
  esac
}
"$sanitizer" "${args[@]}" "$tests" --gtest_filter='-*Over4GiB*:*DeviceConversionsMatchReference*:*LaunchLeavesTheCallersPendingErrorAlone*' --gtest_brief=1
verdict $? "the CUDA tests"
"$sanitizer" "${args[@]}" "$kvcheck" run --backend cuda --cases 10 --seed 1 --quiet --in-process
verdict $? "the cuda campaign"
echo "compute-sanitizer $tool: no findings"
