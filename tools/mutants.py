#!/usr/bin/env python3
"""kvcheck mutants — mutation testing: how many planted faults does the harness kill?

Usage: ./kvcheck mutants [--only ID]... [--jobs N] [--budget SECONDS] [--json FILE]
                         [--fuzz | --fuzz-only] [--seeds N --property-only [--cases C]] [--list]
                         [--check-apply] [--help]

Each mutants/NNN-name.patch is a realistic fault. Per job the tree is copied once to a
scratch directory OUTSIDE the source tree (KVCHECK_MUTANTS_DIR, default
$TMPDIR/kvcheck-mutants-$UID/<tree>-<hash>) and built once; then per mutant: apply the
patch, rebuild incrementally, run CTest (stop at the first failure: that test killed
it); if it survived, fuzz each relevant target for the budget (--fuzz: a clang
libFuzzer build per job), then a `kvcheck run --seconds BUDGET` campaign; revert.
CUDA mutants run only where the scratch build's `kvcheck backends` lists cuda
available; elsewhere they are reported "not run here (no GPU)", never as killed.

  --only ID     a mutant by number (7, 007) or name (cpu-fp4-nibble-swap); repeatable
  --jobs N      mutants in parallel, one scratch copy + build each (default 1)
  --budget S    seconds for each fuzz target and for the campaign (default 30)
  --json FILE   write the results as JSON (default: none)
  --fuzz        also fuzz survivors (builds fuzz targets with clang-14 per job)
  --fuzz-only   the fuzz layer alone: per mutant, each fuzz target that reaches the
                patched file (FUZZ_TARGETS), from its corpus with -seed=1, for the budget
                (default 60 s); table: target, seconds, executions, corpus file or
                fuzzing. Exit 1 when a survivor's patch has no '# fuzz-survivor:' line
                saying what kills it instead, or a kill took longer than the budget.
  --seeds N --property-only
                the property layer alone, N fixed seeds (1..N): per mutant and seed,
                `kvcheck run --cases C --seed S --fail-fast` over the properties of the
                ops the patched file feeds (PROPERTY_OPS; a seed that survives them runs
                the whole property layer); reports kills/N. The unmutated tree runs the
                N seeds first and must pass them all. Exit 1 when a mutant is killed by
                fewer than --min-kills seeds (default: 95% of N, rounded up).
  --cases C     cases per property for --property-only (default 300, the CI budget);
                there --jobs N runs N seeds at once (one build)
  --min-kills K seeds that must kill each mutant (default ceil(0.95 * N))
  --list        list the mutants and exit
  --check-apply check that every patch has its header and applies to the source tree
                (git apply --check; exit 77 = skipped when not in a git checkout)
All modes share one scratch copy per job and its builds (a lock keeps two runs apart).
Env: KVCHECK_JOBS (build parallelism per job), KVCHECK_MUTANTS_DIR, KVCHECK_CMAKE_ARGS.
Exit status: 0 when every mutant run here was killed, 1 when one survived or failed to
build, 2 on a bad option or unknown mutant.
"""
import argparse
import concurrent.futures
import fcntl
import glob
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MUTANTS = os.path.join(ROOT, "mutants")

# Which fuzz targets reach a source file (by path prefix); default: store, load, round_trip.
FUZZ_TARGETS = [
    ("impl/cpu/rope", ["concat_and_cache_mla", "store_kv"]),
    ("impl/validate_rope", ["concat_and_cache_mla", "store_kv"]),
    ("impl/cpu/copy_blocks", ["copy_blocks"]),
    ("impl/cuda/copy_blocks", ["copy_blocks", "swap_blocks"]),
    ("impl/validate_copy_blocks", ["copy_blocks", "swap_blocks"]),
    ("impl/cpu/swap_blocks", ["swap_blocks"]),
    ("impl/validate_swap_blocks", ["swap_blocks"]),
    ("impl/cpu/store_kv", ["store_kv"]),
    ("impl/cpu/gather_kv", ["gather_kv"]),
    ("impl/cpu/store", ["store", "round_trip", "prefill", "concat_and_cache_mla"]),
    ("impl/cpu/load", ["load", "round_trip", "prefill"]),
    ("impl/cpu/index_transforms", ["index"]),
    ("impl/cpu/fast_numerics", ["store", "round_trip", "numerics"]),
    ("impl/cpu/parallel", ["store", "load"]),
    ("impl/validate_store_load", ["store", "load", "concat_and_cache_mla"]),
    ("impl/validate_slots", ["store", "store_kv"]),
    ("impl/validate_index", ["index"]),
    ("impl/validate_kv", ["store_kv", "gather_kv"]),
    ("impl/kv_rules", ["store_kv", "gather_kv"]),
    ("impl/cuda/kv_family", ["store_kv", "gather_kv"]),
    ("impl/load_plan", ["plan", "prefill"]),
    ("impl/slot_mapping", ["slot_mapping", "plan", "prefill"]),
    ("impl/kv_slot_mapping", ["slot_mapping", "store_kv", "gather_kv"]),
    ("impl/kv_page_table", ["slot_mapping"]),
    ("impl/layout", ["store", "load", "round_trip"]),
    ("properties/ops/prefill/prefill_step", ["prefill"]),
]

