import os
import sys
from importlib import metadata

HERE = os.path.dirname(os.path.abspath(__file__))
# The examples are imported as modules by the tests (and by kvcheck's fresh processes).
sys.path.insert(0, os.path.join(HERE, os.pardir, "examples"))
# Run from a checkout without `pip install` (the GPU box has no package registry): the
# package from python/, and its pytest plugin, which an install registers itself.
sys.path.insert(0, os.path.join(HERE, os.pardir))
if not any(ep.name == "kvcheck" for ep in metadata.entry_points(group="pytest11")):
    pytest_plugins = ["kvcheck.pytest_plugin"]
