"""The embedded side of libkvcheck_python.so (plugins/python/python_plugin.cpp).

`load(spec)` imports the backend and describes its table; `call(backend, op, fields,
stream)` wraps the ABI struct's buffers (addresses, include/kvcheck/backend_abi.h field
names) as arrays with exactly the harness's strides and bases — each buffer sits
between guard bands the harness checks after the call — calls the backend's function
and returns (status, message). A host backend gets numpy views (inputs read-only); a
device="cuda" backend gets torch CUDA tensors over the harness's device buffers
(zero-copy, __cuda_array_interface__) and runs on the harness's stream
(torch.cuda.ExternalStream), so its torch ops and Triton launches are ordered with
kvcheck's copies. Views are valid only during the call (docs/python.md, "memory
contract").
"""
import ctypes
import importlib
import importlib.util
import json
import os
import sys
import traceback

import numpy as np

from . import _abi
from ._backend import Backend, Refusal

# numpy dtypes of the K/V dtypes: bf16 has none, so bf16 arrays hold the bit patterns.
NUMPY_DTYPE = {"bf16": np.uint16, "fp16": np.float16, "e4m3": np.uint8, "e5m2": np.uint8, "e2m1": np.uint8}


def load(spec):
    """spec = 'path/to/file.py:attr' or 'package.module:attr' -> the table description
    (backend, name, ops, formats, kv_dtypes, block_size_multiple, max_block_size, recipe
    bits, head_dims, min_heads_x_head_dim, max_heads_x_head_dim, kv_alignment, kv_dtype_pairs bits)."""
    where, sep, attr = spec.rpartition(":")
    if not sep or not where or not attr:
        raise ValueError(f"a Python backend is named 'path/to/file.py:attr' or 'package.module:attr', not {spec!r}")
    if where.endswith(".py") or os.sep in where:
        path = os.path.abspath(where)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"no such file: {path}")
        # Its folder first, as `python file.py` would: its siblings import.
        sys.path.insert(0, os.path.dirname(path))
        name = "kvcheck_user_" + os.path.splitext(os.path.basename(path))[0]
        module = sys.modules.get(name)
        if module is None:
            module_spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(module_spec)
            sys.modules[name] = module
            module_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(where)
    if not hasattr(module, attr):
        found = sorted(k for k, v in vars(module).items() if isinstance(v, Backend))
        raise AttributeError(f"{spec}: {where} has no attribute {attr!r}"
                             f" (its kvcheck.Backend objects: {', '.join(found) or 'none'})")
    backend = getattr(module, attr)
    if not isinstance(backend, Backend):
        raise TypeError(f"{spec}: {attr} is {type(backend).__name__}, not a kvcheck.Backend")
    # kvcheck.check(..., kv_dtypes=, formats=): this run declares a part of what it takes.
    narrow = json.loads(os.environ.get("KVCHECK_PYTHON_NARROW") or "{}")
    backend = backend.narrowed(**narrow)
    memory_space = {"host": 0, "cuda": 1}[backend.device]
    return (backend, backend.name, memory_space, backend.ops_bits(), backend.formats_bits(), backend.kv_dtype_bits(),
            backend.block_size_multiple, backend.max_block_size, 1 << _abi.RECIPES[backend.recipe],
            list(backend.head_dims), backend.min_heads_x_head_dim, backend.max_heads_x_head_dim, backend.kv_alignment,
            sum(1 << (4 * _abi.KV_DTYPES[c] + _abi.KV_DTYPES[r]) for c, r in set(backend.kv_dtype_pairs)))


def call(backend, op, fields, stream=0):
    """Runs backend's `op` on the ABI fields: (0, '') or (status, message)."""
    try:
        if backend.device == "cuda":
            import torch
            with torch.cuda.stream(torch.cuda.ExternalStream(stream)):
                getattr(_Views, op)(backend, fields, _CudaArrays(torch))
        else:
            getattr(_Views, op)(backend, fields, _HostArrays())
        return _abi.STATUS["ok"], ""
    except Refusal as e:  # a NUL would end the C string the message becomes: shown escaped
        return _abi.STATUS[e.code], str(e).replace("\0", "\\x00")
    except BaseException:  # noqa: B036 - a kernel's KeyboardInterrupt is its failure too
        text = traceback.format_exc()
        # Whole on stderr once per process (shrinking repeats it); always in the report.
        if text not in _SAID:
            _SAID.add(text)
            sys.stderr.write(f"kvcheck: Python backend '{backend.name}' {op} raised:\n{text}")
            sys.stderr.flush()
        return _abi.STATUS["internal"], f"Python backend '{backend.name}' {op} raised:\n{text}".replace("\0", "\\x00")


