"""A reader of the 352-byte NVFP4_DS_MLA record (vLLM nvfp4_ds_mla; docs/spec.md §2,
§4.9) in numpy on the raw cache bytes: load_paged_kv_cache multiplies the 512 e2m1 codes
by their group's e4m3 scale, found at its transposed place after the rope, and decodes
the 64 e4m3 rope values, each to BF16. What a team's Python version of vLLM's
cp_gather_and_upconvert_nvfp4_kv_cache looks like."""
import numpy as np

import kvcheck
from numpy_ds_mla import E4M3, _bf16_rn
from numpy_paged import load_rows

# e2m1 codes 0..15 (element 2i in a byte's low nibble, 2i+1 in the high one)
E2M1 = np.array([0, .5, 1, 1.5, 2, 3, 4, 6, -0.0, -.5, -1, -1.5, -2, -3, -4, -6], np.float32)


def load(cache, layout, load_segments, total_k, out_data, out_scales):
    q, n, group = layout.quantized_bytes, layout.sf_bytes, layout.elements_per_sf
    tail = layout.bf16_tail_elements  # one e4m3 byte each
    g = np.arange(n)
    where = n // 4 * (g % 4) + g // 4  # group g's scale byte: stored transposed
    for block, token, row in load_rows(layout, load_segments, out_data):
        start = block * layout.block_stride + token * layout.data_token_stride
        record = cache[start:start + q + tail + n]
        codes = np.empty(2 * q, np.uint8)
        codes[0::2], codes[1::2] = record[:q] & 15, record[:q] >> 4
        scales = np.repeat(E4M3[record[q + tail:][where]], group)
        row[:4 * q] = _bf16_rn(E2M1[codes] * scales).view(np.uint8)  # exact product, then bf16
        row[4 * q:] = _bf16_rn(E4M3[record[q:q + tail]]).view(np.uint8)  # the rope, decoded


backend = kvcheck.Backend("numpy-nvfp4-ds-mla", load=load, formats=("nvfp4_ds_mla",), kv_dtypes=())
