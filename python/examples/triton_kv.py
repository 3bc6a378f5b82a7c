"""A Triton K/V store in the style of the small vLLM-style engine (seed 004's
store_kvcache: one program per token, the slot from slot_mapping, -1 skipped), made
general: one program per (token, head), any row and cache strides (NHD or HND views,
padded rows, K and V interleaved in one allocation), int64 offsets. bf16/fp16 caches,
bits copied. `wrong_backend` is the same kernel with an off-by-one in the token
offset of the cache's last block only — the kind of bug a test on one block misses.
"""
import torch
import triton
import triton.language as tl

import kvcheck


@triton.jit
def _store_kv_kernel(key_ptr, value_ptr, k_cache_ptr, v_cache_ptr, slot_mapping_ptr, key_token_stride,
                     key_head_stride, value_token_stride, value_head_stride, page_stride, token_stride, head_stride,
                     block_size, num_blocks, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr,
                     LAST_BLOCK_OFF_BY_ONE: tl.constexpr):
    token = tl.program_id(0).to(tl.int64)
    head = tl.program_id(1).to(tl.int64)
    slot = tl.load(slot_mapping_ptr + token).to(tl.int64)
    if slot >= 0:
        block = slot // block_size
        offset = slot % block_size
        if LAST_BLOCK_OFF_BY_ONE:
            if block == num_blocks - 1:
                offset = (offset + 1) % block_size
        d = tl.arange(0, BLOCK_D)
        mask = d < HEAD_DIM
        k = tl.load(key_ptr + token * key_token_stride + head * key_head_stride + d, mask=mask)
        v = tl.load(value_ptr + token * value_token_stride + head * value_head_stride + d, mask=mask)
        dst = block * page_stride + offset * token_stride + head * head_stride + d
        tl.store(k_cache_ptr + dst, k, mask=mask)
        tl.store(v_cache_ptr + dst, v, mask=mask)


def _launch(key, value, key_cache, value_cache, slot_mapping, bug):
    num_tokens = slot_mapping.shape[0]
    num_blocks, block_size, heads, head_dim = key_cache.shape
    if num_tokens == 0:
        return
    k, v = key.view(torch.int16), value.view(torch.int16)  # bits, whatever the dtype
    kc, vc = key_cache.view(torch.int16), value_cache.view(torch.int16)
    _store_kv_kernel[(num_tokens, heads)](k, v, kc, vc, slot_mapping, k.stride(0), k.stride(1), v.stride(0),
                                         v.stride(1), kc.stride(0), kc.stride(1), kc.stride(2), block_size,
                                         num_blocks, HEAD_DIM=head_dim, BLOCK_D=triton.next_power_of_2(head_dim),
                                         LAST_BLOCK_OFF_BY_ONE=bug)


def store_kv(key, value, key_cache, value_cache, slot_mapping, kv_cache_dtype, k_scale, v_scale):
    _launch(key, value, key_cache, value_cache, slot_mapping, False)


def store_kv_last_block_off_by_one(key, value, key_cache, value_cache, slot_mapping, kv_cache_dtype, k_scale,
                                   v_scale):
    _launch(key, value, key_cache, value_cache, slot_mapping, True)


backend = kvcheck.Backend("triton-kv", store_kv=store_kv, device="cuda", kv_dtypes=("bf16", "fp16"))
wrong_backend = kvcheck.Backend("triton-kv-wrong", store_kv=store_kv_last_block_off_by_one, device="cuda",
                                kv_dtypes=("bf16", "fp16"))
