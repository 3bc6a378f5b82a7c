"""A reader of FlashMLA's 584-byte MODEL1 record (docs/spec.md §2, §3, §4.8) in numpy on
the raw cache bytes: block-planar, so a token's [448 e4m3 | 64 BF16 rope] row and its
7 ue8m0 tile scales sit in two regions of the block. load_paged_kv_cache dequantises
the codes by 2^(byte - 127) (0xFF: NaN) to BF16 and appends the rope values as stored."""
import numpy as np

import kvcheck
from numpy_ds_mla import E4M3, _bf16_rn
from numpy_paged import load_rows


def _ue8m0_values():
    """float32 value of every e8m0 byte: 2^(b - 127), 0xFF NaN."""
    v = np.ldexp(np.float64(1.0), np.arange(255) - 127).astype(np.float32)  # byte 0: 2^-127, a subnormal
    return np.append(v, np.float32(np.nan))


UE8M0 = _ue8m0_values()


def load(cache, layout, load_segments, total_k, out_data, out_scales):
    q, sf, group = layout.quantized_bytes, layout.sf_bytes, layout.elements_per_sf
    for block, token, row in load_rows(layout, load_segments, out_data):
        base = block * layout.block_stride
        data = cache[base + token * layout.data_token_stride:][:layout.data_token_stride]
        scale_at = base + layout.scale_region + token * layout.scale_token_stride
        scales = np.repeat(UE8M0[cache[scale_at:scale_at + sf]], group)
        row[:2 * q] = _bf16_rn(E4M3[data[:q]] * scales).view(np.uint8)  # one product, then bf16
        row[2 * q:] = data[q:]  # the rope tail right after the codes, as stored


backend = kvcheck.Backend("numpy-model1", load=load, formats=("model1",), kv_dtypes=())
