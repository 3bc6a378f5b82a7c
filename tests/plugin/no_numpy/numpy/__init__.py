# A numpy that is not there, for plugin.python_without_numpy_names_the_interpreter
# (tests/plugin/CMakeLists.txt): $KVCHECK_PYTHONPATH puts this folder first.
raise ModuleNotFoundError("No module named 'numpy' (tests/plugin/no_numpy stands in for an interpreter without it)")
