"""The plugin ABI's constants, read from include/kvcheck/backend_abi.h (the one place
they are written): status codes, operation and feature bits, K/V dtypes and paged
cache formats, by their names there without the prefix, lower case."""
import os
import re

HEADER = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "include", "kvcheck",
                      "backend_abi.h")


def _read():
    try:
        with open(HEADER, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise ImportError(f"kvcheck: cannot read the plugin ABI header {HEADER} ({e}); the kvcheck package must be "
                          "used from its checkout (pip install -e <checkout>/python)") from e
    enum = lambda prefix: {m.group(1).lower(): int(m.group(2))
                           for m in re.finditer(r"\b" + prefix + r"([A-Z0-9_]+)\s*=\s*(\d+)", text)}
    bits = {m.group(1).lower(): 1 << int(m.group(2))
            for m in re.finditer(r"#define KVCHECK_OP_([A-Z0-9_]+)\s+\(1u << (\d+)\)", text)}
    record = {m.group(1).lower(): 1 << int(m.group(2))
              for m in re.finditer(r"#define KVCHECK_RECORD_([A-Z0-9_]+)\s+\(1 << (\d+)\)", text)}
    return (enum("KVCHECK_STATUS_"), bits, enum("KVCHECK_KV_"), enum("KVCHECK_FORMAT_"), enum("KVCHECK_RECIPE_"),
            record)


# RECORD: the bits of layout.record_flags ("e4m3_tail", "scales_last"; docs/spec.md §2)
STATUS, OPS, KV_DTYPES, FORMATS, RECIPES, RECORD = _read()
# A short read of the header would make every backend look empty: fail loudly instead.
for _name, _table, _need in (("status", STATUS, ("ok", "slot_out_of_range", "internal")),
                             ("op", OPS, ("store_kv", "gather_kv", "gather_kv_seq_starts")),
                             ("kv dtype", KV_DTYPES, ("bf16", "fp16", "e4m3", "e5m2")),
                             ("format", FORMATS, ("bf16", "v41")),
                             ("recipe", RECIPES, ("spec", "vllm", "sglang"))):
    if any(n not in _table for n in _need):
        raise ImportError(f"kvcheck: {HEADER} lacks {_name} constants {_need} (found {sorted(_table)})")

STATUS_NAME = {v: k for k, v in STATUS.items()}
KV_DTYPE_NAME = {v: k for k, v in KV_DTYPES.items()}
FORMAT_NAME = {v: k for k, v in FORMATS.items()}

# The K/V cache dtypes and paged formats by name, in ABI order (for parametrising).
KV_DTYPE_NAMES = tuple(sorted(KV_DTYPES, key=KV_DTYPES.get))
FORMAT_NAMES = tuple(f for f in sorted(FORMATS, key=FORMATS.get) if f != "other")
