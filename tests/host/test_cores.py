# SPDX-License-Identifier: GPL-2.0
"""Runs every unit test of the portable C cores (built with ASan/UBSan by
tests/host/Makefile) as one pytest test each."""
import os
import subprocess

import pytest

TOP = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.path.join(TOP, "build", "host")
SRC = os.path.join(TOP, "tests", "host")


def _cases():
    subprocess.run(["make", "-s", "-C", SRC], check=True)
    cases = []
    for name in sorted(os.listdir(SRC)):
        if not name.endswith("_test.c"):
            continue
        exe = os.path.join(BIN, name[:-2])
        out = subprocess.run([exe, "--list"], check=True, capture_output=True, text=True)
        cases += [pytest.param(exe, t, id=f"{name[:-7]}:{t}") for t in out.stdout.split()]
    return cases


@pytest.mark.parametrize("exe,test", _cases())
def test_core(exe, test):
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
    r = subprocess.run([exe, test], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "runtime error" not in r.stderr, r.stderr
