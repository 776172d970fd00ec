# SPDX-License-Identifier: GPL-2.0
"""tests/crash/run's verdict, with make and the guest replaced: it counts
the kernels it ran this time, and a guest that wrote no result fails."""
import os
import shutil
import subprocess

TOP = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
PASSING = ('<testsuites><testsuite name="pytest" tests="1" failures="0" errors="0" '
           'skipped="0"><testcase classname="c" name="t"/></testsuite></testsuites>')


def tree(tmp_path, guest):
    """A copy of the script with a fake make and a fake tests/vm/run (@guest: its body)."""
    for rel in ("tests/crash/run", "tests/summary.py"):
        os.makedirs(tmp_path / os.path.dirname(rel), exist_ok=True)
        shutil.copy(os.path.join(TOP, rel), tmp_path / rel)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "make").write_text("#!/bin/sh\nexit 0\n")
    os.makedirs(tmp_path / "tests" / "vm")
    (tmp_path / "tests" / "vm" / "run").write_text("#!/bin/bash\n" + guest + "\n")
    for f in (bin_dir / "make", tmp_path / "tests" / "vm" / "run"):
        f.chmod(0o755)
    os.makedirs(tmp_path / "build" / "crash")
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}")
    return lambda *k: subprocess.run([str(tmp_path / "tests" / "crash" / "run"), *k],
                                     capture_output=True, text=True, env=env, timeout=60)


def test_a_kernel_not_run_this_time_is_not_counted(tmp_path):
    # the guest writes a passing junit file where pytest was told to
    run = tree(tmp_path, 'for a; do case $a in --junitxml=*) echo \'%s\' >"${a#*=}";; '
                         'esac; done' % PASSING)
    (tmp_path / "build" / "crash" / "guest-6.12.xml").write_text(PASSING)	# an old run's
    r = run("6.1")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines()[-1] == "check-crash: 1 passed, 0 failed"


def test_a_guest_that_wrote_no_result_fails_even_with_an_old_one(tmp_path):
    run = tree(tmp_path, "exit 1")
    (tmp_path / "build" / "crash" / "guest-6.1.xml").write_text(PASSING)	# an old run's
    r = run("6.1")
    assert r.returncode == 1
    assert r.stdout.splitlines()[-1] == "check-crash: 0 passed, 1 failed"
