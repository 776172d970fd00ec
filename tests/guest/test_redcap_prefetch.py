# SPDX-License-Identifier: GPL-2.0
"""The read-ahead of streams (the prefetch tunable) and pairs: a stream
finds the segments ahead of its own filled, a miss near a segment read
lately the other half of its pair, with the origin's data, and exact
counts of what was filled ahead and read; what is filled ahead never
outlives a write."""
import os
import threading

import pytest

from dmtest import (BLOCK, Dm, Outcome, dev_sectors, disk_reads, read_blocks, read_pattern,
                    set_param, write_stamped)

SEG = 256                           # 128 KiB segments
SEG_BLOCKS = SEG * 512 // BLOCK
READ_BLOCKS = 8                     # 32 KiB reads: four per segment
READ = READ_BLOCKS * BLOCK


def stream(first_seg, nsegs, backward):
    """The first block of each 32 KiB read of a stream through @nsegs segments."""
    blocks = range(first_seg * SEG_BLOCKS, (first_seg + nsegs) * SEG_BLOCKS, READ_BLOCKS)
    return list(reversed(blocks)) if backward else list(blocks)


@pytest.mark.parametrize("backward", [True, False], ids=["backward", "forward"])
def test_a_stream_reads_the_segments_filled_ahead_of_it(loop64, dmname, backward):
    """32 KiB reads through 8 segments, down from 13 or up from 6, prefetch
    2 (the default is 8; 2 keeps the batches countable).  A stream's degree
    is what it has read in whole segments, up to 2: its fourth read (one
    segment read) fills the next segment, the first read of the second
    segment the one after; from then on, the first read of every other
    segment fills two at once, in one request to the origin (a measuring
    vdisk under redcap counts them).  One miss, 8 fills ahead, 7 of them
    read; the one left over is read without a fill.  Both directions the
    same (until 2026-12-02 forward streams had no batch)."""
    write_stamped(loop64, 0, 32 * SEG_BLOCKS, seed=3)
    n = dev_sectors(loop64)
    first, nsegs = (13, 8) if backward else (6, 8)
    with Dm(dmname(), f"0 {n} vdisk {loop64}") as meas, \
            Dm(dmname(), f"0 {n} redcap {meas.path} {SEG} 32 2 policy always") as rc:
        rc.cold()
        rc.message("set", "prefetch", "2")
        before = meas.stats()["read_samples"]
        low = first - nsegs + 1 if backward else first
        read_pattern(rc.path, stream(low, nsegs, backward), seed=3, bs=READ)
        st = rc.settled()
        assert st["prefetch"] == 2
        assert (st["reads"], st["read_misses"], st["read_bypassed"], st["read_resent"]) == \
            (32, 1, 0, 0), st
        assert st["read_hits"] + st["read_hits_waited"] == 31, st
        assert (st["prefetches"], st["prefetch_hits"], st["prefetch_unused"]) == (8, 7, 0), st
        assert st["prefetch_paired"] == 0, st
        assert (st["fill_ios"], st["fill_sectors"], st["segments_valid"]) == \
            (9, 9 * SEG, 9), st
        # The miss, two fills ahead alone, then three batches of two.
        assert st["fill_joined"] == 3, st
        assert meas.stats()["read_samples"] - before == 6
        # The one filled ahead and not read: the origin's data, from RAM.
        left = low - 1 if backward else low + nsegs
        rc.message("set", "prefetch", "0")
        read_pattern(rc.path, [left * SEG_BLOCKS], seed=3, bs=SEG * 512)
        st = rc.stats()
        assert (st["reads"], st["read_hits"] + st["read_hits_waited"], st["fill_ios"]) == \
            (33, 32, 9), st
        assert (st["prefetch_hits"], st["prefetch_unused"]) == (8, 0), st


