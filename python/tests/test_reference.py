"""kvcheck.reference from Python, with answers worked by hand (docs/spec.md §7.2-§7.5)."""
import numpy as np
import pytest

import kvcheck
from kvcheck import reference


def caches(num_blocks=2, block_size=4, heads=2, head_dim=8, dtype=np.uint16, fill=0xA5A5):
    k = np.full((num_blocks, block_size, heads, head_dim), fill, dtype=dtype)
    return k, k.copy()


def test_store_kv_writes_each_row_to_its_slot_and_skips_minus_one():
    key = np.arange(3 * 2 * 8, dtype=np.uint16).reshape(3, 2, 8)
    value = key + 1000
    k, v = caches()
    reference.store_kv(key, value, k, v, np.array([5, -1, 0]))
    # slot 5 = block 1, token 1; slot 0 = block 0, token 0 (block_size 4); row 1 skipped.
    assert (k[1, 1] == key[0]).all() and (v[1, 1] == value[0]).all()
    assert (k[0, 0] == key[2]).all() and (v[0, 0] == value[2]).all()
    untouched = np.ones(k.shape[:2], bool)
    untouched[1, 1] = untouched[0, 0] = False
    assert (k[untouched] == 0xA5A5).all() and (v[untouched] == 0xA5A5).all()


def test_store_kv_quantises_e4m3_by_division_spec_7_3_table():
    # bf16 1.3671875 (0x3FAF) / 7.0 = 25/128 exactly: a tie, even wins -> 0x24 (x * RN(1/7) would give 0x25).
    key = np.full((1, 1, 4), 0x3FAF, dtype=np.uint16)
    k, v = caches(num_blocks=1, block_size=2, heads=1, head_dim=4, dtype=np.uint8, fill=0)
    reference.store_kv(key, key, k, v, np.array([1]), kv_cache_dtype="e4m3", k_scale=[7.0], v_scale=[2.0])
    assert (k[0, 1] == 0x24).all()
    # 1.3671875 / 2 = 0.68359375 = 1.3671875 * 2^-1: e4m3 e=6, m = RN(0.3671875 * 8 = 2.9375) = 3 -> 0x33.
    assert (v[0, 1] == 0x33).all()
    assert (k[0, 0] == 0).all()


def test_gather_kv_reads_from_seq_starts_in_both_units():
    k, v = caches(num_blocks=3, block_size=4, heads=1, head_dim=2)
    k[...] = np.arange(k.size, dtype=np.uint16).reshape(k.shape)  # element (b, t, 0, d) = 8b + 2t + d
    v[...] = k + 100
    table = np.array([[2, 0, 1]])
    out_k = np.zeros((3, 1, 2), np.uint16)
    out_v = np.zeros_like(out_k)
    # Token unit, start 3: positions 3, 4, 5 = (block 2, token 3), (block 0, token 0), (block 0, token 1).
    reference.gather_kv(k, v, table, np.array([0, 3]), out_k, out_v, seq_starts=np.array([3]))
    assert out_k[:, 0, 0].tolist() == [8 * 2 + 2 * 3, 0, 2]
    assert out_v[:, 0, 1].tolist() == [100 + 8 * 2 + 2 * 3 + 1, 101, 103]
    # Block unit: start 3 rounds down to 0: (block 2, tokens 0, 1, 2).
    reference.gather_kv(k, v, table, np.array([0, 3]), out_k, out_v, seq_starts=np.array([3]),
                        seq_starts_unit="block")
    assert out_k[:, 0, 0].tolist() == [16, 18, 20]


def test_a_refused_input_raises_refusal_with_the_code_and_writes_nothing():
    key = np.zeros((2, 2, 8), np.uint16)
    k, v = caches()
    with pytest.raises(kvcheck.Refusal) as e:
        reference.store_kv(key, key, k, v, np.array([8, 0]))  # 2 blocks x 4 tokens: slot 8 is past the cache
    assert e.value.code == "slot_out_of_range" and "slot_mapping[0]" in str(e.value), str(e.value)
    assert (k == 0xA5A5).all()
    with pytest.raises(kvcheck.Refusal) as e:
        reference.store_kv(key, key, k, v, np.array([3, 3]))
    assert e.value.code == "duplicate_slot"
    out = np.zeros((4, 2, 8), np.uint16)
    with pytest.raises(kvcheck.Refusal) as e:  # 5 tokens from start 4 pass the 2-block row (8 positions)
        reference.gather_kv(k, v, np.array([[0, 1]]), np.array([0, 4]), out, out.copy(), seq_starts=np.array([5]))
    assert e.value.code == "range_out_of_table", str(e.value)
    assert (out == 0).all()


