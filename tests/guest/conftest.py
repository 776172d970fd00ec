# SPDX-License-Identifier: GPL-2.0
"""Fixtures of the guest suite: loop devices, unique dm names; the guards
of the run: every test's time limit, and the kernel-log gate (a kernel
report while a test ran fails that test)."""
import faulthandler
import importlib.machinery
import importlib.util
import itertools
import os
import sys
import threading
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))

import dmtest  # noqa: E402

_names = itertools.count()

# Every test ends within this many seconds, its fixtures' setup and teardown
# included, or fails with the Python threads' stacks and the kernel's view of
# the tasks that wait (pytest-timeout's SIGALRM: the rest of the suite runs).
# A test that needs longer says so with @pytest.mark.timeout(N).  A wait no
# signal ends (a read the kernel never completes, in the main thread) is
# caught STUCK_GRACE seconds later by a watchdog thread, which prints the same
# and ends the run: one test's hang costs minutes, not the guest's timeout.
TEST_TIMEOUT = 300 * dmtest.SLOW
STUCK_GRACE = int(os.environ.get("REDCAP_STUCK_GRACE", "120"))

if os.geteuid() != 0 or not os.path.exists("/dev/mapper/control"):
    pytest.exit("the guest suite runs inside the guest: tests/vm/run -- python3 -m pytest tests/guest",
                returncode=4)


@pytest.fixture
def dmname(request):
    """A fresh device name per use: dmname() -> 'rc-<test>-<n>'."""
    base = request.node.name.replace("[", "-").replace("]", "")[:40]
    return lambda: f"rc-{base}-{next(_names)}"


@pytest.fixture
def loop64():
    """A 64 MiB loop device over a file in the guest's /tmp."""
    with dmtest.loop_device(64 << 20) as dev:
        yield dev


@pytest.fixture
def loop128():
    with dmtest.loop_device(128 << 20) as dev:
        yield dev


@pytest.fixture
def fault(request):
    """fault(name, value): set a fault-injection parameter for this test."""
    touched = []

    def set_(name, value):
        touched.append(name)
        dmtest.set_param(name, value)
    yield set_
    for name in touched:
        dmtest.set_param(name, 0)


def pytest_configure(config):
    if not config.pluginmanager.hasplugin("timeout"):
        pytest.exit("the guest suite needs pytest-timeout (python3-pytest-timeout): make deps",
                    returncode=4)
    config.addinivalue_line(
        "markers", "crash: the crash-consistency suite, make check-crash, not make check's")
    config.addinivalue_line(
        "markers", "kernel_report_expected: the test makes the kernel report a bug on "
        "purpose; the kernel-log gate then fails it if no report came")
    config.pluginmanager.register(KernelLogGate(), "redcap-kernel-log-gate")


