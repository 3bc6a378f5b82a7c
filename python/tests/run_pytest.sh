#!/bin/sh
# CTest's python.pytest (python/CMakeLists.txt): run_pytest.sh VENV TESTS_DIR.
# No bytecode and no pytest cache in the checkout; the run's files go to the test's
# work area ($KVCHECK_WORK_DIR).
venv=$1
tests=$2
if [ ! -x "$venv/bin/python" ]; then
  echo "SKIPPED: no Python test environment at $venv: ./kvcheck test makes it" \
    "(python3 -m venv $venv && $venv/bin/pip install -e python[test])"
  exit 77
fi
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider "$tests"
