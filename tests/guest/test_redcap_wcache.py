# SPDX-License-Identifier: GPL-2.0
"""The write cache (write_policy back and selective): writes complete in RAM
with exactly a disk's contract.  A flush makes every write completed before
it durable on the origin; FUA writes reach the origin before they complete;
suspend and remove write everything back; a discard drops dirty data; a
failed write-back keeps its data dirty and fails the flush; turning the
device's write cache off falls back to write-through.  Every check reads
LBA-stamped data back, from the stack and from the origin itself."""
import os
import random
import re
import subprocess
import threading
import time

import pytest

from dmtest import (BLOCK, SLOW, Dm, Outcome, aligned, brd_device, check_block, dev_sectors,
                    drop_slab, kmsg, read_blocks, regrown, sh, stamp, strip_dm_prefix,
                    write_stamped)

SEG_SECTORS = 256                       # 128 KiB segments: units of 4 KiB
BLOCKS_PER_SEG = SEG_SECTORS * 512 // BLOCK


@pytest.fixture
def held(fault):
    """No write-back in the background: what reaches the origin is what a
    flush, FUA, suspend or remove sent (a test build's parameter)."""
    fault("fi_wb_hold", 1)


def redcap(dmname, origin, policy="back", segs=32, extra=""):
    words = ["policy", "always", "write_policy", policy] + extra.split()
    rc = Dm(dmname(), f"0 {dev_sectors(origin)} redcap {origin} {SEG_SECTORS} {segs} "
                      f"{len(words)} {' '.join(words)}")
    rc.cold()
    rc.message("set", "prefetch", "0")
    return rc


def write_blocks(dev, blocks, seed, flags=0):
    """Write each 4 KiB block of @blocks, stamped with @seed, one request
    each, O_DIRECT, with open @flags (O_DSYNC: FUA), no fsync."""
    fd = os.open(dev, os.O_WRONLY | os.O_DIRECT | flags)
    buf = aligned(BLOCK)
    try:
        for b in blocks:
            buf[:] = stamp(b, seed)
            assert os.pwritev(fd, [buf], b * BLOCK) == BLOCK
    finally:
        os.close(fd)


