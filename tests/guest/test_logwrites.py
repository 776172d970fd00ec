# SPDX-License-Identifier: GPL-2.0
"""The crash harness's replayer (tests/crash/logreplay.py) proven on plain
filesystems, no redcap involved: xfstests generic/482's method
(tests/crash/crashcheck.py).  Every FLUSH, FUA and mark from the one after
mkfs on must be a consistent filesystem holding every file fsync'ed before
it; and a replay that loses the writes of one file's fsync must fail that
check: the checker can fail.  make check-crash."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "crash"))

import crashcheck  # noqa: E402
import logreplay  # noqa: E402
from crashcheck import FILESYSTEMS, SIZE, check_state, content, record  # noqa: E402
from dmtest import loop_device, sh  # noqa: E402

pytestmark = pytest.mark.crash


@pytest.fixture(scope="module", autouse=True)
def modules():
    sh("modprobe", "dm-log-writes")
    sh("modprobe", "dm-snapshot")
    targets = [line.split()[0] for line in sh("dmsetup", "targets").stdout.splitlines()]
    assert "log-writes" in targets and "snapshot" in targets, targets


@pytest.fixture(scope="module")
def mnt(tmp_path_factory):
    return str(tmp_path_factory.mktemp("mnt"))


@pytest.fixture(scope="module", params=sorted(FILESYSTEMS))
def recorded(request, mnt):
    with record(request.param, mnt) as rec:
        yield rec


@pytest.mark.timeout(600)
def test_every_flush_point_is_consistent_and_every_mark_holds_what_was_fsynced(recorded, mnt):
    with logreplay.Log(recorded.log) as log:
        marks = [e.mark for e in log if e.mark is not None]
    assert marks == ["mkfs", "a", "b", "c", "a2", "b2", "e", "big", "f", "umount",
                     crashcheck.END_MARK]
    crashcheck.check_recording(recorded, mnt)


def test_a_replay_that_loses_one_files_writes_fails_the_content_check(recorded, mnt):
    """The negative control: leave out the writes that carried the first
    block of 'big', which the flush of its fsync made durable; at the mark
    after that fsync the check must find 'big' wrong."""
    needle = content("big", 1, 64)
    with loop_device(SIZE) as scratch, loop_device(SIZE) as cow, \
            logreplay.Log(recorded.log) as log, logreplay.Replayer(log, scratch) as rp:
        lost = {e.index for e in log if e.nr_sectors and not e.flags & logreplay.DISCARD
                and needle in b"".join(log.data(e))}
        big = log.find_mark("big").index
        assert lost and max(lost) < big
        rp.apply_to(big, skip=lost)
        problems = check_state(recorded.fs, scratch, cow, mnt, recorded.marks["big"])
    print(f"{recorded.fs}: entries {sorted(lost)} left out: {problems}")
    assert [p for p in problems if p.startswith("big: 1048576 bytes, 1048576 expected; first "
                                                "difference at byte 0: ")], problems
