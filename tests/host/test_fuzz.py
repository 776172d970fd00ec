# SPDX-License-Identifier: GPL-2.0
"""A short round of each parser fuzzer (tests/fuzz, built with libFuzzer,
ASan and UBSan): its committed corpus, then RUNS more inputs from a fixed
seed.  Any crash, leak, sanitizer report or broken harness invariant fails
the test; the input is left in build/fuzz/artifacts/<name>/."""
import functools
import os
import re
import shutil
import subprocess

import pytest

TOP = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
SRC = os.path.join(TOP, "tests", "fuzz")
BIN = os.path.join(TOP, "build", "fuzz")
FUZZERS = ["rc_table", "rc_message", "vd_table", "vd_message", "redcaptab"]
# Those that also build a valid line from every input (tests/fuzz/fuzz_gen.h):
# it must be accepted and round-trip, and the round says how many did.
GENERATORS = {"rc_table", "vd_table", "redcaptab"}
RUNS = 50000


@functools.lru_cache(maxsize=None)
def _build():
    """None once the fuzzers are built, else why not (each test fails with it)."""
    if shutil.which("clang") is None:
        return ("clang is not installed: run 'make deps' "
                "(Debian packages clang and libclang-rt-14-dev)")
    r = subprocess.run(["make", "-s", "-C", SRC], capture_output=True, text=True)
    if r.returncode != 0:
        return ("building the fuzzers failed (libFuzzer's runtime is in Debian's "
                "libclang-rt-14-dev: run 'make deps'):\n" + r.stdout + r.stderr)
    return None


@pytest.mark.parametrize("name", FUZZERS)
def test_fuzz_parser(name, tmp_path):
    err = _build()
    if err:
        pytest.fail(err)
    corpus = os.path.join(SRC, "corpus", name)
    assert os.listdir(corpus), f"empty corpus {corpus}"
    artifacts = os.path.join(BIN, "artifacts", name)
    os.makedirs(artifacts, exist_ok=True)
    new = tmp_path / "new"      # what this round adds: not the committed corpus
    new.mkdir()
    cmd = [os.path.join(BIN, name), f"-runs={RUNS}", "-seed=1",
           f"-dict={os.path.join(SRC, 'dict', name + '.dict')}",
           f"-artifact_prefix={artifacts}/", str(new), corpus]
    env = dict(os.environ, UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
    r = subprocess.run(cmd, capture_output=True, text=True, errors="replace", env=env,
                       timeout=300)
    out = r.stdout + r.stderr
    why = f"{' '.join(cmd)}\nexit {r.returncode}, inputs in {artifacts}\n{out[-6000:]}"
    assert r.returncode == 0, why
    assert "runtime error" not in out, why
    assert "ERROR: AddressSanitizer" not in out, why
    assert "ERROR: LeakSanitizer" not in out, why
    done = [line for line in out.splitlines() if "DONE" in line]
    assert done, why
    if name in GENERATORS:
        valid = re.findall(r"^fuzz_gen: (\d+) valid lines accepted and round-tripped$", out, re.M)
        assert valid and int(valid[-1]) >= RUNS // 2, why
    print(f"{name}: {done[-1]}")
