#!/usr/bin/env bash
# ./kvcheck corpus stats [TARGET...] [--coverage]
#     per target: seeds, merged inputs, regressions (fuzz / property), bytes, the
#     budget (corpus/BUDGET), the work area's pending inputs and regressions; with
#     --coverage (or when build-fuzz exists) libFuzzer's edges/features of the corpus.
# ./kvcheck corpus merge [TARGET...] [--from DIR]... [--dry-run]
#     adds to corpus/<target>/ the inputs that add coverage (libFuzzer -merge=1, smaller
#     first), named cov-<sha1 prefix>, until the target's budget is reached. Default
#     sources: the merged/ inputs of every fuzz run in the work area; --from takes a
#     run directory, or a directory of inputs when one TARGET is named.
# ./kvcheck corpus keep RUN_DIR|FILE...
#     copies regression files (fuzz crashes, property counterexamples *.json) of runs
#     into corpus/<target>/regressions/, which ./kvcheck test replays from then on.
# ./kvcheck corpus prune [TARGET...] [--dry-run]
#     re-minimises: deletes merged inputs (cov-*, bare hashes) that add no coverage over
#     the seeds, the regressions and the other merged inputs. Seeds and regressions stay.
# Nothing here commits: review with git status / git diff, then commit. Exit 2 on bad options.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=tools/lib.sh
source "$ROOT/tools/lib.sh"
USAGE="./kvcheck corpus stats|merge|keep|prune [TARGET...|RUN_DIR...] [--from DIR] [--dry-run] [--coverage]"
CORPUS="$ROOT/corpus"

sub="${1:-}"
[[ -n $sub ]] || bad_usage corpus "$USAGE" "needs a subcommand"
shift
case "$sub" in
  -h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  stats | merge | keep | prune) ;;
  *) bad_usage corpus "$USAGE" "unknown subcommand '$sub'" ;;
esac
ARGS=()
FROM=()
DRY_RUN=0
COVERAGE=0
while (($#)); do
  case "$1" in
    -h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --from) [[ $sub == merge ]] || bad_usage corpus "$USAGE" "--from is a merge option"
      need_value corpus "$USAGE" --from $#
      [[ -d $2 ]] || bad_usage corpus "$USAGE" "--from $2: no such directory"
      FROM+=("$(cd "$2" && pwd)"); shift 2 ;;
    --dry-run) [[ $sub == merge || $sub == prune ]] || bad_usage corpus "$USAGE" "--dry-run is a merge/prune option"
      DRY_RUN=1; shift ;;
    --coverage) [[ $sub == stats ]] || bad_usage corpus "$USAGE" "--coverage is a stats option"
      COVERAGE=1; shift ;;
    -*) bad_usage corpus "$USAGE" "unknown option $1" ;;
    *) ARGS+=("$1"); shift ;;
  esac
done

