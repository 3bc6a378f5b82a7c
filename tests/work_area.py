#!/usr/bin/env python3
"""The CTest guard of the user's work area (issue 23: a test run left 10 run
directories in .kvcheck-work/ and moved latest-run).

  work_area.py snapshot WORK_DIR STATE [ROOT]   records WORK_DIR's entries (fixture setup),
      and ROOT's top-level files that git does not track (the source tree; top_level)
  work_area.py compare WORK_DIR STATE [ROOT]    fails when WORK_DIR differs from STATE, or
      when ROOT's top level gained or changed such a file (cleanup): a tool that writes
      into the working directory (libFuzzer's crash-* artifacts of a `kvcheck fuzz` run
      from the source root) litters the user's tree, ignored by git or not
  work_area.py audit CTEST BUILD_DIR ROOT
      fails when a test of BUILD_DIR has no KVCHECK_WORK_DIR under ROOT of its own or
      does not require the kvcheck_work_area fixture (ctest --show-only=json-v1)
"""
import json
import os
import subprocess
import sys


def entries(work):
    """Every path under work with its type, link target, size and mtime; [] if absent."""
    out = []
    for d, dirs, files in os.walk(work):
        for n in sorted(dirs + files):
            p = os.path.join(d, n)
            st = os.lstat(p)
            link = os.readlink(p) if os.path.islink(p) else ""
            out.append(f"{os.path.relpath(p, work)}\t{st.st_mode:o}\t{link}\t{st.st_size}\t{st.st_mtime_ns}")
    return sorted(out)


def top_level(root):
    """ROOT's top-level files that git does not track, by name, size and mtime: what a
    tool run from the source root leaves there. Folders are left out (build trees and
    virtual environments change while the suite runs), and tracked files (a person may
    edit README.md meanwhile); outside a git checkout every file counts."""
    try:
        tracked = set(subprocess.run(["git", "-C", root, "ls-files", "--", ":(top,glob)*"], check=True,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout.split("\n"))
    except (OSError, subprocess.CalledProcessError):
        tracked = set()
    out = []
    for n in sorted(os.listdir(root)):
        p = os.path.join(root, n)
        if os.path.isdir(p) or n in tracked:
            continue
        st = os.lstat(p)
        out.append(f"{n}\t{st.st_size}\t{st.st_mtime_ns}")
    return out


def audit(ctest, build, root):
    info = json.loads(subprocess.run([ctest, "--test-dir", build, "--show-only=json-v1"], check=True,
                                     stdout=subprocess.PIPE, text=True).stdout)
    bad, seen = [], {}
    for t in info["tests"]:
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        if props.get("FIXTURES_SETUP") == ["kvcheck_work_area"] or props.get("FIXTURES_CLEANUP") == ["kvcheck_work_area"]:
            continue
        if t["name"].endswith("_NOT_BUILT"):  # gtest discovery's placeholder: fails by itself when run
            continue
        dirs = [m.split("=set:", 1)[1] for m in props.get("ENVIRONMENT_MODIFICATION", [])
                if m.startswith("KVCHECK_WORK_DIR=set:")]
        if not dirs or not dirs[-1].startswith(root + "/"):
            bad.append(f"{t['name']}: no KVCHECK_WORK_DIR under {root}")
        elif "kvcheck_work_area" not in props.get("FIXTURES_REQUIRED", []):
            bad.append(f"{t['name']}: does not require the kvcheck_work_area fixture")
        else:
            seen.setdefault(dirs[-1], set()).add(t["command"][0] if t.get("command") else t["name"])
    # add_test() tests each have their own directory; a gtest executable's tests share one.
    bad += [f"work area {d} shared by {sorted(c)}" for d, c in seen.items() if len(c) > 1]
    for b in bad:
        print(f"FAIL: {b} (call kvcheck_test_work_areas() in its CMakeLists.txt; top CMakeLists.txt)")
    print(f"{len(info['tests'])} tests, {len(bad)} without their own work area")
    return 1 if bad else 0


def main(argv):
    if len(argv) in (4, 5) and argv[1] == "snapshot":
        with open(argv[3], "w", encoding="utf-8") as f:
            f.write("\n".join(entries(argv[2])))
        print(f"snapshot of {argv[2]}: {len(entries(argv[2]))} entries")
        if len(argv) == 5:
            with open(argv[3] + ".root", "w", encoding="utf-8") as f:
                f.write("\n".join(top_level(argv[4])))
            print(f"snapshot of {argv[4]}'s top level: {len(top_level(argv[4]))} entries")
        return 0
    if len(argv) in (4, 5) and argv[1] == "compare":
        with open(argv[3], encoding="utf-8") as f:
            before = set(filter(None, f.read().split("\n")))
        after = set(entries(argv[2]))
        status = 0
        if before == after:
            print(f"{argv[2]} is as the suite found it ({len(after)} entries)")
        else:
            status = 1
            print(f"FAIL: the test suite changed {argv[2]} (tests must use their own KVCHECK_WORK_DIR; "
                  "or something else wrote there while the suite ran):")
            for e in sorted(after - before):
                print("  new or changed: " + e.split("\t")[0])
            for e in sorted(before - after):
                print("  gone or changed: " + e.split("\t")[0])
        if len(argv) == 5:
            with open(argv[3] + ".root", encoding="utf-8") as f:
                before = set(filter(None, f.read().split("\n")))
            added = sorted(set(top_level(argv[4])) - before)  # an entry gone is not litter
            if added:
                status = 1
                print(f"FAIL: the test suite wrote into {argv[4]} (a tool run from the source root must keep "
                      "its files in its run directory; or something else wrote there while the suite ran):")
                for e in added[:20]:
                    print("  new or changed: " + e.split("\t")[0])
                if len(added) > 20:
                    print(f"  ... and {len(added) - 20} more")
            else:
                print(f"{argv[4]}'s top level is as the suite found it")
        return status
    if len(argv) == 5 and argv[1] == "audit":
        return audit(argv[2], argv[3], argv[4])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
