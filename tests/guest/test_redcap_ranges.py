# SPDX-License-Identifier: GPL-2.0
"""redcap at the edges of its ranges: sub-page reads and writes (512-byte
sectors at odd offsets within a page, served from and copied into the
cache: redcap_copy()'s in-page offset), small and unaligned discards and
write-zeroes over cached segments (the per-segment path), secure erase, a
redcap target that does not start at table sector 0 (dm_target_offset, the
cache found by its begin), and 1 MiB segments (one segment a fill request).
Data is checked sector by sector against per-sector LBA stamps, and the
counters are exact."""
import errno
import fcntl
import os
import struct
import tempfile
import time

import pytest

from dmtest import (BLOCK, SECTOR, SLOW, Dm, Outcome, aligned, check_sectors, dev_sectors,
                    disk_reads, loop_device, read_blocks, sh, stamp_record, stamp_sectors,
                    udev_held, write_stamped)

SEG = 256                       # 128 KiB segments, in sectors
SPB = BLOCK // SECTOR           # sectors a 4 KiB block
SEED = 7                        # the origin's stamps
NEW = 8                         # the stamps of the test's writes
ZERO = None                     # a sector a discard or write-zeroes left zero


def discard_bios(first, n):
    """The bios a discard of @n sectors from @first reaches redcap as: the
    block layer ends the first at the discard granularity (4 KiB on a loop
    device) when it starts between two granules."""
    return 1 + (first % SPB != 0 and first // SPB != (first + n - 1) // SPB)


def stats(name, sector=0):
    """The stats of the target at table sector @sector of dm device @name."""
    out = sh("dmsetup", "message", name, str(sector), "stats").stdout
    st = {}
    for k, v in (line.split("=", 1) for line in out.split()):
        st[k] = int(v) if v.isdigit() else v
    return st


def settled(name, sector=0):
    """stats() once no fill is in flight."""
    end = time.monotonic() + 30
    while True:
        st = stats(name, sector)
        if not st["segments_filling"]:
            return st
        assert time.monotonic() < end, f"fills still in flight: {st}"
        time.sleep(0.02)


def counts(st, **want):
    """The counters @want of @st are exactly these (all shown if not)."""
    got = {k: st[k] for k in want}
    assert got == want, f"counters {got}, expected {want}; all: {st}"


def redcap(dmname, origin, seg=SEG, segs=16, features="2 policy always"):
    """A cache whose counts are a plain LRU's: no read-ahead (prefetch 0)."""
    rc = Dm(dmname(), f"0 {dev_sectors(origin)} redcap {origin} {seg} {segs} {features}")
    rc.cold()
    rc.message("set", "prefetch", "0")
    return rc


def stamp_origin(dev, blocks):
    """Stamp the first @blocks blocks of @dev; the probe udev makes of it
    after the write (a watched device closed after writing) is over before
    the test counts the device's reads."""
    write_stamped(dev, 0, blocks, SEED)
    sh("udevadm", "settle", "-t", "10", check=False)


def read_sectors(dev, sector, count):
    """@count sectors from @sector, one O_DIRECT read."""
    data = read_blocks(dev, sector * SECTOR, count * SECTOR)
    assert len(data) == count * SECTOR, f"short read at sector {sector}: {len(data)}"
    return data


def write_sectors(dev, sector, count, seed, lba=None):
    """One O_DIRECT write of @count sectors at @sector, stamped as sectors
    @lba.. (default @sector: the device's own numbers)."""
    buf = aligned(count * SECTOR)
    buf[:] = stamp_sectors(sector if lba is None else lba, count, seed)
    fd = os.open(dev, os.O_WRONLY | os.O_DIRECT)
    try:
        assert os.pwritev(fd, [buf], sector * SECTOR) == count * SECTOR
    finally:
        os.close(fd)


BLKDISCARD, BLKSECDISCARD, BLKZEROOUT = 0x1277, 0x127d, 0x127f
OPS = {"discard": BLKDISCARD, "zeroout": BLKZEROOUT, "secure": BLKSECDISCARD}


def blkdiscard(dev, sector, count, op="discard"):
    """blkdiscard [-z|-s] -o -l, as its one ioctl: blkdiscard itself first
    probes the device for signatures with libblkid (150 reads through the
    cache under test)."""
    fd = os.open(dev, os.O_WRONLY)
    try:
        fcntl.ioctl(fd, OPS[op], struct.pack("QQ", sector * SECTOR, count * SECTOR))
    finally:
        os.close(fd)


class Model:
    """What each sector of a device should hold: its stamp with @seed unless
    a range was set to another seed or to ZERO.  @shift: the stamps' LBA is
    the sector minus @shift (data stamped on an origin read through a target
    that starts @shift sectors into its table)."""

    def __init__(self, seed=SEED, shift=0):
        self.seed, self.shift, self.ranges = seed, shift, []

    def set(self, sector, count, seed):
        self.ranges.append((sector, sector + count, seed))
        return self

    def at(self, s):
        for first, end, seed in reversed(self.ranges):
            if first <= s < end:
                return seed
        return self.seed

    def check(self, data, first, what=""):
        """Every sector of @data (read from sector @first) as the model says."""
        for i in range(len(data) // SECTOR):
            s, got = first + i, data[i * SECTOR:(i + 1) * SECTOR]
            want = self.at(s)
            if want is ZERO:
                if got != bytes(SECTOR):
                    raise AssertionError(f"{what}sector {s}: expected zeroes, "
                                         f"found {stamp_record(got)}")
            else:
                check_sectors(got, s - self.shift, want,
                              what=f"{what}sector {s} (origin's) " if self.shift else what)

    def read(self, dev, sector, count, what=""):
        self.check(read_sectors(dev, sector, count), sector, what or f"{dev}: ")


# --------------------------------------------------------------------------
# Sub-page reads and writes


# (first sector, sectors) of reads within segment 0, none 4 KiB-aligned but
# the last: 512 B at sectors 3 and 7 of a block, 1.5 KiB at offset 512, a
# read over a 4 KiB boundary at an odd sector, 4 KiB at sector 3 of a block,
# 3.5 KiB at sector 1, the segment's last sector, 5.5 KiB over two page
# boundaries.
SUB_READS = [(5 * SPB + 3, 1), (5 * SPB + 7, 1), (9 * SPB + 1, 3), (10 * SPB + 7, 2),
             (12 * SPB + 3, 8), (1, 7), (SEG - 1, 1), (20 * SPB + 5, 11), (30 * SPB, 8)]


def test_sub_page_reads_are_served_from_the_cache_at_their_offset(loop64, dmname):
    """A 512-byte miss at an odd sector completes from the fill's entry;
    reads of 1 to 11 sectors at odd offsets within a page are hits, copied
    from the right place in the right page, with no origin I/O; a read over
    a segment boundary at an odd sector is a hit and a miss."""
    stamp_origin(loop64, 4 * SEG // SPB)
    m = Model()
    with redcap(dmname, loop64) as rc, udev_held():
        m.read(rc.path, 5 * SPB + 1, 1)          # the miss: completed from the entry
        counts(settled(rc.name), reads=1, read_misses=1, read_hits=0, fill_ios=1,
               fill_sectors=SEG, segments_valid=1)
        ios = disk_reads(loop64)[0]
        for first, n in SUB_READS:
            m.read(rc.path, first, n)
        assert disk_reads(loop64)[0] == ios, "a hit read the origin"
        counts(stats(rc.name), reads=1 + len(SUB_READS), read_misses=1,
               read_hits=len(SUB_READS), fill_ios=1)
        # 3 sectors of segment 0 (a hit) and 3 of segment 1 (a miss)
        m.read(rc.path, SEG - 3, 6)
        counts(settled(rc.name), reads=3 + len(SUB_READS), read_misses=2,
               read_hits=1 + len(SUB_READS), fill_ios=2, segments_valid=2)
        m.read(rc.path, SEG - 3, 6)
        m.read(rc.path, SEG + 1, 1)
        counts(stats(rc.name), reads=6 + len(SUB_READS), read_misses=2,
               read_hits=4 + len(SUB_READS), fill_ios=2)


# (first sector, sectors) of writes into cached segment 0: 512 B at sector 3
# of a block, 1.5 KiB at offset 512, 1 KiB over a 4 KiB boundary at an odd
# sector, 3.5 KiB over a boundary.
SUB_WRITES = [(2 * SPB + 3, 1), (4 * SPB + 1, 3), (6 * SPB + 7, 2), (9 * SPB + 5, 7)]


@pytest.mark.parametrize("write_policy", ["invalidate", "update"])
def test_sub_page_writes_over_a_cached_segment(loop64, dmname, write_policy):
    """Writes of 1 to 7 sectors at odd offsets into a cached segment reach
    the origin there; invalidate drops the segment once, update copies each
    into the entry at its offset.  Reads after them, whole and sector by
    sector, return the new sectors and the old ones around them."""
    stamp_origin(loop64, 2 * SEG // SPB)
    m = Model()
    features = f"4 policy always write_policy {write_policy}"
    with redcap(dmname, loop64, features=features) as rc, udev_held():
        m.read(rc.path, 0, SEG)                 # segment 0 cached
        rc.message("reset_stats")
        for first, n in SUB_WRITES:
            write_sectors(rc.path, first, n, NEW)
            m.set(first, n, NEW)
        st = settled(rc.name)
        if write_policy == "update":
            counts(st, writes=len(SUB_WRITES), updates=len(SUB_WRITES), invalidations=0,
                   segments_valid=1)
        else:
            counts(st, writes=len(SUB_WRITES), updates=0, invalidations=1,
                   segments_valid=0)
        m.read(loop64, 0, SEG)                  # the origin has them where they belong
        ios = disk_reads(loop64)[0]
        m.read(rc.path, 0, 12 * SPB)            # the first 12 blocks in one read
        for first, n in SUB_WRITES:             # each write, a sector either side
            m.read(rc.path, first - 1, n + 2)
            for s in range(first - 1, first + n + 1):
                m.read(rc.path, s, 1)
        nreads = 1 + sum(n + 3 for _, n in SUB_WRITES)
        st = settled(rc.name)
        if write_policy == "update":
            assert disk_reads(loop64)[0] == ios, "an updated segment was read again"
            counts(st, reads=nreads, read_hits=nreads, read_misses=0, fill_ios=0)
        else:
            counts(st, reads=nreads, read_hits=nreads - 1, read_misses=1, fill_ios=1)
        m.read(rc.path, 0, SEG)


# --------------------------------------------------------------------------
# Discard and write-zeroes over cached segments


@pytest.fixture
def zeroing_loop64():
    """A 64 MiB loop device over a file on ext4, which zeroes a range in
    place (FALLOC_FL_ZERO_RANGE): REQ_OP_WRITE_ZEROES reaches the stack
    over it as itself.  A loop over the guest's tmpfs refuses it, and dm
    then turns write-zeroes off for the device: the kernel writes zero
    pages instead, plain writes that never take redcap's range path."""
    with loop_device(96 << 20) as fsdev:
        sh("mkfs.ext4", "-q", fsdev)
        mnt = tempfile.mkdtemp(prefix="redcap-ext4-")
        sh("mount", fsdev, mnt)
        try:
            with loop_device(64 << 20, directory=mnt) as dev:
                yield dev
        finally:
            sh("umount", mnt)
            os.rmdir(mnt)


def write_zeroes_max_bytes(dev):
    name = os.path.basename(os.path.realpath(dev))
    with open(f"/sys/class/block/{name}/queue/write_zeroes_max_bytes") as f:
        return int(f.read())


@pytest.mark.parametrize("op", ["discard", "zeroout"])
def test_small_unaligned_ranges_invalidate_every_segment_they_touch(request, dmname, op):
    """Ranges under 64 segments (invalidated segment by segment): 512 bytes
    at an odd sector, one from the middle of segment 3 to the middle of
    segment 5, 10 sectors over the boundary of segments 7 and 8.  Every
    cached segment they touch, partly or whole, is dropped (exactly), the
    range reads back as zeroes through the cache and on the origin, and
    the sectors around it keep their stamps; the untouched segments stay
    cached and hit.  Write-zeroes over an origin that takes it, so that
    it reaches redcap as REQ_OP_WRITE_ZEROES, not as zero pages."""
    loop64 = request.getfixturevalue("zeroing_loop64" if op == "zeroout" else "loop64")
    stamp_origin(loop64, 16 * SEG // SPB)
    ranges = [(SEG + 3 * SPB + 1, 1), (3 * SEG + 17, 2 * SEG + 100 - 17), (8 * SEG - 5, 10)]
    touched = {1, 3, 4, 5, 7, 8}
    m = Model()
    with redcap(dmname, loop64) as rc, udev_held():
        for seg in range(12):
            m.read(rc.path, seg * SEG + 9, 3)   # segments 0..11 cached
        rc.message("reset_stats")
        for first, n in ranges:
            blkdiscard(rc.path, first, n, op)
            m.set(first, n, ZERO)
        st = settled(rc.name)
        counts(st, invalidations=len(touched), segments_valid=12 - len(touched))
        if op == "discard":
            counts(st, writes=sum(discard_bios(*r) for r in ranges),
                   write_sectors=sum(n for _, n in ranges))
        else:
            # dm turns write-zeroes off for a device whose origin refused one
            counts(st, write_sectors=sum(n for _, n in ranges))
            assert write_zeroes_max_bytes(rc.path) > 0, "write-zeroes was refused below"
        m.read(loop64, 0, 12 * SEG)
        rc.message("reset_stats")
        for seg in range(12):
            m.read(rc.path, seg * SEG, SEG)
        counts(settled(rc.name), reads=12, read_hits=12 - len(touched),
               read_misses=len(touched), segments_valid=12)
        for first, n in ranges:
            m.read(rc.path, first - 1, n + 2)


def test_secure_erase_is_refused_and_leaves_the_cache_intact(loop64, dmname):
    """redcap does not set num_secure_erase_bios, so dm advertises no
    secure erase on the device and REQ_OP_SECURE_ERASE never reaches the
    target (nor does any device of the guest support it: the loop device
    refuses it the same way).  blkdiscard -s fails with EOPNOTSUPP; nothing
    is counted, the cache keeps its segments and serves them, and the
    origin is untouched."""
    stamp_origin(loop64, 4 * SEG // SPB)
    m = Model()
    refused = "BLKSECDISCARD ioctl failed: Operation not supported"
    r = sh("blkdiscard", "-s", "-o", "1536", "-l", str(2 * SEG * SECTOR), loop64, check=False)
    assert (r.returncode, r.stderr.strip()) == (1, f"blkdiscard: {loop64}: {refused}")
    with redcap(dmname, loop64) as rc, udev_held():
        m.read(rc.path, 0, 2 * SEG)
        rc.message("reset_stats")
        with pytest.raises(OSError) as e:
            blkdiscard(rc.path, 3, 2 * SEG, "secure")
        assert e.value.errno == errno.EOPNOTSUPP, e.value
        counts(stats(rc.name), writes=0, invalidations=0, segments_valid=2, reads=0)
        m.read(rc.path, 0, 2 * SEG)
        m.read(loop64, 0, 2 * SEG)
        counts(stats(rc.name), reads=2, read_hits=2, read_misses=0)
        # and blkdiscard says so (after its probe of the device)
        r = sh("blkdiscard", "-s", "-o", "1536", "-l", str(2 * SEG * SECTOR), rc.path,
               check=False)
        assert (r.returncode, r.stderr.strip()) == (1, f"blkdiscard: {rc.path}: {refused}")
        counts(stats(rc.name), writes=0, invalidations=0)
        m.read(rc.path, 0, 2 * SEG)


# --------------------------------------------------------------------------
# A redcap target that starts at table sector 8192


OFF = 8192


def test_a_target_after_a_linear_one_maps_its_own_sectors(loop64, dmname):
    """Table `0 8192 linear HEAD 0` + `8192 N redcap ORIGIN ...`: reads,
    writes and discards through the second target reach origin sector
    (sector - 8192), its hits come from the right entries, its counters
    (message to sector 8192) count only its I/O, the linear part is left
    alone; a reload of the same table finds the cache by its begin, one
    with the target at another begin starts cold."""
    n = dev_sectors(loop64)
    with loop_device(OFF * SECTOR) as head:
        write_stamped(head, 0, OFF // SPB, 9)
        stamp_origin(loop64, 8 * SEG // SPB)
        hm = Model(seed=9)
        m = Model(shift=OFF)                    # the device's view of the origin
        om = Model()                            # the origin's own
        table = f"0 {OFF} linear {head} 0\n{OFF} {n} redcap {loop64} {SEG} 8 2 policy always"
        with Dm(dmname(), table) as dm, udev_held():
            name = dm.name
            sh("dmsetup", "message", name, str(OFF), "drop_cache")
            sh("dmsetup", "message", name, str(OFF), "reset_stats")
            sh("dmsetup", "message", name, str(OFF), "set", "prefetch", "0")
            r = sh("dmsetup", "message", name, "0", "stats", check=False)
            assert r.returncode != 0                        # sector 0 is the linear target
            m.read(dm.path, OFF + 3 * SPB + 1, 1)            # segment 0: a miss
            m.read(dm.path, OFF + SEG + 5, 20)               # segment 1: a miss
            ios = disk_reads(loop64)[0]
            m.read(dm.path, OFF + 3, 1)                      # hits of each
            m.read(dm.path, OFF + 2 * SEG - 1, 1)
            m.read(dm.path, OFF + SEG - 7, 9)                # over both: two hits
            assert disk_reads(loop64)[0] == ios
            counts(settled(name, OFF), reads=6, read_misses=2, read_hits=4, fill_ios=2,
                   fill_sectors=2 * SEG, segments_valid=2)
            # over the targets' boundary: the head's last 4 sectors, a hit of 4
            data = read_sectors(dm.path, OFF - 4, 8)
            hm.check(data[:4 * SECTOR], OFF - 4, "head: ")
            m.check(data[4 * SECTOR:], OFF, "redcap: ")
            hm.read(dm.path, 0, OFF)                        # the linear part
            counts(stats(name, OFF), reads=7, read_hits=5, read_misses=2)

            # a write into cached segment 0, one into uncached segment 2
            for s, k in ((3 * SPB + 3, 2), (2 * SEG + 9, 1)):
                write_sectors(dm.path, OFF + s, k, NEW, lba=s)
                m.set(OFF + s, k, NEW)
                om.set(s, k, NEW)
            # a discard in cached segment 1
            blkdiscard(dm.path, OFF + SEG + 1, 2)
            m.set(OFF + SEG + 1, 2, ZERO)
            om.set(SEG + 1, 2, ZERO)
            counts(settled(name, OFF), writes=2 + discard_bios(SEG + 1, 2), invalidations=2,
                   segments_valid=0)
            om.read(loop64, 0, 3 * SEG)
            hm.read(head, 0, OFF)
            m.read(dm.path, OFF, 3 * SEG)
            counts(settled(name, OFF), segments_valid=3)

            # the same table again: the cache is found by its begin
            dm.reload(table)
            dm.resume()
            sh("dmsetup", "message", name, str(OFF), "reset_stats")
            ios = disk_reads(loop64)[0]
            m.read(dm.path, OFF, 3 * SEG)
            assert disk_reads(loop64)[0] == ios
            counts(stats(name, OFF), reads=3, read_hits=3, read_misses=0,
                   segments_valid=3)
            # the target at sector 4096: another cache, cold
            dm.reload(f"0 {OFF // 2} linear {head} 0\n{OFF // 2} {n} redcap "
                      f"{loop64} {SEG} 8 2 policy always")
            dm.resume()
            sh("dmsetup", "message", name, str(OFF // 2), "set", "prefetch", "0")
            counts(stats(name, OFF // 2), reads=0, segments_valid=0)
            Model(shift=OFF // 2).set(OFF // 2 + 3 * SPB + 3, 2, NEW) \
                .set(OFF // 2 + SEG + 1, 2, ZERO).read(dm.path, OFF // 2, SEG + 8)
            counts(settled(name, OFF // 2), reads=2, read_misses=2, read_hits=0,
                   segments_valid=2)


# --------------------------------------------------------------------------
# 1 MiB segments


MIB = 2048                      # sectors: the largest segment


def test_one_mib_segments_serve_reads_writes_and_a_discard(loop64, dmname):
    """Segments of 2048 sectors (256 pages: one segment a fill request,
    redcap_run_max() is 1): a miss fills 1 MiB, hits anywhere in it (its
    last page's last sector too), a 2 MiB read over two cold segments fills
    each in a request of its own (nothing along), a write and a discard over
    cached segments drop exactly those, and the data is the origin's."""
    stamp_origin(loop64, 8 * MIB // SPB)
    m = Model()
    with redcap(dmname, loop64, seg=MIB, segs=4) as rc, udev_held():
        m.read(rc.path, 3 * SPB, SPB)                    # a miss of segment 0
        counts(settled(rc.name), reads=1, read_misses=1, fill_ios=1, fill_sectors=MIB)
        ios = disk_reads(loop64)[0]
        for first, k in ((MIB - 1, 1), (128 * SPB + 7, 1), (255 * SPB + 1, 7), (1, 1), (0, MIB)):
            m.read(rc.path, first, k)
        assert disk_reads(loop64)[0] == ios
        counts(stats(rc.name), reads=6, read_hits=5, read_misses=1)
        # (a read of more than 1 MiB may reach the device as 2 or 3 bios,
        # as its pages happen to merge: none here, for exact counts)
        # segment 2 whole, then 1 MiB from its middle: a hit and a miss of
        # segment 3, nothing filled along
        m.read(rc.path, 2 * MIB, MIB)
        m.read(rc.path, 2 * MIB + MIB // 2 + 1, MIB - 1)
        st = settled(rc.name)
        counts(st, reads=9, read_misses=3, read_hits=6, read_hits_waited=0, fill_ios=3,
               fill_sectors=3 * MIB, fill_along=0, segments_valid=3)
        # 1 MiB from the middle of segment 0: a hit and a miss of segment 1
        m.read(rc.path, MIB // 2, MIB)
        counts(settled(rc.name), reads=11, read_misses=4, read_hits=7, segments_valid=4)
        # a write of 3 sectors into segment 2, a discard over the end of 2
        # and the start of 3
        rc.message("reset_stats")
        write_sectors(rc.path, 2 * MIB + 1021, 3, NEW)
        m.set(2 * MIB + 1021, 3, NEW)
        blkdiscard(rc.path, 3 * MIB - 3, 8)
        m.set(3 * MIB - 3, 8, ZERO)
        counts(settled(rc.name), writes=1 + discard_bios(3 * MIB - 3, 8), invalidations=2,
               segments_valid=2)
        m.read(loop64, 0, 4 * MIB)
        for seg in range(4):
            m.read(rc.path, seg * MIB, MIB)
        counts(settled(rc.name), reads=4, read_hits=2, read_misses=2, segments_valid=4)


# --------------------------------------------------------------------------
# A fill in flight across a discard and a write of its segment


@pytest.mark.parametrize("write_policy", ["invalidate", "update", "back", "selective"])
def test_a_fill_in_flight_across_a_discard_and_a_write_serves_neither_older(
        loop64, dmname, fault, write_policy):
    """A miss's fill of segment 0 held in flight (fi_fill_hold: its data
    read, not yet cached) while the segment is discarded and its first
    block written: once the fill completes, every read of the segment
    returns the write and zeroes, never the origin's old stamps, with each
    write policy.  The first suspect of the soak's stale reads
    (docs/results/2026-12-06-soak-2.md: blocks discarded, then written,
    read back as before the discard); it held on 6.1 and 6.12 when
    written, so the cause is elsewhere.

    The fill is held until the test lets it go.  It was held for a time
    before (fi_endio_delay_us 1 s, then a second in the fill's work), and
    on the debug kernel the fill came and went between two polls of the
    stats: "the fill never started", 4 of 4 and then 1 of 4."""
    stamp_origin(loop64, 4 * SEG // SPB)
    n = dev_sectors(loop64)
    m = Model().set(0, SEG, ZERO).set(0, SPB, NEW)
    with Dm(dmname(), f"0 {n} redcap {loop64} {SEG} 16 4 policy always "
                      f"write_policy {write_policy}") as rc:
        rc.cold()
        rc.message("set", "prefetch", "0")
        fault("fi_fill_hold", 1)
        try:        # let the fill go before the device is removed, whatever fails
            reader = Outcome(read_sectors, rc.path, 2 * SPB, SPB)
            end = time.monotonic() + 30 * SLOW
            while not (st := stats(rc.name))["segments_filling"]:
                assert reader.is_alive() and time.monotonic() < end, \
                    f"the read's fill never started: {st}"
                time.sleep(0.01)
            blkdiscard(rc.path, 0, SEG)
            write_sectors(rc.path, 0, SPB, NEW)
        finally:
            fault("fi_fill_hold", 0)
        reader.result()
        settled(rc.name)
        m.read(rc.path, 0, SEG, "after the fill: ")
        m.read(rc.path, 0, SEG, "again: ")
        for s in range(0, SEG, SPB):
            m.read(rc.path, s, SPB, f"block {s // SPB}: ")
