# SPDX-License-Identifier: GPL-2.0
"""Add up pytest JUnit XML reports into one closing line for "make check".

usage: python3 tests/summary.py report.xml...
Exit status 1 when any test failed or errored, no test ran at all, or a
test skipped that tests/skips-allowed (beside this script) does not allow.

A skip is a test that did not run: on CI (root, loop devices, unshare, the
boot tools built) none should, so each one is named, with its reason, and
fails the summary unless a line of tests/skips-allowed matches it:

    <pattern>  # why it cannot run where make check runs

<pattern> is an fnmatch pattern on "<classname>::<name>" as the reports
say it (tests.host.test_udev_helper::test_x[a-b]), or a pytest node id
(tests/host/test_udev_helper.py::test_x[a-b]); the reason is required.
"""
import fnmatch
import os
import sys
import xml.etree.ElementTree as ET

ALLOW_LIST = os.path.join(os.path.dirname(os.path.abspath(__file__)), "skips-allowed")


def read_allow_list(path):
    """The patterns of @path, and the problems with its lines (a line without
    a reason is one: every allowed skip says why)."""
    patterns, problems = [], []
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return patterns, problems
    except OSError as e:
        return patterns, [f"cannot read {path}: {e}"]
    for n, line in enumerate(lines, 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        pattern, hash_, why = text.partition("#")
        pattern = pattern.strip()
        if not hash_ or not why.strip() or not pattern or len(pattern.split()) != 1:
            problems.append(f"{path}:{n}: want '<test or pattern>  # why', got '{text}'")
            continue
        patterns.append(normalise(pattern))
    return patterns, problems


def normalise(pattern):
    """A pytest node id (tests/host/test_a.py::Class::test_b) as the reports'
    classname::name (tests.host.test_a.Class::test_b); other patterns as they are."""
    if ".py::" not in pattern:
        return pattern
    path, _, rest = pattern.partition(".py::")
    parts = rest.split("::")
    return "::".join([".".join([path.replace("/", ".")] + parts[:-1]), parts[-1]])


def skips_of(root):
    """(classname::name, reason) of each skipped test case under @root."""
    for case in root.iter("testcase"):
        sk = case.find("skipped")
        if sk is None:
            continue
        reason = sk.get("message") or (sk.text or "").strip() or "no reason given"
        yield f"{case.get('classname', '')}::{case.get('name', '')}", " ".join(reason.split())


def main(paths):
    total = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    unreadable = 0
    skips = []
    for path in paths:
        try:
            root = ET.parse(path).getroot()
        except (OSError, ET.ParseError) as e:
            print(f"summary: cannot read {path}: {e}")
            unreadable += 1
            continue
        suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
        for s in suites:
            for k in total:
                total[k] += int(s.get(k, 0))
            print(f"summary: {path}: {s.get('tests')} tests, {s.get('failures')} failed, "
                  f"{s.get('errors')} errors, {s.get('skipped')} skipped")
            skips.extend(skips_of(s))
    patterns, problems = read_allow_list(ALLOW_LIST)
    for p in problems:
        print(f"summary: {p}")
    not_allowed = []
    for test, reason in skips:
        allowed = any(test == p or fnmatch.fnmatchcase(test, p) for p in patterns)
        print(f"summary: skip {'allowed' if allowed else 'not allowed'}: {test}: {reason}")
        if not allowed:
            not_allowed.append(test)
    # A report that counts skips it does not list (or lists none) still
    # counts: those are not on the list either.
    unlisted = max(0, total["skipped"] - len(skips))
    if unlisted:
        print(f"summary: {unlisted} skipped test(s) the reports do not name: not allowed")
    failed = total["failures"] + total["errors"]
    passed = total["tests"] - failed - total["skipped"]
    failed += unreadable  # a phase that wrote no report counts as a failure
    line = f"{passed} passed, {failed} failed"
    if total["skipped"]:
        line += f", {total['skipped']} skipped"
    bad_skips = len(not_allowed) + unlisted
    if bad_skips:
        line += f" ({bad_skips} not allowed by tests/skips-allowed)"
    print(f"check: {line}")
    return 1 if failed or passed == 0 or bad_skips or problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