def flush(dev):
    """fsync of the block device: an empty flush down the stack; raises on its error."""
    fd = os.open(dev, os.O_WRONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def check_blocks(dev, blocks, seed):
    for b in blocks:
        check_block(read_blocks(dev, b * BLOCK, BLOCK), b, seed)


def sysfs_queue(dm, name):
    dev = os.path.basename(os.path.realpath(dm.path))
    return f"/sys/block/{dev}/queue/{name}"


def test_the_device_shows_a_volatile_write_cache(dmname):
    """Over a RAM disk, which has none, the stack has one only with the write cache."""
    with brd_device(16) as ram:
        with redcap(dmname, ram, policy="invalidate") as rc:
            assert open(sysfs_queue(rc, "write_cache")).read().strip() == "write through"
        with redcap(dmname, ram) as rc:
            assert open(sysfs_queue(rc, "write_cache")).read().strip() == "write back"
            assert rc.stats()["write_cache"] == "on"
            assert "write_policy back" in rc.table()


def test_writes_complete_in_ram_and_a_flush_makes_them_durable(loop64, dmname, held):
    write_stamped(loop64, 0, 4 * BLOCKS_PER_SEG, seed=1)
    blocks = [1, 2, 3, 40, 70, 71]      # segments 0, 1 and 2, not whole
    with redcap(dmname, loop64) as rc:
        t0 = time.monotonic()
        write_blocks(rc.path, blocks, seed=2)
        time.sleep(0.2)
        st = rc.stats()
        assert (st["writes"], st["write_cached"], st["write_through"]) == (6, 6, 0)
        assert (st["dirty_segments"], st["dirty_sectors"]) == (3, 48)
        # the oldest went dirty after t0 and at least 0.2 s ago (a jiffy's slack)
        assert 190 <= st["dirty_age_ms"] <= (time.monotonic() - t0) * 1000 + 10, st
        # the origin has not seen them; the stack returns them, and the
        # rest of each segment from the origin (a read merged with them)
        check_blocks(loop64, blocks, seed=1)
        check_blocks(rc.path, blocks, seed=2)
        data = read_blocks(rc.path, 0, 2 * BLOCKS_PER_SEG * BLOCK)
        for b in range(2 * BLOCKS_PER_SEG):
            check_block(data[b * BLOCK:(b + 1) * BLOCK], b, 2 if b in blocks else 1)
        assert rc.stats()["read_bypassed_partial"] == 2
        flush(rc.path)
        st = rc.stats()
        assert (st["dirty_segments"], st["dirty_sectors"], st["flushes"]) == (0, 0, 1)
        assert st["dirty_age_ms"] == 0
        # 1-3, 40, 70-71: three requests
        assert (st["writeback_ios"], st["writeback_sectors"]) == (3, 48)
        check_blocks(loop64, blocks, seed=2)
        check_blocks(rc.path, blocks, seed=2)


def test_contiguous_dirty_segments_go_back_in_requests_of_a_mebibyte(loop64, dmname, held):
    write_stamped(loop64, 0, 24 * BLOCKS_PER_SEG, seed=1)
    blocks = list(range(4 * BLOCKS_PER_SEG, 20 * BLOCKS_PER_SEG))     # 16 segments, 2 MiB
    with redcap(dmname, loop64) as rc:
        rc.message("set", "dirty", "90")
        # halves: a write of a whole segment goes through (write-back would send it so)
        half = BLOCKS_PER_SEG // 2
        fd = os.open(rc.path, os.O_WRONLY | os.O_DIRECT)
        buf = aligned(half * BLOCK)
        try:
            for first in range(4 * BLOCKS_PER_SEG, 20 * BLOCKS_PER_SEG, half):
                buf[:] = b"".join(stamp(first + i, 2) for i in range(half))
                assert os.pwritev(fd, [buf], first * BLOCK) == len(buf)
        finally:
            os.close(fd)
        assert rc.stats()["dirty_segments"] == 16
        flush(rc.path)
        st = rc.stats()
        assert (st["writeback_ios"], st["writeback_sectors"]) == (2, 16 * SEG_SECTORS)
        check_blocks(loop64, blocks, seed=2)


def test_whole_segment_writes_go_through(loop64, dmname, held):
    write_stamped(loop64, 0, 4 * BLOCKS_PER_SEG, seed=1)
    with redcap(dmname, loop64) as rc:
        write_blocks(rc.path, [1], seed=2)                  # segment 0: cached
        buf = aligned(2 * SEG_SECTORS * 512)
        buf[:] = b"".join(stamp(b, 3) for b in range(2 * BLOCKS_PER_SEG))
        fd = os.open(rc.path, os.O_WRONLY | os.O_DIRECT)
        try:
            assert os.pwritev(fd, [buf], 0) == len(buf)    # segments 0 and 1, whole
        finally:
            os.close(fd)
        st = rc.stats()
        assert (st["write_cached"], st["write_through"], st["dirty_segments"]) == (1, 2, 1)
        check_blocks(loop64, range(2 * BLOCKS_PER_SEG), seed=3)
        check_blocks(rc.path, range(2 * BLOCKS_PER_SEG), seed=3)


def test_fua_writes_go_through_and_o_dsync_flushes(loop64, dmname, held):
    """An O_DSYNC write to the block device is a FUA write, then a flush
    (blkdev_write_iter's generic_write_sync)."""
    write_stamped(loop64, 0, BLOCKS_PER_SEG, seed=1)
    with redcap(dmname, loop64) as rc:
        write_blocks(rc.path, [5], seed=2)                  # cached, dirty
        check_blocks(loop64, [5], seed=1)
        write_blocks(rc.path, [6, 7], seed=3, flags=os.O_DSYNC)
        st = rc.stats()
        assert (st["write_cached"], st["write_through"], st["flushes"]) == (1, 2, 2)
        assert (st["dirty_segments"], st["writeback_ios"]) == (0, 1)
        check_blocks(loop64, [5], seed=2)
        check_blocks(loop64, [6, 7], seed=3)
        check_blocks(rc.path, [5], seed=2)
        check_blocks(rc.path, [6, 7], seed=3)


@pytest.mark.parametrize("how", ["suspend", "remove", "reload"])
def test_suspend_remove_and_reload_write_everything_back(loop64, dmname, held, how):
    write_stamped(loop64, 0, 8 * BLOCKS_PER_SEG, seed=1)
    blocks = list(range(0, 8 * BLOCKS_PER_SEG, 3))
    rc = redcap(dmname, loop64)
    try:
        write_blocks(rc.path, blocks, seed=4)
        assert rc.stats()["dirty_segments"] == 8
        if how == "suspend":
            rc.suspend()
            check_blocks(loop64, blocks, seed=4)
            rc.resume()
            assert rc.stats()["dirty_segments"] == 0
        elif how == "reload":
            rc.reload(rc.table().replace("write_policy back", "write_policy update"))
            rc.suspend()
            rc.resume()
            check_blocks(loop64, blocks, seed=4)
            before = rc.stats()
            assert before["write_cache"] == "none"
            write_blocks(rc.path, [1], seed=5)
            after = rc.stats()
            assert after["write_cached"] == before["write_cached"]
            assert after["writes"] == before["writes"] + 1
            check_blocks(loop64, [1], seed=5)
    finally:
        rc.remove()
    check_blocks(loop64, blocks, seed=4)


def test_selective_caches_background_writes_and_sends_waited_ones_through(loop64, dmname, held):
    """selective: an O_DIRECT write (REQ_SYNC) goes through; the same
    data written by the page cache's background writeback (sync_file_range
    without waiting: no REQ_SYNC) is cached; an fsync's writeback (REQ_SYNC)
    goes through."""
    write_stamped(loop64, 0, 4 * BLOCKS_PER_SEG, seed=1)
    with redcap(dmname, loop64, policy="selective") as rc:
        write_blocks(rc.path, [1], seed=2)
        st = rc.stats()
        assert (st["write_cached"], st["write_through"], st["dirty_segments"]) == (0, 1, 0), st
        check_blocks(loop64, [1], seed=2)
        blocks = [BLOCKS_PER_SEG + 3]
        sh("xfs_io", "-c", f"pwrite -q -S 0x5a {blocks[0] * BLOCK} {BLOCK}",
           "-c", f"sync_range -w {blocks[0] * BLOCK} {BLOCK}", rc.path)
        end = time.monotonic() + 30
        while rc.stats()["write_cached"] < 1 and time.monotonic() < end:
            time.sleep(0.05)
        st = rc.stats()
        assert (st["write_cached"], st["write_through"], st["dirty_segments"]) == (1, 1, 1), st
        sh("xfs_io", "-c", f"pwrite -q -S 0x6b {2 * BLOCKS_PER_SEG * BLOCK} {BLOCK}",
           "-c", "fsync", rc.path)
        st = rc.stats()
        # the fsync: its write through, then its flush wrote the cached one back
        assert (st["write_cached"], st["write_through"], st["dirty_segments"]) == (1, 2, 0), st
        assert (st["writeback_ios"], st["flushes"]) == (1, 1), st
        assert read_blocks(loop64, blocks[0] * BLOCK, BLOCK) == b"\x5a" * BLOCK
        assert read_blocks(loop64, 2 * BLOCKS_PER_SEG * BLOCK, BLOCK) == b"\x6b" * BLOCK


def check_ext4(dev, mnt, payload):
    """@dev is a clean ext4 holding each file of @payload (name: bytes),
    mounted read-only at @mnt to check."""
    sh("fsck.ext4", "-fn", dev)
    sh("mount", "-o", "ro", dev, str(mnt))
    try:
        for name, data in payload.items():
            assert (mnt / name).read_bytes() == data, name
    finally:
        sh("umount", str(mnt))


def test_selective_sends_metadata_through_and_ext4_stays_consistent(loop64, dmname, tmp_path):
    with redcap(dmname, loop64, policy="selective") as rc:
        sh("mkfs.ext4", "-q", "-F", "-b", "4096", rc.path)
        rc.message("reset_stats")
        mnt = tmp_path / "mnt"
        mnt.mkdir()
        sh("mount", rc.path, str(mnt))
        try:
            rnd = random.Random(3)
            payload = {f"f{i}": rnd.randbytes(rnd.randrange(1, 64) * 1024) for i in range(40)}
            for name, data in payload.items():
                with open(mnt / name, "wb") as f:
                    f.write(data)
                    if name.endswith("7"):
                        f.flush()
                        os.fsync(f.fileno())
            sh("sync")
            st = rc.stats()
            # the journal's writes and fsync's carry REQ_META or REQ_SYNC: through;
            # the data the flusher writes: cached
            assert st["write_through"] > 0 and st["write_cached"] > 0, st
            assert st["flushes"] > 0, st
        finally:
            sh("umount", str(mnt))
    # removed: the origin alone is a clean filesystem with every file
    check_ext4(loop64, mnt, payload)


def direct_io(path, data=None, size=0):
    """Write @data to the file at @path in place, or read @size bytes of
    it, O_DIRECT; returns what was read."""
    fd = os.open(path, os.O_RDWR | os.O_DIRECT)
    try:
        buf = aligned(len(data) if data is not None else size)
        if data is not None:
            buf[:] = data
            assert os.pwritev(fd, [buf], 0) == len(data)
            return data
        assert os.preadv(fd, [buf], 0) == size
        return bytes(buf)
    finally:
        os.close(fd)


def test_fstrim_on_ext4_keeps_the_files_still_in_ram(loop64, dmname, held, tmp_path):
    """ext4 on the write cache: of 24 small files side by side, every other
    one is deleted and the deletion committed; the others are then
    rewritten in place, O_DIRECT (cached, dirty: no flush), and fstrim
    discards the deleted files' blocks, in the segments of the rewritten
    ones.  Every rewritten file reads back as rewritten, before and after
    a remount, and the origin is a clean filesystem.  (Until 2026-12-06
    those discards dropped the rewritten files' dirty data.)"""
    with redcap(dmname, loop64, segs=64) as rc:
        # No flush meanwhile: no journal commit before 300 s, and no lazy
        # init thread, which flushes after each inode table it zeroes.  In
        # a loaded make check, something wrote the test's dirty data back
        # (dirty 5 -> 0); that thread is the likeliest sender.
        sh("mkfs.ext4", "-q", "-F", "-b", "4096",
           "-E", "nodiscard,lazy_itable_init=0,lazy_journal_init=0", rc.path)
        mnt = tmp_path / "mnt"
        mnt.mkdir()
        sh("mount", "-o", "commit=300,noinit_itable", rc.path, str(mnt))
        rnd = random.Random(5)
        files = {f"f{i:02}": rnd.randrange(1, 4) * BLOCK for i in range(24)}
        try:
            for name, size in files.items():
                (mnt / name).write_bytes(rnd.randbytes(size))
            sh("sync")
            for name in list(files)[::2]:
                (mnt / name).unlink()
                del files[name]
            sh("sync")                                        # the deletion committed
            payload = {name: direct_io(mnt / name, rnd.randbytes(size))
                       for name, size in files.items()}
            before = rc.stats()
            assert before["dirty_segments"] > 0, before
            sh("fstrim", str(mnt))
            st = rc.stats()
            assert (st["dirty_segments"], st["flushes"]) == \
                (before["dirty_segments"], before["flushes"]), st
            for name, data in payload.items():
                assert direct_io(mnt / name, size=len(data)) == data, name
        finally:
            sh("umount", str(mnt))
    check_ext4(loop64, mnt, payload)


def test_writers_past_the_cap_under_memory_pressure_lose_nothing(loop128, dmname, tmp_path):
    """ext4 on redcap (back, 256 x 128 KiB, dirty 10 %: 25 segments); random
    4 KiB writes into a 24 MiB file, five times what the cap holds, while
    stress-ng holds most of the guest's free memory, so the page cache's
    writeback, from reclaim too, runs into the cap and waits for write-back
    (whose bios come from a reserve).  The file reads back after the page
    cache is dropped, and the origin alone is a clean filesystem with it."""
    size, block = 24 << 20, 4096
    rnd = random.Random(5)
    expect = bytearray(size)
    with redcap(dmname, loop128, segs=256) as rc:
        rc.message("set", "dirty", "10")
        sh("mkfs.ext4", "-q", "-F", "-b", "4096", rc.path)
        mnt = tmp_path / "mnt"
        mnt.mkdir()
        sh("mount", rc.path, str(mnt))
        hog = subprocess.Popen(["stress-ng", "--vm", "1", "--vm-bytes", "70%", "--vm-keep",
                                "--timeout", "600s", "--quiet"])
        try:
            time.sleep(2)
            fd = os.open(mnt / "f", os.O_CREAT | os.O_WRONLY)
            try:
                os.ftruncate(fd, size)
                for _ in range(4000):
                    off = rnd.randrange(size // block) * block
                    data = rnd.randbytes(block)
                    expect[off:off + block] = data
                    assert os.pwrite(fd, data, off) == block
            finally:
                os.close(fd)
            sh("sync")
            st = rc.stats()
            assert st["write_cached"] > 0 and st["dirty_max"] == 25, st
            with open("/proc/sys/vm/drop_caches", "w") as f:
                f.write("3")
            assert (mnt / "f").read_bytes() == expect
        finally:
            hog.terminate()
            hog.wait(timeout=60 * SLOW)
            sh("umount", str(mnt))
    sh("fsck.ext4", "-fn", loop128)
    sh("mount", "-o", "ro", loop128, str(mnt))
    try:
        assert (mnt / "f").read_bytes() == expect
    finally:
        sh("umount", str(mnt))


def test_write_zeroes_drops_dirty_data(loop64, dmname, held):
    write_stamped(loop64, 0, 4 * BLOCKS_PER_SEG, seed=1)
    with redcap(dmname, loop64) as rc:
        write_blocks(rc.path, [0, 1, 33, 34], seed=2)
        assert rc.stats()["dirty_segments"] == 2
        sh("blkdiscard", "-z", "-o", "0", "-l", str(2 * SEG_SECTORS * 512), rc.path)
        assert rc.stats()["dirty_dropped"] == 2
        assert read_blocks(rc.path, 0, 2 * SEG_SECTORS * 512) == bytes(2 * SEG_SECTORS * 512)
        flush(rc.path)
        assert read_blocks(loop64, 0, 2 * SEG_SECTORS * 512) == bytes(2 * SEG_SECTORS * 512)


@pytest.mark.parametrize("zero", [False, True], ids=["discard", "zeroout"])
@pytest.mark.parametrize("segs", [2, 70], ids=["small", "large"])
def test_a_range_over_part_of_a_dirty_segment_keeps_the_rest(loop64, dmname, held, zero, segs):
    """A discard or write-zeroes that starts and ends inside dirty segments
    drops the dirty data it covers and keeps the rest: the blocks before its
    start and after its end read back as written, from the stack and, after
    a flush, from the origin.  (Until 2026-12-06 the whole entry was dropped:
    the soak's transient stale reads.)  Over more than 64 segments the range
    walks the entries (large) rather than taking them one by one (small)."""
    first, last = 16, segs * BLOCKS_PER_SEG - 16           # range: blocks first..last-1
    kept = list(range(0, first)) + list(range(last, segs * BLOCKS_PER_SEG))
    write_stamped(loop64, 0, segs * BLOCKS_PER_SEG, seed=1)
    with redcap(dmname, loop64) as rc:
        write_blocks(rc.path, kept, seed=2)
        write_blocks(rc.path, [first, last - 1], seed=2)   # dirty units the range covers
        assert rc.stats()["dirty_segments"] == 2
        sh("blkdiscard", *(["-z"] if zero else []), "-o", str(first * BLOCK),
           "-l", str((last - first) * BLOCK), rc.path)
        if not zero:
            # The loop device refuses write-zeroes here (its file is on a
            # filesystem without FALLOC_FL_ZERO_RANGE): the kernel then
            # writes zeroes, which the cache takes like any write.
            st = rc.stats()
            assert (st["dirty_segments"], st["dirty_dropped"]) == (2, 2), st
        n = (last - first) * BLOCK
        for dev in (rc.path, None):
            if dev is None:
                flush(rc.path)
                assert rc.stats()["dirty_segments"] == 0
                dev = loop64
            check_blocks(dev, kept, seed=2)
            assert read_blocks(dev, first * BLOCK, n) == bytes(n)


@pytest.mark.parametrize("zero", [False, True], ids=["discard", "zeroout"])
def test_a_range_inside_dirty_units_zeroes_only_its_sectors(loop64, dmname, held, zero):
    """A discard or write-zeroes whose ends fall inside dirty 4 KiB units:
    its sectors read zeroes (the cache zeroes them in RAM), the sectors
    around it keep what was written."""
    write_stamped(loop64, 0, BLOCKS_PER_SEG, seed=1)
    with redcap(dmname, loop64) as rc:
        write_blocks(rc.path, [4, 5, 6], seed=2)
        off, length = 4 * BLOCK + 1024, BLOCK                # the last 3 KiB of 4, 1 KiB of 5
        sh("blkdiscard", *(["-z"] if zero else []), "-o", str(off), "-l", str(length), rc.path)
        if not zero:
            st = rc.stats()
            assert (st["dirty_segments"], st["dirty_dropped"]) == (1, 0), st
        want = bytearray(stamp(4, 2) + stamp(5, 2) + stamp(6, 2))
        want[1024:1024 + length] = bytes(length)
        assert read_blocks(rc.path, 4 * BLOCK, 3 * BLOCK) == want
        flush(rc.path)
        assert read_blocks(loop64, 4 * BLOCK, 3 * BLOCK) == want
        check_blocks(loop64, [3, 7], seed=1)


def flakey(dev, n, up):
    """flakey over @dev: writes fail while not @up."""
    return f"0 {n} flakey {dev} 0 {'3600 0' if up else '0 1'} 1 error_writes"


def test_a_failed_write_back_keeps_its_data_and_fails_the_flush(loop64, dmname, held):
    write_stamped(loop64, 0, 2 * BLOCKS_PER_SEG, seed=1)
    n = dev_sectors(loop64)
    with Dm(dmname(), flakey(loop64, n, up=True)) as mid:
        with redcap(dmname, mid.path) as rc:
            write_blocks(rc.path, [3, 4, 40], seed=2)
            mid.reload(flakey(loop64, n, up=False))
            mid.suspend()
            mid.resume()
            with pytest.raises(OSError):
                flush(rc.path)
            st = rc.stats()
            assert st["writeback_errors"] >= 1 and st["writeback_error"] == -5, st
            assert st["dirty_segments"] == 2, st
            check_blocks(rc.path, [3, 4, 40], seed=2)       # never dropped
            mid.reload(flakey(loop64, n, up=True))
            mid.suspend()
            mid.resume()
            flush(rc.path)
            assert rc.stats()["dirty_segments"] == 0
            check_blocks(loop64, [3, 4, 40], seed=2)


def test_a_failed_write_through_leaves_the_cached_copy_dirty_not_apart(loop64, dmname, held):
    """A write through (FUA) over a cached clean segment fails at the
    origin: the caller sees the error, and the cached copy it already
    updated is dirty, written back once the origin takes writes again.  The
    stack's answer stays what it was after the write: before, the copy was
    clean and the origin older, and dropping the cache changed the data
    without a write."""
    write_stamped(loop64, 0, 2 * BLOCKS_PER_SEG, seed=1)
    n = dev_sectors(loop64)
    with Dm(dmname(), flakey(loop64, n, up=True)) as mid:
        with redcap(dmname, mid.path) as rc:
            check_blocks(rc.path, [3], seed=1)                  # cached, clean
            down(mid, loop64, n)
            with pytest.raises(OSError):
                write_blocks(rc.path, [3], seed=2, flags=os.O_DSYNC)
            st = rc.stats()
            assert (st["write_through"], st["dirty_segments"], st["writes_inflight"]) == \
                (1, 1, 0), st
            check_blocks(rc.path, [3], seed=2)
            check_blocks(loop64, [3], seed=1)
            down(mid, loop64, n, up=True)
            flush(rc.path)
            check_blocks(loop64, [3], seed=2)
            rc.message("drop_cache")
            check_blocks(rc.path, [3], seed=2)


def down(mid, loop, n, up=False):
    """flakey @mid over @loop made to fail writes (or not, @up) from now on."""
    mid.reload(flakey(loop, n, up=up))
    mid.suspend()
    mid.resume()


def test_a_flush_the_origin_fails_fails(loop64, dmname, held):
    """Nothing dirty, the origin's own flush fails: so does the stack's."""
    n = dev_sectors(loop64)
    with Dm(dmname(), flakey(loop64, n, up=True)) as mid:
        with redcap(dmname, mid.path) as rc:
            flush(rc.path)
            down(mid, loop64, n)
            with pytest.raises(OSError) as e:
                flush(rc.path)
            assert e.value.errno == 5
            st = rc.stats()
            assert (st["dirty_segments"], st["writeback_ios"], st["flushes"]) == (0, 0, 2), st
            down(mid, loop64, n, up=True)
            flush(rc.path)


def test_drop_cache_keeps_what_the_origin_refused_and_fails(loop64, dmname, held):
    """drop_cache writes back first: what the origin refuses stays dirty and
    readable, the clean entries go, the message fails; once the origin
    takes writes again, drop_cache empties the cache."""
    write_stamped(loop64, 0, 4 * BLOCKS_PER_SEG, seed=1)
    n = dev_sectors(loop64)
    with Dm(dmname(), flakey(loop64, n, up=True)) as mid:
        with redcap(dmname, mid.path) as rc:
            check_blocks(rc.path, [3 * BLOCKS_PER_SEG], seed=1)        # a clean entry
            write_blocks(rc.path, [3, BLOCKS_PER_SEG + 8], seed=2)    # two dirty ones
            assert rc.stats()["segments_valid"] == 3
            down(mid, loop64, n)
            lines = rc.refused("drop_cache")
            assert lines[-1] == "drop_cache: write-back failed (-5): dirty segments stay", lines
            assert all(re.fullmatch(r"\d+:\d+: write-back of sectors \d+\+8 failed: -5", x)
                       for x in lines[:-1]) and lines[:-1], lines
            st = rc.stats()
            assert (st["segments_valid"], st["dirty_segments"], st["writeback_error"]) == \
                (2, 2, -5), st
            check_blocks(rc.path, [3, BLOCKS_PER_SEG + 8], seed=2)
            check_blocks(loop64, [3, BLOCKS_PER_SEG + 8], seed=1)     # not on the disk
            down(mid, loop64, n, up=True)
            rc.message("drop_cache")
            st = rc.stats()
            assert (st["segments_valid"], st["dirty_segments"]) == (0, 0), st
            check_blocks(loop64, [3, BLOCKS_PER_SEG + 8], seed=2)


def test_remove_over_a_refusing_origin_says_what_it_lost(loop64, dmname, held):
    """A remove cannot fail in the kernel: when the origin refuses the
    write-back, the loss is logged, with the count of segments."""
    n = dev_sectors(loop64)
    with Dm(dmname(), flakey(loop64, n, up=True)) as mid:
        rc = redcap(dmname, mid.path)
        write_blocks(rc.path, [1, BLOCKS_PER_SEG, 2 * BLOCKS_PER_SEG], seed=2)
        down(mid, loop64, n)
        top, origin = (os.stat(d).st_rdev for d in (rc.path, mid.path))
        with kmsg() as k:
            rc.remove()
            lines = [strip_dm_prefix(x) for x in k.lines() if "redcap" in x]
        top, origin = (f"{os.major(d)}:{os.minor(d)}" for d in (top, origin))
        assert lines[0] == f"{top}: writing back 3 dirty segments", lines
        assert lines[-2:] == [f"{top}: 3 dirty segments not written back: -5",
                              f"{origin}: 3 dirty segments lost with the cache "
                              "(write-back error -5)"], lines


def test_a_refusing_origin_is_retried_in_the_background_and_remove_ends(loop64, dmname):
    """Write-back in the background over an origin that refuses it: the
    data stays dirty and readable, the worker tries again later, and a
    remove ends, saying what it lost.  (The worker retried at once, for
    ever, holding the write-back's mutex: the remove's write-back waited
    on it in D state; seen as a hung dmsetup remove in test_redcapctl.)"""
    write_stamped(loop64, 0, 2 * BLOCKS_PER_SEG, seed=1)
    n = dev_sectors(loop64)
    with Dm(dmname(), flakey(loop64, n, up=True)) as mid, redcap(dmname, mid.path) as rc:
        down(mid, loop64, n)
        write_blocks(rc.path, [3, BLOCKS_PER_SEG + 8], seed=2)
        end = time.monotonic() + 30 * SLOW
        while rc.stats()["writeback_errors"] < 2:           # the origin idle: due
            assert time.monotonic() < end, rc.stats()
            time.sleep(0.1)
        assert rc.stats()["writeback_error"] == -5
        check_blocks(rc.path, [3, BLOCKS_PER_SEG + 8], seed=2)
        top, origin = (os.stat(d).st_rdev for d in (rc.path, mid.path))
        with kmsg() as k:
            rc.remove()
            lines = [strip_dm_prefix(x) for x in k.lines() if "dirty segments" in x]
        top, origin = (f"{os.major(d)}:{os.minor(d)}" for d in (top, origin))
        assert lines == [f"{top}: writing back 2 dirty segments",
                         f"{top}: 2 dirty segments not written back: -5",
                         f"{origin}: 2 dirty segments lost with the cache "
                         "(write-back error -5)"], lines
        check_blocks(loop64, [3, BLOCKS_PER_SEG + 8], seed=1)  # refused: not on the disk


def test_writes_past_the_dirty_cap_go_to_the_origin(loop64, dmname, held):
    """At most dirty % of the entries dirty (32 x 10 %: 3): the writes to
    other segments go straight to the origin, and all read back."""
    write_stamped(loop64, 0, 8 * BLOCKS_PER_SEG, seed=1)
    blocks = [s * BLOCKS_PER_SEG + 5 for s in range(8)]
    with redcap(dmname, loop64) as rc:
        rc.message("set", "dirty", "10")
        write_blocks(rc.path, blocks, seed=2)
        st = rc.stats()
        assert (st["dirty_max"], st["dirty_segments"], st["write_cached"],
                st["write_through"]) == (3, 3, 3, 5), st
        check_blocks(loop64, blocks[:3], seed=1)
        check_blocks(loop64, blocks[3:], seed=2)
        check_blocks(rc.path, blocks, seed=2)
        write_blocks(rc.path, [blocks[0] + 1], seed=3)            # a dirty entry takes more
        assert rc.stats()["write_cached"] == 4
        flush(rc.path)
        check_blocks(loop64, blocks, seed=2)
        check_blocks(loop64, [blocks[0] + 1], seed=3)


def stats_until(rc, what, cond, timeout=30):
    """rc's stats once cond(stats) holds (fails after @timeout s, scaled)."""
    end = time.monotonic() + timeout * SLOW
    while not cond(st := rc.stats()):
        assert time.monotonic() < end, f"{what}: {st}"
        time.sleep(0.05)
    return st


def test_a_write_at_the_dirty_cap_waits_for_the_write_in_flight(loop64, dmname, held):
    """At the cap (3 of 32) with a write to the origin in flight (one over
    a clean cached segment), a write that would cache is held until that
    write ends, then decided again.  The origin is a linear device
    suspended meanwhile: the write in flight cannot end before the test
    lets it."""
    write_stamped(loop64, 0, 8 * BLOCKS_PER_SEG, seed=1)
    blocks = [s * BLOCKS_PER_SEG + 5 for s in range(5)]
    with Dm(dmname(), f"0 {dev_sectors(loop64)} linear {loop64} 0") as mid:
        with redcap(dmname, mid.path) as rc:
            rc.message("set", "dirty", "10")
            check_blocks(rc.path, blocks[3:4], seed=1)             # cached, clean
            write_blocks(rc.path, blocks[:3], seed=2)
            mid.suspend()
            try:
                through = Outcome(write_blocks, rc.path, blocks[3:4], 2)
                stats_until(rc, "the fourth goes through",
                            lambda st: st["writes_inflight"] == 1)
                held_write = Outcome(write_blocks, rc.path, blocks[4:5], 2)
                st = stats_until(rc, "the fifth waits", lambda st: st["write_waits"] == 1)
            finally:
                mid.resume()
            assert (st["writes"], st["write_cached"], st["write_through"],
                    st["dirty_segments"]) == (4, 3, 1, 3), st
            through.result()
            held_write.result()
            st = rc.stats()
            # held: nothing is written back, so the fifth, decided again with
            # nothing in flight, goes through
            assert (st["writes"], st["write_cached"], st["write_through"], st["write_waits"],
                    st["dirty_segments"], st["writes_inflight"]) == (5, 3, 2, 1, 3, 0), st
            check_blocks(loop64, blocks[:3], seed=1)
            check_blocks(loop64, blocks[3:], seed=2)
            check_blocks(rc.path, blocks, seed=2)
            flush(rc.path)
            check_blocks(loop64, blocks, seed=2)


def test_writers_at_the_cap_lose_nothing_while_write_back_is_held_up(loop64, dmname, fault):
    """Background write-back at the cap, its requests held at a suspended
    origin, then no more sent (the test build's hold): the cache fills to
    the cap again and a writer past it waits.  Once the origin comes back,
    the last write-back to end starts the next batch and the writer is
    decided again (cached or through, whichever comes first): every write
    lands."""
    write_stamped(loop64, 0, 8 * BLOCKS_PER_SEG, seed=1)
    blocks = [s * BLOCKS_PER_SEG + 5 for s in range(7)]
    with Dm(dmname(), f"0 {dev_sectors(loop64)} linear {loop64} 0") as mid:
        with redcap(dmname, mid.path) as rc:
            rc.message("set", "dirty", "10")
            mid.suspend()
            try:
                write_blocks(rc.path, blocks[:3], seed=2)
                stats_until(rc, "the cap's write-back in flight",
                            lambda st: st["writes_inflight"] == 3 and st["dirty_segments"] == 0)
                fault("fi_wb_hold", 1)
                write_blocks(rc.path, blocks[3:6], seed=2)
                waiter = Outcome(write_blocks, rc.path, blocks[6:], 2)
                st = stats_until(rc, "the seventh waits", lambda st: st["write_waits"] == 1)
            finally:
                fault("fi_wb_hold", 0)
                mid.resume()
            assert (st["writes"], st["write_cached"], st["write_through"],
                    st["dirty_segments"]) == (6, 6, 0, 3), st
            waiter.result()
            assert rc.stats()["writes"] == 7
            check_blocks(rc.path, blocks, seed=2)
            flush(rc.path)
            assert rc.stats()["dirty_segments"] == 0
            check_blocks(loop64, blocks, seed=2)


def test_write_through_in_sysfs_falls_back_and_writes_back(loop64, dmname):
    write_stamped(loop64, 0, 2 * BLOCKS_PER_SEG, seed=1)
    with redcap(dmname, loop64) as rc:
        write_blocks(rc.path, [2], seed=2)
        with open(sysfs_queue(rc, "write_cache"), "w") as f:
            f.write("write through")
        write_blocks(rc.path, [9], seed=3)
        st = rc.stats()
        assert (st["write_cache"], st["write_cached"], st["write_through"]) == ("off", 1, 1)
        check_blocks(loop64, [9], seed=3)
        end = time.monotonic() + 30 * SLOW
        while rc.stats()["dirty_segments"] and time.monotonic() < end:
            time.sleep(0.1)
        assert rc.stats()["dirty_segments"] == 0
        check_blocks(loop64, [2], seed=2)


def test_the_message_does_not_switch_the_write_cache(loop64, dmname):
    with redcap(dmname, loop64, policy="invalidate") as rc:
        assert rc.refused("write_policy", "back") == \
            ["write_policy: back takes a table reload (redcapctl set does it)"]
        rc.message("write_policy", "update")
    with redcap(dmname, loop64) as rc:
        assert rc.refused("write_policy", "invalidate") == \
            ["write_policy: invalidate takes a table reload (redcapctl set does it)"]
        rc.message("write_policy", "selective")


def test_a_reload_while_bare_keeps_it_bare_until_the_write_cache_needs_its_pages(
        loop64, dmname, held, fault):
    """Inactive, the cache gave its pages back.  A reload of the same table
    keeps the cache as it was: bare, its ghosts, its counters.  A reload
    turning the write cache on makes the regrow due; while the pages cannot
    be had (fi_regrow_alloc_fail), writes go to the origin, there being no
    entry to hold them; once regrown, writes are cached again, and a flush
    writes them back."""
    write_stamped(loop64, 0, 8 * BLOCKS_PER_SEG, seed=1)
    segs = 16
    off = f"0 {dev_sectors(loop64)} redcap {loop64} {SEG_SECTORS} {segs} 2 policy off"
    back = f"0 {dev_sectors(loop64)} redcap {loop64} {SEG_SECTORS} {segs} " \
           "4 policy off write_policy back"
    with Dm(dmname(), off) as rc:
        rc.cold()
        rc.message("set", "prefetch", "0")
        check_blocks(rc.path, range(2 * BLOCKS_PER_SEG), seed=1)      # two ghosts
        drop_slab()
        st = rc.stats()
        assert (st["segments_bare"], st["segments_ghost"], st["given_back"]) == (segs, 2, segs)

        rc.reload(off)
        rc.suspend()
        rc.resume()
        sh("udevadm", "settle")         # udev's probe reads: ghosts of its own
        before = rc.stats()
        check_blocks(rc.path, range(2 * BLOCKS_PER_SEG), seed=1)
        st = rc.stats()
        assert (st["segments_bare"], st["given_back"], st["regrown"]) == (segs, segs, 0), st
        assert (st["sim_hits"] - before["sim_hits"],
                st["sim_misses"] - before["sim_misses"]) == (2 * BLOCKS_PER_SEG, 0), st

        fault("fi_regrow_alloc_fail", 1)
        rc.reload(back)
        rc.suspend()
        rc.resume()
        write_blocks(rc.path, range(4), seed=2)
        st = rc.stats()
        assert (st["write_policy"], st["segments_bare"], st["regrown"]) == ("back", segs, 0), st
        assert (st["write_cached"], st["write_through"], st["dirty_segments"]) == (0, 4, 0), st
        check_blocks(loop64, range(4), seed=2)
        check_blocks(rc.path, range(4), seed=2)

        fault("fi_regrow_alloc_fail", 0)
        st = regrown(rc, 4 * BLOCKS_PER_SEG, seed=1)
        assert (st["regrown"], st["given_back"]) == (segs, segs), st
        write_blocks(rc.path, range(4, 8), seed=3)
        st = rc.stats()
        assert (st["write_cached"], st["write_through"], st["dirty_segments"]) == (4, 4, 1), st
        check_blocks(loop64, range(4, 8), seed=1)                     # not yet written back
        check_blocks(rc.path, range(4, 8), seed=3)
        flush(rc.path)
        assert rc.stats()["dirty_segments"] == 0
        check_blocks(loop64, range(4), seed=2)
        check_blocks(loop64, range(4, 8), seed=3)


def test_racing_writers_readers_and_flushes_lose_nothing(loop64, dmname):
    """Four writers on their own blocks, a reader, flushes; a small cache
    whose dirty cap is hit, so that writes wait on write-backs, go through
    and make entries: at the end the origin holds every block's last write."""
    nblocks = 16 * BLOCKS_PER_SEG
    write_stamped(loop64, 0, nblocks, seed=1)
    last = {b: 1 for b in range(nblocks)}
    seeds = {b: {1} for b in range(nblocks)}
    lock = threading.Lock()
    errors = []

    def writer(k, rc):
        rnd = random.Random(k)
        mine = [b for b in range(nblocks) if b % 4 == k]
        try:
            for i in range(300):
                b = rnd.choice(mine)
                seed = 100 + 1000 * k + i
                with lock:
                    seeds[b].add(seed)
                write_blocks(rc.path, [b], seed, flags=os.O_DSYNC if i % 17 == 0 else 0)
                with lock:
                    last[b] = seed
                if i % 50 == 0:
                    flush(rc.path)
        except Exception as e:      # noqa: BLE001 - reported below
            errors.append(e)

    with redcap(dmname, loop64) as rc:
        rc.message("set", "dirty", "50")
        threads = [threading.Thread(target=writer, args=(k, rc)) for k in range(4)]
        for t in threads:
            t.start()
        rnd = random.Random(9)
        while any(t.is_alive() for t in threads):
            b = rnd.randrange(nblocks)
            data = read_blocks(rc.path, b * BLOCK, BLOCK)
            # a block being written may be old or new, never anything else
            with lock:
                assert any(data == stamp(b, s) for s in seeds[b]), (b, data[:16])
        for t in threads:
            t.join()
        assert not errors, errors
        st = rc.stats()
        assert st["write_cached"] > 0 and st["write_through"] > 0 and st["writeback_ios"] > 0, st
        flush(rc.path)
        assert rc.stats()["dirty_segments"] == 0
        for b in range(nblocks):
            check_block(read_blocks(loop64, b * BLOCK, BLOCK), b, last[b])
    for b in range(nblocks):
        check_block(read_blocks(loop64, b * BLOCK, BLOCK), b, last[b])
