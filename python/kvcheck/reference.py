"""kvcheck's scalar reference, callable from Python: the oracle of kvcheck's own
properties, for a team's own tests (docs/python.md). Arguments are numpy arrays with
any strides (the caches are written in place through their views); bf16 data is
uint16 bit patterns (or ml_dtypes' bfloat16), fp16 float16, fp8 uint8 with
`kv_cache_dtype` naming 'e4m3' or 'e5m2' (or ml_dtypes' float8 types). An input the
reference refuses raises kvcheck.Refusal with kvcheck's code and message, and writes
nothing (docs/spec.md §7.4, §7.5).
"""
import importlib.machinery
import importlib.util
import os

import numpy as np

from . import _abi
from ._backend import Refusal
from ._run import build_dir

_native = None


def _module():
    global _native
    if _native is None:
        path = os.path.join(build_dir(), "python", "_native.so")
        if not os.path.exists(path):
            raise RuntimeError(f"kvcheck.reference: {path} does not exist: build kvcheck first (./kvcheck build), or "
                               "point KVCHECK_BUILD_DIR at a build tree")
        loader = importlib.machinery.ExtensionFileLoader("kvcheck._native", path)
        spec = importlib.util.spec_from_file_location("kvcheck._native", path, loader=loader)
        _native = importlib.util.module_from_spec(spec)
        loader.exec_module(_native)
    return _native


_BY_NAME = {"float16": "fp16", "uint16": "bf16", "bfloat16": "bf16", "float8_e4m3fn": "e4m3", "float8_e5m2": "e5m2"}
# The K/V dtypes the reference takes from Python, by their element size in bytes: an
# array whose item size differs from its named dtype's would be addressed in the wrong
# units (the reference reads and writes element strides of the named dtype).
_ITEMSIZE = {"bf16": 2, "fp16": 2, "e4m3": 1, "e5m2": 1}


def _native_order(array, what):
    if not array.dtype.isnative:
        raise ValueError(f"kvcheck.reference: {what} is {array.dtype.str}, not in this machine's byte order: pass "
                         f"{what}.astype({what}.dtype.newbyteorder('='))")


def _kv_dtype(array, given, what, rows=False):
    """The kv dtype name of `array` (`given` names it for a cache); ValueError when
    none fits, or when the array's item size is not the named dtype's."""
    _native_order(array, what)
    name = _BY_NAME.get(np.dtype(array.dtype).name)
    if given is not None:
        if given not in _ITEMSIZE:
            raise ValueError(f"kvcheck.reference: {what} dtype {given!r} is not one of {sorted(_ITEMSIZE)}")
        name = given
    if name is None:
        if rows:
            raise ValueError(f"kvcheck.reference: {what} is {array.dtype}: rows are bf16 (uint16 bits or ml_dtypes' "
                             "bfloat16) or fp16 (float16)")
        raise ValueError(f"kvcheck.reference: {what} is {array.dtype}: name its kv dtype (kv_cache_dtype='e4m3' ...)")
    if array.dtype.itemsize != _ITEMSIZE[name]:
        raise ValueError(f"kvcheck.reference: {what} is {array.dtype} ({array.dtype.itemsize}-byte elements) but "
                         f"{name} elements are {_ITEMSIZE[name]} bytes")
    return name


