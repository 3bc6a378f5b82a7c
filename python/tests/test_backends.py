"""The Python bridge end to end: kvcheck's properties on numpy backends, through
`kvcheck run --plugin python:...` (libkvcheck_python.so), as a team's pytest would."""
import os
import subprocess
import sys

import numpy as np
import pytest

import kvcheck
import kvcheck.reference
import numpy_kv
from kvcheck import _bridge, _run


def test_numpy_backend_passes_the_kv_properties(kvcheck_check):
    result = kvcheck_check(numpy_kv.backend, cases=150, seed=7)
    names = {r["property"] for r in result.passed}
    # The match properties ran and made calls into the numpy functions.
    for p in ("prop_store_kv_matches_reference", "prop_gather_kv_matches_reference",
              "prop_gather_kv_seq_starts_match_reference"):
        assert p in names, (p, result)
    assert all(r["backend_calls"] > 0 for r in result.passed if r["property"] in names)
    assert result.cases >= 150 * len(result.passed)


def test_a_wrong_kernel_is_caught_shrunk_and_replayable(tmp_path):
    with pytest.raises(AssertionError) as caught:
        kvcheck.check(numpy_kv.wrong_backend, properties=["prop_store_kv_matches_reference"], cases=300, seed=11,
                      work_dir=tmp_path)
    text = str(caught.value)
    assert "FAIL prop_store_kv_matches_reference" in text, text
    assert "numpy-kv-wrong" in text
    assert "replay: " in text and "KVCHECK_PYTHON_BACKEND=" in text, text
    # The minimal case is a regression file in the run directory.
    files = [os.path.join(d, f) for d, _, fs in os.walk(tmp_path) for f in fs if f.endswith(".json")
             and "regressions" in d]
    assert files, text


def test_a_python_exception_is_a_backend_failure_with_its_traceback(tmp_path):
    with pytest.raises(AssertionError) as caught:
        kvcheck.check(raising_backend, properties=["prop_store_kv_matches_reference"], cases=20, seed=3,
                      work_dir=tmp_path)
    text = str(caught.value)
    assert "ZeroDivisionError" in text and "raise_zero" in text, text


def raise_zero(**kwargs):
    return 1 // 0


raising_backend = kvcheck.Backend("raises", store_kv=raise_zero)


def test_views_have_the_harness_strides_and_are_read_only_for_inputs():
    buf = np.arange(64, dtype=np.uint16)
    address = buf.ctypes.data
    v = _bridge.view(address + 2, np.uint16, (3, 2, 4), (20, 5, 1), False)
    assert v.strides == (40, 10, 2)
    assert v[2, 1, 3] == buf[1 + 2 * 20 + 5 + 3]
    assert not v.flags.writeable
    w = _bridge.view(address, np.uint16, (2, 2), (8, 1), True)
    w[1, 1] = 999
    assert buf[9] == 999
    empty = _bridge.view(0, np.uint16, (0, 3), (5, 1), False)
    assert empty.shape == (0, 3) and empty.strides == (10, 2)


def test_refusal_codes_come_from_the_abi_header():
    assert kvcheck.Refusal("slot_out_of_range").code == "slot_out_of_range"
    with pytest.raises(ValueError):
        kvcheck.Refusal("no_such_code")
    with pytest.raises(ValueError):
        kvcheck.Backend("Bad Name", store_kv=raise_zero)
    with pytest.raises(ValueError):
        kvcheck.Backend("x", store_kv=raise_zero, kv_dtypes=("fp32",))


def test_a_backend_defined_in_a_function_is_refused_with_the_reason():
    local = kvcheck.Backend("local", store_kv=raise_zero)
    with pytest.raises(RuntimeError, match="module level"):
        kvcheck.check(local, cases=1)


def test_a_missing_attribute_is_named_with_the_backends_the_file_has():
    path = numpy_kv.__file__
    with pytest.raises(AttributeError) as caught:
        _bridge.load(f"{path}:nobackend")
    text = str(caught.value)
    assert "has no attribute 'nobackend'" in text, text
    assert "backend" in text.split("kvcheck.Backend objects:")[1] and "wrong_backend" in text, text