_SAID = set()


def view(address, dtype, shape, strides, writeable):
    """The numpy array of `shape` at `address` whose axis i steps strides[i] ELEMENTS
    of `dtype` (an empty array when any extent is 0, with those strides still).
    Read-only unless `writeable`."""
    dtype = np.dtype(dtype)
    shape = tuple(int(n) for n in shape)
    if any(n == 0 for n in shape):
        array = np.lib.stride_tricks.as_strided(np.empty(1, dtype), shape=shape,
                                                strides=[int(s) * dtype.itemsize for s in strides])
    else:
        if not address:
            raise Refusal("shape_mismatch", "a null buffer with elements")
        span = 1 + sum((n - 1) * int(s) for n, s in zip(shape, strides))
        flat = np.frombuffer((ctypes.c_char * (span * dtype.itemsize)).from_address(address), dtype=dtype, count=span)
        array = np.lib.stride_tricks.as_strided(flat, shape=shape, strides=[int(s) * dtype.itemsize for s in strides],
                                                writeable=True)
    if not writeable:
        array.flags.writeable = False
    return array


class _HostArrays:
    """numpy views of host buffers; kinds are the K/V dtypes and int32, float32, uint8."""
    DTYPE = dict(NUMPY_DTYPE, int32=np.int32, int64=np.int64, float32=np.float32, uint8=np.uint8)

    def __call__(self, address, kind, shape, strides, writeable):
        return view(address, self.DTYPE[kind], shape, strides, writeable)


class _CudaArrays:
    """torch CUDA tensors over device buffers (zero-copy). bf16 is torch.bfloat16, fp8
    caches are uint8 (vLLM's convention for fp8 KV caches)."""
    TYPESTR = {"bf16": "<i2", "fp16": "<f2", "e4m3": "|u1", "e5m2": "|u1", "e2m1": "|u1", "int32": "<i4", "int64": "<i8",
               "float32": "<f4", "uint8": "|u1"}

    def __init__(self, torch):
        self.torch = torch
        self.dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "e4m3": torch.uint8, "e5m2": torch.uint8,
                      "e2m1": torch.uint8,
                      "int32": torch.int32, "int64": torch.int64, "float32": torch.float32, "uint8": torch.uint8}

    def __call__(self, address, kind, shape, strides, writeable):
        torch = self.torch
        shape = tuple(int(n) for n in shape)
        strides = tuple(int(s) for s in strides)
        if any(n == 0 for n in shape):
            return torch.empty_strided(shape, strides, dtype=self.dtype[kind], device="cuda")
        if not address:
            raise Refusal("shape_mismatch", "a null buffer with elements")
        size = np.dtype(self.TYPESTR[kind]).itemsize

        class Interface:
            __cuda_array_interface__ = {"shape": shape, "typestr": self.TYPESTR[kind], "data": (address, False),
                                        "strides": tuple(s * size for s in strides), "version": 2}

        tensor = torch.as_tensor(Interface(), device="cuda")
        return tensor.view(torch.bfloat16) if kind == "bf16" else tensor


def _ints(make, address, count, shape=None):
    shape = shape or (count,)
    return make(address, "int32", shape, _dense_strides(shape), False)


def _dense_strides(shape):
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


