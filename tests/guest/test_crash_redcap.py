# SPDX-License-Identifier: GPL-2.0
"""Nothing a filesystem was promised is lost by redcap's write cache
(write_policy back and selective): ext4 and XFS on redcap on dm-log-writes,
a workload of fsync'ed files, then the log replayed to every FLUSH, FUA and
mark (tests/crash/crashcheck.py): every state a consistent filesystem,
every mark holding every file fsync'ed before it.  A test build whose
flushes write nothing back (fi_flush_broken) must be caught: the checker
can fail on what redcap does.  And the power going out now: dm-flakey
below redcap starts dropping every write at a random point of the
workload; what was fsync'ed before must be on the disk.  make check-crash."""
import os
import random
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "crash"))

import crashcheck  # noqa: E402
from crashcheck import (FILESYSTEMS, SIZE, check_state, content, fsync_path, record,  # noqa: E402
                        replay_points)
from dmtest import Dm, dev_sectors, loop_device, sh  # noqa: E402

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
    st = rec.stats
    print(f"{fs} {policy}: writes {st['writes']}, cached {st['write_cached']}, "
          f"through {st['write_through']}, write-backs {st['writeback_ios']}, "
          f"flushes {st['flushes']}")
    assert r.points >= SMALL
    # the crash points test the write cache only if it held data across
    # them (with ext4's 1 KiB blocks selective had cached none of it)
    assert st["write_cached"] > 0 and st["writeback_ios"] > 0, st


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


def flakey(dev, n, up):
    """flakey over @dev: up, or dropping every write from now on."""
    return f"0 {n} flakey {dev} 0 " + ("3600 0" if up else "0 1 1 drop_writes")


@pytest.mark.timeout(1200)
@pytest.mark.parametrize("stack", ["redcap", "plain"])
@pytest.mark.parametrize("fs", sorted(FILESYSTEMS))
def test_the_power_going_out_loses_nothing_fsynced(fs, stack, mnt):
    """Cuts at random points of a workload of fsync'ed files (ext4 or
    XFS on redcap back, on flakey; plain: the filesystem on flakey, the
    control): the disk alone is a clean filesystem holding every file
    fsync'ed before the cut."""
    rnd = random.Random(fs)
    for cut in range(6):
        with loop_device(SIZE) as disk, loop_device(SIZE) as cow:
            n = dev_sectors(disk)
            with Dm(f"rc-cut-{fs}", flakey(disk, n, up=True)) as mid:
                top = mid if stack == "plain" else \
                    Dm(f"rc-cut-top-{fs}", f"0 {n} redcap {mid.path} 256 64 "
                                           "4 policy always write_policy back")
                durable = {}
                try:
                    sh(*FILESYSTEMS[fs]["mkfs"], top.path)
                    sh("mount", top.path, mnt)
                    try:
                        at = rnd.randrange(1, 30)
                        for i in range(at + 5):
                            if i == at:         # the power goes out now
                                mid.reload(flakey(disk, n, up=False))
                                mid.suspend()
                                mid.resume()
                            name = f"f{i}"
                            data = content(name, cut, 4096 * (1 + i % 7))
                            with open(os.path.join(mnt, name), "wb") as f:
                                f.write(data)
                                # out of Python's buffer (8 KiB): else
                                # fsync syncs nothing of a 4 KiB file
                                f.flush()
                                os.fsync(f.fileno())
                            fsync_path(mnt)
                            if i < at:
                                durable[name] = data
                    finally:
                        sh("umount", mnt)
                finally:
                    if top is not mid:
                        top.remove()
            problems = check_state(fs, disk, cow, mnt, durable)
            assert problems == [], (fs, cut, at, problems)