# The property ops (`kvcheck run --property OP`) that exercise a source file (by path
# prefix); default: the whole property layer.
PROPERTY_OPS = [
    ("impl/cpu/rope", ["concat_and_cache_mla", "store_kv"]),
    ("impl/validate_rope", ["concat_and_cache_mla", "store_kv"]),
    ("impl/cpu/copy_blocks", ["copy_blocks"]),
    ("impl/cuda/copy_blocks", ["copy_blocks", "swap_blocks"]),
    ("impl/validate_copy_blocks", ["copy_blocks", "swap_blocks"]),
    ("impl/cpu/swap_blocks", ["swap_blocks"]),
    ("impl/validate_swap_blocks", ["swap_blocks"]),
    ("impl/cpu/store_kv", ["store_kv", "kv_step"]),
    ("impl/cpu/gather_kv", ["gather_kv", "kv_step"]),
    ("impl/cpu/store", ["store", "round_trip", "prefill", "concat_and_cache_mla"]),
    ("impl/cpu/load", ["load", "round_trip", "prefill"]),
    ("impl/cpu/index_transforms", ["index", "prefill"]),
    ("impl/cpu/fast_numerics", ["store", "load", "round_trip"]),
    ("impl/cpu/kv_numerics", ["store_kv", "gather_kv", "kv_step"]),
    ("impl/cpu/parallel", ["store", "load", "round_trip", "store_kv", "gather_kv", "kv_step"]),
    ("impl/validate_store_load", ["store", "load", "round_trip", "concat_and_cache_mla"]),
    ("impl/validate_slots", ["store", "store_kv"]),
    ("impl/validate_index", ["index"]),
    ("impl/validate_kv", ["store_kv", "gather_kv", "kv_layout"]),
    ("impl/kv_rules", ["store_kv", "gather_kv", "kv_step"]),
    ("impl/cuda/kv_family", ["store_kv", "gather_kv", "kv_step"]),
    ("impl/load_plan", ["plan", "prefill"]),
    ("impl/slot_mapping", ["slot_mapping", "plan", "prefill"]),
    ("impl/kv_slot_mapping", ["kv_slot_mapping", "kv_step"]),
    ("impl/kv_page_table", ["slot_mapping", "kv_step"]),
    ("impl/kv_layout", ["kv_layout", "store_kv", "gather_kv"]),
    ("impl/layout", ["layout", "store", "load", "round_trip"]),
    ("properties/ops/prefill/prefill_step", ["prefill"]),
]

# One binary per fuzz target: the fuzzers/ops/<family>/check_<name>.cpp files (as CMake finds them).
FUZZ_BINARIES = sorted("fuzz_" + os.path.basename(p)[len("check_"):-len(".cpp")]
                       for p in glob.glob(os.path.join(ROOT, "fuzzers", "ops", "*", "check_*.cpp")))


class UsageError(Exception):
    pass


def log(msg):
    print(f"kvcheck mutants: {msg}", file=sys.stderr, flush=True)


def parse_patch(path):
    meta = {"file": os.path.basename(path), "path": path, "category": "?", "description": "?"}
    meta["id"] = meta["file"].split("-", 1)[0]
    meta["name"] = meta["file"][:-len(".patch")]
    files = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"# (category|description|equivalent|fuzz-survivor): (.*)", line)
            if m:
                meta[m.group(1)] = m.group(2).strip()
            m = re.match(r"diff --git a/(\S+) b/", line)
            if m:
                files.append(m.group(1))
    meta["files"] = files
    meta["cuda"] = any(p.startswith("impl/cuda/") for p in files)
    return meta


def all_mutants():
    if not os.path.isdir(MUTANTS):
        raise UsageError(f"no {MUTANTS} directory")
    return [parse_patch(os.path.join(MUTANTS, f)) for f in sorted(os.listdir(MUTANTS))
            if f.endswith(".patch")]


def select(mutants, only):
    if not only:
        return mutants
    chosen = []
    for key in only:
        hits = [m for m in mutants if key in (m["id"], m["name"], m["name"].split("-", 1)[1])
                or (key.isdigit() and int(key) == int(m["id"]))]
        if not hits:
            raise UsageError(f"no mutant '{key}' (see --list)")
        chosen += [m for m in hits if m not in chosen]
    return chosen


PROGRESS_EVERY = 10  # seconds between progress lines of a long step (run(progress=...))


