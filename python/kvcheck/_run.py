"""kvcheck.check: run kvcheck's properties on a Python backend (docs/python.md)."""
import decimal
import json
import math
import os
import random
import shlex
import subprocess
import sys
import tempfile

from ._backend import Backend, count, names

CHECKOUT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir))


def build_dir():
    """The native build kvcheck runs from: $KVCHECK_BUILD_DIR, else <checkout>/build."""
    return os.path.abspath(os.environ.get("KVCHECK_BUILD_DIR") or os.path.join(CHECKOUT, "build"))


def native(path):
    """A file of the native build, or a RuntimeError saying how to make it."""
    full = os.path.join(build_dir(), path)
    if not os.path.exists(full):
        raise RuntimeError(f"kvcheck: {full} does not exist: build kvcheck first ({CHECKOUT}/kvcheck build), "
                           "or point KVCHECK_BUILD_DIR at a build tree")
    return full


def python_environment():
    """The variables that make libkvcheck_python.so start this interpreter, seeing
    this process's import path (the parts its own prefix does not give)."""
    prefixes = tuple(os.path.realpath(p) + os.sep for p in {sys.prefix, sys.base_prefix, sys.exec_prefix})
    extra = []
    for p in [os.getcwd()] + sys.path:
        p = os.path.realpath(p or os.getcwd())
        if os.path.isdir(p) and p not in extra and not (p + os.sep).startswith(prefixes):
            extra.append(p)
    return {"KVCHECK_PYTHON": os.path.normpath(sys.executable), "KVCHECK_PYTHONPATH": os.pathsep.join(extra)}


def _run(command, env, timeout, selected):
    """subprocess.run of `command`: past `timeout` seconds the run is killed (its workers,
    which ignore SIGINT/SIGTERM while they run the user's function, die with it: they
    hold PR_SET_PDEATHSIG) and an AssertionError names the properties. It stays in the
    caller's process group, so a CI job's SIGTERM to the group reaches it too."""
    with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as p:
        try:
            out, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
            raise AssertionError(f"kvcheck.check: timeout={timeout} s passed while running {selected}; the run and "
                                 f"its workers were killed. Output so far:\n{out}\ncommand: {shlex.join(command)}"
                                 ) from None
        except BaseException:  # Ctrl-C in pytest: leave no run behind
            p.kill()
            raise
    return subprocess.CompletedProcess(command, p.returncode, out)


class Result:
    """A finished run: summary (summary.json as a dict), rows by verdict, output."""

    def __init__(self, summary, output, command):
        self.summary, self.output, self.command = summary, output, command
        self.rows = summary.get("results", [])
        self.passed = [r for r in self.rows if r["verdict"] == "pass"]
        self.failed = [r for r in self.rows if r["verdict"] == "fail"]
        self.not_exercised = [r for r in self.rows if r["verdict"] == "not_run"]

    @property
    def cases(self):
        return sum(r["cases"] for r in self.rows)

    def __repr__(self):
        return (f"kvcheck.Result({len(self.passed)} passed, {len(self.failed)} failed, "
                f"{len(self.not_exercised)} not exercised, {self.cases} cases)")


# kvcheck run's --cases and --seed ranges (tools/kvcheck/options.txt).
CASES_RANGE = (1, 2**31 - 1)
SEED_RANGE = (0, 2**64 - 1)


