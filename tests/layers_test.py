#!/usr/bin/env python3
"""The one-way layers of docs/layers.md, checked (issue 17).

  layers_test.py ROOT TARGETS_TSV   every #include "..." of every source under the checked
                                    folders, and the configured link graph (TARGETS_TSV,
                                    written by the top CMakeLists.txt), against the table
                                    of ROOT/docs/layers.md. Exit 0, or 1 listing each
                                    violation (file:line or target, both layers).
  layers_test.py --self-test ROOT   feeds the checker bad includes and links under the same
                                    table and expects each to be reported (exit 0 when all
                                    are, 1 naming the case the checker let through).
"""
import fnmatch
import os
import re
import subprocess
import sys

CHECKED = ("impl", "include", "reference", "properties", "fuzzers", "tools", "plugins", "bench")
SOURCE_EXT = (".h", ".hpp", ".cpp", ".cc", ".c", ".cu", ".cuh")
# Headers written into the build tree by CMake, with the layer of the code that includes them.
GENERATED = {"kvcheck_options_text.h": "tools", "fuzzers/fuzz_targets.inc": "fuzzers"}
INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


class Table:
    """The layer table of docs/layers.md: patterns, targets and 'may use' per layer."""

    def __init__(self, text):
        self.layers = {}  # name -> {"files": [...], "targets": [...], "uses": [...], "headers": [...]}
        rows = [l for l in text.splitlines() if l.startswith("| `")]
        for row in rows:
            cells = [c.strip() for c in row.strip().strip("|").split("|")]
            if len(cells) != 4:
                raise ValueError(f"docs/layers.md: a table row needs 4 cells: {row}")
            name = cells[0].strip("`")
            ticks = [re.findall(r"`([^`]+)`", c) for c in cells[1:]]
            uses = [u for u in ticks[2] if "/" not in u]
            headers = [u for u in ticks[2] if "/" in u]
            self.layers[name] = {"files": ticks[0], "targets": ticks[1], "uses": uses, "headers": headers}
        if not self.layers:
            raise ValueError("docs/layers.md: no layer table")
        for name, layer in self.layers.items():
            for u in layer["uses"]:
                if u not in self.layers:
                    raise ValueError(f"docs/layers.md: layer {name} may use {u}, which is no layer")
        self.below = {n: self._closure(n, []) for n in self.layers}

    def _closure(self, name, path):
        if name in path:
            raise ValueError("docs/layers.md: the layers use each other in a cycle: " + " -> ".join(path + [name]))
        out = set()
        for u in self.layers[name]["uses"]:
            out |= {u} | self._closure(u, path + [name])
        return out

    def layer_of(self, path):
        """The layer of a repository path: the longest matching pattern's (None: no row)."""
        best, best_len = None, -1
        for name, layer in self.layers.items():
            for pat in layer["files"]:
                hit = path.startswith(pat) if pat.endswith("/") else fnmatch.fnmatchcase(path, pat)
                if hit and len(pat) > best_len:
                    best, best_len = name, len(pat)
        return best

    def may_include(self, layer, header_layer, header):
        return (header_layer == layer or header_layer in self.below[layer]
                or header in self.layers[layer]["headers"])

    def may_link(self, layer, other):
        return other == layer or other in self.below[layer]


def check_includes(table, sources, exists):
    """sources: {path: [(line_no, included name), ...]}; exists(path) -> bool.
    Returns the violations, one line each."""
    bad = []
    for path in sorted(sources):
        layer = table.layer_of(path)
        if layer is None:
            bad.append(f"{path}: in no layer of docs/layers.md (add it to a row)")
            continue
        for line, name in sources[path]:
            where = f"{path}:{line}: #include \"{name}\""
            candidates = [os.path.normpath(os.path.join(os.path.dirname(path), name)), os.path.normpath(name)]
            target = next((c for c in candidates if exists(c)), None)
            if target is None:
                if GENERATED.get(name) == layer:
                    continue
                bad.append(f"{where}: no such file in the tree")
                continue
            other = table.layer_of(target)
            if other is None:
                bad.append(f"{where}: {target} is in no layer of docs/layers.md")
            elif not table.may_include(layer, other, target):
                bad.append(f"{where}: layer {layer} may not include {target} (layer {other})")
    return bad


