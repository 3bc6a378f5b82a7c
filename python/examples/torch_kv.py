"""K/V store and gather composed of torch ops on CUDA tensors (advanced-index
assignment, i.e. index_put_ — what a team writes before it writes a kernel), for
bf16/fp16 caches whose bits are copied (docs/spec.md §7.1). A device="cuda" backend:
kvcheck hands it torch views of its own device buffers and runs it on its stream."""
import torch

import kvcheck


def store_kv(key, value, key_cache, value_cache, slot_mapping, kv_cache_dtype, k_scale, v_scale):
    rows = torch.nonzero(slot_mapping >= 0).flatten()
    slots = slot_mapping[rows].long()
    block_size = key_cache.shape[1]
    blocks, offsets = slots // block_size, slots % block_size
    # int16 views: bits are copied (NaN payloads, -0).
    key_cache.view(torch.int16)[blocks, offsets] = key.view(torch.int16)[rows]
    value_cache.view(torch.int16)[blocks, offsets] = value.view(torch.int16)[rows]


def gather_kv(key_cache, value_cache, block_table, cu_seqlens_k, out_k, out_v, kv_cache_dtype, k_scale, v_scale,
              seq_starts, seq_starts_unit):
    block_size = key_cache.shape[1]
    cu = cu_seqlens_k.tolist()
    starts = [0] * (len(cu) - 1) if seq_starts is None else seq_starts.tolist()
    for i in range(len(cu) - 1):
        n = cu[i + 1] - cu[i]
        if n == 0:
            continue
        start = starts[i] - (starts[i] % block_size if seq_starts_unit == "block" else 0)
        positions = torch.arange(start, start + n, device=block_table.device)
        blocks = block_table[i].long()[positions // block_size]
        out_k.view(torch.int16)[cu[i]:cu[i + 1]] = key_cache.view(torch.int16)[blocks, positions % block_size]
        out_v.view(torch.int16)[cu[i]:cu[i + 1]] = value_cache.view(torch.int16)[blocks, positions % block_size]


backend = kvcheck.Backend("torch-kv", store_kv=store_kv, gather_kv=gather_kv, device="cuda",
                          kv_dtypes=("bf16", "fp16"), seq_starts=True)
