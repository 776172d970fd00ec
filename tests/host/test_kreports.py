# SPDX-License-Identifier: GPL-2.0
"""tests/vm/kreports, which decides whether make check-debug and make soak
saw a kernel report: each kind the debug kernel prints is found, with its
lines, and an ordinary log is clean."""
import os
import subprocess

import pytest

TOP = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
KREPORTS = os.path.join(TOP, "tests", "vm", "kreports")

CLEAN = """\
6,380,13792594,-;kmemleak: Kernel memory leak detector initialized (mem pool available: 14548)
6,99,2775171,-;rcu: \\x09RCU lockdep checking is enabled.
4,900,1,-;device-mapper: redcap: 254:1: fill of sectors 0+256 failed: -5
3,901,2,-;Buffer I/O error on dev dm-1, logical block 3, async page read
"""

REPORTS = {
    "kasan": ["3,1,1,-;==================================================================",
              "3,2,1,-;BUG: KASAN: use-after-free in redcap_fill_work+0x1a/0x2b [dm_redcap]",
              "3,3,1,-;Read of size 8 at addr ffff888003a1b2c0 by task kworker/u4:1/42",
              "3,4,1,-;=================================================================="],
    "lockdep": ["4,1,1,-;======================================================",
                "4,2,1,-;WARNING: possible circular locking dependency detected",
                "4,3,1,-;6.1.192-redcap-debug #1 Not tainted"],
    "atomic_sleep": ["3,1,1,-;BUG: sleeping function called from invalid context at mm/slab.h:1"],
    "warn": ["4,1,1,-;------------[ cut here ]------------",
             "4,2,1,-;WARNING: CPU: 1 PID: 7 at drivers/md/dm.c:100 dm_foo+0x1/0x2",
             "4,3,1,-;---[ end trace 0000000000000000 ]---"],
    "ubsan": ["3,1,1,-;UBSAN: shift-out-of-bounds in dm-redcap/rc-core.c:12:3"],
    "odebug": ["4,1,1,-;ODEBUG: free active (active state 0) object: 000 object type: work_struct"],
    "hung": ["3,1,1,-;INFO: task dmsetup:123 blocked for more than 120 seconds."],
    "kmemleak_line": ["3,1,1,-;kmemleak: 2 new suspected memory leaks (see /sys/kernel/debug/kmemleak)"],
}


def run(tmp_path, log, leaks=None):
    klog = tmp_path / "kmsg.log"
    klog.write_text(log)
    args = [KREPORTS, str(klog)]
    if leaks is not None:
        (tmp_path / "kmemleak.txt").write_text(leaks)
        args.append(str(tmp_path / "kmemleak.txt"))
    return subprocess.run(args, capture_output=True, text=True)


def test_clean_log(tmp_path):
    r = run(tmp_path, CLEAN, "")
    assert r.returncode == 0, r.stdout
    assert r.stdout.strip() == "kreports: 0 kernel reports"


@pytest.mark.parametrize("kind", sorted(REPORTS))
def test_report_is_found_with_its_lines(tmp_path, kind):
    lines = REPORTS[kind]
    r = run(tmp_path, CLEAN + "\n".join(lines) + "\n" + CLEAN)
    assert r.returncode == 1, r.stdout
    assert r.stdout.splitlines()[-1] == "kreports: 1 kernel report"
    body = [line.split(";", 1)[1] for line in lines if "===" not in line and "cut here" not in line]
    for line in body:
        assert "  " + line in r.stdout.splitlines(), r.stdout


def test_kmemleak_file_counts_each_object(tmp_path):
    leaks = ("unreferenced object 0xffff888004b2c000 (size 64):\n"
             "  comm \"dmsetup\", pid 77, jiffies 4294\n"
             "  backtrace:\n    kmalloc_trace+0x1/0x2\n    redcap_ctr+0x1/0x2 [dm_redcap]\n"
             "unreferenced object 0xffff888004b2c400 (size 64):\n")
    r = run(tmp_path, CLEAN, leaks)
    assert r.returncode == 1
    assert "    redcap_ctr+0x1/0x2 [dm_redcap]" in r.stdout
    assert r.stdout.splitlines()[-1] == "kreports: 2 kernel reports"


def test_missing_log_is_an_error(tmp_path):
    r = subprocess.run([KREPORTS, str(tmp_path / "none.log")], capture_output=True, text=True)
    assert r.returncode == 2


def test_reports_a_test_expected_are_not_counted(tmp_path):
    """The guest suite's harness tests make reports on purpose, between the
    marks tests/guest/conftest.py writes: make check-debug's scan of the
    whole log must skip them as tests/vm/run's does, and count one after
    the end mark (the whole suite on the debug kernel failed on the
    harness's deliberate WARN before, 2026-12-06)."""
    mark = "12,481,1,-;redcap-kernel-log-gate: expected reports: {} tests/guest/x.py::t\n"
    warn = "\n".join(REPORTS["warn"]) + "\n"
    log = CLEAN + mark.format("begin") + warn + mark.format("end") + CLEAN
    r = run(tmp_path, log, "")
    assert r.returncode == 0, r.stdout
    assert r.stdout.strip() == "kreports: 0 kernel reports"
    r = run(tmp_path, log + warn)
    assert r.returncode == 1, r.stdout
    assert r.stdout.splitlines()[-1] == "kreports: 1 kernel report"
