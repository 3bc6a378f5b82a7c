#!/usr/bin/env python3
"""CTest campaign.shards_and_devices: `kvcheck run --shard I/N` + `kvcheck summary
merge` give exactly the unsharded run's pairs, and `kvcheck run --devices 0,1` (a
simulated two-GPU machine: workers pinned by CUDA_VISIBLE_DEVICES, the cpu backend)
runs every pair exactly once into one complete summary; a worker that dies is said
with its device and the merged verdict is not a pass; more devices than pairs leave the
rest idle; device ids that cannot exist are refused.
Usage: devices_test.py KVCHECK_BINARY WORK_DIR"""
import json
import os
import shutil
import subprocess
import sys

kvcheck, work = sys.argv[1], sys.argv[2]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
SELECT = ["--backend", "cpu", "--property", "store_kv", "--property", "gather_kv", "--cases", "2", "--seed", "5",
          "--quiet", "--work-dir", work]
failures = []


def check(ok, what):
    print(("ok:   " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


def run(*args, env=None):
    done = subprocess.run([kvcheck, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env=dict(os.environ, **(env or {})))
    return done.returncode, done.stdout


def load(path):
    with open(path) as f:
        return json.load(f)


def pairs(summary):
    return sorted((r["name"], r["verdict"], r["cases"], r["index"]) for r in summary["results"])


rc, out = run("run", *SELECT, "--report", f"{work}/full.json")
check(rc == 0, f"the unsharded run passes (exit {rc})\n{out}")
full = load(f"{work}/full.json")
check(len(full["results"]) >= 5, f"it selects several pairs ({len(full['results'])})")

shard_files = []
for i in (1, 2, 3):
    rc, out = run("run", *SELECT, "--shard", f"{i}/3", "--report", f"{work}/shard{i}.json")
    check(rc == 0, f"shard {i}/3 passes (exit {rc})\n{out}")
    shard_files.append(f"{work}/shard{i}.json")
shards = [load(f) for f in shard_files]
names = [r["name"] for s in shards for r in s["results"]]
check(len(names) == len(set(names)), "no pair is in two shards")
rc, out = run("summary", "merge", *shard_files, "--out", f"{work}/merged.json")
merged = load(f"{work}/merged.json")
check(rc == 0 and merged["verdict"] == "pass", f"merge passes (exit {rc}, {merged['verdict']})\n{out}")
check(pairs(merged) == pairs(full), "the merged shards are the unsharded run's pairs, verdicts and cases")
rc, out = run("summary", "merge", shard_files[0], shard_files[2], "--out", f"{work}/partial.json")
check(rc == 1 and load(f"{work}/partial.json")["verdict"] == "incomplete" and "shard 2: MISSING" in out,
      f"a missing shard is an incomplete merge (exit {rc})\n{out}")
rc, out = run("summary", "merge", shard_files[0], shard_files[0], "--out", f"{work}/twice.json")
check(rc == 2 and "again" in out, f"a shard given twice is refused (exit {rc}): {out.strip()}")
rc, out = run("summary", "merge", shard_files[0], f"{work}/full.json", "--out", f"{work}/mixed.json")
check(rc == 2 and "not a shard" in out, f"an unsharded summary is refused (exit {rc}): {out.strip()}")
# Shards of one run record the run's backends, not their part's: a selection whose host
# pair falls in one shard only merged as "not shards of one run" (a newcomer's report).
HOST = ["--backend", "cpu", "--backend", "host", "--property", "store", "--cases", "1", "--seed", "7", "--quiet",
        "--work-dir", work]
host_files = []
for i in (1, 2):
    rc, out = run("run", *HOST, "--shard", f"{i}/2", "--report", f"{work}/host{i}.json")
    check(rc == 0, f"host selection shard {i}/2 passes (exit {rc})\n{out}")
    host_files.append(f"{work}/host{i}.json")
holders = [any(r["backend"] == "host" for r in load(f)["results"]) for f in host_files]
check(holders.count(True) == 1, f"the selection puts host pairs in one shard only ({holders}): the case this checks")
check(all(load(f)["backends"] == ["cpu", "host"] for f in host_files),
      f"each shard records the run's backends: {[load(f)['backends'] for f in host_files]}")
rc, out = run("summary", "merge", *host_files, "--out", f"{work}/host_merged.json")
check(rc == 0 and load(f"{work}/host_merged.json")["verdict"] == "pass", f"they merge (exit {rc})\n{out}")

rc, out = run("run", *SELECT, "--shard", "4/3")
check(rc == 2, f"--shard 4/3 is a bad option (exit {rc})")

rc, out = run("run", *SELECT, "--devices", "0,1", "--report", f"{work}/devices.json")
devices = load(f"{work}/devices.json")
check(rc == 0 and devices["verdict"] == "pass", f"--devices 0,1 passes (exit {rc})\n{out}")
check(pairs(devices) == pairs(full), "every pair ran exactly once, as in the unsharded run")
check(devices["missing_pairs"] == [] and len(devices["devices"]) == 2, "the merged summary is complete")
for d in devices["devices"]:
    s = load(d["log"].replace(".log", ".summary.json"))
    check(s["cuda_visible_devices"] == d["device"], f"worker {d['device']} ran with CUDA_VISIBLE_DEVICES={d['device']}")
run_dir = devices["run_dir"]
check(os.path.isfile(f"{run_dir}/campaign.log") and os.path.isfile(f"{run_dir}/summary.json"),
      "one run directory: campaign.log and summary.json")

rc, out = run("run", *SELECT, "--devices", "0,1", "--report", f"{work}/died.json", env={"KVCHECK_TEST_KILL_WORKER": "1"})
died = load(f"{work}/died.json")
check(rc == 1 and died["verdict"] == "incomplete", f"a dead worker is no pass (exit {rc}, {died['verdict']})")
check("device 1 (shard 2/2): killed by signal 9" in out and "WORKER DIED" in out,
      f"the dead worker is said with its device\n{out}")
check(any(r["name"] for r in died["results"]) and died["missing_pairs"], "the other worker's pairs are kept")
rc, out = run("run", *SELECT, "--devices", "0,0")
check(rc == 2 and "twice" in out, f"--devices 0,0 is refused (exit {rc}): {out.strip()}")

# One pair on two devices: one worker, the other device idle, a pass (a shard with no
# pair was a dead worker and an incomplete verdict).
rc, out = run("run", "--backend", "cpu", "--property", "prop_store_matches_reference", "--cases", "1", "--seed", "5",
              "--quiet", "--work-dir", work, "--devices", "0,1", "--report", f"{work}/one_pair.json")
one = load(f"{work}/one_pair.json")
check(rc == 0 and one["verdict"] == "pass" and len(one["devices"]) == 1 and "device [1] left idle" in out
      and "WORKER DIED" not in out, f"one pair on two devices runs on one and passes (exit {rc})\n{out}")
for bad in ("-1", "99999999999999999999", "1024", "01", "GPU-"):
    rc, out = run("run", *SELECT, "--devices", bad)
    check(rc == 2 and "--devices" in out and "workers" not in out,
          f"--devices {bad} is refused before anything runs (exit {rc}): {out.strip()}")

print("all shard and device checks passed" if not failures else f"{len(failures)} checks failed")
sys.exit(1 if failures else 0)
