# SPDX-License-Identifier: GPL-2.0
"""redcap returns exactly what the origin holds, under every access pattern,
with concurrent readers and writers, and counts what it did."""
import random
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from dmtest import (BLOCK, Dm, dev_sectors, disk_reads, in_threads, read_blocks, read_pattern,
                    reads_in_flight, set_param, sh, slow_down, udev_held, write_stamped)

SEG_SECTORS = 256                   # 128 KiB segments
BLOCKS_PER_SEG = SEG_SECTORS * 512 // BLOCK
NBLOCKS = (64 << 20) // BLOCK       # the whole 64 MiB loop device
# What the access patterns walk: 16 MiB, 128 segments, 4 times the default
# cache of these tests (32) and 16 times the concurrent readers' (8), so
# every pattern evicts all along.  (The whole device made a guest suite's
# longest file: 4 readers of 16,384 reads each, 15-47 s a pattern in a TCG
# guest.)
SPAN = NBLOCKS // 4


@pytest.fixture
def stamped(loop64):
    write_stamped(loop64, 0, NBLOCKS, seed=7)
    return loop64


def redcap(dmname, origin, segs=32, seg_sectors=SEG_SECTORS, features=""):
    """A cold cache over @origin with @features (words, without their
    count): policy always unless they name one, and no read-ahead
    (prefetch 0), so that its counts are a plain LRU's."""
    words = features.split()
    if "policy" not in words:
        words = ["policy", "always"] + words
    rc = Dm(dmname(), f"0 {dev_sectors(origin)} redcap {origin} {seg_sectors} {segs} "
                      f"{len(words)} {' '.join(words)}")
    rc.cold()
    rc.message("set", "prefetch", "0")
    return rc


