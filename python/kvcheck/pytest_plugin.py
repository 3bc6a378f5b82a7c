"""pytest plugin (`pytest -p kvcheck.pytest_plugin`, or automatic once the package is
installed): options for every kvcheck.check in the session, and the `kvcheck_check`
fixture that applies them.

    --kvcheck-seconds S   time budget per check (instead of cases)
    --kvcheck-cases N     cases per property (default 200)
    --kvcheck-seed N      RapidCheck seed (default: random per check, printed on failure)
"""
import pytest

from ._run import check


def pytest_addoption(parser):
    group = parser.getgroup("kvcheck")
    group.addoption("--kvcheck-seconds", type=float, default=None, help="time budget of each kvcheck.check")
    group.addoption("--kvcheck-cases", type=int, default=None, help="cases per property of each kvcheck.check")
    group.addoption("--kvcheck-seed", type=int, default=None, help="RapidCheck seed of each kvcheck.check")


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
        return check(backend, **kwargs)

    return run
