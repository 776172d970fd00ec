# SPDX-License-Identifier: GPL-2.0
"""The guest suite's own guards (conftest.py): a test past its timeout fails
with the kernel's view of the tasks that wait, and the suite goes on; a test
stuck where no signal reaches it ends the run with the same view, instead of
sitting silent until the guest is killed."""
import os
import re
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from dmtest import (BLOCK, Dm, dev_sectors, disk_reads, join_or_report, loop_device, read_blocks,
                    remove_udev_rule, SLOW, sh, slow_down, udev_rule)

HERE = os.path.dirname(os.path.realpath(__file__))


def run_nested(tmp_path, body, env=None):
    """pytest on one test file @body, beside the suite's conftest.py."""
    os.symlink(os.path.join(HERE, "conftest.py"), tmp_path / "conftest.py")
    (tmp_path / "test_nested.py").write_text(textwrap.dedent(body))
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                           str(tmp_path)], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path, env={**os.environ, **(env or {})})


def test_a_test_past_its_timeout_fails_with_the_kernels_view_and_the_next_runs(tmp_path):
    r = run_nested(tmp_path, """
        import time
        import pytest

        @pytest.mark.timeout(2)
        def test_sleeps():
            time.sleep(60)

        def test_next():
            pass
    """)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "Failed: Timeout >2.0s" in r.stdout, out
    assert "the kernel's view at the timeout" in r.stdout, out
    assert "Show Blocked State" in r.stdout, out
    assert "1 failed, 1 passed" in r.stdout, out


@pytest.mark.kernel_report_expected
def test_a_kernel_warning_fails_the_test_that_was_running_and_the_next_runs(tmp_path, loop64):
    """The kernel-log gate (conftest.py): a WARN_ON_ONCE in redcap's map,
    fired by the test build's fault point fi_warn, fails the test whose
    read set it off, with the report's lines; the next test passes.  The
    warning fires once per module load: once per guest run."""
    param = "/sys/module/dm_redcap/parameters/fi_warn"
    r = run_nested(tmp_path, f"""
        from dmtest import BLOCK, Dm, dev_sectors, read_blocks

        def test_warns():
            with Dm("rc-gate-warns",
                    "0 {dev_sectors(loop64)} redcap {loop64} 128 4 2 policy always") as rc:
                with open("{param}", "w") as f:
                    f.write("1")
                try:
                    read_blocks(rc.path, 0, BLOCK)
                finally:
                    with open("{param}", "w") as f:
                        f.write("0")

        def test_next():
            pass
    """)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "1 failed, 1 passed" in r.stdout, out
    assert ("test_nested.py::test_warns: the kernel reported 1 bug while this test's call "
            "ran (tests/vm/kreports):") in r.stdout, out
    assert re.search(r"WARNING: CPU: \d+ PID: \d+ at \S*redcap-target\.c:\d+ "
                     r"redcap_(map|fi_warn)", r.stdout), out


def test_a_test_past_its_timeout_in_a_command_kills_the_command_and_the_next_runs(tmp_path):
    """The test's limit can strike inside sh() before sh()'s own: the
    command is killed then, not waited for, so the test fails and the run
    goes on (make check of a95c076: a dmsetup remove waiting on udev held
    the 6.12 run until the watchdog ended it)."""
    r = run_nested(tmp_path, """
        import pytest
        from dmtest import sh

        @pytest.mark.timeout(1)
        def test_command_outlives_the_test():
            sh("sleep", "600")

        def test_next():
            pass
    """, env={"REDCAP_STUCK_GRACE": "30"})
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "Failed: Timeout >1.0s" in r.stdout, out
    assert "1 failed, 1 passed" in r.stdout, out


