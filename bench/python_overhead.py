#!/usr/bin/env python3
"""Per-case cost of a Python backend against the C plugins (docs/python.md, issue 20):
`kvcheck run` on prop_store_kv_matches_reference with one seed and case count for
  cpu            the production cpu kernel, a C plugin (libkvcheck_cpu.so)
  py-reference   a Python backend whose store_kv calls kvcheck.reference.store_kv (C++)
  numpy-kv       python/examples/numpy_kv.py, a numpy kernel
Each row's time is what the campaign measured for the property (generation, the call,
the reference and the whole-buffer checks), so the ratio to cpu is the bridge's cost
per case. Run: build/python-venv/bin/python bench/python_overhead.py [--cases N]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir, "python", "examples"))
import kvcheck  # noqa: E402
import numpy_kv  # noqa: E402
from kvcheck import _run, reference  # noqa: E402


def reference_store_kv(key, value, key_cache, value_cache, slot_mapping, kv_cache_dtype, k_scale, v_scale):
    reference.store_kv(key, value, key_cache, value_cache, slot_mapping, kv_cache_dtype, k_scale, v_scale)


py_reference = kvcheck.Backend("py-reference", store_kv=reference_store_kv, kv_dtypes=kvcheck.KV_DTYPES)
PROPERTY = "prop_store_kv_matches_reference"


def cpu_row(cases, seed):
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "summary.json")
        subprocess.run([_run.native("tools/kvcheck/kvcheck"), "run", "--backend", "cpu", "--property", PROPERTY,
                        "--cases", str(cases), "--seed", str(seed), "--report", report, "--quiet"], check=True,
                       stdout=subprocess.DEVNULL)
        with open(report) as f:
            return json.load(f)["results"][0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rows = [("cpu (C plugin)", cpu_row(args.cases, args.seed))]
    for backend in (py_reference, numpy_kv.backend):
        result = kvcheck.check(backend, properties=[PROPERTY], cases=args.cases, seed=args.seed)
        rows.append((backend.name, result.rows[0]))
    base = rows[0][1]["seconds"] / rows[0][1]["cases"]
    print(f"{PROPERTY}, {args.cases} cases, seed {args.seed}")
    print(f"{'backend':<16} {'cases':>6} {'calls':>6} {'ms/case':>8} {'x cpu':>6}")
    for name, r in rows:
        per = r["seconds"] / r["cases"]
        print(f"{name:<16} {r['cases']:>6} {r['backend_calls']:>6} {per * 1e3:>8.3f} {per / base:>6.2f}")


if __name__ == "__main__":
    main()
