"""pytest plugin (`pytest -p kvcheck.pytest_plugin`, or automatic once the package is
installed): options for every kvcheck.check in the session, and the `kvcheck_check`
fixture that applies them.

    --kvcheck-seconds S   time budget per check (instead of cases)
    --kvcheck-cases N     cases per property (default 200)
    --kvcheck-seed N      RapidCheck seed (default: random per check, printed on failure)
    --kvcheck-kv-dtypes bf16,fp16    the values of the kvcheck_kv_dtype parameter
    --kvcheck-formats bf16,v41       the values of the kvcheck_format parameter

A test that takes the `kvcheck_kv_dtype` (or `kvcheck_format`) argument runs once per
K/V cache dtype (paged format); pass it on, kvcheck_check(backend,
kv_dtypes=[kvcheck_kv_dtype]), and an item whose dtype the backend does not declare is
skipped, saying so.
"""
import pytest

from . import _abi
from ._backend import count, names
from ._run import CASES_RANGE, SEED_RANGE, check, seconds_arg

KV_DTYPES = _abi.KV_DTYPE_NAMES
FORMATS = _abi.FORMAT_NAMES


def pytest_addoption(parser):
    group = parser.getgroup("kvcheck")
    group.addoption("--kvcheck-seconds", type=float, default=None, help="time budget of each kvcheck.check")
    group.addoption("--kvcheck-cases", type=int, default=None, help="cases per property of each kvcheck.check")
    group.addoption("--kvcheck-seed", type=int, default=None, help="RapidCheck seed of each kvcheck.check")
    group.addoption("--kvcheck-kv-dtypes", default=",".join(KV_DTYPES),
                    help="comma-separated K/V cache dtypes the kvcheck_kv_dtype parameter takes")
    group.addoption("--kvcheck-formats", default=",".join(FORMATS),
                    help="comma-separated paged formats the kvcheck_format parameter takes")


PARAMETERS = (("kvcheck_kv_dtype", "--kvcheck-kv-dtypes", KV_DTYPES), ("kvcheck_format", "--kvcheck-formats", FORMATS))


def pytest_configure(config):
    # Bad budgets are the session's error, said once before any test runs (each check would
    # raise the same ValueError, test after test).
    seconds, cases, seed = (config.getoption(o) for o in ("--kvcheck-seconds", "--kvcheck-cases", "--kvcheck-seed"))
    try:  # kvcheck.check's own checks, so the two never disagree
        if seconds is not None:
            seconds_arg(seconds, "--kvcheck-seconds:")
        if cases is not None:
            count(cases, "--kvcheck-cases:", *CASES_RANGE)
        if seed is not None:
            count(seed, "--kvcheck-seed:", *SEED_RANGE)
    except ValueError as e:
        raise pytest.UsageError(str(e)) from None
    for _, option, known in PARAMETERS:
        values = [v for v in config.getoption(option).split(",") if v]
        unknown = [v for v in values if v not in known]
        if unknown or not values:  # a typo, or nothing, would skip every item and leave CI green
            raise pytest.UsageError(f"{option}: {unknown or 'no value'} not among {list(known)}")


def pytest_generate_tests(metafunc):
    for name, option, _ in PARAMETERS:
        if name in metafunc.fixturenames:
            metafunc.parametrize(name, [v for v in metafunc.config.getoption(option).split(",") if v])


@pytest.fixture
def kvcheck_check(request):
    """kvcheck.check with the session's --kvcheck-* options filled in (a test's own
    keyword arguments win)."""
    config = request.config

    def run(backend, **kwargs):
        seconds, cases = config.getoption("--kvcheck-seconds"), config.getoption("--kvcheck-cases")
        if "cases" not in kwargs and "seconds" not in kwargs:
            if seconds is not None:
                kwargs["seconds"] = seconds
            elif cases is not None:
                kwargs["cases"] = cases
        if "seed" not in kwargs and config.getoption("--kvcheck-seed") is not None:
            kwargs["seed"] = config.getoption("--kvcheck-seed")
        for key in ("kv_dtypes", "formats"):  # a parametrised item the backend does not declare
            given = names(kwargs.get(key) or (), f"kvcheck_check: {key}")
            known = KV_DTYPES if key == "kv_dtypes" else FORMATS
            if any(v not in known for v in given):  # a name no backend declares: an error, not a skip
                raise ValueError(f"kvcheck_check: {key} {list(given)}: not among {list(known)}")
            extra = [v for v in given if v not in getattr(backend, key)]
            if extra:
                pytest.skip(f"{backend.name} does not declare {key} {extra} (it declares {list(getattr(backend, key))})")
        return check(backend, **kwargs)

    return run
