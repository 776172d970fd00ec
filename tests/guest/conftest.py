# SPDX-License-Identifier: GPL-2.0
"""Fixtures of the guest suite: loop devices, unique dm names."""
import faulthandler
import itertools
import os
import sys
import threading

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


def pytest_configure(config):
    if not config.pluginmanager.hasplugin("timeout"):
        pytest.exit("the guest suite needs pytest-timeout (python3-pytest-timeout): make deps",
                    returncode=4)


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


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    marker = item.get_closest_marker("timeout")
    limit = TEST_TIMEOUT
    if marker:
        limit = marker.args[0] if marker.args else marker.kwargs.get("timeout", limit)
    limit += STUCK_GRACE
    watchdog = threading.Timer(limit, _stuck, args=(item, limit))
    watchdog.daemon = True
    watchdog.start()
    try:
        yield
    finally:
        watchdog.cancel()