PATTERNS = {
    "sequential": lambda: range(SPAN),
    "strided-4k-skip-8k": lambda: range(0, SPAN, 3),
    "backward": lambda: range(SPAN - 1, -1, -1),
    "random": lambda: random.Random(1).sample(range(SPAN), SPAN // 2),
}


@pytest.mark.parametrize("pattern", PATTERNS)
def test_single_reader_sees_origin_data(stamped, dmname, pattern):
    with redcap(dmname, stamped) as rc:
        read_pattern(rc.path, PATTERNS[pattern](), seed=7)
        st = rc.stats()
        assert st["read_hits"] + st["read_hits_waited"] + st["read_misses"] + \
            st["read_bypassed"] == st["reads"]
        assert st["fill_errors"] == 0


@pytest.mark.parametrize("pattern", PATTERNS)
def test_four_concurrent_readers_see_origin_data(stamped, dmname, pattern):
    blocks = list(PATTERNS[pattern]())
    with redcap(dmname, stamped, segs=8) as rc:
        # Each reader walks the whole pattern from its own starting point,
        # so they collide on segments being filled.
        starts = [0, len(blocks) // 4, len(blocks) // 2, 3 * len(blocks) // 4]
        in_threads(read_pattern, [(rc.path, blocks[s:] + blocks[:s], 7) for s in starts])
        st = rc.stats()
        assert st["reads"] == 4 * len(blocks)
        assert st["fill_errors"] == 0


def test_large_requests_within_a_segment(stamped, dmname):
    with redcap(dmname, stamped) as rc:
        read_pattern(rc.path, range(0, NBLOCKS, BLOCKS_PER_SEG), seed=7, bs=128 << 10)
        read_pattern(rc.path, range(8, NBLOCKS - 32, 37), seed=7, bs=64 << 10)


def test_a_read_over_segments_is_cut_where_the_cache_serves(stamped, dmname):
    """A read over three segments, the middle one cached: each piece goes its
    own way (a fill, a hit, a fill), and the data is the origin's."""
    with redcap(dmname, stamped) as rc:
        read_pattern(rc.path, [BLOCKS_PER_SEG + 3], seed=7)
        rc.message("reset_stats")
        # Blocks 28..67: 4 in segment 0, all 32 of segment 1, 4 in segment 2.
        read_pattern(rc.path, [BLOCKS_PER_SEG - 4], seed=7, bs=(BLOCKS_PER_SEG + 8) * BLOCK)
        st = rc.stats()
        assert (st["reads"], st["read_misses"], st["read_hits"], st["read_bypassed"],
                st["fill_ios"], st["segments_valid"]) == (3, 2, 1, 0, 2, 3)


def test_a_read_the_cache_bypasses_goes_to_the_origin_whole(stamped, dmname):
    """Inactive, a read over several segments reaches the origin as the one
    request it was (a measuring vdisk under redcap counts them), while the
    cache counts and simulates each segment's piece; active, a read over
    segments the cache fills and serves never reaches it."""
    n = dev_sectors(stamped)
    with Dm(dmname(), f"0 {n} vdisk {stamped}") as meas, \
            redcap(dmname, meas.path, features="policy off") as rc:
        def origin_reads():
            return meas.stats()["read_samples"]

        before = origin_reads()
        # 128 KiB from the middle of segment 0, then 512 KiB from the middle of 2.
        read_pattern(rc.path, [BLOCKS_PER_SEG // 2], seed=7, bs=128 << 10)
        read_pattern(rc.path, [5 * BLOCKS_PER_SEG // 2], seed=7, bs=512 << 10)
        assert origin_reads() - before == 2
        st = rc.stats()
        assert (st["reads"], st["read_bypassed"], st["read_bypassed_inactive"],
                st["read_bypassed_joined"], st["read_joined"], st["sim_misses"],
                st["sim_hits"]) == (2 + 5, 7, 7, 0, 1 + 4, 2 + 5, 0)

        rc.message("policy", "always")
        rc.message("reset_stats")
        before = origin_reads()
        read_pattern(rc.path, [BLOCKS_PER_SEG // 2], seed=7, bs=128 << 10)
        assert origin_reads() - before == 2            # the fills of segments 0 and 1
        read_pattern(rc.path, [BLOCKS_PER_SEG // 2], seed=7, bs=128 << 10)
        assert origin_reads() - before == 2
        st = rc.settled()
        assert (st["reads"], st["read_misses"], st["read_hits"], st["read_bypassed"]) == \
            (4, 2, 2, 0)
        # the read only enters segment 1: its own miss, nothing filled along
        assert (st["fill_ios"], st["fill_along"]) == (2, 0), st


def test_a_bypassed_read_goes_down_at_most_32_segments_at_a_time(stamped, dmname):
    """4 KiB segments: a 256 KiB read the inactive cache bypasses covers 64
    of them; one map call takes at most 32 (RC_JOIN_MAX, one lock hold), so
    the origin gets two requests of 128 KiB, and the data is the origin's."""
    n = dev_sectors(stamped)
    with Dm(dmname(), f"0 {n} vdisk {stamped}") as meas, \
            redcap(dmname, meas.path, segs=64, seg_sectors=8, features="policy off") as rc:
        before = meas.stats()["read_samples"]
        read_pattern(rc.path, [64], seed=7, bs=256 << 10)
        assert meas.stats()["read_samples"] - before == 2
        st = rc.stats()
        assert (st["reads"], st["read_bypassed_inactive"], st["read_joined"]) == (64, 64, 62)


def test_a_write_over_segments_invalidates_each(stamped, dmname):
    """A write over three cached segments: each piece invalidates its own,
    and the data read back is the new one."""
    with redcap(dmname, stamped) as rc:
        read_pattern(rc.path, range(3 * BLOCKS_PER_SEG), seed=7)
        write_stamped(rc.path, BLOCKS_PER_SEG - 2, BLOCKS_PER_SEG + 4, seed=8)
        st = rc.stats()
        assert (st["writes"], st["invalidations"], st["segments_valid"]) == (3, 3, 0)
        read_pattern(rc.path, range(BLOCKS_PER_SEG - 2), seed=7)
        read_pattern(rc.path, range(BLOCKS_PER_SEG - 2, 2 * BLOCKS_PER_SEG + 2), seed=8)
        read_pattern(rc.path, range(2 * BLOCKS_PER_SEG + 2, 3 * BLOCKS_PER_SEG), seed=7)


def test_sequential_reads_miss_once_per_segment(stamped, dmname):
    """4 KiB sequential reads of 16 MiB through 128 KiB segments: one miss and
    one origin read per segment, every other read a hit."""
    with redcap(dmname, stamped) as rc:
        ios0, sectors0 = disk_reads(stamped)
        read_pattern(rc.path, range(SPAN), seed=7)
        ios1, sectors1 = disk_reads(stamped)
        st = rc.stats()
        segs = SPAN // BLOCKS_PER_SEG
        assert st["reads"] == SPAN
        assert st["read_misses"] == segs
        assert st["read_hits"] == SPAN - segs
        assert st["fill_ios"] == segs
        assert st["fill_sectors"] == segs * SEG_SECTORS
        assert ios1 - ios0 == segs
        assert sectors1 - sectors0 == segs * SEG_SECTORS


def test_hits_are_served_without_origin_io(stamped, dmname):
    with redcap(dmname, stamped, segs=16) as rc:
        read_pattern(rc.path, range(16 * BLOCKS_PER_SEG), seed=7)
        ios0, _ = disk_reads(stamped)
        read_pattern(rc.path, range(16 * BLOCKS_PER_SEG), seed=7)
        assert disk_reads(stamped)[0] == ios0
        assert rc.stats()["segments_valid"] == 16


def test_lru_keeps_the_recently_used_segment(stamped, dmname):
    with redcap(dmname, stamped, segs=2) as rc:
        a, b, c = 0, BLOCKS_PER_SEG, 2 * BLOCKS_PER_SEG
        read_pattern(rc.path, [a, b, a, c], seed=7)    # c evicts b, not a
        rc.message("reset_stats")
        read_pattern(rc.path, [a], seed=7)
        assert rc.stats()["read_hits"] == 1
        read_pattern(rc.path, [b], seed=7)
        assert rc.stats()["read_misses"] == 1


def test_last_partial_segment_is_clipped_at_device_end(loop64, dmname):
    # A device of 64 MiB - 12 KiB: its last segment is 116 KiB long.
    n = dev_sectors(loop64) - 24
    write_stamped(loop64, 0, NBLOCKS, seed=9)
    with Dm(dmname(), f"0 {n} redcap {loop64} {SEG_SECTORS} 4 2 policy always") as rc:
        rc.cold()
        last = n // 8 - 1
        read_pattern(rc.path, [last, last - 1, last - 28], seed=9)
        st = rc.stats()
        assert st["read_misses"] == 1
        assert st["fill_sectors"] == SEG_SECTORS - 24


def test_write_through_invalidates_cached_segment(stamped, dmname):
    with redcap(dmname, stamped) as rc:
        read_pattern(rc.path, range(BLOCKS_PER_SEG), seed=7)
        write_stamped(rc.path, 5, 1, seed=8)
        read_pattern(rc.path, [5], seed=8)
        read_pattern(rc.path, [4, 6], seed=7)
        read_pattern(stamped, [5], seed=8)
        st = rc.stats()
        assert st["writes"] == 1
        assert st["invalidations"] == 1


def test_update_policy_updates_cached_segment(stamped, dmname):
    with redcap(dmname, stamped, features="write_policy update") as rc:
        read_pattern(rc.path, range(BLOCKS_PER_SEG), seed=7)
        write_stamped(rc.path, 5, 1, seed=8)
        ios0, _ = disk_reads(stamped)
        read_pattern(rc.path, [5], seed=8)
        read_pattern(rc.path, [4, 6], seed=7)
        assert disk_reads(stamped)[0] == ios0
        st = rc.stats()
        assert st["updates"] == 1
        assert st["invalidations"] == 0


@pytest.mark.parametrize("write_policy", ["invalidate", "update"])
def test_an_adaptive_cache_turned_off_serves_nothing_and_keeps_what_it_holds(
        stamped, dmname, write_policy):
    """Inactive, whatever the estimator (off, adaptive on spk, adaptive on
    vdisk), every read goes to the disk, segments the cache holds
    included: the origin's data, counted as bypassed and, for a held
    segment, as a simulated hit.  A write while inactive still invalidates
    a held segment or updates it in place, so that once the cache is
    active again it serves the new data from RAM (update) or fills it
    again (invalidate)."""
    update = write_policy == "update"
    n = dev_sectors(stamped)
    with Dm(dmname(), f"0 {n} vdisk {stamped}") as meas, \
            redcap(dmname, meas.path,
                   features=f"write_policy {write_policy} estimator vdisk") as rc:
        read_pattern(rc.path, range(2 * BLOCKS_PER_SEG), seed=7)   # segments 0 and 1
        rc.message("policy", "off")
        ios0, _ = disk_reads(stamped)
        read_pattern(rc.path, [3], seed=7)
        rc.message("estimator", "spk")
        rc.message("policy", "adaptive")
        read_pattern(rc.path, [3], seed=7)
        rc.message("estimator", "vdisk")
        rc.message("reset_stats")
        assert rc.stats()["state"] == "inactive"
        read_pattern(rc.path, [4, BLOCKS_PER_SEG + 4], seed=7)
        assert disk_reads(stamped)[0] == ios0 + 4
        write_stamped(rc.path, 5, 1, seed=8)
        read_pattern(rc.path, [5], seed=8)
        read_pattern(rc.path, [6], seed=7)
        read_pattern(rc.path, [2 * BLOCKS_PER_SEG], seed=7)        # not cached
        assert disk_reads(stamped)[0] == ios0 + 7
        st = rc.stats()
        # segment 0 invalidated: 5 a simulated miss (a ghost), 6 its hit
        sim = (4, 1) if update else (3, 2)
        assert (st["state"], st["reads"], st["read_hits"], st["read_bypassed"],
                st["read_bypassed_inactive"], st["read_misses"], st["sim_hits"],
                st["sim_misses"], st["updates"], st["invalidations"], st["switches"]) == \
            ("inactive", 5, 0, 5, 5, 0) + sim + (int(update), int(not update), 0)
        rc.message("policy", "always")
        ios1, _ = disk_reads(stamped)
        read_pattern(rc.path, [5], seed=8)
        read_pattern(rc.path, [4, 6, BLOCKS_PER_SEG + 4], seed=7)
        assert disk_reads(stamped)[0] == ios1 + (0 if update else 1)


def test_an_adaptive_cache_turned_off_reads_past_the_fill_it_started(stamped, dmname):
    """A fill started while active is still in flight (the origin holds it
    until the test lets it go) when the cache goes inactive: a read of its
    segment does not wait for it but goes to the disk, like every read
    while inactive, behind it; both reads get the origin's data, and the
    fill completes into the cache."""
    n = dev_sectors(stamped)
    sh("modprobe", "dm-delay")

    def until(what, cond):
        deadline = time.monotonic() + 30
        while not cond():
            assert time.monotonic() < deadline, what
            time.sleep(0.01)

    with Dm(dmname(), f"0 {n} delay {stamped} 0 0") as slow, \
            Dm(dmname(), f"0 {n} vdisk {slow.path}") as meas, \
            redcap(dmname, meas.path, features="estimator vdisk") as rc, \
            ThreadPoolExecutor(2) as pool:
        # Held 10 min: leaving the with block reloads the delay, which
        # sends what it holds down at once.
        with slow_down(slow, stamped, n, ms=600000):
            first = pool.submit(read_pattern, rc.path, [0], seed=7)
            until("the read never started its fill", lambda: rc.stats()["segments_filling"])
            rc.message("policy", "off")
            rc.message("policy", "adaptive")
            second = pool.submit(read_pattern, rc.path, [1], seed=7)
            until("the second read was not taken", lambda: rc.stats()["reads"] == 2)
            st = rc.stats()
            assert (st["state"], st["segments_filling"], st["read_bypassed"],
                    st["read_bypassed_inactive"], st["sim_hits"]) == ("inactive", 1, 1, 1, 1)
            # Both reads are held below redcap: the fill and the bypass.
            assert (reads_in_flight(rc), reads_in_flight(meas)) == (2, 2)
            assert not second.done()
        first.result(timeout=60)
        second.result(timeout=60)
        st = rc.stats()
        assert (st["state"], st["reads"], st["read_misses"], st["read_hits"],
                st["read_hits_waited"], st["read_bypassed"], st["fill_ios"],
                st["segments_valid"], st["switches"]) == ("inactive", 2, 1, 0, 0, 1, 1, 1, 0)


def test_an_adaptive_cache_turned_off_keeps_what_it_holds_across_a_reload(stamped, dmname):
    """A reload of the same geometry takes the cache over with its state
    and its segments: inactive still, on either estimator, it reads the
    segments it holds from the disk; made active again, it serves them
    from RAM: they stayed cached."""
    n = dev_sectors(stamped)
    first = MIDDLE[0]

    def read(block, state="inactive"):
        """(disk reads, reads served from RAM) of reading @block."""
        ios0, st0 = disk_reads(stamped)[0], rc.stats()
        read_pattern(rc.path, [block], seed=7)
        st = rc.stats()
        assert (st["state"], st["reads"] - st0["reads"]) == (state, 1)
        return disk_reads(stamped)[0] - ios0, st["read_hits"] - st0["read_hits"]

    def reload(estimator):
        # No blkid probe: its reads would count towards a verdict.
        with udev_held():
            rc.reload(f"0 {n} redcap {meas.path} {SEG_SECTORS} 32 "
                      f"4 policy adaptive estimator {estimator}")
            rc.resume()
        assert rc.stats()["estimator"] == estimator

    with Dm(dmname(), f"0 {n} vdisk {stamped}") as meas, \
            redcap(dmname, meas.path, features="estimator vdisk") as rc:
        read_pattern(rc.path, range(first, first + BLOCKS_PER_SEG), seed=7)
        rc.message("policy", "off")
        rc.message("policy", "adaptive")
        assert read(first + 1) == (1, 0)
        reload("vdisk")
        assert read(first + 2) == (1, 0)
        reload("spk")
        assert read(first + 3) == (1, 0)
        reload("vdisk")
        rc.message("policy", "always")
        assert read(first + 4, "active") == (0, 1)
        assert (rc.stats()["switches"], rc.stats()["segments_valid"]) == (0, 1)


@pytest.mark.parametrize("op", ["discard", "zeroout"])
def test_discard_and_write_zeroes_invalidate_every_covered_segment(stamped, dmname, op):
    """100 segments from 8 KiB into segment 3 to 8 KiB into segment 103:
    more than the core's segment-by-segment limit (64), so the whole-cache
    walk runs.  The 64-entry cache holds segments 0..31 and 103..134: the
    walk drops exactly the 30 it touches (partial ends 3 and 103 included),
    the range is zeroes on the origin (a discard of a file-backed loop
    device punches a hole) and through the cache, the 34 outside keep their
    data and hit, and the partial ends' other blocks come back from the
    origin."""
    import fcntl
    import os
    import struct
    blkdiscard, blkzeroout = 0x1277, 0x127f
    with redcap(dmname, stamped, segs=64) as rc, udev_held():
        cached = list(range(32)) + list(range(103, 135))
        read_pattern(rc.path, [s * BLOCKS_PER_SEG for s in cached], seed=7)
        assert rc.settled()["segments_valid"] == 64
        rc.message("reset_stats")
        start, length = 3 * SEG_SECTORS * 512 + 8192, 100 * SEG_SECTORS * 512
        # blkdiscard [-z] -o -l's ioctl (blkdiscard first probes the device
        # with libblkid: reads through the cache)
        fd = os.open(rc.path, os.O_WRONLY)
        try:
            fcntl.ioctl(fd, blkzeroout if op == "zeroout" else blkdiscard,
                        struct.pack("QQ", start, length))
        finally:
            os.close(fd)
        st = rc.settled()
        assert (st["invalidations"], st["segments_valid"]) == (30, 34), st
        assert read_blocks(stamped, start, length) == bytes(length)
        rc.message("reset_stats")
        outside = [s for s in cached if s < 3 or s > 103]
        read_pattern(rc.path, [s * BLOCKS_PER_SEG + 5 for s in outside], seed=7)
        read_pattern(rc.path, [start // BLOCK - 1, (start + length) // BLOCK], seed=7)
        st = rc.stats()
        assert (st["reads"], st["read_hits"], st["read_misses"]) == \
            (len(outside) + 2, len(outside), 2), st
        assert read_blocks(rc.path, start, length) == bytes(length)


def fio(*args):
    r = subprocess.run(["fio", "--direct=1", "--ioengine=psync", "--bs=4k", "--randseed=3",
                        "--verify_state_save=0", "--group_reporting", *args],
                       capture_output=True, text=True, cwd="/tmp")
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("write_policy", ["invalidate", "update"])
def test_fio_randrw_verify_four_jobs(loop64, dmname, write_policy):
    """4 jobs each read and write their own 4 MiB (8 times the 2 MiB cache
    together); fio checks every block it wrote (crc32c) while the others
    keep the cache busy."""
    with redcap(dmname, loop64, segs=16, features=f"write_policy {write_policy}") as rc:
        fio("--name=v", f"--filename={rc.path}", "--rw=randrw", "--size=4M",
            "--offset_increment=4M", "--numjobs=4", "--verify=crc32c", "--verify_fatal=1",
            "--verify_backlog=256")
        st = rc.stats()
        assert st["writes"] > 0 and st["read_hits"] > 0


@pytest.mark.parametrize("write_policy", ["invalidate", "update"])
def test_fio_randrw_overlapping_jobs_leave_cache_equal_to_origin(loop64, dmname, write_policy):
    """4 jobs read and write overlapping ranges (fio cannot verify blocks that
    other jobs overwrite); afterwards redcap and the origin agree byte for byte."""
    with redcap(dmname, loop64, segs=16, features=f"write_policy {write_policy}") as rc:
        fio("--name=rw", f"--filename={rc.path}", "--rw=randrw", "--size=16M",
            "--offset_increment=4M", "--numjobs=4", "--io_size=4M")
        whole = 28 << 20
        assert read_blocks(rc.path, 0, whole) == read_blocks(loop64, 0, whole)
        st = rc.stats()
        assert st["writes"] > 0 and st["read_misses"] > 0


def test_fill_racing_writes_never_leaves_stale_data(loop64, dmname):
    """Readers keep filling the segments a writer is rewriting (4 times a
    round) at the same time; after every round every block reads back the
    last value written.  The race is shown to happen: each fill's
    completion waits 1 ms before it is handled (fi_endio_delay_us), so
    that a write lands while fills are in flight on one vCPU too, and
    rounds go on (30 at least, 300 at most) until fill_stale counts a fill
    that a write overtook."""

    write_stamped(loop64, 0, 16, seed=0)
    with redcap(dmname, loop64, segs=4, seg_sectors=64) as rc:     # 32 KiB segments

        def reader(first):
            for _ in range(10):
                read_blocks(rc.path, first * BLOCK, 8 * BLOCK)

        def writer(seed):
            for _ in range(4):
                write_stamped(rc.path, 0, 16, seed)

        set_param("fi_endio_delay_us", 1000)
        try:
            rnd = 0
            while rnd < 30 or not rc.stats()["fill_stale"]:
                assert rnd < 300, f"no fill overtaken by a write in {rnd} rounds: {rc.stats()}"
                rnd += 1
                in_threads(lambda f, *a: f(*a), [(reader, 0), (reader, 8), (reader, 4),
                                                 (writer, rnd)])
                read_pattern(rc.path, range(16), seed=rnd)
        finally:
            set_param("fi_endio_delay_us", 0)
        st = rc.stats()
        assert st["writes"] == rnd * 4 * 2, st      # 16 blocks = 2 segments a write
        assert st["fill_stale"] > 0, st
        assert read_blocks(rc.path, 0, 16 * BLOCK) == read_blocks(loop64, 0, 16 * BLOCK)


# Away from where udev's probe reads after each resume (start and end).
MIDDLE = range(100 * BLOCKS_PER_SEG, 116 * BLOCKS_PER_SEG)


def test_reload_with_same_geometry_keeps_cached_data(stamped, dmname):
    with redcap(dmname, stamped, segs=32) as rc:
        read_pattern(rc.path, MIDDLE, seed=7)
        table = f"0 {dev_sectors(stamped)} redcap {stamped} {SEG_SECTORS} 32 2 policy always"
        rc.reload(table.replace(" 2 policy always", " 4 policy always write_policy update"))
        rc.resume()
        assert rc.stats()["write_policy"] == "update"
        ios0, _ = disk_reads(stamped)
        read_pattern(rc.path, MIDDLE, seed=7)
        assert disk_reads(stamped)[0] == ios0
        # A write after the reload reaches the taken-over cache.
        write_stamped(rc.path, MIDDLE[3], 1, seed=8)
        read_pattern(rc.path, [MIDDLE[3]], seed=8)
        read_pattern(stamped, [MIDDLE[3]], seed=8)


def test_reload_with_other_geometry_starts_cold(stamped, dmname):
    with redcap(dmname, stamped, segs=32) as rc:
        read_pattern(rc.path, MIDDLE, seed=7)
        rc.reload(f"0 {dev_sectors(stamped)} redcap {stamped} {SEG_SECTORS} 64 2 policy always")
        rc.resume()
        assert (rc.stats()["segments"], rc.stats()["prefetch"]) == (64, 8)  # a new cache
        rc.message("set", "prefetch", "0")
        ios0, _ = disk_reads(stamped)
        read_pattern(rc.path, MIDDLE, seed=7)
        assert disk_reads(stamped)[0] - ios0 == 16