def _kv_caches(make, c, writeable):
    """(key_cache, value_cache, kv_cache_dtype, k_scale, v_scale) of a kvcheck_kv_cache;
    an e2m1 cache's arrays hold code pairs: head_dim / 2 bytes a head, strides halved
    (docs/spec.md §7.9: even)."""
    dtype = _abi.KV_DTYPE_NAME[c["dtype"]]
    shape = (c["num_blocks"], c["block_size"], c["num_kv_heads"], c["head_dim"])
    strides = (c["stride_page"], c["stride_token"], c["stride_head"], 1)
    if dtype == "e2m1":
        shape = shape[:3] + (c["head_dim"] // 2,)
        strides = tuple(s // 2 for s in strides[:3]) + (1,)
    k = make(c["k"], dtype, shape, strides, writeable)
    v = make(c["v"], dtype, shape, strides, writeable)
    k_scale = make(c["k_scale"], "float32", (c["num_scales"],), (1,), False) if c["k_scale"] else None
    v_scale = make(c["v_scale"], "float32", (c["num_v_scales"],), (1,), False) if c["v_scale"] else None
    return k, v, dtype, k_scale, v_scale


def _block_scales(make, c, b, writeable):
    """An e2m1 cache's k_sf, v_sf and sf_layout keyword arguments (docs/spec.md §7.9); none
    for other dtypes (a backend that does not name e2m1 is never sent one)."""
    if _abi.KV_DTYPE_NAME[c["dtype"]] != "e2m1":
        return {}
    groups = c["head_dim"] // 16
    if b["sf_layout"] == 1:  # interleave4: a [block_size * S] tile per (block, head)
        shape = (c["num_blocks"], c["num_kv_heads"], c["block_size"] * groups)
        strides = (b["sf_stride_page"], b["sf_stride_head"], 1)
    else:
        shape = (c["num_blocks"], c["block_size"], c["num_kv_heads"], groups)
        strides = (b["sf_stride_page"], b["sf_stride_token"], b["sf_stride_head"], 1)
    return {"k_sf": make(b["k_sf"], "uint8", shape, strides, writeable),
            "v_sf": make(b["v_sf"], "uint8", shape, strides, writeable),
            "sf_layout": "interleave4" if b["sf_layout"] == 1 else "linear"}


def _kv_tokens(make, t, heads, head_dim, writeable):
    """Token rows [rows][H][D] of a kvcheck_kv_tokens."""
    dtype = _abi.KV_DTYPE_NAME[t["dtype"]]
    return make(t["data"], dtype, (t["rows"], heads, head_dim), (t["token_stride"], t["head_stride"], 1), writeable)


class _Views:
    """One function per ABI entry: fields -> the backend function's arguments."""

    @staticmethod
    def store_kv(backend, f, make):
        c = f["cache"]
        key_cache, value_cache, cache_dtype, k_scale, v_scale = _kv_caches(make, c, True)
        backend.store_kv(key=_kv_tokens(make, f["key"], c["num_kv_heads"], c["head_dim"], False),
                         value=_kv_tokens(make, f["value"], c["num_kv_heads"], c["head_dim"], False),
                         key_cache=key_cache, value_cache=value_cache,
                         slot_mapping=_ints(make, f["slot_mapping"], f["num_tokens"]), kv_cache_dtype=cache_dtype,
                         k_scale=k_scale, v_scale=v_scale, **_rope(make, f),
                         **_block_scales(make, c, f["block_scales"], True))

    @staticmethod
    def gather_kv(backend, f, make):
        c = f["cache"]
        key_cache, value_cache, cache_dtype, k_scale, v_scale = _kv_caches(make, c, False)
        num_seqs = f["cu_seqlens_entries"] - 1
        unit = {0: None, 1: "token", 2: "block"}[f["seq_starts_unit"]]
        backend.gather_kv(key_cache=key_cache, value_cache=value_cache,
                          block_table=_ints(make, f["block_table"], None, (num_seqs, f["max_blocks"])),
                          cu_seqlens_k=_ints(make, f["cu_seqlens_k"], f["cu_seqlens_entries"]),
                          out_k=_kv_tokens(make, f["out_k"], c["num_kv_heads"], c["head_dim"], True),
                          out_v=_kv_tokens(make, f["out_v"], c["num_kv_heads"], c["head_dim"], True),
                          kv_cache_dtype=cache_dtype, k_scale=k_scale, v_scale=v_scale,
                          seq_starts=_ints(make, f["seq_starts"], f["seq_starts_entries"]) if unit else None,
                          seq_starts_unit=unit, **_block_scales(make, c, f["block_scales"], False))

    @staticmethod
    def store_kv_cache(backend, f, make):
        c = f["cache"]
        backend.store(kv=make(f["kv"], "bf16", (f["kv_rows"], c["elements"]), (f["kv_row_stride"], 1), False),
                      slot_mapping=_ints(make, f["slot_mapping"], f["num_tokens"]),
                      cache=make(c["base"], "uint8", (c["size_bytes"],), (1,), True), layout=_layout(c))

    @staticmethod
    def concat_and_cache_mla(backend, f, make):
        c = f["cache"]
        backend.concat(kv_c=make(f["kv_c"], "bf16", (f["kv_c_rows"], f["kv_lora_rank"]), (f["kv_c_row_stride"], 1),
                                 False),
                       k_pe=make(f["k_pe"], "bf16", (f["k_pe_rows"], f["rope_dim"]), (f["k_pe_row_stride"], 1), False),
                       slot_mapping=_ints(make, f["slot_mapping"], f["num_tokens"]),
                       cache=make(c["base"], "uint8", (c["size_bytes"],), (1,), True), layout=_layout(c),
                       **_pe_cache(make, f), **_rope(make, f))

    @staticmethod
    def swap_blocks(backend, f, make):
        src, dst = f["src"], f["dst"]
        pool = lambda p: {k: p[k] for k in ("size_bytes", "num_blocks", "block_stride")} | {"host": bool(p["host"])}
        # views: host memory for every plugin (int64 [V][3]); block_mapping: int64 [n][2].
        views = view(f["views"], np.int64, (f["views_entries"] // 3, 3), (3, 1), False)
        backend.swap(src=make(src["base"], "uint8", (src["size_bytes"],), (1,), False),
                     dst=make(dst["base"], "uint8", (dst["size_bytes"],), (1,), True), views=views,
                     block_mapping=make(f["block_mapping"], "int64", (f["block_mapping_entries"] // 2, 2), (2, 1),
                                        False),
                     src_pool=pool(src), dst_pool=pool(dst))

    @staticmethod
    def load_paged_kv_cache(backend, f, make):
        c = f["cache"]
        layout = _layout(c)
        rows = f["out_rows"]
        out_scales = None
        if f["out_scales"]:
            out_scales = make(f["out_scales"], "uint8", (rows, c["sf_bytes"]), (f["out_scale_stride"], 1), True)
        backend.load(cache=make(c["base"], "uint8", (c["size_bytes"],), (1,), False), layout=layout,
                     load_segments=_ints(make, f["load_segments"], None, (f["num_segment_ints"] // 4, 4)),
                     total_k=f["total_k"],
                     out_data=make(f["out_data"], "uint8", (rows, layout.load_row_bytes), (f["out_data_stride"], 1),
                                   True),
                     out_scales=out_scales)


class Layout(dict):
    """A paged MLA/indexer cache's geometry (kvcheck_paged_cache's fields, bytes;
    docs/spec.md §2-§3), readable as attributes: layout.block_stride."""

    def __getattr__(self, key):  # AttributeError, not KeyError: hasattr, getattr(..., default), copy work
        try:
            return self[key]
        except KeyError:
            raise AttributeError(f"Layout has no field {key!r} (fields: {', '.join(self)})") from None

    @property
    def format_name(self):
        return _abi.FORMAT_NAME.get(self["format"], str(self["format"]))

    @property
    def load_row_bytes(self):
        # SPEC §5.2: BF16 rows for BF16 and do_cast formats, the data bytes otherwise.
        return 2 * self["elements"] if self["quantized_dtype"] == 0 or self["do_cast"] else self["quantized_bytes"]


def _pe_cache(make, f):
    """Split caches (docs/spec.md §8.2): pe_cache and pe_layout keyword arguments, only
    for a call that has them (a backend without split_caches=True never gets one)."""
    if not f["has_pe_cache"]:
        return {}
    p = f["pe_cache"]
    return {"pe_cache": make(p["base"], "uint8", (p["size_bytes"],), (1,), True), "pe_layout": _layout(p)}


def _rope(make, f):
    """Fused RoPE (docs/spec.md §8.4): the rope keyword argument, only for a call that has
    one (a backend without rope=True never gets one): cos_sin_cache float32
    [max_position][rot_dim] (cos then sin), positions int64 [n], rot_dim, rope_offset,
    is_neox."""
    r = f["rope"]
    if not r["has_rope"]:
        return {}
    n = f["num_tokens"]
    return {"rope": {"cos_sin_cache": make(r["cos_sin_cache"], "float32", (r["max_position"], r["rot_dim"]),
                                           (r["rot_dim"], 1), False),
                     "positions": make(r["positions"], "int64", (n,), (1,), False),
                     "rot_dim": r["rot_dim"], "rope_offset": r["rope_offset"], "is_neox": bool(r["is_neox"])}}


def _layout(c):
    return Layout({k: v for k, v in c.items() if k != "base"})
