#!/usr/bin/env bash
# CTest cflite.build (label cflite): .clusterfuzzlite/build.sh as ClusterFuzzLite and
# OSS-Fuzz run it, without Docker: the base builder's environment (clang, CFLAGS and
# CXXFLAGS with -fsanitize=address,fuzzer-no-link and -stdlib=libc++, which build.sh
# must drop, LIB_FUZZING_ENGINE=-fsanitize=fuzzer, SRC, WORK, OUT). Then $OUT must hold
# every fuzz target (one per fuzzers/ops/*/check_*.cpp), its seed corpus zip (every file of
# corpus/<target>/) and its options file where fuzzers/ has one, and each target must
# run over its whole seed corpus without a finding.
# Usage: cflite_build_test.sh ROOT WORK_DIR
set -uo pipefail
root=$1 work=$2
rm -rf "$work/out" "$work/work" "$work/src" "$work/seeds"
mkdir -p "$work/out" "$work/work" "$work/src" "$work/seeds"
# The checkout itself (KVCHECK_SRC), not a link to it under $SRC: the work dir is in the
# build tree inside the checkout, and a link would make CMake's paths loop through it.
export CC=clang-14 CXX=clang++-14 SRC="$work/src" WORK="$work/work" OUT="$work/out" KVCHECK_SRC="$root"
export SANITIZER=address FUZZING_ENGINE=libfuzzer ARCHITECTURE=x86_64
export CFLAGS="-O1 -fno-omit-frame-pointer -gline-tables-only -fsanitize=address -fsanitize-address-use-after-scope -fsanitize=fuzzer-no-link"
export CXXFLAGS="$CFLAGS -stdlib=libc++"
export LIB_FUZZING_ENGINE="-fsanitize=fuzzer"
# The build tree goes to the test's work dir, not the checkout (build.sh's default).
export KVCHECK_OSS_FUZZ_BUILD="$work/build"
start=$SECONDS
if ! bash "$root/.clusterfuzzlite/build.sh" > "$work/build.log" 2>&1; then
  tail -40 "$work/build.log"
  echo "FAIL: .clusterfuzzlite/build.sh failed (log: $work/build.log)"
  exit 1
fi
echo "build.sh: $((SECONDS - start)) s"
fail=0
n=0
for check in "$root"/fuzzers/ops/*/check_*.cpp; do
  name=$(basename "$check" .cpp)
  name=${name#check_}
  t=fuzz_$name
  n=$((n + 1))
  [[ -x $OUT/$t ]] || { echo "FAIL: no $OUT/$t"; fail=1; continue; }
  zip=$OUT/${t}_seed_corpus.zip
  want=$(find "$root/corpus/$name" -type f | wc -l)
  got=$(python3 -c 'import sys, zipfile; print(sum(not i.is_dir() for i in zipfile.ZipFile(sys.argv[1]).infolist()))' "$zip" 2>/dev/null || echo 0)
  ((got == want && want > 0)) || { echo "FAIL: $zip holds $got files, corpus/$name has $want"; fail=1; }
  if [[ -f $root/fuzzers/$t.options ]] && ! cmp -s "$root/fuzzers/$t.options" "$OUT/$t.options"; then
    echo "FAIL: $OUT/$t.options is not fuzzers/$t.options"
    fail=1
  fi
  seeds=$work/seeds/$name
  mkdir -p "$seeds"
  python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$zip" "$seeds"
  if ! (cd "$work/work" && "$OUT/$t" -runs=0 "$seeds" > "$work/$t.log" 2>&1); then
    tail -20 "$work/$t.log"
    echo "FAIL: $t over its seed corpus"
    fail=1
  else
    echo "ok: $t ran its $want seed inputs"
  fi
done
((fail == 0)) && echo "cflite build: all $n targets built, zipped and run over their seeds"
exit $fail
