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


def _bf16_to_f32(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def _f32_to_bf16(x):
    """Round to nearest even; any NaN -> 0x7FFF (SPEC §4)."""
    u = x.view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(x), np.uint16(0x7FFF), rounded)


def rotate(row, rope, position):
    """docs/spec.md §8.4: one k_pe row (BF16 bits) rotated at `position`, in float32 with
    each product rounded before the sum (numpy never fuses them), then to BF16."""
    h, o = rope["rot_dim"] // 2, rope["rope_offset"]
    cos_sin = rope["cos_sin_cache"][position]
    c, s = cos_sin[:h], cos_sin[h:2 * h]
    a = o + (np.arange(h) if rope["is_neox"] else 2 * np.arange(h))
    b = a + (h if rope["is_neox"] else 1)
    x, y = _bf16_to_f32(row[a]), _bf16_to_f32(row[b])
    out = row.copy()
    with np.errstate(all="ignore"):  # Inf * 0 and friends are NaN, as the spec wants
        out[a] = _f32_to_bf16(x * c - y * s)
        out[b] = _f32_to_bf16(y * c + x * s)
    return out


def concat(kv_c, k_pe, slot_mapping, cache, layout, pe_cache=None, pe_layout=None, rope=None):
    """vLLM's concat_and_cache_mla (docs/spec.md §8.2): the record of slot_mapping[i] is
    kv_c[i] then k_pe[i] (two BF16 tensors, views of one or not). Split caches
    (FlashInfer's ckv / kpe): kv_c[i] into cache and k_pe[i] into pe_cache, one slot.
    With rope (§8.4, vLLM's concat_and_cache_mla_rope_fused) k_pe[i] is rotated first."""
    for i, slot in enumerate(slot_mapping):
        if slot < 0:
            continue
        pe = rotate(k_pe[i], rope, rope["positions"][i]) if rope is not None else k_pe[i]
        if pe_cache is None:
            _record(cache, layout, slot)[:] = np.concatenate([kv_c[i], pe]).view(np.uint8)
        else:
            _record(cache, layout, slot)[:] = kv_c[i].view(np.uint8)
            _record(pe_cache, pe_layout, slot)[:] = pe.view(np.uint8)


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


def load_rows(layout, load_segments, out_data):
    """The rows a load fills: segments (src_block_id, src_begin, src_end, dst_offset) send
    tokens [begin, end) of the block to rows dst_offset..; yields (block, token, out row)
    and zeroes the rows of block -1 itself (SPEC §5.2)."""
    for block, begin, end, dst in load_segments:
        for k, token in enumerate(range(begin, end)):
            row = out_data[dst + k][:layout.load_row_bytes]
            if block == -1:
                row[:] = 0
            else:
                yield block, token, row


def load(cache, layout, load_segments, total_k, out_data, out_scales):
    for block, token, row in load_rows(layout, load_segments, out_data):
        row[:] = _record(cache, layout, block * layout.block_size + token)


backend = kvcheck.Backend("numpy-paged", store=store, load=load, concat=concat, swap=swap, formats=("bf16",),
                          kv_dtypes=(), split_caches=True, rope=True)
