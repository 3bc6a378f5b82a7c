"""An NVFP4 K/V cache store and gather (docs/spec.md §7.9) written in numpy, as a team's
Python model of FlashInfer's nvfp4_quantize_append_paged_kv_cache and its dequantising
read: per 16 elements of a head an e4m3 scale cvt(amax / (6 g)) in the scale cache
(FlashInfer's linear order or vLLM's 4-token interleave), codes cvt_e2m1(x / (sf g)) by
a multiplication with 1 / RN(sf * g), a NaN stored as 0; the gather multiplies back.
`python -m pytest python/tests` checks it with kvcheck (the store_kv / gather_kv
properties on e2m1 caches), and catches `wrong_backend`, which stores a NaN as cvt_e2m1
does (+6)."""
import numpy as np

import kvcheck
from numpy_ds_mla import E4M3, _bf16_rn
from numpy_kv import sequences

E2M1 = np.array([0, .5, 1, 1.5, 2, 3, 4, 6, -0.0, -.5, -1, -1.5, -2, -3, -4, -6], np.float32)


def _nearest_even(table, mag):
    """Index of the nearest entry of ascending `table` to each mag (ties to the even
    index, past the end: the last), as cvt's round-to-nearest-even on a value grid."""
    hi = np.clip(np.searchsorted(table, mag), 1, len(table) - 1)
    lo = hi - 1
    below, above = mag - table[lo], table[hi] - mag
    pick = np.where(below < above, lo, np.where(above < below, hi, np.where(lo % 2 == 0, lo, hi)))
    return np.where(mag >= table[-1], len(table) - 1, pick)


def cvt_e4m3(t):
    """Non-negative float32 (or NaN) -> e4m3 code, RNE, saturating at 448 (0x7E)."""
    code = _nearest_even(E4M3[:127].astype(np.float64), np.nan_to_num(t.astype(np.float64), nan=0.0))
    return np.where(np.isnan(t), 0x7F, code).astype(np.uint8)


def cvt_e2m1(v):
    """float32 -> e2m1 nibble, RNE, saturating at 6; the sign from v; a NaN -> 0."""
    mag = np.abs(v.astype(np.float64))
    code = _nearest_even(E2M1[:8].astype(np.float64), np.nan_to_num(mag, nan=0.0)) | (np.signbit(v) * 8)
    return np.where(np.isnan(v), 0, code).astype(np.uint8)


def _rows_f32(rows):
    """bf16 (uint16 bits) or fp16 rows as float32, exactly."""
    if rows.dtype == np.uint16:
        return (rows.astype(np.uint32) << 16).view(np.float32)
    return rows.astype(np.float32)


def _sf_index(sf_layout, blocks, tokens, heads, groups):
    """Index arrays into a k_sf / v_sf view (the bridge's shapes, docs/python.md)."""
    b, t, h, g = blocks[:, None, None], tokens[:, None, None], heads[None, :, None], groups[None, None, :]
    if sf_layout == "interleave4":
        s = len(groups)
        return b, h, (t // 4) * 4 * s + 4 * g + t % 4
    return b, t, h, g


def quantize(x, g, nan_code=0):
    """[..., 16] float32 groups -> (scale codes [...], packed bytes [..., 8])."""
    with np.errstate(all="ignore"):
        amax = np.max(np.where(np.isnan(x), np.float32(0), np.abs(x)), axis=-1)
        g = np.float32(g)
        sf = np.where(amax == 0, 0, cvt_e4m3(amax / (np.float32(6) * g))).astype(np.uint8)
        s = E4M3[sf]
        inv = np.where((amax > 0) & (s > 0), np.float32(1) / (s * g), np.float32(0)).astype(np.float32)
        v = x * inv[..., None]
    codes = np.where(np.isnan(v), nan_code, cvt_e2m1(v)).astype(np.uint8)
    return sf, codes[..., 0::2] | (codes[..., 1::2] << 4)


def _store(key, value, key_cache, value_cache, slot_mapping, k_scale, v_scale, k_sf, v_sf, sf_layout, nan_code):
    rows = np.nonzero(slot_mapping >= 0)[0]
    slots = slot_mapping[rows].astype(np.int64)
    _, block_size, heads, half = key_cache.shape
    blocks, tokens = slots // block_size, slots % block_size
    groups = np.arange(2 * half // 16)
    idx = _sf_index(sf_layout, blocks, tokens, np.arange(heads), groups)
    for rows_in, cache, scale, sf_cache in ((key, key_cache, k_scale, k_sf), (value, value_cache, v_scale, v_sf)):
        x = _rows_f32(rows_in[rows]).reshape(len(rows), heads, len(groups), 16)
        sf, packed = quantize(x, scale[0], nan_code)
        cache[blocks, tokens] = packed.reshape(len(rows), heads, half)
        sf_cache[idx] = sf


def store_kv(key, value, key_cache, value_cache, slot_mapping, kv_cache_dtype, k_scale, v_scale, k_sf, v_sf,
             sf_layout):
    _store(key, value, key_cache, value_cache, slot_mapping, k_scale, v_scale, k_sf, v_sf, sf_layout, 0)


def gather_kv(key_cache, value_cache, block_table, cu_seqlens_k, out_k, out_v, kv_cache_dtype, k_scale, v_scale,
              seq_starts, seq_starts_unit, k_sf, v_sf, sf_layout):
    _, block_size, heads, half = key_cache.shape
    groups = np.arange(2 * half // 16)
    for begin, end, blocks, tokens in sequences(block_table, cu_seqlens_k, seq_starts, seq_starts_unit, block_size):
        idx = _sf_index(sf_layout, blocks, tokens, np.arange(heads), groups)
        for cache, scale, sf_cache, out in ((key_cache, k_scale, k_sf, out_k), (value_cache, v_scale, v_sf, out_v)):
            packed = cache[blocks, tokens]  # [n][H][D/2]
            codes = np.stack([packed & 15, packed >> 4], axis=-1).reshape(len(blocks), heads, 2 * half)
            s = np.repeat(E4M3[sf_cache[idx]], 16, axis=-1)  # [n][H][D]
            with np.errstate(all="ignore"):
                y = (E2M1[codes] * s) * np.float32(scale[0])  # the first product is exact
            if out.dtype == np.uint16:
                out[begin:end] = _bf16_rn(y.astype(np.float32))
            else:  # fp16, RNE, overflow to Inf; any NaN -> 0x7FFF (docs/spec.md §7.3)
                with np.errstate(all="ignore"):
                    fp16_bits = y.astype(np.float16).view(np.uint16)
                out.view(np.uint16)[begin:end] = np.where(np.isnan(y), np.uint16(0x7FFF), fp16_bits)


backend = kvcheck.Backend("numpy-nvfp4-kv", store_kv=store_kv, gather_kv=gather_kv, kv_dtypes=("e2m1",),
                          seq_starts=True)


def store_kv_nan_as_six(key, value, key_cache, value_cache, slot_mapping, kv_cache_dtype, k_scale, v_scale, k_sf,
                        v_sf, sf_layout):
    """The store with §4's cvt_e2m1 for a NaN (+6, code 7) instead of FlashInfer's 0."""
    _store(key, value, key_cache, value_cache, slot_mapping, k_scale, v_scale, k_sf, v_sf, sf_layout, 7)


wrong_backend = kvcheck.Backend("numpy-nvfp4-kv-wrong", store_kv=store_kv_nan_as_six, kv_dtypes=("e2m1",))
