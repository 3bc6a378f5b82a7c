#!/usr/bin/env bash
# bench/ncu.sh BUILD_DIR [FORMAT:OP ...] — the Nsight Compute evidence for a CUDA
# kernel that misses its bandwidth target: runs bench_cuda for one format at 262,144
# tokens under ncu (clocks left alone) and prints, per kernel, its time, DRAM bytes
# read and written against the payload bench_cuda counts, DRAM and SM throughput and
# issue-slot use. OP is store or load (gather_kv for the K/V rows: FORMAT is then a
# bench_cuda K/V row name such as 'kv bf16 NHD 8x128'). Default: every SPEC §2
# format, both ops. OP floor-store / floor-load profiles the row's access-pattern floor
# (bench/pattern_copy.cu) instead. Exit 1 when a pair profiled no kernel (its ncu output
# is shown).
set -euo pipefail
build=$1
shift
pairs=("$@")
if ((${#pairs[@]} == 0)); then
  for f in V41 V41_FP4 FP4_INDEX FP8_FP32SF_INDEX MXFP8_INDEX 'BF16(512)'; do pairs+=("$f:store" "$f:load"); done
fi
# ncu is not always on PATH (the CUDA toolkit's bin/ is).
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
[[ -x $ncu ]] || { echo "ncu.sh: no ncu on PATH or in /usr/local/cuda/bin" >&2; exit 2; }
status=0
metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum
metrics+=,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed
metrics+=,smsp__issue_active.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active
for pair in "${pairs[@]}"; do
  f=${pair%%:*} op=${pair##*:}
  # floor-*: the access-pattern floor (bench/pattern_copy.cu), each of its three unrolls'
  # first timed launch (past 3 warm-ups), found by bench_cuda's NVTX range.
  case $op in
    store) sel=(--kernel-name 'regex:store_(fixed|copy|runtime|kv|nvfp4)' --launch-skip 3) ;;  # past the cache fill and 2 warm-ups
    load) sel=(--kernel-name 'regex:load_(copy|dequant)|gather_(kv|nvfp4)' --launch-skip 2) ;;
    floor-store | floor-load) sel=() ;;
    *) echo "ncu.sh: OP is store, load, floor-store or floor-load, not $op" >&2; exit 2 ;;
  esac
  for unroll in $([[ $op == floor-* ]] && echo 1 2 4 || echo 0); do
    args=("${sel[@]}")
    if ((unroll)); then
      echo "== $f $op, unroll $unroll (262144 tokens; block_size 64, K/V rows 16)"
      args=(--nvtx --nvtx-include "floor ${op#floor-} unroll $unroll/" --kernel-name regex:pattern_kernel --launch-skip 3)
    else
      echo "== $f $op (262144 tokens; block_size 64, K/V rows 16)"
    fi
    raw=$("$ncu" --clock-control none "${args[@]}" --launch-count 1 --metrics "$metrics" \
      "$build/bench/bench_cuda" --format "$f" --tokens 262144 2>&1) || true
    picked=$(grep -E '^\s+(gpu__time|dram__|sm__|smsp__)|^\s+[a-z_]+_kernel' <<< "$raw" | sed 's/^ */  /') || true
    if [[ -z $picked ]]; then
      echo "  ncu profiled no kernel; its last lines:"
      tail -5 <<< "$raw" | sed 's/^/    /'
      status=1
    else
      echo "$picked"
    fi
  done
done
exit $status