def run(cmd, cwd, log_file, timeout=None, env=None, progress=None):
    """Runs cmd, appending its output to log_file; returns (rc, seconds, output). With
    `progress` (a label), a long step says how far it is on stderr every ~10 s: its last
    ninja "[n/N]" line, else that it is still running (issue 23: 36 silent minutes)."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, errors="replace", env=env)
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(iter(p.stdout.readline, "")), daemon=True)
    reader.start()
    rc, last = None, t0
    while rc is None:
        try:
            rc = p.wait(timeout=1)
        except subprocess.TimeoutExpired:
            now = time.monotonic()
            if timeout is not None and now - t0 > timeout:
                p.kill()
                p.wait()
                rc = 124
            elif progress and now - last >= PROGRESS_EVERY:
                step = next((ln.strip() for ln in reversed(lines) if re.match(r"\[\d+/\d+\]", ln)), None)
                log(f"{progress}: {step or 'still running'} ({now - t0:.0f} s)")
                last = now
    reader.join(timeout=5)
    out = "".join(lines)
    with open(log_file, "a", encoding="utf-8") as f:
        f.write(f"$ {shlex.join(cmd)}  (in {cwd})\n{out}\n[rc {rc}]\n")
    return rc, time.monotonic() - t0, out


def source_files():
    """Tracked and untracked-but-not-ignored files of the source tree (what a build sees)."""
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                         cwd=ROOT, stdout=subprocess.PIPE, check=True).stdout
    return [p for p in out.decode().split("\0") if p and os.path.isfile(os.path.join(ROOT, p))]


def sync_tree(dest):
    """Makes dest a copy of the source tree, touching only files whose bytes differ (so a
    rebuild there stays incremental) and removing files the tree no longer has (a test
    or corpus file deleted since the last run would otherwise still build and run)."""
    files = source_files()
    keep = set(files)
    for d, _, names in os.walk(dest):
        for n in names:
            rel = os.path.relpath(os.path.join(d, n), dest)
            if rel not in keep:
                os.remove(os.path.join(d, n))
    for rel in files:
        s, d = os.path.join(ROOT, rel), os.path.join(dest, rel)
        if os.path.isfile(d):
            with open(s, "rb") as a, open(d, "rb") as b:
                if a.read() == b.read():
                    continue
        os.makedirs(os.path.dirname(d), exist_ok=True)
        shutil.copy2(s, d)


class Job:
    def __init__(self, base, index, build_jobs, want_fuzz, want_cuda):
        self.dir = os.path.join(base, f"job{index}")
        self.src = os.path.join(self.dir, "src")
        self.build = os.path.join(self.dir, "build")
        self.fuzz_build = os.path.join(self.dir, "build-fuzz")
        self.log = os.path.join(self.dir, "log.txt")
        self.build_jobs = build_jobs
        self.want_fuzz = want_fuzz
        self.want_cuda = want_cuda
        self.gpu = False
        self.fuzz_ok = False
        self.parallel = 1  # --property-only: seeds run at once

    def cmake_build(self, build_dir, targets=(), progress=None):
        t = ["--target", *targets] if targets else []
        return run(["cmake", "--build", build_dir, "-j", str(self.build_jobs), *t], self.src, self.log,
                   progress=progress)

    def lock(self):
        """One run per scratch copy: a second one would apply its patches over ours."""
        os.makedirs(self.dir, exist_ok=True)
        self._lock = open(os.path.join(self.dir, "lock"), "w")
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise RuntimeError(f"another `kvcheck mutants` run is using {self.dir}; wait for it, or set "
                               "KVCHECK_MUTANTS_DIR to another directory")

    def prepare(self, targets=(), fuzz=False):
        """Syncs the scratch copy (restoring a patch an interrupted run left applied) and
        builds what the mode needs: `targets` of the g++ tree (all when empty), and with
        `fuzz` the clang-14 libFuzzer targets. Every mode shares the copy and its builds, so
        one mode's run makes the next one's rebuild incremental."""
        self.lock()
        os.makedirs(self.src, exist_ok=True)
        open(self.log, "w").close()
        sync_tree(self.src)
        extra = shlex.split(os.environ.get("KVCHECK_CMAKE_ARGS", ""))
        if targets is not None and not os.path.isfile(os.path.join(self.build, "build.ninja")):
            cuda = [] if self.want_cuda else ["-DKVCHECK_CUDA=OFF"]
            log(f"configuring the scratch build {self.build}")
            rc, _, out = run(["cmake", "-S", self.src, "-B", self.build, "-G", "Ninja",
                              "-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DKVCHECK_BENCH=OFF", *cuda,
                              *extra], self.src, self.log, progress="configure")
            if rc != 0:
                raise RuntimeError(f"configure failed (see {self.log}):\n{out[-2000:]}")
        if targets is not None:
            log(f"building the unmutated scratch tree {self.build} (progress every 10 s; log {self.log})")
            rc, _, out = self.cmake_build(self.build, targets, progress="scratch build")
            if rc != 0:
                raise RuntimeError(f"the unmutated tree does not build (see {self.log}):\n{out[-2000:]}")
            rc, _, out = run([os.path.join(self.build, "tools/kvcheck/kvcheck"), "backends"],
                             self.src, self.log)
            self.gpu = bool(re.search(r"^cuda\s+available", out, re.M))
        if fuzz:
            if shutil.which("clang++-14") is None:
                log("fuzz: no clang++-14 here; fuzz targets are not run")
                return
            if not os.path.isfile(os.path.join(self.fuzz_build, "build.ninja")):
                run(["cmake", "-S", self.src, "-B", self.fuzz_build, "-G", "Ninja",
                     "-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DCMAKE_C_COMPILER=clang-14",
                     "-DCMAKE_CXX_COMPILER=clang++-14", "-DKVCHECK_FUZZ=ON",
                     "-DKVCHECK_CUDA=OFF", "-DKVCHECK_BENCH=OFF"], self.src, self.log)
            log(f"building the fuzz targets in {self.fuzz_build} (progress every 10 s)")
            self.fuzz_ok = self.cmake_build(self.fuzz_build, FUZZ_BINARIES, progress="fuzz build")[0] == 0
            if not self.fuzz_ok:
                log(f"fuzz: the clang fuzz build failed (see {self.log}); fuzz targets are not run")

    def patch(self, m, reverse=False):
        cmd = ["git", "apply", *(["-R"] if reverse else []), m["path"]]
        env = dict(os.environ, GIT_CEILING_DIRECTORIES=self.dir)
        return run(cmd, self.src, self.log, env=env)[0] == 0

    def fuzz_targets(self, m):
        targets = []
        for f in m["files"]:
            hit = next((t for p, t in FUZZ_TARGETS if f.startswith(p)), ["store", "load", "round_trip"])
            targets += [t for t in hit if t not in targets]
        return targets

    def apply_or_why(self, m, cuda_here):
        """Applies m's patch and returns None, or says why m is not run: a CUDA mutant
        where `cuda_here` is false, one argued equivalent, a patch that does not apply."""
        if m["cuda"] and not cuda_here:
            return "not run here (no GPU)"
        if m.get("equivalent"):
            return "equivalent (argued in the patch)"
        if not self.patch(m):
            return "patch does not apply"
        return None

    def run_mutant(self, m, budget):
        r = {k: m[k] for k in ("id", "name", "category", "description", "files")}
        r.update(killed_by=None, kind=None, seconds=None, status=None, notes=[])
        r["status"] = self.apply_or_why(m, self.gpu)
        if r["status"]:
            return r
        try:
            rc, build_s, out = self.cmake_build(self.build)
            r["build_seconds"] = round(build_s, 1)
            if rc != 0:
                r["status"] = "does not build"
                r["notes"].append(out[-1500:])
                return r
            t0 = time.monotonic()
            # CTest starts the tests that took longest last time first (its cost data),
            # i.e. the sanitizer runs; without it, it keeps the declared order, in which
            # the fast tests come first.
            cost = os.path.join(self.build, "Testing", "Temporary", "CTestCostData.txt")
            # CUDA mutants: the GPU suites on every core (the cpu tests cannot see a kernel
            # fault and would only delay the kill): first the CUDA suite without the
            # compute-sanitizer runs (seconds), then all of labels cuda and property.
            stages = ([["-L", "cuda", "-E", "sanitize"], ["-L", "cuda|property"]] if m["cuda"] else [[]])
            par = ["-j", str(os.cpu_count() or 1)] if m["cuda"] else ["-j", "1"]
            for sel in stages:
                if os.path.exists(cost):
                    os.remove(cost)
                rc, _, out = run(["ctest", "--stop-on-failure", "--output-on-failure", *sel, *par,
                                  "--timeout", "600"], self.build, self.log)
                if rc != 0:
                    # The names under "The following tests FAILED:" only: ctest lists the
                    # skipped tests ("did not run", "(Skipped)") in the same form, before them.
                    tail = out.split("The following tests FAILED:", 1)
                    failed = re.findall(r"^\s*\d+ - (\S+) \((?!Skipped|Not Run|Disabled)", tail[-1], re.M) \
                        if len(tail) == 2 else []
                    r.update(killed_by=failed[0] if failed else "ctest (rc %d)" % rc, kind="test",
                             seconds=round(time.monotonic() - t0, 1), status="killed")
                    return r
            if self.fuzz_ok:
                kill = self.fuzz_mutant(m, budget)
                if kill:
                    r.update(killed_by=f"fuzz_{kill['target']}", kind="fuzz", status="killed",
                             seconds=round(time.monotonic() - t0, 1), fuzz=kill)
                    return r
            else:
                r["notes"].append("fuzz: not run (no clang fuzz build; pass --fuzz)")
            rc, _, out = run([os.path.join(self.build, "tools/kvcheck/kvcheck"), "run",
                              "--seconds", str(budget), "--quiet"], self.build, self.log,
                             timeout=budget + 300)
            if rc != 0:
                seed = re.search(r"seed (\d+)", out)
                r.update(killed_by="campaign" + (f" (seed {seed.group(1)})" if seed else ""),
                         kind="campaign", status="killed", seconds=round(time.monotonic() - t0, 1))
                return r
            r.update(killed_by="SURVIVED", status="survived", seconds=round(time.monotonic() - t0, 1))
            return r
        finally:
            if not self.patch(m, reverse=True):
                sync_tree(self.src)  # restore the copy from the source tree
                self.cmake_build(self.build)


    def fuzz_mutant(self, m, budget):
        """Fuzzes the targets that reach m's files (FUZZ_TARGETS), each from its seed
        corpus (seeds and regressions: what the nightly starts from) with -seed=1 for
        -max_total_time=budget, until one writes an artifact. Returns the kill (target,
        seconds from that target's start, executions, whether a corpus file did it) or
        None; `self.last_tried` lists each target run and its outcome."""
        if self.cmake_build(self.fuzz_build, FUZZ_BINARIES)[0] != 0:
            return {"target": "(fuzz build failed)", "seconds": None, "tried": []}
        first, tried = None, []
        self.last_tried = tried
        for t in self.fuzz_targets(m):
            exe = os.path.join(self.fuzz_build, "fuzzers", f"fuzz_{t}")
            art = os.path.join(self.dir, "fuzz-artifacts", t) + "/"
            work = os.path.join(self.dir, "fuzz-corpus", t)
            for d in (art, work):
                shutil.rmtree(d, ignore_errors=True)
                os.makedirs(d)
            seeds = [os.path.join(self.src, "corpus", t)]
            seeds += [s for s in [os.path.join(seeds[0], "regressions")] if os.path.isdir(s)]
            frc, secs, out = run([exe, f"-max_total_time={budget}", "-seed=1", f"-artifact_prefix={art}",
                                  "-print_final_stats=1", work, *[d for d in seeds if os.path.isdir(d)]],
                                 self.dir, self.log, timeout=budget + 120)
            execs = re.findall(r"stat::number_of_executed_units:\s*(\d+)", out)
            outcome = {"target": t, "seconds": round(secs, 1), "execs": int(execs[-1]) if execs else None,
                       "killed": bool(os.listdir(art)) or frc != 0,
                       # a kill before "INITED": a seed or regression file of the corpus did it
                       "by_corpus": "INITED" not in out}
            tried.append(outcome)
            if outcome["killed"]:
                first = outcome
                break
        return dict(first, tried=tried) if first else None

    def run_fuzz_only(self, m, budget):
        """The fuzz layer alone on mutant m: every target that reaches its files."""
        r = {k: m[k] for k in ("id", "name", "category", "description", "files")}
        r.update(status=None, kill=None, tried=[], notes=[])
        # The fuzz build has no CUDA backend: CUDA mutants are the GPU suites'.
        r["status"] = "not run (the fuzz build has no CUDA backend)" if m["cuda"] else self.apply_or_why(m, False)
        if r["status"]:
            return r
        try:
            res = self.fuzz_mutant(m, budget)
            if res and res["target"] == "(fuzz build failed)":
                r["status"] = "does not build"
                return r
            r["status"] = "killed" if res else "survived"
            r["kill"] = res
            r["tried"] = self.last_tried
            return r
        finally:
            if not self.patch(m, reverse=True):
                sync_tree(self.src)

    def property_ops(self, m):
        ops = []
        for f in m["files"]:
            hit = next((t for p, t in PROPERTY_OPS if f.startswith(p)), None)
            if hit is None:
                return []  # the whole layer
            ops += [t for t in hit if t not in ops]
        return ops

    def property_run(self, seed, cases, ops):
        """One `kvcheck run` of the property layer (or of `ops`); returns (rc, seconds, output)."""
        cmd = [os.path.join(self.build, "tools/kvcheck/kvcheck"), "run", "--cases", str(cases),
               "--seed", str(seed), "--fail-fast", "--quiet",
               "--work-dir", os.path.join(self.dir, "work", f"seed{seed}")]
        for op in ops:
            cmd += ["--property", op]
        env = dict(os.environ)
        env.pop("RC_PARAMS", None)
        return run(cmd, self.build, self.log, timeout=1800, env=env)

    def run_seeds(self, m, seeds, cases):
        """kills/len(seeds) of the property layer alone on mutant m (None: the unmutated tree)."""
        name = m["name"] if m else "(unmutated)"
        r = {"name": name, "id": m["id"] if m else "-", "category": m["category"] if m else "-",
             "seeds": len(seeds), "kills": 0, "survived": [], "full_layer_kills": [], "status": None,
             "killed_by": {}, "notes": []}
        r["status"] = self.apply_or_why(m, self.gpu) if m else None
        if r["status"]:
            return r
        t0 = time.monotonic()
        try:
            if m:
                rc, build_s, out = self.cmake_build(self.build, ["kvcheck"])
                r["build_seconds"] = round(build_s, 1)
                if rc != 0:
                    r["status"] = "does not build"
                    r["notes"].append(out[-1500:])
                    return r
            ops = self.property_ops(m) if m else []
            r["ops"] = ops
            def one_seed(seed):
                rc, _, out = self.property_run(seed, cases, ops)
                full = False
                if rc == 0 and ops:  # not killed by the likely ops: the whole layer decides
                    rc, _, out = self.property_run(seed, cases, [])
                    full = rc == 1
                return seed, rc, out, full

            # Seeds are independent runs of one build: `parallel` at a time.
            with concurrent.futures.ThreadPoolExecutor(self.parallel) as ex:
                outcomes = sorted(ex.map(one_seed, seeds))
            for seed, rc, out, full in outcomes:
                if full:
                    r["full_layer_kills"].append(seed)
                if rc == 1:
                    r["kills"] += 1
                    who = re.search(r"^FAIL (\S+) on", out, re.M)
                    key = who.group(1) if who else "?"
                    r["killed_by"][key] = r["killed_by"].get(key, 0) + 1
                elif rc == 0:
                    r["survived"].append(seed)
                else:
                    r["status"] = f"kvcheck run exited {rc} at seed {seed}"
                    r["notes"].append(out[-1500:])
                    return r
            r["status"] = "measured"
            return r
        finally:
            r["seconds"] = round(time.monotonic() - t0, 1)
            if m and not self.patch(m, reverse=True):
                sync_tree(self.src)
                self.cmake_build(self.build, ["kvcheck"])


def markdown_table(rows):
    """rows[0] is the header; columns padded to their widest cell."""
    w = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["| " + " | ".join(c.ljust(w[i]) for i, c in enumerate(row)) + " |" for row in rows]
    lines.insert(1, "|" + "|".join("-" * (x + 2) for x in w) + "|")
    return "\n".join(lines)


def seeds_table(results, n):
    rows = [("mutant", "category", f"kills/{n}", "killed by (seeds)", "survived seeds", "time")]
    for r in results:
        if r["status"] != "measured":
            rows.append((r["name"], r["category"], "-", r["status"], "", ""))
            continue
        by = ", ".join(f"{k.replace('prop_', '')} {v}" for k, v in sorted(r["killed_by"].items(),
                                                                        key=lambda kv: -kv[1]))
        rows.append((r["name"], r["category"], f"{r['kills']}/{n}", by,
                     " ".join(map(str, r["survived"])) or "-", f"{r['seconds']:.0f} s"))
    return markdown_table(rows)


def main_seeds(a, mutants, base):
    n = a.seeds
    seeds = list(range(1, n + 1))
    min_kills = a.min_kills if a.min_kills is not None else -(-95 * n // 100)
    want_cuda = shutil.which("nvidia-smi") is not None and \
        subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0
    build_jobs = max(1, int(os.environ.get("KVCHECK_JOBS", os.cpu_count() or 1)))
    job = Job(base, 0, build_jobs, False, want_cuda)
    job.parallel = a.jobs
    log(f"--property-only: {len(mutants)} mutant(s), seeds 1..{n} ({a.jobs} at a time), {a.cases} cases per "
        f"property, scratch {base}")
    t_start = time.monotonic()
    try:
        job.prepare(["kvcheck"])
    except RuntimeError as e:
        log(str(e))
        return 1
    log(f"scratch build ready in {time.monotonic() - t_start:.0f} s; the unmutated tree over {n} seeds")
    baseline = job.run_seeds(None, seeds, a.cases)
    if baseline["status"] != "measured" or baseline["kills"]:
        log(f"the unmutated tree fails the property layer at seeds "
            f"{[s for s in seeds if s not in baseline['survived']]}: {baseline['status']}; fix that first")
        print(json.dumps(baseline, indent=2))
        return 1
    results = []
    for i, m in enumerate(mutants):
        r = job.run_seeds(m, seeds, a.cases)
        results.append(r)
        print(f"[{i + 1}/{len(mutants)}] {r['name']}: "
              + (f"{r['kills']}/{n} seeds" if r["status"] == "measured" else r["status"])
              + (f" (survived {r['survived']})" if r["survived"] else "") + f" {r.get('seconds', 0)} s",
              file=sys.stderr, flush=True)
    print(seeds_table(results, n))
    measured = [r for r in results if r["status"] == "measured"]
    weak = [r for r in measured if r["kills"] < min_kills]
    print(f"\n{len(measured) - len(weak)} of {len(measured)} measured mutants killed by >= {min_kills}/{n} seeds "
          f"of the property layer alone ({a.cases} cases per property)"
          + (f"; below: {', '.join(r['name'] for r in weak)}" if weak else ""))
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump({"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "mode": "property-only",
                       "seeds": seeds, "cases": a.cases, "min_kills": min_kills, "gpu": job.gpu,
                       "mutants": results}, f, indent=2)
        print(f"json: {a.json}")
    broken = [r for r in results if r["status"] not in ("measured", "not run here (no GPU)",
                                                        "equivalent (argued in the patch)")]
    return 1 if weak or broken else 0


def fuzz_table(results):
    rows = [("mutant", "category", "killed by", "time", "executions", "how")]
    for r in results:
        k = r["kill"]
        if r["status"] == "killed":
            before = sum(t["seconds"] for t in k["tried"][:-1])
            rows.append((r["name"], r["category"], f"fuzz_{k['target']}",
                         f"{k['seconds']:.1f} s" + (f" (after {before:.0f} s in other targets)" if before else ""),
                         str(k["execs"]) if k["execs"] is not None else "?",
                         "corpus file" if k["by_corpus"] else "fuzzing"))
        else:
            why = r["status"]
            if r["status"] == "survived":
                why = "SURVIVED " + ", ".join(f"fuzz_{t['target']} {t['seconds']:.0f} s" for t in r["tried"])
                if r.get("fuzz_survivor"):
                    why += " (argued in the patch)"
            rows.append((r["name"], r["category"], why, "-", "-", ""))
    return markdown_table(rows)


def main_fuzz(a, mutants, budget, base):
    """--fuzz-only: the fuzz layer alone (each relevant target from its corpus, -seed=1)."""
    build_jobs = max(1, int(os.environ.get("KVCHECK_JOBS", os.cpu_count() or 1)))
    job = Job(base, 0, build_jobs, True, False)
    log(f"--fuzz-only: {len(mutants)} mutant(s), {budget} s per target, scratch {base}")
    t_start = time.monotonic()
    try:
        job.prepare(targets=None, fuzz=True)
    except RuntimeError as e:
        log(str(e))
        return 1
    if not job.fuzz_ok:
        return 1
    log(f"fuzz build ready in {time.monotonic() - t_start:.0f} s; replaying every corpus on the unmutated tree")
    for t in sorted({t for m in mutants for t in job.fuzz_targets(m)}):
        corpus = os.path.join(job.src, "corpus", t)
        dirs = [d for d in (corpus, os.path.join(corpus, "regressions")) if os.path.isdir(d)]
        rc, _, out = run([os.path.join(job.fuzz_build, "fuzzers", f"fuzz_{t}"), "-runs=0", *dirs],
                         job.dir, job.log, timeout=600)
        if rc != 0:
            log(f"the unmutated tree fails fuzz_{t}'s corpus (rc {rc}, see {job.log}); fix that first")
            return 1
    results = []
    for i, m in enumerate(mutants):
        r = job.run_fuzz_only(m, budget)
        r["fuzz_survivor"] = m.get("fuzz-survivor")
        results.append(r)
        k = r["kill"]
        print(f"[{i + 1}/{len(mutants)}] {r['name']}: "
              + (f"fuzz_{k['target']} {k['seconds']} s, {k['execs']} executions"
                 + (" (a corpus file)" if k["by_corpus"] else "") if k else r["status"]),
              file=sys.stderr, flush=True)
    print(fuzz_table(results))
    killed = [r for r in results if r["status"] == "killed"]
    survived = [r for r in results if r["status"] == "survived"]
    times = sorted(r["kill"]["seconds"] for r in killed)
    over = [r["name"] for r in killed if r["kill"]["seconds"] > budget]
    unargued = [r["name"] for r in survived if not r["fuzz_survivor"]]
    print(f"\nkilled {len(killed)} of {len(killed) + len(survived)} by a fuzz target"
          + (f"; median {times[len(times) // 2]:.1f} s, max {times[-1]:.1f} s" if times else "")
          + (f"; {sum(r['kill']['by_corpus'] for r in killed)} of the kills by a corpus file" if killed else "")
          + (f"; survived, argued in the patch: {', '.join(r['name'] for r in survived if r['fuzz_survivor'])}"
             if len(unargued) < len(survived) else "")
          + (f"; SURVIVED without an argument: {', '.join(unargued)}" if unargued else ""))
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump({"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "mode": "fuzz-only",
                       "budget_s": budget, "mutants": results}, f, indent=2)
        print(f"json: {a.json}")
    broken = [r for r in results if r["status"] not in ("killed", "survived", "equivalent (argued in the patch)")
              and not r["status"].startswith("not run")]
    return 1 if unargued or broken or over else 0


def check_apply(mutants):
    """Every patch names its category and description and applies cleanly to ROOT."""
    if subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=ROOT, capture_output=True,
                      text=True).stdout.strip() != ROOT:
        print(f"skipped: {ROOT} is not a git checkout (git apply --check needs one)")
        return 77
    bad = 0
    for m in mutants:
        problems = [f"no '# {k}:' header" for k in ("category", "description") if m[k] == "?"]
        if not m["files"]:
            problems.append("no 'diff --git' section")
        p = subprocess.run(["git", "apply", "--check", m["path"]], cwd=ROOT, capture_output=True, text=True)
        if p.returncode != 0:
            problems.append("does not apply: " + p.stderr.strip().replace("\n", "; "))
        for why in problems:
            print(f"{m['file']}: {why}")
        bad += bool(problems)
    if len(mutants) < 40:
        print(f"only {len(mutants)} mutants; the suite needs at least 40")
        bad += 1
    print(f"{bad} problem(s) in {len(mutants)} patches" if bad else f"all {len(mutants)} patches apply")
    return 1 if bad else 0


def table(results):
    rows = [("mutant", "category", "killed by", "time to kill")]
    for r in results:
        who = r["killed_by"] or r["status"]
        t = f"{r['seconds']:.1f} s" if r["status"] == "killed" else "-"
        rows.append((r["name"], r["category"], who, t))
    w = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = ["  ".join(c.ljust(w[i]) for i, c in enumerate(row)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * x for x in w))
    return "\n".join(lines)


def main(argv):
    ap = argparse.ArgumentParser(prog="./kvcheck mutants", add_help=False,
                                 usage="./kvcheck mutants [--only ID]... [--jobs N] [--budget SECONDS] "
                                       "[--json FILE] [--fuzz | --fuzz-only] [--seeds N --property-only [--cases C]] "
                                       "[--list] [--check-apply] [--help]")
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--budget", type=float)
    ap.add_argument("--json")
    ap.add_argument("--fuzz", action="store_true")
    ap.add_argument("--fuzz-only", action="store_true")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--check-apply", action="store_true")
    ap.add_argument("--seeds", type=int, default=0)
    ap.add_argument("--property-only", action="store_true")
    ap.add_argument("--cases", type=int, default=300)
    ap.add_argument("--min-kills", type=int)
    ap.add_argument("-h", "--help", action="store_true")
    a = ap.parse_args(argv)  # a bad option: usage on stderr, exit 2
    if a.help:
        print(__doc__.strip().split("\n", 1)[1].strip())
        return 0
    try:
        if a.jobs < 1:
            raise UsageError("--jobs must be >= 1")
        if a.budget is None:
            a.budget = 60 if a.fuzz_only else 30
        if a.budget <= 0:
            raise UsageError("--budget must be > 0")
        if a.fuzz_only and (a.property_only or a.fuzz):
            raise UsageError("--fuzz-only goes alone (not with --property-only or --fuzz)")
        if a.property_only != (a.seeds > 0):
            raise UsageError("--seeds N and --property-only go together (N >= 1)")
        if a.cases < 1:
            raise UsageError("--cases must be >= 1")
        if a.min_kills is not None and not 0 <= a.min_kills <= a.seeds:
            raise UsageError("--min-kills must be in [0, --seeds]")
        mutants = select(all_mutants(), a.only)
    except UsageError as e:
        ap.print_usage(sys.stderr)
        log(str(e))
        return 2
    if a.check_apply:
        return check_apply(mutants)
    if a.list:
        for m in mutants:
            print(f"{m['id']}  {m['category']:<18} {m['name'].split('-', 1)[1]:<34} {m['description']}")
        return 0
    budget = int(a.budget) if a.budget == int(a.budget) else a.budget
    tree = hashlib.sha1(ROOT.encode()).hexdigest()[:8]
    base = os.environ.get("KVCHECK_MUTANTS_DIR") or os.path.join(
        os.environ.get("TMPDIR", "/tmp"), f"kvcheck-mutants-{os.getuid()}",
        f"{os.path.basename(ROOT)}-{tree}")
    base = os.path.abspath(base)
    if os.path.commonpath([base, ROOT]) == ROOT:
        ap.print_usage(sys.stderr)
        log(f"KVCHECK_MUTANTS_DIR {base} is inside the source tree; pick a directory outside it")
        return 2
    if a.property_only:
        return main_seeds(a, mutants, base)
    if a.fuzz_only:
        return main_fuzz(a, mutants, budget, base)
    njobs = min(a.jobs, len(mutants)) or 1
    build_jobs = max(1, int(os.environ.get("KVCHECK_JOBS", os.cpu_count() or 1)) // njobs)
    want_cuda = shutil.which("nvidia-smi") is not None and \
        subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0
    log(f"{len(mutants)} mutant(s), {njobs} job(s), budget {budget} s, scratch {base}")
    jobs = [Job(base, i, build_jobs, a.fuzz, want_cuda) for i in range(njobs)]
    t_start = time.monotonic()
    try:
        with concurrent.futures.ThreadPoolExecutor(njobs) as ex:
            list(ex.map(lambda j: j.prepare(fuzz=a.fuzz), jobs))
    except RuntimeError as e:
        log(str(e))
        return 1
    log(f"scratch builds ready in {time.monotonic() - t_start:.0f} s"
        f" (GPU: {'yes' if jobs[0].gpu else 'no'}, fuzz build: {'yes' if jobs[0].fuzz_ok else 'no'})")
    results, lock, free = [], threading.Lock(), list(jobs)

    def one(m):
        with lock:
            job = free.pop()
        try:
            r = job.run_mutant(m, budget)
        finally:
            with lock:
                free.append(job)
        with lock:
            results.append(r)
            killed = sum(x["status"] == "killed" for x in results)
            print(f"[{len(results)}/{len(mutants)}] {r['name']}: {r['killed_by'] or r['status']}"
                  + (f" ({r['seconds']} s)" if r["status"] == "killed" else "")
                  + f"   killed {killed}", file=sys.stderr, flush=True)
        return r

    with concurrent.futures.ThreadPoolExecutor(njobs) as ex:
        list(ex.map(one, mutants))
    results.sort(key=lambda r: r["id"])
    print(table(results))
    ran = [r for r in results if r["status"] in ("killed", "survived")]
    killed = [r for r in ran if r["status"] == "killed"]
    times = sorted(r["seconds"] for r in killed)
    median = times[len(times) // 2] if times else None
    print(f"\nkilled {len(killed)} of {len(ran)} run here"
          + (f"; median time to kill {median:.1f} s, max {times[-1]:.1f} s" if times else "")
          + f"; {len(results) - len(ran)} not run or broken")
    for r in results:
        for n in r["notes"]:
            if n.startswith("fuzz: not run"):
                print(n)
                break
        else:
            continue
        break
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump({"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "budget_s": budget,
                       "gpu": jobs[0].gpu, "fuzz_build": jobs[0].fuzz_ok, "mutants": results}, f, indent=2)
        print(f"json: {a.json}")
    skipped = ("not run here (no GPU)", "equivalent (argued in the patch)")
    return 0 if len(killed) == len(ran) and len(ran) == len([r for r in results if r["status"] not in skipped]) else 1


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except BrokenPipeError:
        sys.exit(0)
    except KeyboardInterrupt:
        log("interrupted; a mutant may still be applied in the scratch copy (the next run restores it)")
        sys.exit(130)
