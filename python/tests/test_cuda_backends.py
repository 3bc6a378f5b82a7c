"""torch and Triton kernels through the bridge on the GPU (device="cuda"): they pass
the K/V properties, and a wrong Triton kernel is caught and shrunk. Skipped, saying
why, where torch, Triton, a CUDA device or a CUDA build of the bridge is missing."""
import os

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (the GPU box has it)")
triton = pytest.importorskip("triton", reason="Triton is not installed (the GPU box has it)")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

import kvcheck  # noqa: E402
import torch_kv  # noqa: E402
import triton_kv  # noqa: E402

CASES = int(os.environ.get("KVCHECK_PYTHON_CUDA_CASES", "1000"))


def passed_match_rows(result):
    return {r["property"]: r for r in result.passed if r["backend_calls"] > 0}


def test_a_wrong_triton_kernel_is_caught_and_shrunk(tmp_path):
    with pytest.raises(AssertionError) as caught:
        kvcheck.check(triton_kv.wrong_backend, properties=["prop_store_kv_matches_reference"], cases=CASES, seed=23,
                      work_dir=tmp_path)
    text = str(caught.value)
    print(text)
    assert "FAIL prop_store_kv_matches_reference" in text and "triton-kv-wrong" in text, text
    assert "first differing byte" in text, text


def test_torch_backend_passes_the_kv_properties(kvcheck_check):
    result = kvcheck_check(torch_kv.backend, cases=CASES, seed=21)
    rows = passed_match_rows(result)
    for p in ("prop_store_kv_matches_reference", "prop_gather_kv_matches_reference",
              "prop_gather_kv_seq_starts_match_reference"):
        assert p in rows and rows[p]["cases"] >= CASES, (p, result)
    print(result, {p: (r["cases"], r["backend_calls"]) for p, r in rows.items()})


def test_triton_store_passes_the_kv_properties(kvcheck_check):
    result = kvcheck_check(triton_kv.backend, cases=CASES, seed=22)
    rows = passed_match_rows(result)
    assert "prop_store_kv_matches_reference" in rows and rows["prop_store_kv_matches_reference"]["cases"] >= CASES
    print(result, {p: (r["cases"], r["backend_calls"]) for p, r in rows.items()})