def test_the_cli_runs_a_python_backend_by_module_name(tmp_path):
    env = dict(os.environ, **_run.python_environment())
    env["PYTHONPATH"] = os.path.join(os.path.dirname(numpy_kv.__file__))
    env["KVCHECK_PYTHONPATH"] = env["PYTHONPATH"] + os.pathsep + env["KVCHECK_PYTHONPATH"]
    done = subprocess.run([_run.native("tools/kvcheck/kvcheck"), "run", "--plugin", "python:numpy_kv:backend",
                           "--property", "prop_store_kv_matches_reference", "--cases", "30", "--seed", "5",
                           "--work-dir", str(tmp_path), "--quiet"], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    assert done.returncode == 0, done.stdout
    assert "numpy-kv" in done.stdout, done.stdout
    bad = subprocess.run([_run.native("tools/kvcheck/kvcheck"), "run", "--plugin", "python:nonsense"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert bad.returncode == 2 and "python:path/to/file.py:ATTR" in bad.stdout, bad.stdout


def store_kv_fp16_only(**kwargs):
    assert kwargs["kv_cache_dtype"] == "fp16", f"handed a {kwargs['kv_cache_dtype']} cache"
    numpy_kv.store_kv(**kwargs)


fp16_only = kvcheck.Backend("fp16-only", store_kv=store_kv_fp16_only, kv_dtypes=("bf16", "fp16"))


def test_narrowing_the_dtypes_reaches_the_generators(kvcheck_check, tmp_path):
    # Declared bf16 and fp16, it fails on a bf16 cache; narrowed to fp16, it is never handed one.
    with pytest.raises(AssertionError, match="handed a bf16 cache"):
        kvcheck.check(fp16_only, properties=["prop_store_kv_matches_reference"], cases=100, seed=4,
                      work_dir=tmp_path)
    result = kvcheck_check(fp16_only, properties=["prop_store_kv_matches_reference"], kv_dtypes=["fp16"], cases=100,
                           seed=4)
    assert result.passed and result.passed[0]["backend_calls"] > 0
    with pytest.raises(ValueError, match="cannot narrow"):
        kvcheck.check(numpy_kv.backend, kv_dtypes=["e4m3"], cases=1)


def test_one_pytest_item_per_cache_dtype(kvcheck_check, kvcheck_kv_dtype):
    # bf16 and fp16 run (numpy_kv declares them); e4m3 and e5m2 are skipped, saying so.
    result = kvcheck_check(numpy_kv.backend, kv_dtypes=[kvcheck_kv_dtype], cases=50, seed=4)
    assert kvcheck_kv_dtype in ("bf16", "fp16") and not result.failed and result.passed


def test_paged_store_and_load_backend_bf16_only(kvcheck_check):
    import numpy_paged
    result = kvcheck_check(numpy_paged.backend, cases=100, seed=3)
    rows = {r["property"]: r for r in result.rows}
    for p in ("prop_store_matches_reference", "prop_load_matches_reference", "prop_round_trip_matches_reference",
              "prop_load_invalid_metadata_throws_and_writes_nothing", "prop_concat_and_cache_mla_matches_reference",
              "prop_concat_and_cache_mla_bad_input_is_error", "prop_concat_and_cache_mla_pe_cache_matches_reference",
              "prop_concat_and_cache_mla_pe_cache_bad_input_is_error", "prop_concat_and_cache_mla_rope_matches_reference",
              "prop_concat_and_cache_mla_rope_bad_input_is_error", "prop_swap_blocks_matches_reference",
              "prop_swap_blocks_touches_only_destinations", "prop_swap_blocks_bad_input_is_error"):
        assert rows[p]["verdict"] == "pass" and rows[p]["backend_calls"] > 0, rows[p]
    # A BF16-only backend has no quantisation error to bound: not exercised, never drawn a V41 cache.
    bound = rows["prop_round_trip_error_within_bound"]
    assert bound["verdict"] == "not_run" and "no quantised format" in bound["why"], bound


def concat_pe_first(kv_c, k_pe, slot_mapping, cache, layout):
    # The two tensors in the wrong order: caught unless the split is in the middle of equal halves.
    import numpy_paged
    numpy_paged.concat(k_pe, kv_c, slot_mapping, cache, layout)


concat_swapped = kvcheck.Backend("concat-swapped", concat=concat_pe_first, formats=("bf16",), kv_dtypes=())


def test_a_concat_with_its_tensors_swapped_is_caught(kvcheck_check):
    with pytest.raises(AssertionError, match="FAIL prop_concat_and_cache_mla_matches_reference") as caught:
        kvcheck_check(concat_swapped, cases=50, seed=3)
    assert "concat_and_cache_mla kv_lora_rank=" in str(caught.value)  # the decoded two-source case


def concat_kpe_into_cache(kv_c, k_pe, slot_mapping, cache, layout, pe_cache=None, pe_layout=None):
    # Split caches with k_pe written into the ckv cache at pe_cache's offsets.
    import numpy_paged
    numpy_paged.concat(kv_c, k_pe, slot_mapping, cache, layout, cache if pe_cache is not None else None, pe_layout)


concat_kpe_wrong_cache = kvcheck.Backend("concat-kpe-wrong-cache", concat=concat_kpe_into_cache, formats=("bf16",),
                                         kv_dtypes=(), split_caches=True)


def test_split_caches_with_k_pe_in_the_wrong_cache_are_caught(kvcheck_check):
    with pytest.raises(AssertionError, match="FAIL prop_concat_and_cache_mla_pe_cache_matches_reference") as caught:
        kvcheck_check(concat_kpe_wrong_cache, cases=50, seed=3)
    assert "pe_cache=" in str(caught.value)  # the decoded split-cache case


def test_split_caches_need_concat():
    with pytest.raises(ValueError, match="split_caches=True needs concat"):
        kvcheck.Backend("split-no-concat", store=lambda **kw: None, split_caches=True, formats=("bf16",), kv_dtypes=())


def concat_joined_only(kv_c, k_pe, slot_mapping, cache, layout):
    import numpy_paged
    numpy_paged.concat(kv_c, k_pe, slot_mapping, cache, layout)


concat_joined = kvcheck.Backend("concat-joined", concat=concat_joined_only, formats=("bf16",), kv_dtypes=())


def test_without_split_caches_the_split_rows_are_not_exercised(kvcheck_check):
    # A concat written before split caches (no pe_cache keyword) is never sent one.
    result = kvcheck_check(concat_joined, cases=20, seed=3)
    rows = {r["property"]: r for r in result.rows}
    row = rows["prop_concat_and_cache_mla_pe_cache_matches_reference"]
    assert row["verdict"] == "not_run" and row["backend_calls"] == 0, row


def concat_sin_cos_swapped(kv_c, k_pe, slot_mapping, cache, layout, pe_cache=None, pe_layout=None, rope=None):
    # A fused RoPE reading cos from the table's sin half and sin from its cos half.
    import numpy_paged
    if rope is not None:
        h = rope["rot_dim"] // 2
        table = rope["cos_sin_cache"]
        swapped = np.concatenate([table[:, h:2 * h], table[:, :h], table[:, 2 * h:]], axis=1)
        rope = dict(rope, cos_sin_cache=swapped)
    numpy_paged.concat(kv_c, k_pe, slot_mapping, cache, layout, pe_cache, pe_layout, rope)


concat_rope_swapped = kvcheck.Backend("concat-rope-swapped", concat=concat_sin_cos_swapped, formats=("bf16",),
                                      kv_dtypes=(), split_caches=True, rope=True)


def test_a_rope_with_sin_and_cos_swapped_is_caught(kvcheck_check):
    with pytest.raises(AssertionError, match="FAIL prop_concat_and_cache_mla_rope_matches_reference") as caught:
        kvcheck_check(concat_rope_swapped, cases=50, seed=3)
    assert "rope(" in str(caught.value)  # the decoded RoPE case


def test_rope_needs_concat():
    with pytest.raises(ValueError, match="rope=True needs concat or store_kv"):
        kvcheck.Backend("rope-no-concat", store=lambda **kw: None, rope=True, formats=("bf16",), kv_dtypes=())


def test_a_store_kv_without_the_rope_keyword_is_never_sent_one(kvcheck_check):
    # numpy_kv's store_kv predates the fused RoPE: its rope rows are not exercised.
    result = kvcheck_check(numpy_kv.backend, cases=20, seed=3)
    rows = {r["property"]: r for r in result.rows}
    row = rows["prop_store_kv_rope_matches_reference"]
    assert row["verdict"] == "not_run" and row["backend_calls"] == 0, row


def test_without_rope_the_rope_rows_are_not_exercised(kvcheck_check):
    # A concat written before the fused RoPE (no rope keyword) is never sent one.
    result = kvcheck_check(concat_joined, cases=20, seed=3)
    rows = {r["property"]: r for r in result.rows}
    row = rows["prop_concat_and_cache_mla_rope_matches_reference"]
    assert row["verdict"] == "not_run" and row["backend_calls"] == 0, row


def swap_with_one_stride(src, dst, views, block_mapping, src_pool, dst_pool):
    # Both pools addressed with src's block stride (a transfer written for one layout).
    import numpy_paged
    numpy_paged.swap(src, dst, views, block_mapping, src_pool, src_pool)


swap_one_stride = kvcheck.Backend("swap-one-stride", swap=swap_with_one_stride, kv_dtypes=())


def test_a_swap_that_ignores_dsts_layout_is_caught(kvcheck_check):
    with pytest.raises(AssertionError, match="FAIL prop_swap_blocks_matches_reference") as caught:
        kvcheck_check(swap_one_stride, cases=50, seed=3)
    assert "swap_blocks scenario:" in str(caught.value)  # the decoded two-pool case


def test_swap_needs_a_host_backend():
    with pytest.raises(ValueError, match="swap is for device='host' backends only"):
        kvcheck.Backend("swap-cuda", swap=swap_with_one_stride, device="cuda", kv_dtypes=())


def test_a_python_reader_of_the_656_byte_record(kvcheck_check):
    # FP8_DS_MLA (docs/spec.md §4.6): codes times their tile's fp32 scale, then the rope tail,
    # found through layout.bf16_tail_elements; judged on caches of arbitrary bytes too.
    import numpy_ds_mla
    result = kvcheck_check(numpy_ds_mla.backend, cases=100, seed=3)
    rows = {r["property"]: r for r in result.rows}
    for p in ("prop_load_matches_reference", "prop_load_invalid_metadata_throws_and_writes_nothing"):
        assert rows[p]["verdict"] == "pass" and rows[p]["backend_calls"] > 0, rows[p]


def test_a_python_reader_of_the_584_byte_block_planar_record(kvcheck_check):
    # MODEL1 (docs/spec.md §4.8): [codes | rope] rows, then the ue8m0 scales, in one block.
    import numpy_model1
    result = kvcheck_check(numpy_model1.backend, cases=100, seed=3)
    rows = {r["property"]: r for r in result.rows}
    for p in ("prop_load_matches_reference", "prop_load_invalid_metadata_throws_and_writes_nothing"):
        assert rows[p]["verdict"] == "pass" and rows[p]["backend_calls"] > 0, rows[p]


def test_a_python_reader_of_the_352_byte_nvfp4_record(kvcheck_check):
    # NVFP4_DS_MLA (docs/spec.md §4.9): e2m1 codes, an e4m3 rope, transposed e4m3 scales.
    import numpy_nvfp4_ds_mla
    result = kvcheck_check(numpy_nvfp4_ds_mla.backend, cases=100, seed=3)
    rows = {r["property"]: r for r in result.rows}
    for p in ("prop_load_matches_reference", "prop_load_invalid_metadata_throws_and_writes_nothing"):
        assert rows[p]["verdict"] == "pass" and rows[p]["backend_calls"] > 0, rows[p]


def store_kv_sglang(**kwargs):
    # SGLang's store_cache_quant recipe (x * RN(1/s), NaN to +448), through the reference.
    kvcheck.reference.store_kv(**kwargs, recipe="sglang")


def store_kv_head_dim_128(**kwargs):
    if kwargs["key_cache"].shape[3] != 128:
        raise kvcheck.Refusal("unsupported", "built for head_dim 128 only")
    kvcheck.reference.store_kv(**kwargs)


sglang_declared = kvcheck.Backend("sglang-declared", store_kv=store_kv_sglang, kv_dtypes=("e4m3",), recipe="sglang")
sglang_as_vllm = kvcheck.Backend("sglang-as-vllm", store_kv=store_kv_sglang, kv_dtypes=("e4m3",), recipe="vllm")
head_dim_128 = kvcheck.Backend("hd128", store_kv=store_kv_head_dim_128, kv_dtypes=("bf16", "e4m3"), recipe="vllm",
                               head_dims=(128,))


def test_a_backend_is_judged_by_its_declared_recipe(kvcheck_check, tmp_path):
    # docs/spec.md §7.3.1: the same kernel passes as sglang and, declared vllm, is told what it matches.
    result = kvcheck_check(sglang_declared, properties=["prop_store_kv_matches_reference"], cases=200, seed=1)
    assert result.passed and result.passed[0]["backend_calls"] > 0
    with pytest.raises(AssertionError, match="match recipe sglang exactly, not the declared vllm"):
        kvcheck.check(sglang_as_vllm, properties=["prop_store_kv_matches_reference"], cases=200, seed=1,
                      work_dir=tmp_path)
    with pytest.raises(ValueError, match="recipe 'sglang2' is not one of"):
        kvcheck.Backend("bad", store_kv=store_kv_sglang, recipe="sglang2")


def test_declared_head_dims_are_drawn_and_others_refused(kvcheck_check):
    # Match properties draw head_dim 128 only; the refusal property hands it others.
    result = kvcheck_check(head_dim_128, properties=["prop_store_kv_matches_reference",
                                                     "prop_store_kv_undeclared_shape_is_refused"], cases=100, seed=2)
    names = {r["property"] for r in result.passed}
    assert names == {"prop_store_kv_matches_reference", "prop_store_kv_undeclared_shape_is_refused"}, result


def store_kv_row_512(**kwargs):
    # A kernel with a thread per element of a token's row, at most 512 of them.
    _, _, heads, head_dim = kwargs["key_cache"].shape
    if heads * head_dim > 512:
        raise kvcheck.Refusal("unsupported", "built for num_kv_heads x head_dim <= 512")
    kvcheck.reference.store_kv(**kwargs)


row_512 = kvcheck.Backend("row512", store_kv=store_kv_row_512, kv_dtypes=("bf16",), max_heads_x_head_dim=512)
row_512_unguarded = kvcheck.Backend("row512-unguarded", store_kv=kvcheck.reference.store_kv, kv_dtypes=("bf16",),
                                    max_heads_x_head_dim=512)


def test_a_declared_row_limit_is_drawn_inside_and_tested_past(kvcheck_check, tmp_path):
    # Match properties draw num_kv_heads x head_dim <= 512 only; the refusal property one head past it.
    result = kvcheck_check(row_512, properties=["prop_store_kv_matches_reference",
                                                "prop_store_kv_undeclared_shape_is_refused"], cases=100, seed=2)
    assert {r["property"] for r in result.passed} == {"prop_store_kv_matches_reference",
                                                      "prop_store_kv_undeclared_shape_is_refused"}, result
    with pytest.raises(AssertionError, match="outside the declared num_kv_heads x head_dim <= 512"):
        kvcheck.check(row_512_unguarded, properties=["prop_store_kv_undeclared_shape_is_refused"], cases=50, seed=2,
                      work_dir=tmp_path)
    with pytest.raises(ValueError, match="the minimum at most the maximum"):
        kvcheck.Backend("bad", store_kv=store_kv_row_512, min_heads_x_head_dim=1024, max_heads_x_head_dim=512)


def _misaligned_16(*arrays):
    # A kernel of 16-byte vector accesses: every address and every stride but the
    # element's own a multiple of 16 bytes.
    return [a.shape for a in arrays if a.ctypes.data % 16 or any(s % 16 for s in a.strides[:-1])]


def store_kv_aligned_16(**kwargs):
    if bad := _misaligned_16(kwargs["key"], kwargs["value"], kwargs["key_cache"], kwargs["value_cache"]):
        raise kvcheck.Refusal("unsupported", f"built for 16-byte aligned addresses and strides: {bad}")
    kvcheck.reference.store_kv(**kwargs)


def store_kv_asserts_aligned_16(**kwargs):
    # No guard: a misaligned call is a harness bug here (an engine's kernel would fault).
    assert not _misaligned_16(kwargs["key"], kwargs["value"], kwargs["key_cache"], kwargs["value_cache"])
    kvcheck.reference.store_kv(**kwargs)


aligned_16 = kvcheck.Backend("aligned16", store_kv=store_kv_aligned_16, kv_dtypes=("bf16", "e4m3"),
                             kv_alignment=16)
aligned_16_asserting = kvcheck.Backend("aligned16-asserting", store_kv=store_kv_asserts_aligned_16,
                                       kv_dtypes=("bf16", "e4m3"), kv_alignment=16)
aligned_16_unguarded = kvcheck.Backend("aligned16-unguarded", store_kv=kvcheck.reference.store_kv,
                                       kv_dtypes=("bf16", "e4m3"), kv_alignment=16)


def check_declared_limit(kvcheck_check, tmp_path, asserting, guarded, unguarded, seed, caught):
    # The match property hands `asserting` only calls inside its declaration (it would
    # fail its row otherwise); the refusal property hands calls outside, which `guarded`
    # refuses and `unguarded` runs: caught, with the limit named.
    result = kvcheck_check(asserting, properties=["prop_store_kv_matches_reference"], cases=100, seed=seed)
    assert result.passed and result.passed[0]["backend_calls"] > 0, result
    result = kvcheck_check(guarded, properties=["prop_store_kv_undeclared_shape_is_refused"], cases=100, seed=seed)
    assert result.passed and result.passed[0]["backend_calls"] > 0, result
    with pytest.raises(AssertionError, match=caught):
        kvcheck.check(unguarded, properties=["prop_store_kv_undeclared_shape_is_refused"], cases=50, seed=seed,
                      work_dir=tmp_path)


def test_a_declared_alignment_is_drawn_and_misalignment_refused(kvcheck_check, tmp_path):
    # 16-byte aligned arrays only; the refusal property hands one stride 8 bytes off.
    check_declared_limit(kvcheck_check, tmp_path, aligned_16_asserting, aligned_16, aligned_16_unguarded, 3,
                         "is not a multiple of the declared kv_alignment 16")
    with pytest.raises(ValueError, match="kv_alignment 24 is not 0"):
        kvcheck.Backend("bad", store_kv=store_kv_aligned_16, kv_alignment=24)


def store_kv_bf16_rows(**kwargs):
    # A kernel instantiated for bf16 activations (numpy holds bf16 rows as uint16 bits).
    if kwargs["key"].dtype == np.float16:
        raise kvcheck.Refusal("unsupported", "built for bf16 rows only")
    kvcheck.reference.store_kv(**kwargs)


def store_kv_asserts_bf16_rows(**kwargs):
    assert kwargs["key"].dtype != np.float16
    kvcheck.reference.store_kv(**kwargs)


bf16_rows = kvcheck.Backend("bf16-rows", store_kv=store_kv_bf16_rows, kv_dtypes=("e4m3",),
                            kv_dtype_pairs=(("e4m3", "bf16"),))
bf16_rows_asserting = kvcheck.Backend("bf16-rows-asserting", store_kv=store_kv_asserts_bf16_rows, kv_dtypes=("e4m3",),
                                      kv_dtype_pairs=(("e4m3", "bf16"),))
bf16_rows_unguarded = kvcheck.Backend("bf16-rows-unguarded", store_kv=kvcheck.reference.store_kv, kv_dtypes=("e4m3",),
                                      kv_dtype_pairs=(("e4m3", "bf16"),))


def test_declared_dtype_pairs_are_drawn_and_others_refused(kvcheck_check, tmp_path):
    # bf16 rows only; the refusal property hands fp16 rows.
    check_declared_limit(kvcheck_check, tmp_path, bf16_rows_asserting, bf16_rows, bf16_rows_unguarded, 4,
                         "fp16 rows with an e4m3 cache outside the declared dtype pairs")
    with pytest.raises(ValueError, match="is not a pair the spec allows"):
        kvcheck.Backend("bad", store_kv=store_kv_bf16_rows, kv_dtype_pairs=(("bf16", "fp16"),))


def test_numpy_nvfp4_kv_backend_passes_and_a_nan_stored_as_six_is_caught(kvcheck_check, tmp_path):
    # docs/spec.md §7.9: a numpy model of FlashInfer's NVFP4 append and its read, e2m1
    # caches only (both scale layouts and vLLM's pages are drawn); the store that codes a
    # NaN as cvt_e2m1 does (+6) is told apart from FlashInfer's 0.
    import numpy_nvfp4_kv
    result = kvcheck_check(numpy_nvfp4_kv.backend, cases=120, seed=5)
    rows = {r["property"]: r for r in result.rows}
    for p in ("prop_store_kv_matches_reference", "prop_store_kv_invalid_input_throws_and_writes_nothing",
              "prop_gather_kv_matches_reference", "prop_gather_kv_seq_starts_match_reference",
              "prop_kv_step_each_sequence_sees_its_tokens"):
        assert rows[p]["verdict"] == "pass" and rows[p]["backend_calls"] > 0, rows[p]
    with pytest.raises(AssertionError) as caught:
        kvcheck.check(numpy_nvfp4_kv.wrong_backend, properties=["prop_store_kv_matches_reference"], cases=300, seed=2,
                      work_dir=tmp_path)
    assert "FAIL prop_store_kv_matches_reference" in str(caught.value), str(caught.value)


def test_arguments_are_checked_where_they_are_given_not_in_the_run():
    # Found by a reviewer: each built, then failed inside check() as "kvcheck run wrote no
    # summary", or silently meant something else (a string iterated letter by letter).
    bad_backends = [dict(store_kv=raise_zero, kv_dtypes=()), dict(store=raise_zero),
                    dict(store_kv=raise_zero, block_size_multiple=-16),
                    dict(store_kv=raise_zero, block_size_multiple=2**40), dict(store_kv=raise_zero, max_block_size=-1),
                    dict(store_kv=raise_zero, head_dims="128"), dict(store_kv=raise_zero, kv_dtypes="bf16"),
                    dict(store_kv=raise_zero, max_block_size=True), dict(store_kv=raise_zero, head_dims=(64.5,))]
    for kwargs in bad_backends:
        with pytest.raises(ValueError):
            kvcheck.Backend("bad", **kwargs)
    for kwargs, what in ((dict(properties="prop_store_kv_matches_reference"), "not the string"),
                         (dict(ops="store_kv"), "not the string"), (dict(kv_dtypes="bf16"), "not the string"),
                         (dict(cases=0), "cases 0"), (dict(cases=-1), "cases -1"), (dict(cases=1.5), "cases 1.5"),
                         (dict(seconds=0), "seconds 0"), (dict(seconds=float("inf")), "seconds inf"),
                         (dict(seed=-1), "seed -1"), (dict(seed=2**64), "seed"), (dict(timeout=0), "timeout 0")):
        with pytest.raises(ValueError, match=what):
            kvcheck.check(numpy_kv.backend, **kwargs)
    # numpy integers are integers
    assert kvcheck.Backend("np-ints", store_kv=raise_zero, head_dims=np.array([128]),
                           block_size_multiple=np.int64(16)).head_dims == (128,)


def segfault(**kwargs):
    os.kill(os.getpid(), 11)


never_called = kvcheck.Backend("never-called", store_kv=segfault)


never_called_rope = kvcheck.Backend("never-called-rope", store_kv=segfault, rope=True)


def test_a_run_of_only_the_invalid_input_properties_is_nothing_exercised(tmp_path):
    # Their calls stop in kvcheck's validator: the function (which would crash) never runs.
    for backend, prop in ((never_called, "prop_store_kv_invalid_input_throws_and_writes_nothing"),
                          (never_called_rope, "prop_store_kv_rope_bad_input_is_error")):
        with pytest.raises(AssertionError, match="nothing exercised"):
            kvcheck.check(backend, properties=[prop], cases=20, seed=1, work_dir=tmp_path)


def sleep_forever(**kwargs):
    with open(os.environ["KVCHECK_TEST_PID_FILE"], "w") as f:
        f.write(str(os.getpid()))
    import time
    time.sleep(3600)


sleeper = kvcheck.Backend("sleeper", store_kv=sleep_forever)


def test_a_check_past_its_timeout_kills_the_run_and_its_workers(tmp_path, monkeypatch):
    pid_file = tmp_path / "pid"
    monkeypatch.setenv("KVCHECK_TEST_PID_FILE", str(pid_file))
    monkeypatch.setenv("KVCHECK_PLUGIN_TIMEOUT", "600")  # the worker's own watchdog must not be what stops it
    with pytest.raises(AssertionError, match=r"timeout=20 s passed while running \['prop_store_kv_matches_reference'"):
        kvcheck.check(sleeper, properties=["prop_store_kv_matches_reference"], cases=5, seed=1, work_dir=tmp_path,
                      timeout=20)  # room for the worker's interpreter to start on a loaded 2-core machine
    pid = int(pid_file.read_text())  # the worker that ran the function
    import time
    for _ in range(50):  # killed: gone, or a zombie its new parent has not reaped yet
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break
        except FileNotFoundError:
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"worker {pid} still runs the user's function after the timeout")


def test_layout_fields_are_attributes_and_a_missing_one_is_an_attribute_error():
    import copy
    layout = _bridge.Layout({"block_stride": 656, "elements": 512})
    assert layout.block_stride == 656
    assert not hasattr(layout, "nothing") and getattr(layout, "nothing", 7) == 7
    assert copy.deepcopy(layout) == layout


def run_pytest_with(tmp_path, *options):
    """A fresh pytest session with the kvcheck plugin over one trivial test file, given
    `options`: (exit code, output)."""
    test = tmp_path / "test_typo.py"
    test.write_text("def test_x(kvcheck_kv_dtype):\n    pass\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(kvcheck.__file__))]
                                                     + os.environ.get("PYTHONPATH", "").split(os.pathsep)))
    from importlib import metadata
    plugin = [] if any(ep.name == "kvcheck" for ep in metadata.entry_points(group="pytest11")) else [
        "-p", "kvcheck.pytest_plugin"]  # as conftest.py: registered by an install, else named
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", *plugin, "-p", "no:cacheprovider",
                           *options, str(test)], env=env, cwd=tmp_path,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    return done.returncode, done.stdout