def seconds_arg(seconds, what):
    """`kvcheck run --seconds`' text for a time budget: a plain decimal (the binary takes
    no exponent: str(1e-05) is '1e-05') of a number in (0, 1e9). ValueError naming `what`
    otherwise."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds < 1e9:
        raise ValueError(f"{what} {seconds!r} is not a number of seconds > 0 and below 1e9")
    return format(decimal.Decimal(seconds if isinstance(seconds, int) else repr(float(seconds))), "f")


def check(backend, *, ops=None, properties=None, kv_dtypes=None, formats=None, cases=None, seconds=None, seed=None,
          work_dir=None, timeout=None):
    """Runs every property of `backend`'s ops (or only `ops` / `properties`: names or
    parts of names) in kvcheck's campaign: `cases` per property (default 200) or a
    `seconds` budget, RapidCheck seed `seed` (default: random, printed). `kv_dtypes` /
    `formats` narrow what the backend declares for this run (one pytest item per
    dtype: parametrise over kvcheck.KV_DTYPES). Raises
    AssertionError with the decoded report of every failure and the command that
    replays it; the minimal case is a regression file in the run directory (under
    `work_dir`, default $KVCHECK_WORK_DIR or <checkout>/.kvcheck-work). A run in which
    no property made a call into the backend raises too. Returns a Result."""
    if not isinstance(backend, Backend):
        raise TypeError(f"kvcheck.check: {backend!r} is not a kvcheck.Backend")
    if cases is not None and seconds is not None:
        raise ValueError("kvcheck.check: cases or seconds, not both")
    if cases is not None:
        cases = count(cases, "kvcheck.check: cases", *CASES_RANGE)
    seconds_text = None if seconds is None else seconds_arg(seconds, "kvcheck.check: seconds")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or not 0 < timeout < math.inf):
        raise ValueError(f"kvcheck.check: timeout {timeout!r} is not a positive finite number of seconds")
    seed = random.randrange(1, 2**63) if seed is None else count(seed, "kvcheck.check: seed", *SEED_RANGE)
    # --property takes names, parts of names and op names; with neither, the backend's ops.
    selected = list(names(properties or (), "kvcheck.check: properties")) + list(
        names(ops or (), "kvcheck.check: ops"))
    if not selected:
        selected = backend.ops()
    narrow = {k: list(names(v, f"kvcheck.check: {k}")) for k, v in (("kv_dtypes", kv_dtypes), ("formats", formats))
              if v is not None}
    backend.narrowed(**narrow)  # a bad narrowing fails here, not in the child
    with tempfile.TemporaryDirectory(prefix="kvcheck-check-") as tmp:
        report = os.path.join(tmp, "summary.json")
        command = [native("tools/kvcheck/kvcheck"), "run", "--plugin", "python:" + backend.spec(), "--backend",
                   backend.name, "--seed", str(seed), "--report", report]
        command += (["--seconds", seconds_text] if seconds_text is not None
                    else ["--cases", str(200 if cases is None else cases)])
        for p in selected:
            command += ["--property", p]
        if work_dir:
            command += ["--work-dir", os.path.abspath(work_dir)]
        env = dict(os.environ, **python_environment())
        env.pop("KVCHECK_PYTHON_NARROW", None)
        if narrow:
            env["KVCHECK_PYTHON_NARROW"] = json.dumps(narrow, separators=(",", ":"))
        done = _run(command, env, timeout, selected)
        try:
            with open(report, encoding="utf-8") as f:
                summary = json.load(f)
        except (OSError, ValueError) as e:
            raise AssertionError(f"kvcheck run wrote no summary ({e}); exit {done.returncode}; output:\n"
                                 f"{done.stdout}\ncommand: {shlex.join(command)}") from None
    result = Result(summary, done.stdout, command)
    replay = shlex.join([f"{k}={env[k]}" for k in ("KVCHECK_PYTHON", "KVCHECK_PYTHONPATH", "KVCHECK_PYTHON_NARROW")
                         if k in env] + command[:command.index("--report")])
    if result.failed:
        parts = [f"kvcheck: {len(result.failed)} of {len(result.rows)} properties failed on Python backend "
                 f"'{backend.name}' (seed {seed}):"]
        for r in result.failed:
            for f in r.get("failures", []):
                parts.append(f"\nFAIL {r['property']} ({r['invariant']})\n{f['message']}\nreplay: {f['reproduce']}")
        parts.append(f"\nrun directory (regression files): {summary.get('run_dir')}\nwhole run: {replay}")
        raise AssertionError("\n".join(parts))
    # The invalid- and bad-input properties' calls stop in kvcheck's validator before
    # Python runs (docs/python.md, "Validation"): they exercise the bridge, never the functions.
    if not any(r.get("backend_calls", 0) > 0 and not any(k in r["property"] for k in ("_invalid_", "_bad_input_"))
               for r in result.passed):
        raise AssertionError(f"kvcheck: no property made a call into '{backend.name}''s functions (nothing "
                             "exercised; the invalid-input properties stop in kvcheck's validator):\n"
                             f"{done.stdout}\ncommand: {replay}")
    if done.returncode != 0:
        raise AssertionError(f"kvcheck run exited {done.returncode}:\n{done.stdout}\ncommand: {replay}")
    return result
