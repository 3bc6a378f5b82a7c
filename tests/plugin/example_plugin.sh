#!/usr/bin/env bash
# example_plugin.sh SRC BUILD KVCHECK VARIANT [REPLAY_STORE]: builds examples/plugin from
# its own directory with the README's commands (into BUILD, never the source tree) and
# runs it.
#   host: the host-only variant through the store properties (must hold); with
#         REPLAY_STORE first the CI replay of docs/plugins.md §3 over SRC/corpus/store
#         (must pass: what it cannot run is "not supported", never a failure).
#   cuda: the CUDA variant; without nvcc exits 77 (skip, saying why); without a GPU it
#         must load and say why it cannot run, and `run --backend` must exit 2 saying
#         it too; with one, the store properties must hold; a kvcheck built without
#         CUDA refuses device plugins: exit 77 (skip).
set -euo pipefail
src=$1 build=$2 kvcheck=$3 variant=$4 replay=${5:-}
args=()
if [[ $variant == host ]]; then
  args=(-DEXAMPLE_HOST_ONLY=ON)
elif ! command -v nvcc >/dev/null && [[ ! -x /usr/local/cuda/bin/nvcc ]]; then
  echo "SKIP: no nvcc here, the CUDA variant of the example cannot be built"
  exit 77
fi
rm -rf "$build"
cmake -S "$src/examples/plugin" -B "$build" -DKVCHECK_ROOT="$src" "${args[@]}"
cmake --build "$build"
lib=$build/libreshape_and_cache_plugin.so
if [[ $variant == host ]]; then
  [[ -z $replay ]] || KVCHECK_PLUGIN=$lib "$replay" "$src/corpus/store" 2>/dev/null
  exec "$kvcheck" run --plugin "$lib" --backend reshape-and-cache-host --property store --cases 200 --quiet --seed 7
fi
listing=$("$kvcheck" backends --plugin "$lib")
echo "$listing"
if grep -Eq '^reshape-and-cache +available' <<<"$listing"; then
  exec "$kvcheck" run --plugin "$lib" --backend reshape-and-cache --property store --cases 200 --quiet --seed 7
fi
if grep -q 'this kvcheck was built without CUDA' <<<"$listing"; then
  echo "SKIP: built; this kvcheck has no CUDA (e.g. the sanitizer tree), so it cannot load a device plugin"
  exit 77
fi
grep -q '^reshape-and-cache: no usable CUDA device' <<<"$listing"
set +e
refused=$("$kvcheck" run --plugin "$lib" --backend reshape-and-cache --property store --cases 1 --quiet 2>&1)
rc=$?
set -e
echo "$refused"
[[ $rc -eq 2 ]] && grep -q 'backend reshape-and-cache: no usable CUDA device: ' <<<"$refused"
# Without --backend, and in a replay, the plugin that cannot run is never replaced by cpu:
# exit 2 with the reason, not a green run of the built-in backend.
set +e
refused=$("$kvcheck" run --plugin "$lib" --property store --cases 1 --quiet 2>&1)
rc=$?
set -e
echo "$refused"
[[ $rc -eq 2 ]] && grep -q 'no backend of $KVCHECK_PLUGIN / --plugin can run here (reshape-and-cache: ' <<<"$refused"
if [[ -n $replay ]]; then
  set +e
  refused=$(KVCHECK_PLUGIN=$lib "$replay" "$src/corpus/store" 2>&1)
  rc=$?
  set -e
  echo "$refused" | tail -2
  [[ $rc -eq 2 ]] && grep -q 'no backend of $KVCHECK_PLUGIN / --plugin can run here' <<<"$refused"
fi
echo "built; no GPU here, so the CUDA variant was loaded and declined, saying why (runs on the GPU machine)"
