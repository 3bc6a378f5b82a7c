#!/usr/bin/env python3
"""CTest mutants.progress (issue 23: the scratch build printed nothing for 36 minutes):
tools/mutants.py's run() with a progress label reports a long step's last ninja
"[n/N]" line on stderr while it runs, and its whole output still reaches the log."""
import contextlib
import importlib.util
import io
import os
import sys
import tempfile

spec = importlib.util.spec_from_file_location("mutants", os.path.join(sys.argv[1], "tools", "mutants.py"))
mutants = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mutants)
mutants.PROGRESS_EVERY = 1
err = io.StringIO()
with tempfile.TemporaryDirectory() as d, contextlib.redirect_stderr(err):
    log = os.path.join(d, "log.txt")
    rc, _, out = mutants.run(["bash", "-c", "echo '[1/3] Building a'; sleep 2.5; echo '[2/3] Building b'; sleep 2.5"],
                             d, log, progress="scratch build")
    logged = open(log, encoding="utf-8").read()
print(err.getvalue())
ok = (rc == 0 and "scratch build: [1/3] Building a" in err.getvalue() and "scratch build: [2/3] Building b" in
      err.getvalue() and "[2/3] Building b" in out and "[2/3] Building b" in logged)
print("progress lines shown" if ok else f"FAIL: rc {rc}, no progress lines on stderr or output lost")
sys.exit(0 if ok else 1)