def test_a_miss_near_a_segment_read_fills_its_pair_in_one_request(loop64, dmname):
    """Pairs: a 4 KiB read in segment 10, then one in segment
    12 (2 away), fills 12 and its pair's other half, 13, in one request to
    the origin (a measuring vdisk under redcap counts them); a read in 13
    is then served from RAM with the origin's data.  A read in 20, far
    from any, fills 20 alone."""
    write_stamped(loop64, 0, 32 * SEG_BLOCKS, seed=5)
    n = dev_sectors(loop64)
    with Dm(dmname(), f"0 {n} vdisk {loop64}") as meas, \
            Dm(dmname(), f"0 {n} redcap {meas.path} {SEG} 32 2 policy always") as rc:
        rc.cold()
        before = meas.stats()["read_samples"]
        read_pattern(rc.path, [10 * SEG_BLOCKS, 12 * SEG_BLOCKS], seed=5)
        st = rc.settled()
        assert (st["read_misses"], st["prefetches"], st["prefetch_paired"]) == (2, 1, 1), st
        assert (st["fill_ios"], st["fill_joined"], st["fill_sectors"]) == (3, 1, 3 * SEG), st
        assert meas.stats()["read_samples"] - before == 2
        read_pattern(rc.path, [13 * SEG_BLOCKS + 5, 20 * SEG_BLOCKS], seed=5)
        st = rc.settled()
        assert (st["reads"], st["read_hits"], st["read_misses"]) == (4, 1, 3), st
        assert (st["prefetch_hits"], st["prefetch_paired"], st["fill_ios"]) == (1, 1, 4), st
        assert meas.stats()["read_samples"] - before == 3