def check_targets(table, targets):
    """targets: {name: (sources relative to the root, [linked names])}. Returns the violations."""
    bad, layer_of_target = [], {}
    for name, (sources, _) in targets.items():
        layers = {table.layer_of(s) for s in sources if not s.startswith("tests/")}
        if not layers:
            layer_of_target[name] = None  # a test program or test plugin: may use anything
            continue
        if None in layers:
            bad.append(f"target {name}: sources in no layer: "
                       + ", ".join(s for s in sources if table.layer_of(s) is None and not s.startswith("tests/")))
            continue
        if len(layers) > 1 or any(s.startswith("tests/") for s in sources):
            bad.append(f"target {name}: sources of several layers ({', '.join(sorted(l or 'tests' for l in layers))})")
            continue
        layer = layers.pop()
        layer_of_target[name] = layer
        if not any(fnmatch.fnmatchcase(name, p) for p in table.layers[layer]["targets"]):
            bad.append(f"target {name}: holds layer {layer}'s files but docs/layers.md does not list it there")
    for name, (_, links) in sorted(targets.items()):
        layer = layer_of_target.get(name)
        if layer is None:
            continue
        for other_name in links:
            if other_name not in layer_of_target:
                continue  # an imported or interface target (GTest, rapidcheck, kvcheck_warnings)
            other = layer_of_target[other_name]
            if other is None:
                bad.append(f"target {name} (layer {layer}) links {other_name}, a test target")
            elif not table.may_link(layer, other):
                bad.append(f"target {name} (layer {layer}) may not link {other_name} (layer {other})")
    return bad


