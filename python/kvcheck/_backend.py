"""kvcheck.Backend and kvcheck.Refusal (docs/python.md)."""
import inspect
import operator
import os
import re

from . import _abi

# The entries a Python backend may give, by keyword: its ABI op (the KVCHECK_OP_* bit).
ENTRIES = {"store_kv": "store_kv", "gather_kv": "gather_kv", "store": "store_kv_cache", "load": "load_paged_kv_cache",
           "concat": "concat_and_cache_mla", "swap": "swap_blocks"}
# The property ops (`kvcheck run --list`) a backend's functions run: each function's
# own, and those that need two of them.
PROPERTY_OPS = {"store_kv": ["store_kv"], "gather_kv": ["gather_kv"], "store": ["store"], "load": ["load"],
                "concat": ["concat_and_cache_mla"], "swap": ["swap_blocks"]}
PAIRED_OPS = {("store_kv", "gather_kv"): "kv_step", ("store", "load"): "round_trip"}


def names(value, what):
    """A tuple of the sequence `value` (of names, numbers or pairs); a lone str or bytes,
    which would be iterated character by character, is a ValueError naming `what`."""
    if isinstance(value, (str, bytes)):
        raise ValueError(f"{what} is a sequence (a list or tuple), not the string {value!r}: write [{value!r}]")
    return tuple(value)


def count(value, what, lo, hi):
    """An integer (int or numpy integer; not a bool) in [lo, hi] as an int, else a
    ValueError naming `what`."""
    try:
        n = None if isinstance(value, bool) or type(value).__name__ == "bool_" else operator.index(value)
    except TypeError:
        n = None
    if n is None or not lo <= n <= hi:
        raise ValueError(f"{what} {value!r} is not an integer in [{lo}, {hi}]")
    return n


class Refusal(Exception):
    """Raise from a backend function to refuse an input with a kvcheck error code
    ('slot_out_of_range', 'shape_mismatch', ... : include/kvcheck/backend_abi.h's
    KVCHECK_STATUS_* names, lower case). The backend must not have written anything."""

    def __init__(self, code, message=""):
        if code not in _abi.STATUS or code in ("ok", "internal"):
            raise ValueError(f"kvcheck.Refusal: unknown code {code!r} (one of "
                             f"{sorted(c for c in _abi.STATUS if c not in ('ok', 'internal'))})")
        super().__init__(message or code)
        self.code = code


