# SPDX-License-Identifier: GPL-2.0
"""tests/summary.py: the closing line of "make check" and its exit status."""
import os
import shutil
import subprocess
import sys

TOP = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))


def _report(tmp_path, name, tests, failures=0, errors=0, skipped=0):
    p = tmp_path / name
    p.write_text(f'<?xml version="1.0"?><testsuites><testsuite name="pytest" tests="{tests}" '
                 f'failures="{failures}" errors="{errors}" skipped="{skipped}"/></testsuites>')
    return str(p)


def _summary(*paths, script=os.path.join(TOP, "tests", "summary.py")):
    return subprocess.run([sys.executable, script, *paths], capture_output=True, text=True)


def _cases(tmp_path, name, cases):
    """A report of test cases: (classname, name, None | ("skipped", reason) |
    ("failure", message)), with the counts pytest writes."""
    body, counts = [], {"skipped": 0, "failure": 0}
    for classname, test, outcome in cases:
        inner = ""
        if outcome:
            kind, message = outcome
            counts[kind] += 1
            inner = (f'<{kind} type="pytest.{"skip" if kind == "skipped" else "fail"}" '
                     f'message="{message}">{message}</{kind}>')
        body.append(f'<testcase classname="{classname}" name="{test}" time="0.1">'
                    f'{inner}</testcase>')
    p = tmp_path / name
    p.write_text('<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" '
                 f'errors="0" failures="{counts["failure"]}" skipped="{counts["skipped"]}" '
                 f'tests="{len(cases)}">{"".join(body)}</testsuite></testsuites>')
    return str(p)


def _summary_with_list(tmp_path, allow, *paths):
    """summary.py run from a tree of its own whose tests/skips-allowed is @allow
    (None: no list at all): the list is found beside the script."""
    tests = tmp_path / "tree" / "tests"
    tests.mkdir(parents=True)
    shutil.copy(os.path.join(TOP, "tests", "summary.py"), tests / "summary.py")
    if allow is not None:
        (tests / "skips-allowed").write_text(allow)
    return _summary(*paths, script=str(tests / "summary.py"))


SKIPPED = [("tests.host.test_a", "test_one", None),
           ("tests.host.test_a", "test_two[x]", ("skipped", "no loop device on this host")),
           ("tests.host.test_b.TestC", "test_three", None)]


def test_all_passed_exits_zero(tmp_path):
    r = _summary(_report(tmp_path, "a.xml", 5), _report(tmp_path, "b.xml", 3))
    assert r.returncode == 0
    assert r.stdout.splitlines()[-1] == "check: 8 passed, 0 failed"


def test_a_skip_not_on_the_list_fails_and_is_named_with_its_reason(tmp_path):
    r = _summary_with_list(tmp_path, "# nothing allowed\n", _cases(tmp_path, "a.xml", SKIPPED))
    assert r.returncode == 1, r.stdout
    assert ("summary: skip not allowed: tests.host.test_a::test_two[x]: "
            "no loop device on this host") in r.stdout.splitlines()
    assert r.stdout.splitlines()[-1] == \
        "check: 2 passed, 0 failed, 1 skipped (1 not allowed by tests/skips-allowed)"


def test_a_skip_without_any_list_fails(tmp_path):
    r = _summary_with_list(tmp_path, None, _cases(tmp_path, "a.xml", SKIPPED))
    assert r.returncode == 1
    assert "summary: skip not allowed: tests.host.test_a::test_two[x]: " \
        "no loop device on this host" in r.stdout


def test_a_skip_counted_but_not_named_fails(tmp_path):
    r = _summary_with_list(tmp_path, "", _report(tmp_path, "a.xml", 3, skipped=1))
    assert r.returncode == 1
    assert r.stdout.splitlines()[-1] == \
        "check: 2 passed, 0 failed, 1 skipped (1 not allowed by tests/skips-allowed)"


def test_an_allowed_skip_passes_and_counts(tmp_path):
    for allow in ("tests.host.test_a::test_two[x]  # the host has no loop devices\n",
                  "tests/host/test_a.py::test_two*  # the host has no loop devices\n",
                  "# a comment\n\ntests.host.test_a::*  # why: all of test_a\n"):
        r = _summary_with_list(tmp_path / str(hash(allow)), allow,
                               _cases(tmp_path, "a.xml", SKIPPED),
                               _report(tmp_path, "b.xml", 4))
        assert r.returncode == 0, (allow, r.stdout)
        assert ("summary: skip allowed: tests.host.test_a::test_two[x]: "
                "no loop device on this host") in r.stdout.splitlines()
        assert r.stdout.splitlines()[-1] == "check: 6 passed, 0 failed, 1 skipped"


def test_an_allowed_pattern_of_a_class_in_node_id_form(tmp_path):
    cases = [("tests.host.test_b.TestC", "test_three", ("skipped", "needs a tape drive"))]
    r = _summary_with_list(tmp_path, "tests/host/test_b.py::TestC::test_three  # no tape\n",
                           _cases(tmp_path, "a.xml", cases + SKIPPED[:1]))
    assert r.returncode == 0, r.stdout
    assert r.stdout.splitlines()[-1] == "check: 1 passed, 0 failed, 1 skipped"


def test_an_allowed_skip_needs_a_reason_on_the_list(tmp_path):
    r = _summary_with_list(tmp_path, "tests.host.test_a::test_two[[]x]\n",
                           _cases(tmp_path, "a.xml", SKIPPED))
    assert r.returncode == 1
    assert "want '<test or pattern>  # why'" in r.stdout


def test_counts_of_passes_failures_and_skips(tmp_path):
    cases = SKIPPED + [("tests.guest.test_d", "test_f", ("failure", "assert 1 == 2")),
                       ("tests.guest.test_d", "test_g", ("skipped", "no 6.12 kernel"))]
    r = _summary_with_list(tmp_path, "tests.guest.test_d::test_g  # no such kernel\n"
                           "tests.host.test_a::test_two*  # no loop device\n",
                           _cases(tmp_path, "a.xml", cases), _report(tmp_path, "b.xml", 3))
    assert r.returncode == 1
    assert r.stdout.splitlines()[-1] == "check: 5 passed, 1 failed, 2 skipped"


def test_the_trees_list_allows_only_justified_skips():
    """tests/skips-allowed parses, and each of its lines says why."""
    with open(os.path.join(TOP, "tests", "skips-allowed"), encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            text = line.strip()
            if text and not text.startswith("#"):
                pattern, _, why = text.partition("#")
                assert pattern.strip() and why.strip(), f"tests/skips-allowed:{n}: {text}"


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