def test_writes_racing_fills_ahead_leave_redcap_equal_to_the_origin(loop64, dmname):
    """A writer rewrites 4 MiB in rounds, a segment per write, while two
    readers stream through it with prefetch 4, so fills ahead are in flight
    when writes land; after each round every block reads back what the
    round wrote, through redcap and on the origin.  The race is shown to
    happen: each fill's completion waits 5 ms before it is handled
    (fi_endio_delay_us), so that writes land while fills are in flight on
    one vCPU or two, and rounds go on (5 at least, 50 at most) until
    fill_stale counts a fill that a write overtook.  (With 1 MiB writes and
    1 ms, two vCPUs saw no stale fill in 50 rounds.)"""
    blocks = 4 << 20 >> 12
    write_stamped(loop64, 0, blocks, seed=0)
    n = dev_sectors(loop64)
    with Dm(dmname(), f"0 {n} redcap {loop64} {SEG} 16 2 policy always") as rc:
        rc.cold()
        rc.message("set", "prefetch", "4")
        set_param("fi_endio_delay_us", 5000)
        try:
            rnd = 0
            while rnd < 5 or not rc.stats()["fill_stale"]:
                assert rnd < 50, f"no fill overtaken by a write in {rnd} rounds: {rc.stats()}"
                rnd += 1
                stop = threading.Event()

                def reader(backward):
                    while not stop.is_set():
                        for b in stream(0, blocks // SEG_BLOCKS, backward):
                            read_blocks(rc.path, b * BLOCK, READ)
                threads = [Outcome(reader, bw) for bw in (False, True)]
                try:
                    for s in range(blocks // SEG_BLOCKS):
                        write_stamped(rc.path, s * SEG_BLOCKS, SEG_BLOCKS, seed=rnd)
                finally:
                    stop.set()
                for t in threads:
                    t.result(timeout=120)
                read_pattern(rc.path, range(blocks), seed=rnd)
                assert read_blocks(rc.path, 0, blocks * BLOCK) == \
                    read_blocks(loop64, 0, blocks * BLOCK)
        finally:
            set_param("fi_endio_delay_us", 0)
        st = rc.settled()
    print(f"{rnd} rounds: fill_stale {st['fill_stale']}, fills {st['fill_ios']}, "
          f"invalidations {st['invalidations']}")
    assert st["prefetches"] > 0 and st["writes"] > 0, st
    assert st["fill_stale"] > 0, st
    assert st["prefetch_hits"] + st["prefetch_unused"] <= st["prefetches"], st
    assert st["read_hits"] + st["read_hits_waited"] + st["read_misses"] + \
        st["read_bypassed"] + st["read_resent"] == st["reads"], st


def test_a_run_of_fills_is_one_bio_that_the_origin_may_split(loop64, dmname):
    """A backward stream of 32 KiB reads down through 16 segments,
    prefetch 4, over a measuring vdisk on a loop device whose requests take
    128 KiB (one segment).  20 fills: the miss, the 15 segments below it
    and 4 past the stream's end, filled ahead.  A run of contiguous fills goes
    down as one bio, whatever the origin takes: the counters say what
    redcap sent (fills less those joined to the one before: 8 bios, as the
    vdisk counts them), and the loop device splits each into its own
    128 KiB requests (20).  The data read is the origin's."""
    write_stamped(loop64, 0, 32 * SEG_BLOCKS, seed=3)
    n = dev_sectors(loop64)
    name = os.path.basename(os.path.realpath(loop64))
    with open(f"/sys/block/{name}/queue/max_sectors_kb", "w") as f:
        f.write("128")
    with Dm(dmname(), f"0 {n} vdisk {loop64}") as meas, \
            Dm(dmname(), f"0 {n} redcap {meas.path} {SEG} 32 2 policy always") as rc:
        rc.cold()
        rc.message("set", "prefetch", "4")
        bios0, requests0 = meas.stats()["read_samples"], disk_reads(loop64)[0]
        read_pattern(rc.path, stream(16, 16, True), seed=3, bs=READ)
        st = rc.settled()
        bios, requests = meas.stats()["read_samples"], disk_reads(loop64)[0]
    assert (st["reads"], st["read_bypassed"], st["read_resent"]) == (64, 0, 0), st
    assert (st["fill_ios"], st["fill_joined"]) == (20, 12), st
    assert (bios - bios0, requests - requests0) == (8, 20), st


def test_a_miss_fills_the_segments_its_read_goes_on_into_in_one_bio(loop64, dmname):
    """A 1 MiB read over 8 cold segments, policy always, no read-ahead: the
    miss fills its own segment and the 7 its read covers whole along with
    it, in one bio to the origin (a measuring vdisk counts them); the rest
    of the read comes back to redcap and waits on them.  Then a 512 KiB read
    starting half way into a segment: the miss and the 3 segments after it
    in one bio of 512 KiB; the last, which the read only enters, misses on
    its own (a second bio).  The data read is the origin's."""
    write_stamped(loop64, 0, 32 * SEG_BLOCKS, seed=5)
    n = dev_sectors(loop64)
    with Dm(dmname(), f"0 {n} vdisk {loop64}") as meas, \
            Dm(dmname(), f"0 {n} redcap {meas.path} {SEG} 32 2 policy always") as rc:
        rc.cold()
        rc.message("set", "prefetch", "0")
        bios0 = meas.stats()["read_samples"]
        read_pattern(rc.path, [2 * SEG_BLOCKS], seed=5, bs=8 * SEG * 512)
        st = rc.settled()
        assert meas.stats()["read_samples"] - bios0 == 1
        assert (st["reads"], st["read_misses"], st["read_bypassed"], st["read_resent"]) == \
            (8, 1, 0, 0), st
        assert st["read_hits"] + st["read_hits_waited"] == 7, st
        assert (st["fill_ios"], st["fill_joined"], st["fill_along"], st["fill_sectors"]) == \
            (8, 7, 7, 8 * SEG), st
        assert (st["prefetches"], st["segments_valid"]) == (0, 8), st

        read_pattern(rc.path, [20 * SEG_BLOCKS + SEG_BLOCKS // 2], seed=5, bs=4 * SEG * 512)
        st = rc.settled()
        assert meas.stats()["read_samples"] - bios0 == 3
        assert (st["reads"], st["read_misses"], st["read_bypassed"]) == (13, 3, 0), st
        assert st["read_hits"] + st["read_hits_waited"] == 10, st
        assert (st["fill_ios"], st["fill_joined"], st["fill_along"], st["fill_sectors"]) == \
            (13, 10, 10, 13 * SEG), st