def test_a_dtype_no_backend_declares_is_a_usage_error_not_a_skip(tmp_path):
    rc, out = run_pytest_with(tmp_path, "--kvcheck-kv-dtypes=bf16,fp32")
    assert rc == 4 and "['fp32'] not among" in out, out


@pytest.mark.parametrize("option, says", [("--kvcheck-seconds=0", "--kvcheck-seconds: 0.0 is not a number of seconds"),
                                          ("--kvcheck-seconds=inf", "--kvcheck-seconds: inf is not a number of"),
                                          ("--kvcheck-seconds=1e9", "1000000000.0 is not a number of seconds > 0"),
                                          ("--kvcheck-cases=0", "--kvcheck-cases: 0 is not an integer in [1, 2147483647]"),
                                          ("--kvcheck-seed=-1",
                                           "--kvcheck-seed: -1 is not an integer in [0, 18446744073709551615]")])
def test_a_bad_budget_is_a_usage_error_before_any_test(tmp_path, option, says):
    rc, out = run_pytest_with(tmp_path, option)
    assert rc == 4 and says in out, out


def test_a_time_budget_goes_to_kvcheck_as_a_plain_decimal():
    # kvcheck run --seconds takes no exponent: str(1e-05) is '1e-05', which it refused
    # after the checks here had passed (every test then failed with "wrote no summary").
    from kvcheck._run import seconds_arg
    assert [seconds_arg(v, "s") for v in (10, 2.5, 1e-05, 999999999.5)] == ["10", "2.5", "0.00001", "999999999.5"]
    for bad in (0, -1, 1e9, float("nan"), float("inf"), True, "3"):
        with pytest.raises(ValueError, match="is not a number of seconds > 0 and below 1e9"):
            seconds_arg(bad, "s")


def test_a_refusal_message_with_a_nul_reaches_the_report_escaped(monkeypatch):
    def refuse(**kwargs):
        raise kvcheck.Refusal("unsupported", "a\0b")
    # the views are not what this checks: the function is called with none
    monkeypatch.setattr(_bridge._Views, "store_kv", staticmethod(lambda backend, fields, arrays: backend.store_kv()))
    status, message = _bridge.call(kvcheck.Backend("nul", store_kv=refuse), "store_kv", {})
    assert status == kvcheck._abi.STATUS["unsupported"] and message == "a\\x00b", (status, message)
