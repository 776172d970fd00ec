# SPDX-License-Identifier: GPL-2.0
"""tests/summary.py: the closing line of "make check" and its exit status."""
import os
import subprocess
import sys

TOP = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))


def _report(tmp_path, name, tests, failures=0, errors=0, skipped=0):
    p = tmp_path / name
    p.write_text(f'<?xml version="1.0"?><testsuites><testsuite name="pytest" tests="{tests}" '
                 f'failures="{failures}" errors="{errors}" skipped="{skipped}"/></testsuites>')
    return str(p)


def _summary(*paths):
    return subprocess.run([sys.executable, os.path.join(TOP, "tests", "summary.py"), *paths],
                          capture_output=True, text=True)


def test_all_passed_exits_zero(tmp_path):
    r = _summary(_report(tmp_path, "a.xml", 5), _report(tmp_path, "b.xml", 3, skipped=1))
    assert r.returncode == 0
    assert r.stdout.splitlines()[-1] == "check: 7 passed, 0 failed, 1 skipped"


def test_a_failure_exits_one(tmp_path):
    r = _summary(_report(tmp_path, "a.xml", 5), _report(tmp_path, "b.xml", 3, failures=1, errors=1))
    assert r.returncode == 1
    assert r.stdout.splitlines()[-1] == "check: 6 passed, 2 failed"


def test_missing_report_counts_as_failure(tmp_path):
    r = _summary(_report(tmp_path, "a.xml", 5), str(tmp_path / "missing.xml"))
    assert r.returncode == 1
    assert r.stdout.splitlines()[-1] == "check: 5 passed, 1 failed"


def test_no_tests_is_a_failure(tmp_path):
    r = _summary(_report(tmp_path, "a.xml", 0))
    assert r.returncode == 1
