"""A K/V cache store and gather written in numpy, as a kvcheck backend: vLLM's
reshape_and_cache_flash and its cache gather for bf16/fp16 caches ("auto" dtype:
the bits are copied, docs/spec.md §7.1), the way a team would write a first Python
version of its kernel. `python -m pytest python/tests` checks it with kvcheck.
"""
import numpy as np

import kvcheck


def store_kv(key, value, key_cache, value_cache, slot_mapping, kv_cache_dtype, k_scale, v_scale):
    """key/value [rows][H][D], caches [num_blocks][block_size][H][D] (strided views);
    row i goes to slot slot_mapping[i] (-1: skipped), block slot // block_size."""
    rows = np.nonzero(slot_mapping >= 0)[0]
    slots = slot_mapping[rows].astype(np.int64)
    block_size = key_cache.shape[1]
    blocks, offsets = slots // block_size, slots % block_size
    # Same-width integer views: NaN payloads and -0 are copied as bits.
    key_cache.view(np.uint16)[blocks, offsets] = key.view(np.uint16)[rows]
    value_cache.view(np.uint16)[blocks, offsets] = value.view(np.uint16)[rows]


def sequences(block_table, cu_seqlens_k, seq_starts, seq_starts_unit, block_size):
    """(begin, end, blocks, tokens) per non-empty sequence i: its tokens, from table
    position seq_starts[i] (rounded down to its block for the 'block' unit), go to rows
    cu_seqlens_k[i]..cu_seqlens_k[i+1]; blocks/tokens address them in the cache."""
    for i in range(len(cu_seqlens_k) - 1):
        begin, end = int(cu_seqlens_k[i]), int(cu_seqlens_k[i + 1])
        if end == begin:
            continue
        start = 0 if seq_starts is None else int(seq_starts[i])
        if seq_starts_unit == "block":
            start -= start % block_size
        positions = start + np.arange(end - begin)
        yield begin, end, block_table[i, positions // block_size].astype(np.int64), positions % block_size


def gather_kv(key_cache, value_cache, block_table, cu_seqlens_k, out_k, out_v, kv_cache_dtype, k_scale, v_scale,
              seq_starts, seq_starts_unit):
    """Every sequence's tokens (sequences()) copied as bits to its output rows."""
    for begin, end, blocks, tokens in sequences(block_table, cu_seqlens_k, seq_starts, seq_starts_unit,
                                                key_cache.shape[1]):
        out_k.view(np.uint16)[begin:end] = key_cache.view(np.uint16)[blocks, tokens]
        out_v.view(np.uint16)[begin:end] = value_cache.view(np.uint16)[blocks, tokens]


backend = kvcheck.Backend("numpy-kv", store_kv=store_kv, gather_kv=gather_kv, kv_dtypes=("bf16", "fp16"),
                          seq_starts=True)


def store_kv_last_block_off_by_one(key, value, key_cache, value_cache, slot_mapping, kv_cache_dtype, k_scale,
                                   v_scale):
    """store_kv with a bug of the kind engines ship: in the cache's last block the
    token offset is one too far (wrapping inside the block)."""
    rows = np.nonzero(slot_mapping >= 0)[0]
    slots = slot_mapping[rows].astype(np.int64)
    num_blocks, block_size = key_cache.shape[:2]
    blocks, offsets = slots // block_size, slots % block_size
    last = blocks == num_blocks - 1
    offsets[last] = (offsets[last] + 1) % block_size
    key_cache.view(np.uint16)[blocks, offsets] = key.view(np.uint16)[rows]
    value_cache.view(np.uint16)[blocks, offsets] = value.view(np.uint16)[rows]


wrong_backend = kvcheck.Backend("numpy-kv-wrong", store_kv=store_kv_last_block_off_by_one,
                                kv_dtypes=("bf16", "fp16"))