def pytest_collection_modifyitems(items):
    for item in items:
        if item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(TEST_TIMEOUT, method="signal"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A test that timed out reports what still waits, before its teardown."""
    rep = (yield).get_result()
    if rep.failed and call.excinfo and str(call.excinfo.value).startswith("Timeout >"):
        rep.sections.append(("the kernel's view at the timeout", dmtest.blocked_report()))


def _stuck(item, limit):
    capman = item.config.pluginmanager.getplugin("capturemanager")
    if capman:
        capman.suspend_global_capture(in_=True)
    sys.stderr.write(f"\n{item.nodeid}: still running {limit} s after it started, in a "
                     "wait no signal ends: the kernel's view, every thread's stack, "
                     "and the end of the run\n")
    sys.stderr.write(dmtest.blocked_report() + "\n")
    sys.stderr.flush()
    faulthandler.dump_traceback(all_threads=True)
    # once more, last: a log cut to its tail still names the test
    sys.stderr.write(f"\n{item.nodeid}: still running {limit} s after it started\n")
    sys.stderr.flush()
    os._exit(3)


# (guest CPU s, wall s, node id) of each test run: make check's guests are
# CPU-bound, so a suite's length is its tests' CPU, not their wall time
# (which counts waits on emulated disks and timeouts too).
_cpu = []


def _busy_s():
    """The guest's CPU time so far, not idle, all CPUs (/proc/stat)."""
    with open("/proc/stat") as f:
        t = [int(x) for x in f.readline().split()[1:9]]
    return (sum(t) - t[3] - t[4]) / os.sysconf("SC_CLK_TCK")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    marker = item.get_closest_marker("timeout")
    limit = TEST_TIMEOUT
    if marker:
        limit = marker.args[0] if marker.args else marker.kwargs.get("timeout", limit)
    limit += STUCK_GRACE
    watchdog = threading.Timer(limit, _stuck, args=(item, limit))
    watchdog.daemon = True
    t0, busy0 = time.monotonic(), _busy_s()
    watchdog.start()
    try:
        yield
    finally:
        watchdog.cancel()
        _cpu.append((_busy_s() - busy0, time.monotonic() - t0, item.nodeid))


def pytest_terminal_summary(terminalreporter):
    """The 25 tests that took the most guest CPU (setup and teardown in)."""
    if len(_cpu) < 2:
        return
    tr = terminalreporter
    tr.write_sep("=", f"guest CPU: {sum(c for c, _, _ in _cpu):.0f} s in {len(_cpu)} tests, "
                      "the 25 costliest")
    for cpu, wall, nodeid in sorted(_cpu, reverse=True)[:25]:
        tr.write_line(f"{cpu:7.2f}s cpu {wall:7.2f}s wall  {nodeid}")


def _load_kreports():
    """tests/vm/kreports, the one definition of a kernel report."""
    path = os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "vm", "kreports")
    loader = importlib.machinery.SourceFileLoader("kreports", path)
    spec = importlib.util.spec_from_loader("kreports", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


_EXPECTED_SEEN = pytest.StashKey[int]()


class KernelLogGate:
    """A kernel report (WARN, BUG, oops, sleeping in atomic context, a hung
    task, lockdep, KASAN, ...: tests/vm/kreports) printed while a test ran,
    its setup and teardown included, fails that test at its teardown with
    the report's lines.  What the kernel printed before the session is left
    to tests/vm/run --kreports, which scans the whole log."""

    def __init__(self):
        self.kreports = _load_kreports()
        self.kmsg = dmtest.Kmsg()       # from the end of the log as it is now
        self.lost = 0

    def _drain(self):
        """The kernel log's lines since the last drain, without their
        /dev/kmsg prefixes and dictionaries."""
        lines = []
        while True:
            try:
                rec = os.read(self.kmsg.fd, 8192).decode(errors="replace")
            except BlockingIOError:
                return lines
            except BrokenPipeError:     # records overwritten before we read them
                self.lost += 1
                continue
            lines.append(rec.split(";", 1)[-1].split("\n", 1)[0])

    def _mark(self, text):
        with open("/dev/kmsg", "w") as f:
            # around a test marked kernel_report_expected; kreports skips it
            f.write(f"{self.kreports.EXPECTED_MARK} {text}\n")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_setup(self, item):
        self._drain()                   # between tests: nobody's
        if item.get_closest_marker("kernel_report_expected"):
            # tests/vm/run --kreports leaves out what lies between the marks
            self._mark(f"begin {item.nodeid}")
        yield

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        """Each phase (setup, call, teardown) is judged on the reports
        printed while it ran: a warning in the test's body fails the test,
        one in a fixture's teardown errors it."""
        rep = (yield).get_result()
        found = self.kreports.reports(self._drain())
        if item.get_closest_marker("kernel_report_expected") is not None:
            item.stash[_EXPECTED_SEEN] = item.stash.get(_EXPECTED_SEEN, 0) + len(found)
            if call.when == "teardown":
                self._mark(f"end {item.nodeid}")
                if not item.stash[_EXPECTED_SEEN]:
                    rep.outcome = "failed"
                    rep.longrepr = (f"{item.nodeid}: marked kernel_report_expected, "
                                    "but the kernel reported nothing")
            return
        if not found:
            return
        text = (f"{item.nodeid}: the kernel reported {len(found)} bug"
                f"{'s' if len(found) != 1 else ''} while this test's {call.when} ran "
                "(tests/vm/kreports):\n" + "\n\n".join("\n".join(r) for r in found))
        if rep.failed:
            rep.sections.append(("kernel reports", text))
        else:
            rep.outcome = "failed"
            rep.longrepr = text

    def pytest_terminal_summary(self, terminalreporter):
        if self.lost:
            terminalreporter.write_line(
                f"kernel-log gate: {self.lost} kernel log records were overwritten before "
                "they were read; tests/vm/run --kreports scans the whole log")
