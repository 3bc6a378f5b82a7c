"""The paged MLA/indexer cache's store and load (docs/spec.md §5.1, §5.2) for the
BF16(E) format, in numpy on the raw cache bytes: what a team's first Python version of
a store_kv_cache / load_paged_kv_cache looks like. BF16 records are copied as bits."""
import numpy as np

import kvcheck


def _record(cache, layout, slot):
    block, token = divmod(int(slot), layout.block_size)
    start = block * layout.block_stride + token * layout.data_token_stride
    return cache[start:start + layout.quantized_bytes]


def store(kv, slot_mapping, cache, layout):
    """kv [rows][E] uint16 (BF16 bits): row i into slot slot_mapping[i] (-1 skipped)."""
    rows = kv.view(np.uint8).reshape(kv.shape[0], -1) if kv.size else kv
    for i, slot in enumerate(slot_mapping):
        if slot >= 0:
            _record(cache, layout, slot)[:] = rows[i][:layout.quantized_bytes]


def concat(kv_c, k_pe, slot_mapping, cache, layout, pe_cache=None, pe_layout=None):
    """vLLM's concat_and_cache_mla (docs/spec.md §8.2): the record of slot_mapping[i] is
    kv_c[i] then k_pe[i] (two BF16 tensors, views of one or not). Split caches
    (FlashInfer's ckv / kpe): kv_c[i] into cache and k_pe[i] into pe_cache, one slot."""
    for i, slot in enumerate(slot_mapping):
        if slot < 0:
            continue
        if pe_cache is None:
            _record(cache, layout, slot)[:] = np.concatenate([kv_c[i], k_pe[i]]).view(np.uint8)
        else:
            _record(cache, layout, slot)[:] = kv_c[i].view(np.uint8)
            _record(pe_cache, pe_layout, slot)[:] = k_pe[i].view(np.uint8)


def swap(src, dst, views, block_mapping, src_pool, dst_pool):
    """vLLM's swap_blocks (docs/spec.md §8.3): for every view (src_offset, dst_offset,
    block_bytes) and pair (s, d) without a -1, src block s to dst block d."""
    for s, d in block_mapping:
        if s == -1 or d == -1:
            continue
        for src_offset, dst_offset, block_bytes in views:
            at = src_offset + s * src_pool["block_stride"]
            to = dst_offset + d * dst_pool["block_stride"]
            dst[to:to + block_bytes] = src[at:at + block_bytes]


def load(cache, layout, load_segments, total_k, out_data, out_scales):
    """Segments (src_block_id, src_begin, src_end, dst_offset): tokens [begin, end) of
    the block to rows dst_offset..; block -1 writes zero rows."""
    for block, begin, end, dst in load_segments:
        for k, token in enumerate(range(begin, end)):
            row = out_data[dst + k][:layout.load_row_bytes]
            if block == -1:
                row[:] = 0
            else:
                row[:] = _record(cache, layout, block * layout.block_size + token)


backend = kvcheck.Backend("numpy-paged", store=store, load=load, concat=concat, swap=swap, formats=("bf16",),
                          kv_dtypes=(), split_caches=True)
