# SPDX-License-Identifier: GPL-2.0
"""tests/bench's modules (suite, report, apps) loaded by file for the host tests."""
import importlib.util
import os

TOP = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))


def load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(TOP, "tests", "bench",
                                                                     f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
