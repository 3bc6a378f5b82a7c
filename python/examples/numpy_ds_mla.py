"""A reader of the 656-byte FP8_DS_MLA record (vLLM fp8_ds_mla, FlashMLA V32;
docs/spec.md §2, §4.6) in numpy on the raw cache bytes: load_paged_kv_cache dequantises
the 512 e4m3 codes by their tile's fp32 scale to BF16 and appends the 64 BF16 rope
values as stored. What a team's Python version of the upconverting gather looks like."""
import numpy as np

import kvcheck
from numpy_paged import load_rows


def _e4m3_values():
    """float32 value of every e4m3 code (OCP fn: 0x7F / 0xFF are NaN)."""
    codes = np.arange(256)
    e, m = (codes >> 3) & 15, (codes & 7).astype(np.float64)
    v = np.where(e == 0, m / 8 * 2.0 ** -6, (1 + m / 8) * 2.0 ** (e - 7))
    v = np.where(codes & 0x80, -v, v)
    v[(codes & 0x7F) == 0x7F] = np.nan
    return v.astype(np.float32)


E4M3 = _e4m3_values()


def _bf16_rn(x):
    """float32 -> bf16 bits, round to nearest even; any NaN -> 0x7FFF (SPEC §4)."""
    u = x.view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(x), np.uint16(0x7FFF), r)


def load(cache, layout, load_segments, total_k, out_data, out_scales):
    q, sf, group = layout.quantized_bytes, layout.sf_bytes, layout.elements_per_sf
    tail = 2 * layout.bf16_tail_elements
    for block, token, row in load_rows(layout, load_segments, out_data):
        start = block * layout.block_stride + token * layout.data_token_stride
        record = cache[start:start + q + sf + tail]
        scales = np.repeat(record[q:q + sf].copy().view("<f4"), group)
        values = _bf16_rn(E4M3[record[:q]] * scales)  # one float32 product, then bf16 (SPEC §4)
        row[:2 * q] = values.view(np.uint8)
        row[2 * q:] = record[q + sf:]  # the rope tail, as stored


backend = kvcheck.Backend("numpy-ds-mla", load=load, formats=("fp8_ds_mla",), kv_dtypes=())
