"""kvcheck from Python: test a numpy, torch or Triton kernel against kvcheck's
properties and scalar reference, bit for bit (docs/python.md).

    import kvcheck

    backend = kvcheck.Backend("my-store", store_kv=my_store_kv, kv_dtypes=("bf16",))

    def test_my_store():
        kvcheck.check(backend, cases=500)   # AssertionError: decoded report + replay
"""
from ._backend import Backend, Refusal
from ._run import Result, build_dir, check

__all__ = ["Backend", "Refusal", "Result", "check", "build_dir", "KV_DTYPES"]

# The K/V cache dtypes a backend may declare (docs/spec.md §7.1), for parametrising.
from ._abi import KV_DTYPE_NAMES as KV_DTYPES  # noqa: E402