def _elements(array, what):
    """Element strides of an array (byte strides divisible by the item size)."""
    size = array.dtype.itemsize
    if any(s % size for s in array.strides):
        raise ValueError(f"kvcheck.reference: {what}'s strides {array.strides} are not whole elements")
    return [s // size for s in array.strides]


def _span(array):
    return 1 + sum((n - 1) * s for n, s in zip(array.shape, _elements(array, "array"))) if array.size else 0


def _address(array):
    return array.__array_interface__["data"][0]


def _ints(array, what, ndim=1):
    """int32 copy of an index array of `ndim` dimensions (a [1][n] slot_mapping was
    flattened and taken): integers only (no bool, no float), each in int32's range, so
    that no index is silently truncated or rounded into another."""
    a = np.asarray(array)
    if a.ndim != ndim:
        raise ValueError(f"kvcheck.reference: {what} has {a.ndim} dimensions (shape {a.shape}), not {ndim}")
    if a.size == 0:
        return np.zeros(a.shape, dtype=np.int32)
    if a.dtype == np.bool_ or not np.issubdtype(a.dtype, np.integer):
        raise ValueError(f"kvcheck.reference: {what} is {a.dtype}: an integer array is needed")
    if int(a.min()) < -2**31 or int(a.max()) >= 2**31:
        raise ValueError(f"kvcheck.reference: {what} holds {int(a.min())}..{int(a.max())}, outside int32's range")
    return np.ascontiguousarray(a, dtype=np.int32)


def _tokens(array, dtype, what, cache):
    """[rows][H][D] rows whose H and D are the cache's (num_kv_heads, head_dim)."""
    if array.ndim != 3 or array.shape[1:] != cache.shape[2:]:
        raise ValueError(f"kvcheck.reference: {what} is [rows][num_kv_heads][head_dim] = [rows]"
                         f"[{cache.shape[2]}][{cache.shape[3]}] (the cache's), got shape {array.shape}")
    rows, token, head, element = array.shape[0], *_elements(array, what)
    if array.size and array.shape[2] > 1 and element != 1:
        raise ValueError(f"kvcheck.reference: {what}'s head_dim is not contiguous")
    return {"data": _address(array), "dtype": _abi.KV_DTYPES[dtype], "rows": rows, "token_stride": token,
            "head_stride": head}


def _cache_shape(key_cache):
    if key_cache.ndim != 4:
        raise ValueError(f"kvcheck.reference: key_cache is [num_blocks][block_size][H][D], got shape {key_cache.shape}")


def _cache(key_cache, value_cache, dtype, k_scale, v_scale, keep):
    for what, c in (("key_cache", key_cache), ("value_cache", value_cache)):
        if c.ndim != 4 or c.shape != key_cache.shape or c.strides != key_cache.strides or c.dtype != key_cache.dtype:
            raise ValueError(f"kvcheck.reference: {what} is [num_blocks][block_size][H][D] with the key cache's "
                             f"strides and dtype, got shape {c.shape} strides {c.strides} dtype {c.dtype}")
    page, token, head, element = _elements(key_cache, "key_cache")
    if key_cache.size and key_cache.shape[3] > 1 and element != 1:
        raise ValueError("kvcheck.reference: the caches' head_dim is not contiguous")
    scales = []
    for s in (k_scale, v_scale):
        scales.append(None if s is None else np.ascontiguousarray(s, dtype=np.float32).reshape(-1))
    keep.extend(x for x in scales if x is not None)
    k_s, v_s = scales
    kind = 0 if k_s is None else 1 if k_s.size == 1 else 2
    nb, bs, heads, head_dim = key_cache.shape
    return {"k": _address(key_cache), "k_capacity": _span(key_cache), "v": _address(value_cache),
            "v_capacity": _span(value_cache), "dtype": _abi.KV_DTYPES[dtype], "block_size": bs,
            "num_kv_heads": heads, "head_dim": head_dim, "num_blocks": nb, "stride_page": page,
            "stride_token": token, "stride_head": head, "scale_kind": kind,
            "num_scales": 0 if k_s is None else k_s.size, "k_scale": 0 if k_s is None else _address(k_s),
            "v_scale": 0 if v_s is None else _address(v_s), "num_v_scales": 0 if v_s is None else v_s.size,
            "recipe": _abi.RECIPES["spec"]}


def _finish(status_message):
    status, message = status_message
    if status == _abi.STATUS["ok"]:
        return
    if status == _abi.STATUS["internal"]:
        raise RuntimeError(f"kvcheck.reference: {message}")
    raise Refusal(_abi.STATUS_NAME[status], message)


def _writable(array, what):
    if not array.flags.writeable:
        raise ValueError(f"kvcheck.reference: {what} is read-only")


def store_kv(key, value, key_cache, value_cache, slot_mapping, kv_cache_dtype=None, k_scale=None, v_scale=None,
             recipe="spec"):
    """SPEC §7.4: key/value [rows][H][D] into key_cache/value_cache
    [num_blocks][block_size][H][D] at slot_mapping[i] (-1 skipped), FP8 quantised
    with k_scale/v_scale (1 float: per tensor, H floats: per KV head) under `recipe`
    ('spec', 'vllm', 'sglang': SPEC §7.3.1)."""
    if recipe not in _abi.RECIPES:
        raise ValueError(f"kvcheck.reference: recipe {recipe!r} is not one of {sorted(_abi.RECIPES)}")
    for what, a in (("key_cache", key_cache), ("value_cache", value_cache)):
        _writable(a, what)
    keep = []
    slots = _ints(slot_mapping, "slot_mapping")
    _cache_shape(key_cache)
    fields = {"key": _tokens(key, _kv_dtype(key, None, "key", rows=True), "key", key_cache),
              "value": _tokens(value, _kv_dtype(value, None, "value", rows=True), "value", key_cache),
              "slot_mapping": _address(slots),
              "num_tokens": slots.size,
              "cache": _cache(key_cache, value_cache, _kv_dtype(key_cache, kv_cache_dtype, "key_cache"), k_scale,
                              v_scale, keep)}
    fields["cache"]["recipe"] = _abi.RECIPES[recipe]
    _finish(_module().store_kv(fields))


def gather_kv(key_cache, value_cache, block_table, cu_seqlens_k, out_k, out_v, kv_cache_dtype=None, k_scale=None,
              v_scale=None, seq_starts=None, seq_starts_unit="token"):
    """SPEC §7.5: sequence i's tokens through block_table [num_seqs][max_blocks], from
    table position seq_starts[i] ('token' unit, or rounded down to its block for
    'block'; 0 without seq_starts), to rows cu_seqlens_k[i]..cu_seqlens_k[i+1] of
    out_k/out_v [rows][H][D], FP8 dequantised to their dtype."""
    for what, a in (("out_k", out_k), ("out_v", out_v)):
        _writable(a, what)
    keep = []
    table = _ints(block_table, "block_table [num_seqs][max_blocks]", ndim=2)
    cu = _ints(cu_seqlens_k, "cu_seqlens_k")
    starts = None if seq_starts is None else _ints(seq_starts, "seq_starts")
    _cache_shape(key_cache)
    if seq_starts_unit is None and seq_starts is None:  # what the bridge passes without seq_starts
        seq_starts_unit = "token"
    if seq_starts_unit not in ("token", "block"):
        raise ValueError(f"kvcheck.reference: seq_starts_unit is 'token' or 'block', not {seq_starts_unit!r}")
    fields = {"cache": _cache(key_cache, value_cache, _kv_dtype(key_cache, kv_cache_dtype, "key_cache"), k_scale,
                              v_scale, keep),
              "block_table": _address(table), "block_table_entries": table.size, "max_blocks": table.shape[1],
              "seq_starts_unit": 0 if starts is None else 1 if seq_starts_unit == "token" else 2,
              "cu_seqlens_k": _address(cu), "cu_seqlens_entries": cu.size,
              "out_k": _tokens(out_k, _kv_dtype(out_k, None, "out_k", rows=True), "out_k", key_cache),
              "out_v": _tokens(out_v, _kv_dtype(out_v, None, "out_v", rows=True), "out_v", key_cache),
              "seq_starts": 0 if starts is None else _address(starts),
              "seq_starts_entries": 0 if starts is None else starts.size}
    _finish(_module().gather_kv(fields))