if [[ $sub == keep ]]; then
  ((${#ARGS[@]})) || bad_usage corpus "$USAGE" "keep needs a run directory or a regression file"
  for a in "${ARGS[@]}"; do [[ -e $a ]] || bad_usage corpus "$USAGE" "keep: no such file or directory: $a"; done
else
  TARGETS=("${ARGS[@]}")
  ((${#TARGETS[@]})) || mapfile -t TARGETS < <(all_targets)
  check_targets corpus "$USAGE" "${TARGETS[@]}"
  # --from: a run directory (its <target>/merged/ are used) or, for one TARGET, a
  # directory of inputs.
  for d in "${FROM[@]}"; do
    compgen -G "$d/*/merged" >/dev/null || ((${#ARGS[@]} == 1)) ||
      bad_usage corpus "$USAGE" "--from $d is not a run directory: name the one TARGET its inputs are for"
  done
fi

# corpus_budget, corpus_inputs and bytes_of: tools/lib.sh (fuzz.sh caps a run by the budget too).
is_merged_name() { [[ $1 =~ ^cov-[0-9a-f]{12}$ || $1 =~ ^[0-9a-f]{40}$ ]]; }
# count_files FIND_ARGS...: how many files find lists (0 when a path does not exist).
count_files() { { find "$@" 2>/dev/null || true; } | wc -l; }

keep() {
  local kept=0 skipped=0 a f t dest
  local files=()
  for a in "${ARGS[@]}"; do
    if [[ -d $a ]]; then
      [[ -d $a/regressions ]] || { log "corpus keep: $a has no regressions/ (nothing failed in that run)"; continue; }
      while IFS= read -r f; do files+=("$f"); done < <(find "$a/regressions" -type f | sort)
    else
      files+=("$a")
    fi
  done
  for f in "${files[@]}"; do
    t="$(basename "$(dirname "$f")")"
    if [[ $f == *.json ]]; then
      t="$(jq -r '.op // empty' "$f" 2>/dev/null || true)"
      [[ -n $t ]] || bad_usage corpus "$USAGE" "keep: $f is not a kvcheck regression file"
    fi
    [[ -d $CORPUS/$t ]] || bad_usage corpus "$USAGE" "keep: $f: no corpus/$t/ (target taken from its directory)"
    dest="$CORPUS/$t/regressions/$(basename "$f")"
    if [[ -f $dest ]] && cmp -s "$f" "$dest"; then
      skipped=$((skipped + 1))
      continue
    fi
    mkdir -p "$CORPUS/$t/regressions"
    cp "$f" "$dest"
    echo "kept ${dest#"$ROOT"/}"
    kept=$((kept + 1))
  done
  echo "kvcheck corpus keep: $kept new regression file(s), $skipped already kept; ./kvcheck test replays them; commit with git add corpus/"
}

stats() {
  local t stats_tmp
  [[ $COVERAGE == 1 ]] && { ensure_packages; build_fuzz "${TARGETS[@]}"; }
  stats_tmp="$(mktemp -d "${TMPDIR:-/tmp}/kvcheck-stats.XXXXXX")"
  printf '%-11s %6s %7s %9s %9s %10s %14s %9s %9s %s\n' target seeds merged reg-fuzz reg-prop bytes budget \
    pending pend-reg edges/features
  for t in "${TARGETS[@]}"; do
    local seeds=0 merged=0 name regf regp bytes pending pend_reg cov="-"
    while IFS= read -r name; do
      if is_merged_name "$name"; then merged=$((merged + 1)); else seeds=$((seeds + 1)); fi
    done < <(corpus_inputs "$t")
    regp=$(count_files "$CORPUS/$t/regressions" -type f -name '*.json')
    regf=$(($(count_files "$CORPUS/$t/regressions" -type f -not -name '.*') - regp))
    bytes=$(bytes_of "$CORPUS/$t")
    read -r bi bb <<<"$(corpus_budget "$t")"
    pending=$(count_files "$WORK_DIR"/runs/*/"$t"/merged -type f)
    pend_reg=$(count_files "$WORK_DIR"/runs/*/regressions/"$t" -type f)
    if [[ -x $FUZZ_BUILD/fuzzers/fuzz_$t ]]; then
      # -artifact_prefix: a crashing input goes to a temporary folder, not the working
      # directory (the source tree); the same in merge and prune.
      cov="$({ "$FUZZ_BUILD/fuzzers/fuzz_$t" -runs=0 -artifact_prefix="$stats_tmp/" "$CORPUS/$t" 2>&1 || true; } |
        sed -n 's/^#[0-9]*[[:space:]]*INITED cov: \([0-9]*\) ft: \([0-9]*\).*/\1\/\2/p' | tail -1)"
      [[ -n $cov ]] || cov="replay-fails"  # a tracked input crashes: ./kvcheck test -L replay says which
    fi
    printf '%-11s %6s %7s %9s %9s %10s %14s %9s %9s %s\n' "$t" "$seeds" "$merged" "$regf" "$regp" "$bytes" \
      "$((seeds + merged))/$bi,$((bb / 1024))K" "$pending" "$pend_reg" "$cov"
  done
  rm -rf "$stats_tmp"
  echo "(pending: inputs and regression files of runs in ${WORK_DIR#"$ROOT"/}/ not yet in corpus/; budget: corpus/BUDGET;"
  echo " edges/features: libFuzzer over the tracked corpus, where build-fuzz has the target; --coverage builds them)"
}

merge() {
  ensure_packages
  build_fuzz "${TARGETS[@]}"
  local t
  for t in "${TARGETS[@]}"; do
    local sources=() tmp bin="$FUZZ_BUILD/fuzzers/fuzz_$t" d
    if ((${#FROM[@]})); then
      for d in "${FROM[@]}"; do
        if [[ -d $d/$t/merged ]]; then
          sources+=("$d/$t/merged")
        elif ! compgen -G "$d/*/merged" >/dev/null; then
          sources+=("$d")  # a directory of inputs for the one target named
        fi
      done
    else
      for d in "$WORK_DIR"/runs/*/"$t"/merged; do [[ -d $d ]] && sources+=("$d"); done
    fi
    if ((${#sources[@]} == 0)); then
      echo "$t: nothing to merge"
      continue
    fi
    tmp="$(mktemp -d "${TMPDIR:-/tmp}/kvcheck-corpus.XXXXXX")"
    cp -r "$CORPUS/$t/." "$tmp/"
    find "$tmp" -type f -printf '%P\n' | sort >"$tmp.before"
    "$bin" -merge=1 -artifact_prefix="$tmp." "$tmp" "${sources[@]}" >"$tmp.log" 2>&1 ||
      { cat "$tmp.log" >&2; rm -rf "$tmp" "$tmp".*; return 1; }
    read -r bi bb <<<"$(corpus_budget "$t")"
    local count bytes added=0 over=0 f size
    count=$(corpus_inputs "$t" | wc -l)
    bytes=$(bytes_of "$CORPUS/$t")
    # Smallest first, so the budget keeps the most inputs (libFuzzer prefers them too).
    while read -r size f; do
      if ((count + 1 > bi || bytes + size > bb)); then
        over=$((over + 1))
        continue
      fi
      local name
      name="cov-$(sha1sum "$tmp/$f" | cut -c1-12)"
      [[ $DRY_RUN == 1 ]] || cp "$tmp/$f" "$CORPUS/$t/$name"
      count=$((count + 1))
      bytes=$((bytes + size))
      added=$((added + 1))
    done < <(comm -13 "$tmp.before" <(find "$tmp" -type f -printf '%P\n' | sort) |
      while read -r f; do echo "$(stat -c %s "$tmp/$f") $f"; done | sort -n)
    echo "$t: $((added + over)) input(s) add coverage; $([[ $DRY_RUN == 1 ]] && echo "would add" || echo added) $added," \
      "$over over the budget ($bi inputs, $bb bytes); corpus now $count inputs, $bytes bytes"
    rm -rf "$tmp" "$tmp".*
  done
  [[ $DRY_RUN == 1 ]] || echo "kvcheck corpus merge: review with git status corpus/, then commit"
}

prune() {
  ensure_packages
  build_fuzz "${TARGETS[@]}"
  local t
  for t in "${TARGETS[@]}"; do
    local bin="$FUZZ_BUILD/fuzzers/fuzz_$t" base cand name removed=0 total=0
    base="$(mktemp -d "${TMPDIR:-/tmp}/kvcheck-prune.XXXXXX")"
    cand="$(mktemp -d "${TMPDIR:-/tmp}/kvcheck-prune.XXXXXX")"
    # The base: seeds and regressions. Candidates: the merged inputs.
    while IFS= read -r name; do
      if is_merged_name "$name"; then cp "$CORPUS/$t/$name" "$cand/"; total=$((total + 1)); else cp "$CORPUS/$t/$name" "$base/"; fi
    done < <(corpus_inputs "$t")
    [[ -d $CORPUS/$t/regressions ]] && cp -r "$CORPUS/$t/regressions" "$base/"
    if ((total > 0)); then
      find "$base" -type f -printf '%P\n' | sort >"$base.before"
      "$bin" -merge=1 -artifact_prefix="$base." "$base" "$cand" >"$base.log" 2>&1 ||
        { cat "$base.log" >&2; rm -rf "$base" "$cand" "$base".*; return 1; }
      # libFuzzer names what it keeps by the SHA-1 of the content.
      local keep
      keep="$(comm -13 "$base.before" <(find "$base" -type f -printf '%P\n' | sort) | while read -r f; do sha1sum "$base/$f" | cut -d' ' -f1; done)"
      while IFS= read -r name; do
        grep -qx "$(sha1sum "$cand/$name" | cut -d' ' -f1)" <<<"$keep" && continue
        removed=$((removed + 1))
        [[ $DRY_RUN == 1 ]] || rm "$CORPUS/$t/$name"
      done < <(find "$cand" -type f -printf '%f\n')
    fi
    echo "$t: $total merged input(s), $removed add no coverage$([[ $DRY_RUN == 1 ]] && echo " (dry run: kept)" || echo " and were removed")"
    rm -rf "$base" "$cand" "$base".*
  done
}

"$sub"
