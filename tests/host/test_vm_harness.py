# SPDX-License-Identifier: GPL-2.0
"""tests/vm/run as a user and a script see it: exit status, output, the
kernel log kept with --klog, timeout."""
import os
import subprocess

import pytest

TOP = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
RUN = os.path.join(TOP, "tests", "vm", "run")
pytestmark = pytest.mark.vm


def _run(*args, timeout=600):
    return subprocess.run([RUN, "--no-build", *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=timeout)


def test_exit_status_output_and_kernel_log_pass_through():
    """The command's status comes back, even 126: guest-init also exits 126
    when a debug kernel reported a bug while booting, but only its mark
    beside the kernel log makes the harness boot again and rerun the
    command."""
    klog = os.path.join(TOP, "build", "vm", "test-klog.log")
    r = _run("--klog", klog, "--", "sh", "-c", "echo out-line; echo err-line >&2; "
             "echo \"cache=$REDCAP_CACHE\"; "
             "echo redcap-klog-test > /dev/kmsg; sleep 1; "
             "grep -qw dm_redcap /proc/modules && grep -qw dm_vdisk /proc/modules && exit 126; "
             "echo modules-not-loaded; exit 1")
    assert r.returncode == 126, r.stderr
    assert r.stdout.count("out-line") == 1, r.stdout
    # the guest's tests read the cache the run boots from
    cache = os.environ.get("REDCAP_CACHE", os.path.expanduser("~/.cache/redcap"))
    assert f"cache={cache}\n" in r.stdout, r.stdout
    assert "err-line" in r.stderr
    assert "booting again" not in r.stderr
    # the root over virtio-fs (tests/vm/setup's virtiofsd), not 9p
    assert "guest-init: the guest's root is" not in r.stderr, r.stderr
    with open(klog) as f:
        assert "redcap-klog-test" in f.read()
    os.unlink(klog)


def test_hung_guest_times_out_with_kernel_log():
    """A guest that does not finish is killed at --timeout, and the harness
    prints the last lines its kernel logged.  What they are depends on how
    far the guest got, which follows the host's speed: a boot is 20 to 25 s
    on an idle host, but with four guests on two cores (make check beside a
    bench, 2026-12-02) one had not reached its command at 90 s.  So the
    test asks for the line guest-init logs before it loads the targets,
    the first the guest itself writes, with the timeout of several boots."""
    r = _run("--timeout", "150", "--", "sh", "-c", "echo redcap-hang-test > /dev/kmsg; sleep 600")
    assert r.returncode == 124
    assert "guest timed out after 150 s" in r.stderr
    assert "redcap-guest-init: loading the targets" in r.stderr


def test_kreports_fails_a_run_whose_kernel_reported_a_bug():
    """--kreports (make check's guests): a kernel report in the log after
    our modules were loaded turns a command's exit 0 into 1, printed; one
    between tests/guest/conftest.py's marks around a test that warns on
    purpose is left out.  One boot: the guests are make check's long pole."""
    warn = "WARNING: CPU: 0 PID: 1 at drivers/md/dm-redcap-test.c:{} redcap_test+0x0/0x1"
    mark = "redcap-kernel-log-gate: expected reports:"
    r = _run("--kreports", "--", "sh", "-c",
             f"echo '{mark} begin t' > /dev/kmsg; echo '{warn.format(1)}' > /dev/kmsg; "
             f"echo '{mark} end t' > /dev/kmsg; echo '{warn.format(2)}' > /dev/kmsg; "
             "sleep 1; exit 0")
    assert r.returncode == 1, r.stderr
    assert f"tests/vm/run: kernel report:\n  {warn.format(2)}\n" in r.stderr, r.stderr
    assert warn.format(1) not in r.stderr, r.stderr
    assert "tests/vm/run: 1 kernel report in the guest's log\n" in r.stderr, r.stderr