def test_a_named_dtype_of_another_element_size_is_refused_before_any_write():
    # A uint8 cache named bf16 would be addressed in 2-byte units: 512 bytes past a
    # 4,096-byte view (found by a reviewer: a heap corruption). Refused, nothing written.
    key = np.full((1, 1, 8), 0x3F80, np.uint16)
    buf = np.zeros(8192, np.uint8)
    k = buf[:16].reshape(1, 2, 1, 8)
    v = np.zeros((1, 2, 1, 8), np.uint8)
    with pytest.raises(ValueError, match="1-byte elements.*bf16 elements are 2 bytes"):
        reference.store_kv(key, key, k, v, np.array([1]), kv_cache_dtype="bf16")
    assert not buf.any() and not v.any()
    k16, v16 = caches(num_blocks=1, block_size=2, heads=1, head_dim=8, fill=0)
    with pytest.raises(ValueError, match="2-byte elements.*e4m3 elements are 1 bytes"):
        reference.store_kv(key, key, k16, v16, np.array([1]), kv_cache_dtype="e4m3", k_scale=[1.0], v_scale=[1.0])
    assert not k16.any()
    with pytest.raises(ValueError, match="is not one of"):  # NVFP4 caches are not taken from Python
        reference.store_kv(key, key, k, v, np.array([1]), kv_cache_dtype="e2m1")


def test_rows_must_have_the_caches_heads_and_head_dim():
    k, v = caches(num_blocks=1, block_size=4, heads=2, head_dim=8, fill=0)
    big = np.full((1, 2, 64), 0x4242, np.uint16)
    for key in (big[:, :1, :8], np.zeros((2, 1, 8), np.uint16), np.zeros((2, 2, 4), np.uint16),
                np.zeros((2, 2, 16), np.uint16), np.zeros((2, 16), np.uint16)):
        with pytest.raises(ValueError, match=r"\[rows\]\[2\]\[8\]"):
            reference.store_kv(key, key, k, v, np.arange(key.shape[0]))
    assert not k.any() and not v.any()
    # gather: outputs of 1 head, or head_dim 4 inside a wider buffer, against a [.][.][2][8] cache
    buf = np.zeros((2, 2, 16), np.uint16)
    for out in (np.zeros((1, 1, 8), np.uint16), buf[:, :, :4]):
        with pytest.raises(ValueError, match=r"\[rows\]\[2\]\[8\]"):
            reference.gather_kv(k, v, np.array([[0]]), np.array([0, 1]), out, np.zeros((1, 2, 8), np.uint16))
    assert not buf.any()


@pytest.mark.parametrize("slots, why", [
    (np.array([2**32 + 1], np.int64), "outside int32's range"),
    (np.array([2**32 - 1], np.uint32), "outside int32's range"),
    (np.array([0.9]), "an integer array is needed"),
    (np.array([True]), "an integer array is needed"),
])
def test_index_arrays_are_never_truncated_rounded_or_cast(slots, why):
    key = np.ones((1, 2, 8), np.uint16)
    k, v = caches(fill=0)
    with pytest.raises(ValueError, match=why):
        reference.store_kv(key, key, k, v, slots)
    with pytest.raises(ValueError, match=why):
        reference.gather_kv(k, v, slots.reshape(1, 1), np.array([0, 1]), np.zeros((1, 2, 8), np.uint16),
                            np.zeros((1, 2, 8), np.uint16))
    assert not k.any() and not v.any()
    reference.store_kv(key[:0], key[:0], k, v, [])  # an empty list is no tokens, not a float array
    reference.store_kv(key, key, k, v, np.array([2], np.int64))  # int64 in range: taken
    assert (k[0, 2] == 1).all()


def test_index_arrays_of_another_rank_are_refused_not_flattened():
    # A [1][2] slot_mapping was flattened and stored; a [1][n] seq_starts or cu_seqlens_k likewise.
    key = np.ones((2, 2, 8), np.uint16)
    k, v = caches(fill=0)
    with pytest.raises(ValueError, match=r"slot_mapping has 2 dimensions"):
        reference.store_kv(key, key, k, v, np.array([[0, 1]]))
    out = np.zeros((1, 2, 8), np.uint16)
    table = np.array([[0]])
    with pytest.raises(ValueError, match=r"cu_seqlens_k has 2 dimensions"):
        reference.gather_kv(k, v, table, np.array([[0, 1]]), out, out.copy())
    with pytest.raises(ValueError, match=r"seq_starts has 2 dimensions"):
        reference.gather_kv(k, v, table, np.array([0, 1]), out, out.copy(), seq_starts=np.array([[0]]))
    with pytest.raises(ValueError, match=r"block_table .* has 1 dimensions"):
        reference.gather_kv(k, v, np.array([0]), np.array([0, 1]), out, out.copy())
    assert not k.any() and not v.any() and not out.any()


def test_arrays_in_the_other_byte_order_are_refused_not_stored_swapped():
    key = np.full((1, 2, 8), 0x3F80, ">u2")
    k, v = caches(fill=0)
    with pytest.raises(ValueError, match="byte order"):
        reference.store_kv(key, key, k, v, np.array([0]))
    with pytest.raises(ValueError, match="byte order"):
        reference.store_kv(key.astype(np.uint16), key.astype(np.uint16), k.astype(">u2"), v.astype(">u2"),
                           np.array([0]))
    assert not k.any()
    reference.store_kv(key.astype(np.uint16), key.astype(np.uint16), k, v, np.array([1], ">i8"))  # indices: values
    assert (k[0, 1] == 0x3F80).all()