def test_a_test_stuck_in_the_kernel_ends_the_run_with_the_kernels_view(tmp_path, loop64, dmname):
    """A read dm-delay holds 8 s, in the test's main thread: the SIGALRM at
    1 s cannot end it; the watchdog does, 2 s later.  (Each time six times
    longer on the debug kernel, where the test took more than 1 s to reach
    its read and failed on the timeout before it.)"""
    sh("modprobe", "dm-delay")
    n = dev_sectors(loop64)
    timeout, grace = 1 * SLOW, 2 * SLOW
    with Dm(dmname(), f"0 {n} delay {loop64} 0 0") as slow:
        with slow_down(slow, loop64, n, 8000 * SLOW):
            r = run_nested(tmp_path, f"""
                import os
                import pytest
                from dmtest import aligned

                @pytest.mark.timeout({timeout})
                def test_stuck():
                    fd = os.open(os.environ["STUCK_DEV"], os.O_RDONLY | os.O_DIRECT)
                    os.preadv(fd, [aligned(4096)], 0)
            """, env={"STUCK_DEV": slow.path, "REDCAP_STUCK_GRACE": str(grace)})
    assert r.returncode == 3, r.stdout + r.stderr
    assert f"test_nested.py::test_stuck: still running {timeout + grace} s after it started, " \
           "in a wait no signal ends" in r.stderr, r.stderr
    assert "Show Blocked State" in r.stderr, r.stderr
    assert f"{slow.name}: 0 {n} delay " in r.stderr, r.stderr
    assert 'test_nested.py", line 9 in test_stuck' in r.stderr, r.stderr
    assert r.stderr.rstrip().endswith(
        f"test_nested.py::test_stuck: still running {timeout + grace} s after it started"), \
        r.stderr[-2000:]


def test_a_remove_udev_never_completes_fails_its_test_and_releases_the_cookie(loop64, dmname):
    """A rule drops the udev cookie from the device's remove event, so
    95-dm-notify never completes it and the remove waits for good.
    The remove fails after its limit, with udev's processes in the message,
    and the cookie is released: the device is gone and no dmsetup waits."""
    dm = Dm(dmname(), f"0 {dev_sectors(loop64)} linear {loop64} 0")
    kname = sh("dmsetup", "info", "-c", "--noheadings", "-o", "blkdevname", dm.name).stdout.strip()
    rules = "/run/udev/rules.d/00-redcap-tests-nocookie.rules"
    udev_rule(rules, f'ACTION=="remove", KERNEL=="{kname}", ENV{{DM_COOKIE}}=""\n')
    try:
        with pytest.raises(AssertionError) as e:
            dm.remove(timeout=3 * SLOW)
        assert sh("dmsetup", "udevcookies").stdout.count("\n") <= 1   # the header only
    finally:
        remove_udev_rule(rules)
    assert f"libdm remove {dm.name}: still running after {3 * SLOW} s" in str(e.value)
    assert "udev and dmsetup processes" in str(e.value)
    assert not dm.exists()


def test_a_read_still_in_the_kernel_fails_its_test_with_the_kernels_view(loop64, dmname):
    """join_or_report's failure path, which only a stuck test would reach:
    a read held 3 s by dm-delay outlives a 0.5 s join, and the failure
    names it, with sysrq-w's blocked tasks, the threads' kernel stacks and
    the dm tables.  The read then completes."""
    sh("modprobe", "dm-delay")
    n = dev_sectors(loop64)
    with Dm(dmname(), f"0 {n} delay {loop64} 0 0") as slow:
        with slow_down(slow, loop64, n):
            reader = threading.Thread(target=read_blocks, args=(slow.path, 0, BLOCK),
                                      daemon=True)
            reader.start()
            with pytest.raises(AssertionError) as failed:
                join_or_report([reader], 0.5)
            join_or_report([reader], 30)
    text = str(failed.value)
    assert text.startswith("1 of 1 threads still blocked after 0.5 s\n"), text
    assert "Show Blocked State" in text, text
    assert f"{slow.name}: 0 {n} delay " in text, text
    assert "\ntask " in text, text
    # udev's side, for a dmsetup waiting on its cookie: the daemon, the
    # cookies held and whether udev's queue is empty
    assert re.search(r"\n  \d+ [RSD] \S+ \S*udevd", text), text
    assert "\ndmsetup udevcookies (exit 0):\n" in text, text
    assert "\nudevadm settle -t 0 (exit " in text, text


def test_a_new_loop_device_is_not_read_by_udev_once_the_test_has_it():
    """Attaching a loop device has udev's blkid read it for a few hundred
    milliseconds; a test counting the disk's reads (defect 9's) counted one
    of them as its own in a make check of 383abd8.  The loop fixtures wait
    for that probe: no read reaches the device in the half second after."""
    with loop_device(64 << 20) as dev:
        ios0 = disk_reads(dev)[0]
        time.sleep(0.5)
        assert disk_reads(dev)[0] == ios0
