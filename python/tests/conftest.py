import os
import sys

# The examples are imported as modules by the tests (and by kvcheck's fresh processes).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "examples"))
