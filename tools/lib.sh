# Shared by ./kvcheck and tools/*.sh (sourced, not run): the Debian packages the
# build needs, option checking, fuzz target names and the work area. Set ROOT first.

# Debian 12 packages the build and the commands need, each one used (CUDA is not among
# them: it lives in /usr/local/cuda): the compilers and build tools; git (the commit in
# run records, mutants); jq (fuzz and corpus scripts); clang-14, llvm-14 and
# libclang-rt-14-dev (the ASan, libFuzzer and coverage trees); python3
# (tools/mutants.py and its CTest check), python3-dev and python3-venv (the Python
# bridge, plugins/python, and its test environment); zip (.clusterfuzzlite/build.sh's
# seed corpora, CTest cflite.build); and the libraries CMake finds.
PACKAGES=(build-essential cmake ninja-build git jq zip python3 python3-dev python3-venv clang-14 llvm-14 libclang-rt-14-dev
  libgtest-dev librapidcheck-dev libbenchmark-dev libcli11-dev nlohmann-json3-dev libfmt-dev)

# The git-ignored work area: run directories (logs, summaries, new inputs, crashes,
# regression files) live here until `./kvcheck corpus` keeps some in corpus/.
WORK_DIR="${KVCHECK_WORK_DIR:-$ROOT/.kvcheck-work}"

log() { printf 'kvcheck: %s\n' "$*" >&2; }

# ensure_python_env BUILD: the Python test environment of a tree that has the Python
# bridge (docs/python.md): BUILD/python-venv, made from the interpreter the bridge
# embeds, with `pip install -e python[test]` (numpy, pytest from PyPI; the package
# itself editable, which writes nothing into the checkout). Remade when
# python/pyproject.toml or the interpreter changes.
ensure_python_env() {
  local build=$1 venv="$1/python-venv" py want
  grep -q '^KVCHECK_PYTHON_PLUGIN:INTERNAL=ON' "$build/CMakeCache.txt" 2>/dev/null || return 0
  py=$(sed -n 's/^KVCHECK_PYTHON_EXECUTABLE:INTERNAL=//p' "$build/CMakeCache.txt")
  want="$py $(sha256sum <"$ROOT/python/pyproject.toml")"
  [[ -x $venv/bin/python && $(cat "$venv/.kvcheck-stamp" 2>/dev/null) == "$want" ]] && return 0
  log "setting up $venv: $py -m venv, pip install -e python[test]"
  rm -rf "$venv"
  "$py" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -e "$ROOT/python[test]"
  printf '%s' "$want" >"$venv/.kvcheck-stamp"
}

