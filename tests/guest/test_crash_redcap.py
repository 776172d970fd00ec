# SPDX-License-Identifier: GPL-2.0
"""Nothing a filesystem was promised is lost by redcap's write cache
(write_policy back and selective): ext4 and XFS on redcap on dm-log-writes,
a workload of fsync'ed files, then the log replayed to every FLUSH, FUA and
mark (tests/crash/crashcheck.py): every state a consistent filesystem,
every mark holding every file fsync'ed before it.  A test build whose
flushes write nothing back (fi_flush_broken) must be caught: the checker
can fail on what redcap does.  make check-crash."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "crash"))

import crashcheck  # noqa: E402
from crashcheck import FILESYSTEMS, record, replay_points  # noqa: E402
from dmtest import sh  # noqa: E402

pytestmark = pytest.mark.crash
SMALL = 40          # fsync'ed small files after the fixed steps: flush points


@pytest.fixture(scope="module", autouse=True)
def modules():
    sh("modprobe", "dm-log-writes")
    sh("modprobe", "dm-snapshot")


@pytest.fixture(scope="module")
def mnt(tmp_path_factory):
    return str(tmp_path_factory.mktemp("mnt"))


@pytest.mark.timeout(1200)
@pytest.mark.parametrize("policy", ["back", "selective"])
@pytest.mark.parametrize("fs", sorted(FILESYSTEMS))
def test_every_flush_point_is_consistent_and_holds_what_was_fsynced(fs, policy, mnt):
    with record(fs, mnt, redcap=policy, small=SMALL) as rec:
        r = crashcheck.check_recording(rec, mnt)
    assert r.points >= SMALL


@pytest.mark.timeout(1200)
@pytest.mark.parametrize("fs", sorted(FILESYSTEMS))
def test_a_flush_that_writes_nothing_back_is_caught(fs, mnt, fault):
    fault("fi_flush_broken", 1)
    fault("fi_wb_hold", 1)
    with record(fs, mnt, redcap="back", small=8) as rec:
        r = replay_points(rec, mnt)
    lost = [m for m, found in r.at_mark.items() if any(": " in p for p in found)]
    print(f"{fs}: marks whose fsync'ed files were not on the origin: {lost}")
    assert lost, r.problems
