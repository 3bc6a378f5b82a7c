"""The README's and docs/python.md's pytest examples run as written (a copy in a temp
folder, through pytest in a child process) and pass."""
import os
import re
import subprocess
import sys
from importlib import metadata

import pytest

CHECKOUT = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))


def example(path, heading):
    with open(os.path.join(CHECKOUT, path), encoding="utf-8") as f:
        text = f.read()
    section = text[text.index(heading):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


@pytest.mark.parametrize("path,heading", [("README.md", "## Testing a Python kernel from pytest"),
                                          ("docs/python.md", "# Python: test")])
def test_the_documented_example_passes(tmp_path, path, heading):
    (tmp_path / "test_example.py").write_text(example(path, heading))
    # Where the package is not installed (the GPU box: no registry), from the checkout.
    installed = any(ep.name == "kvcheck" for ep in metadata.entry_points(group="pytest11"))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(CHECKOUT, "python")] +
                                                      os.environ.get("PYTHONPATH", "").split(os.pathsep)))
    # The child runs in tmp_path: a relative KVCHECK_BUILD_DIR (gpu_check.sh build-gpu)
    # means this process's folder, not the child's.
    if env.get("KVCHECK_BUILD_DIR"):
        env["KVCHECK_BUILD_DIR"] = os.path.abspath(env["KVCHECK_BUILD_DIR"])
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path),
                           *([] if installed else ["-p", "kvcheck.pytest_plugin"]), "--kvcheck-cases", "40",
                           "--kvcheck-seed", "2"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout
