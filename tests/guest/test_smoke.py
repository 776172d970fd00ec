# SPDX-License-Identifier: GPL-2.0
"""Smoke: both targets are registered and move data both ways over a loop
device.  Marked smoke: "make check" runs these on the second kernel too."""
import pytest

from dmtest import Dm, dev_sectors, read_pattern, sh, write_stamped

pytestmark = pytest.mark.smoke


def test_targets_are_registered():
    names = [line.split()[0] for line in sh("dmsetup", "targets").stdout.splitlines()]
    assert "redcap" in names
    assert "vdisk" in names


def test_vdisk_reads_back_what_was_written_through_it(loop64, dmname):
    n = dev_sectors(loop64)
    with Dm(dmname(), f"0 {n} vdisk {loop64}") as vd:
        write_stamped(vd.path, 0, 2048, seed=11)
        read_pattern(vd.path, range(2048), seed=11)
        read_pattern(loop64, range(2048), seed=11)
        st = vd.stats()
        assert st["mode"] == "measure"
        assert st["read_samples"] >= 2048
        assert st["write_samples"] >= 8


def test_redcap_reads_back_what_was_written_below_it(loop64, dmname):
    write_stamped(loop64, 0, 4096, seed=12)
    n = dev_sectors(loop64)
    with Dm(dmname(), f"0 {n} redcap {loop64} 256 16 2 policy always") as rc:
        rc.cold()
        read_pattern(rc.path, range(4096), seed=12)
        st = rc.stats()
        # each of the 128 segments read is filled once: for a miss, or
        # ahead of the stream; every other read hits.  The last batch may
        # reach past the reads' end, at most 8 segments (prefetch) unread.
        assert st["reads"] == 4096 and st["read_bypassed"] == 0, st
        assert st["read_misses"] + st["prefetch_hits"] == 4096 // 32, st
        assert st["fill_ios"] == st["read_misses"] + st["prefetches"], st
        assert 0 <= st["prefetches"] - st["prefetch_hits"] <= 8, st
        assert st["read_hits"] + st["read_hits_waited"] == 4096 - st["read_misses"], st


def test_redcap_writes_reach_the_origin(loop64, dmname):
    write_stamped(loop64, 0, 64, seed=1)
    n = dev_sectors(loop64)
    with Dm(dmname(), f"0 {n} redcap {loop64} 256 16 2 policy always") as rc:
        read_pattern(rc.path, range(64), seed=1)
        write_stamped(rc.path, 0, 64, seed=2)
        read_pattern(rc.path, range(64), seed=2)
        read_pattern(loop64, range(64), seed=2)
