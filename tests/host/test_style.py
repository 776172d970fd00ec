# SPDX-License-Identifier: GPL-2.0
"""Kernel code is checkpatch-clean and sparse-clean, on both kernels."""
import glob
import os
import subprocess

import pytest

TOP = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
CACHE = os.environ.get("REDCAP_CACHE", os.path.expanduser("~/.cache/redcap"))
CHECKPATCH = os.path.join(CACHE, "linux-6.1", "scripts", "checkpatch.pl")
KERNEL_FILES = sorted(os.path.relpath(p, TOP) for d in ("dm-redcap", "dm-vdisk-model", "include")
                      for p in glob.glob(os.path.join(TOP, d, "*.[ch]")))


@pytest.mark.parametrize("path", KERNEL_FILES)
def test_checkpatch_clean(path):
    assert os.path.exists(CHECKPATCH), "run 'make deps' (tests/vm/setup source)"
    r = subprocess.run([CHECKPATCH, "--no-tree", "-q", "--show-types", "-f", path],
                       cwd=TOP, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("kver", ["6.1", "6.12"])
def test_sparse_and_w1_clean(kver):
    with open(os.path.join(CACHE, f"kver-{kver}")) as f:
        rel = f.read().strip()
    # A build of its own, with the test build's fault-injection code: make
    # check runs the host tests beside the guest suites, which load (and
    # reload) the modules of build/<release>, so this must not rewrite them.
    out = os.path.join(TOP, "build", "sparse", rel)
    subprocess.run(["make", "-s", "-C", TOP, "modules", f"KVER={kver}", "FAULT_INJECTION=1",
                    f"KBUILD_OUT={out}"], check=True, capture_output=True)
    r = subprocess.run(["make", "-s", "-C", f"/lib/modules/{rel}/build", f"M={out}", "W=1",
                        "C=2", "REDCAP_FAULT_INJECTION=y", "modules"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    noise = ("Skipping BTF generation",)
    problems = [line for line in (r.stdout + r.stderr).splitlines()
                if line.strip() and not any(n in line for n in noise)]
    assert problems == []