def read_sources(root):
    try:
        listed = subprocess.run(["git", "-C", root, "ls-files", "--cached", "--others", "--exclude-standard",
                                 "--", *CHECKED], capture_output=True, text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: walk the folders
        listed = [os.path.relpath(os.path.join(d, f), root) for top in CHECKED
                  for d, _, fs in os.walk(os.path.join(root, top)) for f in fs]
    sources = {}
    for path in sorted(set(listed)):
        if not path.endswith(SOURCE_EXT) or not os.path.isfile(os.path.join(root, path)):
            continue
        with open(os.path.join(root, path), errors="replace") as f:
            sources[path] = [(i, m.group(1)) for i, line in enumerate(f, 1) for m in [INCLUDE_RE.match(line)] if m]
    return sources


def read_targets(root, tsv):
    """The top CMakeLists.txt's kvcheck_targets.tsv: target, folder, sources, links."""
    targets, names = {}, []
    build = os.path.dirname(os.path.abspath(tsv))
    with open(tsv) as f:
        rows = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    for name, folder, sources, links in rows:
        rel = []
        for s in sources.split(";"):
            if not s or s.startswith("$<"):
                continue
            full = os.path.normpath(os.path.join(folder, s))
            if full.startswith(build + os.sep):  # generated in the build tree: no layer of its own
                continue
            p = os.path.relpath(full, root)
            if not p.startswith(".."):
                rel.append(p)
        targets[name] = (rel, re.findall(r"[A-Za-z0-9_.+-]+", links))
        names.append(name)
    return targets


def self_test(table):
    """Each case must be reported; the good ones must not. Returns the failures."""
    existing = {"impl/op_args.h", "impl/layout.h", "impl/validate_kv.h", "impl/cuda/kernels.h",
                "properties/ops/prefill/prefill_step.h", "properties/gen/source.h", "impl/backend.h", "tools/kvcheck/options.h",
                "impl/cpu/parallel.h"}
    exists = existing.__contains__
    inc_cases = [  # (what, sources, must fail)
        ("a cpu kernel including the validators and the views", {"impl/cpu/k.cpp": [(1, "impl/validate_kv.h"), (2, "impl/op_args.h")]}, False),
        ("a core header including a validate header", {"impl/kv_cache.h": [(3, "impl/validate_kv.h")]}, True),
        ("a generator including a property header (issue 17)", {"properties/gen/ops/prefill/prefill_gen.h": [(9, "properties/ops/prefill/prefill_step.h")]}, True),
        ("a property including a generator", {"properties/harness.h": [(9, "gen/source.h")]}, False),
        ("the cpu backend including a cuda header", {"impl/cpu/k.cpp": [(1, "impl/cuda/kernels.h")]}, True),
        ("the reference including a core header it may not", {"reference/store.h": [(7, "impl/layout.h")]}, True),
        ("the reference including the argument views", {"reference/store.h": [(7, "impl/op_args.h")]}, False),
        ("a kernel including the tool", {"impl/cpu/k.cpp": [(1, "tools/kvcheck/options.h")]}, True),
        ("the tool including the thread split", {"tools/kvcheck/report.cpp": [(1, "impl/cpu/parallel.h")]}, False),
        ("a file in no layer", {"impl/new_thing.cpp": []}, True),
        ("an include of a missing file", {"impl/layout.cpp": [(1, "impl/no_such.h")]}, True),
        ("the generated options header outside tools", {"impl/layout.cpp": [(1, "kvcheck_options_text.h")]}, True),
    ]
    link_cases = [
        ("core linking format", {"kvcheck_core": (["impl/layout.cpp"], ["kvcheck_format"]),
                                 "kvcheck_format": (["impl/format.cpp"], [])}, False),
        ("core linking validate", {"kvcheck_core": (["impl/layout.cpp"], ["kvcheck_validate"]),
                                   "kvcheck_validate": (["impl/validate_kv.cpp"], [])}, True),
        ("the reference linking core", {"kvcheck_reference": (["reference/store.cpp"], ["kvcheck_core"]),
                                        "kvcheck_core": (["impl/layout.cpp"], [])}, True),
        ("the plugin host linking the cpu kernels", {"kvcheck_backends": (["impl/backends.cpp"], ["kvcheck_cpu"]),
                                                     "kvcheck_cpu": (["impl/cpu/store.cpp"], [])}, True),
        ("a library linking a test target", {"kvcheck_properties": (["properties/runner.cpp"], ["t"]),
                                             "t": (["tests/x_test.cpp"], [])}, True),
        ("a test linking anything", {"t": (["tests/x_test.cpp"], ["kvcheck_cpu"]),
                                     "kvcheck_cpu": (["impl/cpu/store.cpp"], [])}, False),
        ("a target of two layers", {"kvcheck_cpu": (["impl/cpu/store.cpp", "impl/validate_kv.cpp"], [])}, True),
        ("a target its layer does not name", {"kvcheck_impl": (["impl/layout.cpp"], [])}, True),
    ]
    failures = []
    for what, sources, must_fail in inc_cases:
        got = check_includes(table, sources, exists)
        if bool(got) != must_fail:
            failures.append(f"includes: {what}: expected {'a violation' if must_fail else 'none'}, got {got}")
    for what, targets, must_fail in link_cases:
        got = check_targets(table, targets)
        if bool(got) != must_fail:
            failures.append(f"links: {what}: expected {'a violation' if must_fail else 'none'}, got {got}")
    for what, text in [("a cycle", "| `a` | `x/` | `t` | `b` |\n| `b` | `y/` | `u` | `a` |\n"),
                       ("an unknown layer", "| `a` | `x/` | `t` | `nope` |\n")]:
        try:
            Table(text)
            failures.append(f"table: {what} was accepted")
        except ValueError:
            pass
    return failures, len(inc_cases) + len(link_cases) + 2


def main(argv):
    if len(argv) == 3 and argv[1] == "--self-test":
        table = Table(open(os.path.join(argv[2], "docs", "layers.md")).read())
        failures, n = self_test(table)
        for f in failures:
            print("SELF-TEST FAILED:", f)
        if failures:
            return 1
        print(f"layers self-test: {n} cases, every bad include and link reported")
        return 0
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    root, tsv = os.path.abspath(argv[1]), argv[2]
    table = Table(open(os.path.join(root, "docs", "layers.md")).read())
    sources = read_sources(root)
    targets = read_targets(root, tsv)
    bad = check_includes(table, sources, lambda p: os.path.isfile(os.path.join(root, p)))
    bad += check_targets(table, targets)
    for b in bad:
        print("LAYER VIOLATION:", b)
    if bad:
        print(f"{len(bad)} violations of docs/layers.md")
        return 1
    n_inc = sum(len(v) for v in sources.values())
    print(f"layers hold: {len(sources)} files, {n_inc} includes, {len(targets)} targets checked against docs/layers.md")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