class Backend:
    """A kernel under test, as Python functions (docs/python.md):

        kvcheck.Backend("my-store", store_kv=f, gather_kv=g, kv_dtypes=("bf16", "fp16"))

    name: [a-z0-9_-]{1,32}, the backend's name in reports. Functions, each optional
    (an op without one is never called), take keyword arguments, numpy views
    (device="host") or torch CUDA tensors on kvcheck's device buffers (device="cuda",
    run on kvcheck's stream):
      store_kv(key, value, key_cache, value_cache, slot_mapping, kv_cache_dtype, k_scale, v_scale)
      gather_kv(key_cache, value_cache, block_table, cu_seqlens_k, out_k, out_v,
                kv_cache_dtype, k_scale, v_scale, seq_starts, seq_starts_unit)
      store(kv, slot_mapping, cache, layout)        # SPEC §5.1, raw cache bytes
      load(cache, layout, load_segments, total_k, out_data, out_scales)   # SPEC §5.2
      concat(kv_c, k_pe, slot_mapping, cache, layout)   # docs/spec.md §8.2, raw cache bytes;
                                                    # split caches add pe_cache, pe_layout;
                                                    # a fused RoPE (§8.4) adds rope
      swap(src, dst, views, block_mapping, src_pool, dst_pool)   # docs/spec.md §8.3, raw bytes;
                                                    # device="host" only for now
    kv_dtypes: the K/V cache dtypes it takes ('bf16', 'fp16', 'e4m3', 'e5m2', 'e2m1'); an
      'e2m1' (NVFP4, docs/spec.md §7.9) cache arrives as uint8 arrays of packed code pairs
      ([num_blocks][block_size][H][head_dim / 2], element 2i in the low nibble), its
      global decode scales in k_scale / v_scale (one float each), and three more keyword
      arguments of store_kv / gather_kv: k_sf and v_sf, the e4m3 scale caches (uint8:
      [num_blocks][block_size][H][head_dim / 16] for sf_layout 'linear',
      [num_blocks][H][block_size * head_dim / 16] tiles for 'interleave4', where token t's
      group g sits at (t // 4) * 4S + 4g + t % 4), and sf_layout;
    formats: the paged cache formats of store/load/concat ('bf16', 'v41', ...);
    seq_starts: gather_kv honours seq_starts (else it is never sent them);
    split_caches: concat takes split caches (FlashInfer's ckv / kpe): kv_c into `cache`,
      k_pe into the `pe_cache` keyword argument (else it is never sent one);
    rope: concat rotates k_pe first (docs/spec.md §8.4, vLLM's
      concat_and_cache_mla_rope_fused), and store_kv every head of its key rows: a `rope`
      keyword argument, a dict of cos_sin_cache (float32 [max_position][rot_dim], cos
      then sin), positions (int64 [n]), rot_dim, rope_offset and is_neox (else neither is
      ever sent one);
    block_size_multiple / max_block_size: declared limits (0 = none);
    recipe: the FP8 K/V store recipe store_kv implements ('spec', 'vllm' or 'sglang',
      docs/spec.md §7.3.1): its bytes are judged against it, and a mismatch says which
      recipe they do match;
    head_dims: the head_dims store_kv / gather_kv were built for (empty = any): cases
      are drawn among them, and prop_store_kv_undeclared_shape_is_refused hands
      store_kv others, which it must refuse with kvcheck.Refusal("unsupported");
    min_heads_x_head_dim / max_heads_x_head_dim: limits on num_kv_heads * head_dim (0 =
      none), declared and judged the same way (a kernel with a thread per element of a
      token's row has a maximum).
    kv_dtype_pairs: the (cache dtype, row dtype) pairs store_kv takes and gather_kv
      writes, e.g. (("e4m3", "bf16"), ("bf16", "bf16")) for a kernel instantiated for
      bf16 activations (empty = every pair the spec allows): the match properties draw
      only these, and prop_store_kv_undeclared_shape_is_refused hands store_kv rows of
      another, which it must refuse with kvcheck.Refusal("unsupported");
    kv_alignment: bytes (a power of two up to 256; 0 = none) that every K/V array's
      address and byte stride store_kv / gather_kv are handed is a multiple of (a
      Triton kernel compiled for 16-byte divisible pointers and strides declares 16):
      the match properties hand only such calls, and
      prop_store_kv_undeclared_shape_is_refused hands store_kv calls with one stride
      off, which it must refuse with kvcheck.Refusal("unsupported").
    kvcheck validates every call first with its own validator, so the functions see
    only valid calls (as an engine kernel assumes); refusals carry kvcheck's codes.
    Define it at module level: kvcheck runs it in fresh processes, found again by
    its module and attribute name.
    """

    def __init__(self, name, *, store_kv=None, gather_kv=None, store=None, load=None, concat=None, swap=None,
                 device="host",
                 kv_dtypes=("bf16", "fp16"), formats=(), seq_starts=False, split_caches=False, rope=False,
                 block_size_multiple=0,
                 max_block_size=0, recipe="spec", head_dims=(), min_heads_x_head_dim=0, max_heads_x_head_dim=0,
                 kv_alignment=0, kv_dtype_pairs=()):
        if not isinstance(name, str) or not re.fullmatch(r"[a-z0-9_-]{1,32}", name) or "-to-" in name:
            raise ValueError(f"kvcheck.Backend: name {name!r} is not [a-z0-9_-]{{1,32}} without '-to-' (the "
                             "separator of writer x reader pairs)")
        self.name = name
        if device not in ("host", "cuda"):
            raise ValueError(f"kvcheck.Backend {name}: device is 'host' (numpy arrays) or 'cuda' (torch CUDA tensors), "
                             f"not {device!r}")
        self.device = device
        self.functions = {k: f for k, f in
                          (("store_kv", store_kv), ("gather_kv", gather_kv), ("store", store), ("load", load),
                           ("concat", concat), ("swap", swap)) if f}
        for key, f in self.functions.items():
            if not callable(f):
                raise TypeError(f"kvcheck.Backend {name}: {key} is not callable")
        if not self.functions:
            raise ValueError(f"kvcheck.Backend {name}: no function (store_kv, gather_kv, store, load, concat or swap)")
        if swap is not None and device != "host":
            # A device backend's swap would get a host-flagged pool as page-locked host
            # memory next to device tensors; the bridge does not hand those out yet.
            raise ValueError(f"kvcheck.Backend {name}: swap is for device='host' backends only (for now)")
        self.kv_dtypes = names(kv_dtypes, f"kvcheck.Backend {name}: kv_dtypes")
        self.formats = names(formats, f"kvcheck.Backend {name}: formats")
        if not self.kv_dtypes and ({"store_kv", "gather_kv"} & set(self.functions)):
            raise ValueError(f"kvcheck.Backend {name}: store_kv / gather_kv need at least one kv_dtypes entry")
        if not self.formats and ({"store", "load", "concat"} & set(self.functions)):
            raise ValueError(f"kvcheck.Backend {name}: store / load / concat need at least one formats entry "
                             f"(one of {sorted(k for k in _abi.FORMATS if k != 'other')})")
        for d in self.kv_dtypes:
            if d not in _abi.KV_DTYPES:
                raise ValueError(f"kvcheck.Backend {name}: kv dtype {d!r} is not one of {sorted(_abi.KV_DTYPES)}")
        for f in self.formats:
            if f not in _abi.FORMATS or f == "other":
                raise ValueError(f"kvcheck.Backend {name}: format {f!r} is not one of "
                                 f"{sorted(k for k in _abi.FORMATS if k != 'other')}")
        if seq_starts and gather_kv is None:
            raise ValueError(f"kvcheck.Backend {name}: seq_starts=True needs gather_kv")
        self.seq_starts = bool(seq_starts)
        if split_caches and concat is None:
            raise ValueError(f"kvcheck.Backend {name}: split_caches=True needs concat")
        self.split_caches = bool(split_caches)
        if rope and concat is None and store_kv is None:
            raise ValueError(f"kvcheck.Backend {name}: rope=True needs concat or store_kv")
        self.rope = bool(rope)
        # int32 in the plugin ABI's table
        self.block_size_multiple = count(block_size_multiple, f"kvcheck.Backend {name}: block_size_multiple", 0,
                                         2**31 - 1)
        self.max_block_size = count(max_block_size, f"kvcheck.Backend {name}: max_block_size", 0, 2**31 - 1)
        if recipe not in _abi.RECIPES:
            raise ValueError(f"kvcheck.Backend {name}: recipe {recipe!r} is not one of "
                             f"{sorted(_abi.RECIPES, key=_abi.RECIPES.get)}")
        self.recipe = recipe
        self.head_dims = tuple(count(d, f"kvcheck.Backend {name}: head_dims entry", 1, 16384)
                               for d in names(head_dims, f"kvcheck.Backend {name}: head_dims"))
        if len(self.head_dims) > 16:
            raise ValueError(f"kvcheck.Backend {name}: head_dims {self.head_dims} must be at most 16 values in "
                             "[1, 16384]")
        self.min_heads_x_head_dim = count(min_heads_x_head_dim, f"kvcheck.Backend {name}: min_heads_x_head_dim", 0,
                                          2**31 - 1)
        self.max_heads_x_head_dim = count(max_heads_x_head_dim, f"kvcheck.Backend {name}: max_heads_x_head_dim", 0,
                                          2**31 - 1)
        lo, hi = self.min_heads_x_head_dim, self.max_heads_x_head_dim
        if lo < 0 or hi < 0 or (hi > 0 and lo > hi) or max(lo, hi) > 2**31 - 1:
            raise ValueError(f"kvcheck.Backend {name}: min_heads_x_head_dim {lo} / max_heads_x_head_dim {hi}: each in "
                             "[0, 2**31) (0 = none), the minimum at most the maximum")
        pairs = names(kv_dtype_pairs, f"kvcheck.Backend {name}: kv_dtype_pairs")
        if any(not isinstance(p, (tuple, list)) or len(p) != 2 for p in pairs):
            raise ValueError(f"kvcheck.Backend {name}: kv_dtype_pairs {kv_dtype_pairs!r} is a sequence of (cache dtype, "
                             "row dtype) pairs, e.g. ((\"e4m3\", \"bf16\"),)")
        self.kv_dtype_pairs = tuple((str(c), str(r)) for c, r in pairs)
        for c, r in self.kv_dtype_pairs:
            valid = c in _abi.KV_DTYPES and r in ("bf16", "fp16") and (c in ("e4m3", "e5m2", "e2m1") or c == r)
            if not valid:
                raise ValueError(f"kvcheck.Backend {name}: kv_dtype_pairs ({c!r}, {r!r}) is not a pair the spec allows "
                                 "(a bf16/fp16 cache with rows of its dtype, an e4m3/e5m2/e2m1 cache with bf16 or fp16 "
                                 "rows)")
        for d in self.kv_dtypes:
            if self.kv_dtype_pairs and not any(c == d for c, _ in self.kv_dtype_pairs):
                raise ValueError(f"kvcheck.Backend {name}: kv_dtype_pairs declare no row dtype for its {d} caches")
        if isinstance(kv_alignment, bool) or not isinstance(kv_alignment, int):
            raise ValueError(f"kvcheck.Backend {name}: kv_alignment {kv_alignment!r} is an int (bytes)")
        self.kv_alignment = kv_alignment
        if self.kv_alignment < 0 or self.kv_alignment > 256 or self.kv_alignment & (self.kv_alignment - 1):
            raise ValueError(f"kvcheck.Backend {name}: kv_alignment {self.kv_alignment} is not 0 (none) or a power "
                             "of two up to 256 bytes")
        # Where it is defined, to be found again by a fresh interpreter (check()).
        frame = inspect.stack()[1]
        self.defined_in = frame.frame.f_globals.get("__file__"), frame.frame.f_globals.get("__name__")

    def narrowed(self, kv_dtypes=None, formats=None):
        """This backend declaring only `kv_dtypes` / `formats` (each a part of its own)."""
        import copy
        out = copy.copy(self)
        for key, given in (("kv_dtypes", kv_dtypes), ("formats", formats)):
            if given is None:
                continue
            given = names(given, f"kvcheck.check: {key}")
            extra = [x for x in given if x not in getattr(self, key)]
            if extra or not given:
                raise ValueError(f"kvcheck.Backend {self.name}: cannot narrow {key} {getattr(self, key)} to {given}")
            setattr(out, key, tuple(given))
        return out

    def __getattr__(self, key):
        # backend.store_kv(...) calls the function (the bridge calls ops this way).
        functions = self.__dict__.get("functions", {})
        if key in functions:
            return functions[key]
        raise AttributeError(key)

    def ops(self):
        """The property ops this backend's functions run (`kvcheck run --list`'s op
        column: 'store_kv', 'store', 'round_trip', ...)."""
        out = [op for k in self.functions for op in PROPERTY_OPS[k]]
        return out + [op for (a, b), op in PAIRED_OPS.items() if a in self.functions and b in self.functions]

    def ops_bits(self):
        bits = sum(_abi.OPS[ENTRIES[k]] for k in self.functions)
        return (bits | (_abi.OPS["gather_kv_seq_starts"] if self.seq_starts else 0)
                | (_abi.OPS["concat_mla_pe_cache"] if self.split_caches else 0)
                | (_abi.OPS["concat_mla_rope"] if self.rope and "concat" in self.functions else 0)
                | (_abi.OPS["store_kv_rope"] if self.rope and "store_kv" in self.functions else 0)
                # a record with flags (NVFP4_DS_MLA) is declared by naming it: its reader knows them
                | (_abi.OPS["record_flags"] if "nvfp4_ds_mla" in self.formats else 0)
                | (_abi.OPS["kv_nvfp4"] if "e2m1" in self.kv_dtypes else 0))

    def formats_bits(self):
        return sum(1 << _abi.FORMATS[f] for f in self.formats)

    def kv_dtype_bits(self):
        return sum(1 << _abi.KV_DTYPES[d] for d in self.kv_dtypes)

    def spec(self):
        """'file.py:attr' that finds this object again in a fresh interpreter."""
        path, module_name = self.defined_in
        import sys
        module = sys.modules.get(module_name)
        attrs = [k for k, v in vars(module).items() if v is self] if module else []
        if not path or not attrs:
            raise RuntimeError(f"kvcheck.Backend {self.name}: define it at module level (kvcheck runs it in fresh "
                               "processes and finds it again by its module and name)")
        return f"{os.path.abspath(path)}:{attrs[0]}"

    def __repr__(self):
        return f"kvcheck.Backend({self.name!r}, {', '.join(self.functions)})"
