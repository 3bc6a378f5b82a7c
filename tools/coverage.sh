#!/usr/bin/env bash
# ./kvcheck coverage [TARGET...]
# clang source-based coverage of replaying corpus/<target>/ (every target by default):
# builds the replay_<target> programs instrumented in build-coverage, replays each
# corpus twice (native and KVCHECK_CPU_ISA=baseline CPU kernels), prints line/branch
# coverage per source file of impl/ and reference/, and writes the HTML report to
# build-coverage/coverage-html/index.html. Env: KVCHECK_COVERAGE_BUILD_DIR.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=tools/lib.sh
source "$ROOT/tools/lib.sh"
USAGE="./kvcheck coverage [TARGET...]"
BUILD="${KVCHECK_COVERAGE_BUILD_DIR:-$ROOT/build-coverage}"
TARGETS=()
for a in "$@"; do
  case "$a" in
    -h | --help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) bad_usage coverage "$USAGE" "unknown option $a" ;;
    *) TARGETS+=("$a") ;;
  esac
done
((${#TARGETS[@]})) || mapfile -t TARGETS < <(all_targets)
check_targets coverage "$USAGE" "${TARGETS[@]}"
ensure_packages

if [[ ! -f $BUILD/build.ninja ]]; then
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
    -DKVCHECK_CUDA=OFF -DKVCHECK_BENCH=OFF \
    "-DCMAKE_CXX_FLAGS=-fprofile-instr-generate -fcoverage-mapping" \
    "-DCMAKE_EXE_LINKER_FLAGS=-fprofile-instr-generate" >&2
fi
cmake_build "$BUILD" -j "${KVCHECK_JOBS:-$(nproc)}" --target "${TARGETS[@]/#/replay_}"

rm -rf "$BUILD/profiles"
mkdir -p "$BUILD/profiles"
objects=()
for t in "${TARGETS[@]}"; do
  bin="$BUILD/fuzzers/replay_$t"
  # Twice: the CPU kernels' AVX2 path (when the machine has it) and the baseline
  # path (KVCHECK_CPU_ISA=baseline, impl/cpu/isa.h), so both count.
  for isa in native baseline; do
    KVCHECK_CPU_ISA="$([[ $isa == baseline ]] && echo baseline || true)" \
      LLVM_PROFILE_FILE="$BUILD/profiles/$t-$isa-%p.profraw" "$bin" "$ROOT/corpus/$t" >/dev/null 2>&1 || {
      echo "kvcheck coverage: replay_$t ($isa ISA) failed on its corpus (run ./kvcheck test -L replay)" >&2
      exit 1
    }
  done
  objects+=(-object "$bin")
done
llvm-profdata-14 merge -sparse "$BUILD"/profiles/*.profraw -o "$BUILD/coverage.profdata"

sources=("$ROOT/impl" "$ROOT/reference")
llvm-cov-14 report "${objects[@]:1}" -instr-profile="$BUILD/coverage.profdata" \
  -show-region-summary=false -show-instantiation-summary=false "${sources[@]}"
llvm-cov-14 show "${objects[@]:1}" -instr-profile="$BUILD/coverage.profdata" -format=html \
  -show-branches=count -output-dir="$BUILD/coverage-html" "${sources[@]}"
echo "kvcheck coverage: HTML report in $BUILD/coverage-html/index.html" >&2
