#!/usr/bin/env bash
# bench/ncu.sh BUILD_DIR [FORMAT:OP ...] — the Nsight Compute evidence for a CUDA
# kernel that misses its bandwidth target: runs bench_cuda for one format at 262,144
# tokens under ncu (clocks left alone) and prints, per kernel, its time, DRAM bytes
# read and written against the payload bench_cuda counts, DRAM and SM throughput and
# issue-slot use. OP is store or load (gather_kv for the K/V rows: FORMAT is then a
# bench_cuda K/V row name such as 'kv bf16 NHD 8x128'). Default: every SPEC §2
# format, both ops. OP floor-store / floor-load profiles the row's access-pattern floor
# (bench/pattern_copy.cu) instead.
set -euo pipefail
build=$1
shift
pairs=("$@")
if ((${#pairs[@]} == 0)); then
  for f in V41 V41_FP4 FP4_INDEX FP8_FP32SF_INDEX MXFP8_INDEX 'BF16(512)'; do pairs+=("$f:store" "$f:load"); done
fi
metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum
metrics+=,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed
metrics+=,smsp__issue_active.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active
for pair in "${pairs[@]}"; do
  f=${pair%%:*} op=${pair##*:}
  case $op in
    store) re='regex:store_(fixed|copy|runtime|kv)' skip=3 ;;  # past the cache fill and 2 warm-ups
    load) re='regex:load_(copy|dequant)|gather_kv' skip=2 ;;
    # The access-pattern floor's copy of one token per warp-trip (docs/cuda.md): past the
    # footprint check's 4 launches (and, for the load's, the store's floor: twice 3
    # warm-ups and 5 x 20 timed).
    floor-store) re='regex:pattern_kernel' skip=4 ;;
    floor-load) re='regex:pattern_kernel' skip=210 ;;
    *) echo "ncu.sh: OP is store, load, floor-store or floor-load, not $op" >&2; exit 2 ;;
  esac
  echo "== $f $op (262144 tokens; block_size 64, K/V rows 16)"
  ncu --clock-control none --kernel-name "$re" --launch-skip "$skip" --launch-count 1 --metrics "$metrics" \
    "$build/bench/bench_cuda" --format "$f" --tokens 262144 2>&1 |
    grep -E '^\s+(gpu__time|dram__|sm__|smsp__)|^\s+[a-z_]+_kernel' | sed 's/^ */  /'
done