ensure_packages() {
  local missing=() p
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  ((${#missing[@]} == 0)) && return 0
  log "installing missing Debian packages: ${missing[*]}"
  local sudo=()
  [[ $(id -u) -ne 0 ]] && sudo=(sudo)
  "${sudo[@]}" apt-get update -q
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# bad_usage COMMAND USAGE_LINE MESSAGE: the message, the usage line, exit 2.
bad_usage() {
  printf 'kvcheck %s: %s\nusage: %s\n' "$1" "$3" "$2" >&2
  exit 2
}

# not_a_file PATH: why PATH is not a readable file, as the option errors say it.
not_a_file() {
  if [[ -d $1 ]]; then printf 'is a directory, not a file: %s' "$1"
  elif [[ -e $1 ]]; then printf 'not a regular file: %s' "$1"
  else printf 'File does not exist: %s' "$1"; fi
}

# need_value COMMAND USAGE OPTION "$#": an option's value must follow it.
need_value() { (($4 >= 2)) || bad_usage "$1" "$2" "$3 needs a value"; }

# check_int COMMAND USAGE OPTION VALUE MIN MAX: a decimal integer in [MIN, MAX].
check_int() {
  local cmd=$1 use=$2 opt=$3 v=$4 min=$5 max=$6
  [[ $v =~ ^[0-9]+$ ]] && ((${#v} <= 9)) && ((10#$v >= min && 10#$v <= max)) ||
    bad_usage "$cmd" "$use" "$opt must be an integer in [$min, $max], got '$v'"
}

# check_seconds COMMAND USAGE OPTION VALUE: a decimal number > 0 and below 10^9 (10,
# 2.5, .5; no sign, no exponent): the one rule for every --seconds, `run`'s and
# `fuzz`'s (the binary's copy of the rule is tools/kvcheck/options.cpp check_seconds).
check_seconds() {
  [[ $4 =~ ^[0-9]{0,9}(\.[0-9]*)?$ && $4 =~ [1-9] ]] ||
    bad_usage "$1" "$2" "$3 must be a decimal number > 0 and below 10^9 (e.g. 10 or 2.5), got '$4'"
}

# whole_seconds VALUE: a checked --seconds value rounded up to whole seconds (2.5 -> 3).
whole_seconds() {
  local int=${1%%.*} up=0
  [[ $1 == *.* && ${1#*.} =~ [1-9] ]] && up=1
  echo $((10#${int:-0} + up))
}

# cmake_build DIR [cmake --build args]: builds with every line on stderr (stdout is the
# command's own output), without ninja's "no work to do".
cmake_build() {
  cmake --build "$@" 2>&1 | sed -u '/^ninja: no work to do\.$/d' >&2
}

# absolute_plugin_paths: rewrites $KVCHECK_PLUGIN with absolute paths (a script that
# changes directory, or a reproduce line run elsewhere, still finds the libraries).
absolute_plugin_paths() {
  [[ -n ${KVCHECK_PLUGIN:-} ]] || return 0
  local parts=() abs=() p
  IFS=: read -ra parts <<<"$KVCHECK_PLUGIN"
  for p in "${parts[@]}"; do [[ -n $p ]] && abs+=("$(realpath -m -- "$p")"); done
  KVCHECK_PLUGIN=$(IFS=:; echo "${abs[*]}")
  export KVCHECK_PLUGIN
}

# check_tool_options COMMAND ARG...: checks the arguments of `kvcheck run|backends|explain`
# against tools/kvcheck/options.txt (the list the binary's parser is built from), so
# --help and a bad option answer before any build. --help prints the usage, exit 0;
# an unknown option, a missing or bad value exits 2 with the usage line.
check_tool_options() {
  local cmd=$1 commands name type help about="" names=() positional=() npos=0 a v seen=" "
  shift
  local -A types=() helps=()
  while read -r commands name type help; do
    [[ -z $commands || $commands == \#* || ,$commands, != *,"$cmd",* ]] && continue
    if [[ $name == about ]]; then
      about=$help
      continue
    fi
    types[$name]=$type
    helps[$name]=$help
    names+=("$name")
    [[ $name == --* ]] || positional+=("$name")
  done <"$ROOT/tools/kvcheck/options.txt"
  local use="./kvcheck $cmd [options]${positional[*]:+ ${positional[*]}}"
  while (($#)); do
    a=$1
    shift
    if [[ $a == -h || $a == --help ]]; then
      printf '%s\nusage: %s\n\noptions:\n' "$about" "$use"
      for name in "${names[@]}"; do
        type=${types[$name]}
        [[ $type == flag ]] && type="" || type=" ${type^^}"
        printf '  %-22s %s\n' "$name$type" "${helps[$name]}"
      done
      exit 0
    fi
    if [[ $a != --* ]]; then
      ((npos < ${#positional[@]})) || bad_usage "$cmd" "$use" "unexpected argument '$a'"
      name=${positional[npos]}
      npos=$((npos + 1))
      v=$a
    else
      name=${a%%=*}
      [[ -n ${types[$name]+set} ]] || bad_usage "$cmd" "$use" "unknown option '$name'"
      if [[ ${types[$name]} == flag ]]; then
        [[ $a == *=* ]] && bad_usage "$cmd" "$use" "$name takes no value"
        continue
      fi
      if [[ $a == *=* ]]; then
        v=${a#*=}
      else
        (($#)) || bad_usage "$cmd" "$use" "$name needs a value"
        v=$1
        shift
      fi
    fi
    seen+="$name "
    case ${types[$name]} in
      seconds) check_seconds "$cmd" "$use" "$name" "$v" ;;
      count) check_int "$cmd" "$use" "$name" "$v" 1 999999999 ;;
      uint) [[ $v =~ ^[0-9]{1,20}$ ]] || bad_usage "$cmd" "$use" "$name must be an integer >= 0, got '$v'" ;;
      file) [[ -f $v ]] || bad_usage "$cmd" "$use" "$name: $(not_a_file "$v")" ;;
      plugin) [[ $v == python:* || -f $v ]] || bad_usage "$cmd" "$use" "$name: $(not_a_file "$v")" ;;
      path)
        [[ -n $v ]] || bad_usage "$cmd" "$use" "$name needs a file name"
        # An output file's directory must exist and be writable now, not after the run.
        local dir
        dir=$(dirname -- "$v")
        [[ -d $dir && -w $dir ]] || bad_usage "$cmd" "$use" "$name: cannot write $v (no writable directory $dir)"
        ;;
    esac
  done
  # The one rule between options (the binary checks it too): a budget is time or cases.
  [[ $seen == *" --seconds "* && $seen == *" --cases "* ]] &&
    bad_usage "$cmd" "$use" "--seconds excludes --cases (a budget is time or cases, not both)"
  ((npos == ${#positional[@]})) || bad_usage "$cmd" "$use" "missing ${positional[npos]}"
}

# The fuzz targets: one per fuzzers/ops/<family>/check_<name>.cpp (fuzzers/CMakeLists.txt
# builds fuzz_<name> from each; the same list everywhere), in the order of the file names.
all_targets() {
  local f
  for f in "$ROOT"/fuzzers/ops/*/check_*.cpp; do
    basename "$f"
  done | sort | sed 's/^check_//; s/\.cpp$//'
}

# check_targets COMMAND USAGE NAME...: every name is a fuzz target.
check_targets() {
  local cmd=$1 use=$2 t
  shift 2
  for t in "$@"; do
    all_targets | grep -qxF -- "$t" ||
      bad_usage "$cmd" "$use" "no target '$t' (have: $(all_targets | tr '\n' ' '))"
  done
}

# The libFuzzer build (clang-14, ASan+UBSan) shared by fuzz and corpus.
# Absolute: kvcheck fuzz runs each target from its run directory.
FUZZ_BUILD="$(realpath -m -- "${KVCHECK_FUZZ_BUILD_DIR:-$ROOT/build-fuzz}")"

# build_fuzz TARGET...: configures build-fuzz once, builds the fuzz_<target> binaries
# and the kvcheck tool (run records). KVCHECK_FUZZ_NO_BUILD=1 uses the binaries in
# $FUZZ_BUILD as they are (a CI step built them; tests put stand-ins there).
build_fuzz() {
  [[ ${KVCHECK_FUZZ_NO_BUILD:-0} == 1 ]] && return 0
  if [[ ! -f $FUZZ_BUILD/build.ninja ]]; then
    cmake -S "$ROOT" -B "$FUZZ_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
      -DKVCHECK_FUZZ=ON -DKVCHECK_CUDA=OFF -DKVCHECK_BENCH=OFF >&2
  fi
  cmake_build "$FUZZ_BUILD" -j "${KVCHECK_JOBS:-$(nproc)}" --target "${@/#/fuzz_}" kvcheck
}

# inited_coverage LOG: "edges features" from libFuzzer's "#N INITED cov: E ft: F" line.
inited_coverage() {
  sed -n 's/^#[0-9]*[[:space:]]*INITED cov: \([0-9]*\) ft: \([0-9]*\).*/\1 \2/p' "$1" | tail -1
}

# fuzz_log_figures LOG: "EXECS EXEC_PER_S SEED" of one libFuzzer run ("null" for each
# figure the log lacks). From the final stats (-print_final_stats=1: at a clean exit and
# when SIGINT/SIGTERM stops the run), else from the last status line ("#N NEW|pulse ...
# exec/s: E", fork mode "#N: cov ... exec/s E"), so a run killed outright still reports
# the executions it reached.
fuzz_log_figures() {
  awk '/^stat::number_of_executed_units:/ {se = $2}
    /^stat::average_exec_per_sec:/ {sr = $2}
    /^INFO: Seed: [0-9]+/ {seed = $3}
    /^#[0-9]+/ {n = substr($1, 2); sub(/:$/, "", n); le = n; lr = ""
      for (i = 1; i < NF; i++) if ($i == "exec/s:" || $i == "exec/s") lr = $(i + 1)}
    END {e = se != "" ? se : le; r = sr != "" ? sr : lr
      print (e != "" ? e : "null"), (r != "" ? r : "null"), (seed != "" ? seed : "null")}' "$1" 2>/dev/null ||
    echo "null null null"
}

# corpus_budget TARGET -> "max_inputs max_bytes" from corpus/BUDGET (its "default" line
# for a target it does not name).
corpus_budget() {
  local line
  line="$(awk -v t="$1" '$1 == t {print $2, $3; found = 1} $1 == "default" {d = $2 " " $3}
    END {if (!found) print d}' "$ROOT/corpus/BUDGET")"
  echo "${line:-200 524288}"
}

# corpus_inputs TARGET: the inputs the budget counts, the top-level files of
# corpus/<target>/ (seeds and merged inputs; regressions/ is never dropped).
corpus_inputs() { find "$ROOT/corpus/$1" -maxdepth 1 -type f -printf '%f\n' | sort; }

# bytes_of PATH...: the apparent size of the top-level files of PATHs.
bytes_of() { find "$@" -maxdepth 1 -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}'; }

# budget_pick CONTROL ROOM ROOM_BYTES: from the control file of a libFuzzer -merge=1
# -merge_control_file=CONTROL run (line 1: the file count, line 2: how many are in the
# first directory, the tracked corpus; then the paths), the inputs of the other
# directories that add coverage edges ("COV i e..." lists the edges input i adds over
# every input before it: the first directory first, then the rest smallest first). Prints
# "keep EDGES SIZE PATH" for the ones adding the most edges (ties: smallest first) up
# to ROOM inputs and ROOM_BYTES bytes, then "over EDGES SIZE PATH" for the rest.
budget_pick() {
  awk 'NR == 1 {n = $1; next}
    NR == 2 {first = $1; next}
    NR <= n + 2 {path[NR - 3] = $0; next}
    $1 == "STARTED" {size[$2] = $3}
    $1 == "COV" && $2 >= first && NF > 2 {print NF - 2, size[$2] + 0, path[$2]}' "$1" |
    sort -k1,1nr -k2,2n |
    awk -v room="$2" -v room_bytes="$3" '{
      if (kept < room && bytes + $2 <= room_bytes) {kept++; bytes += $2; print "keep", $0} else print "over", $0}'
}
