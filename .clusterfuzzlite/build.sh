#!/bin/bash -eu
# ClusterFuzzLite / OSS-Fuzz build of kvcheck's fuzz targets. Honours $CC $CXX $CFLAGS
# $CXXFLAGS $LIB_FUZZING_ENGINE $OUT $SRC (sanitizer and coverage flags come in
# CFLAGS/CXXFLAGS); writes $OUT/fuzz_<target>, fuzz_<target>_seed_corpus.zip and
# fuzz_<target>.options. Source: $SRC/kvcheck (the Dockerfile's COPY), or
# $KVCHECK_SRC when set.
set -euo pipefail  # also when run as `bash build.sh`, where the #! line's -eu is not read
cd "${KVCHECK_SRC:-$SRC/kvcheck}"
# The system libraries we link (rapidcheck, fmt) are built against
# libstdc++; OSS-Fuzz's default -stdlib=libc++ cannot link them (MSan is not used).
CXXFLAGS="${CXXFLAGS//-stdlib=libc++/}"
build="${KVCHECK_OSS_FUZZ_BUILD:-$PWD/build-oss-fuzz}"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_COMPILER="$CC" -DCMAKE_CXX_COMPILER="$CXX" \
  -DCMAKE_C_FLAGS="$CFLAGS" -DCMAKE_CXX_FLAGS="$CXXFLAGS" \
  -DKVCHECK_FUZZ=ON -DKVCHECK_FUZZ_SANITIZE= -DKVCHECK_FUZZ_ENGINE="$LIB_FUZZING_ENGINE" \
  -DKVCHECK_CUDA=OFF -DKVCHECK_BENCH=OFF -DKVCHECK_WERROR=OFF
targets=()
for f in fuzzers/ops/*/check_*.cpp; do  # one target per check (fuzzers/CMakeLists.txt)
  f="$(basename "$f" .cpp)"
  targets+=("fuzz_${f#check_}")
done
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"
for t in "${targets[@]}"; do
  cp "$build/fuzzers/$t" "$OUT/"
  name="${t#fuzz_}"
  rm -f "$OUT/${t}_seed_corpus.zip"
  (cd "corpus/$name" && zip -q -r "$OUT/${t}_seed_corpus.zip" .)
  if [[ -f fuzzers/$t.options ]]; then cp "fuzzers/$t.options" "$OUT/"; fi
done
