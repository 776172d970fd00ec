# SPDX-License-Identifier: GPL-2.0
"""Add up pytest JUnit XML reports into one closing line for "make check".

usage: python3 tests/summary.py report.xml...
Exit status 1 when any test failed or errored or no test ran at all.
"""
import sys
import xml.etree.ElementTree as ET


def main(paths):
    total = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    unreadable = 0
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
    failed = total["failures"] + total["errors"]
    passed = total["tests"] - failed - total["skipped"]
    failed += unreadable  # a phase that wrote no report counts as a failure
    line = f"{passed} passed, {failed} failed"
    if total["skipped"]:
        line += f", {total['skipped']} skipped"
    print(f"check: {line}")
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
