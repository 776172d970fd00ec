# SPDX-License-Identifier: GPL-2.0
"""A cache's life outside the data path: drop_cache while segments are
busy, a table load that fails or is killed while it allocates the cache's
pages, and two loads racing for one cache.  The windows are held open by
dm-delay below (released by the test) or by the test builds' fi_* fault
points, never by the guest's speed."""
import os
import re
import signal
import subprocess
import time

import pytest

from dmtest import (BLOCK, HELD_MS, SLOW, Dm, Outcome, check_sectors, dev_sectors,
                    in_kernel_function, kmsg, read_blocks, read_pattern, set_param, sh,
                    slow_down, strip_dm_prefix, write_stamped)

SEG = 256                        # 128 KiB segments
SEG_BLOCKS = SEG * 512 // BLOCK
SEED = 23
MIB = 1 << 20


def until(what, cond, timeout=30):
    deadline = time.monotonic() + timeout * SLOW
    while not cond():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def free_memory():
    """Free memory, the pages on the per-CPU free lists included: 6.12
    keeps up to a few hundred MiB freed at once there (its lists' limits
    grow with what is freed), which MemFree and MemAvailable leave out."""
    pages = 0
    with open("/proc/zoneinfo") as f:
        for line in f:
            m = re.match(r"\s*(pages free|count:)\s+(\d+)", line)
            if m:
                pages += int(m.group(2))
    return pages * os.sysconf("SC_PAGESIZE")


def table_state(name):
    """dmsetup info's "Tables present" of @name: None, LIVE, INACTIVE, ..."""
    out = sh("dmsetup", "info", name).stdout
    return re.search(r"^Tables present:\s*(.*)$", out, re.M).group(1).strip()


def dm_errors(lines):
    return [strip_dm_prefix(line) for line in lines if line.startswith("device-mapper:")]


# --------------------------------------------------------------------------
# drop_cache with busy segments


def test_drop_cache_waits_for_a_busy_segment_then_fails_busy_and_loses_nothing(
        loop64, dmname, fault):
    """A fill held below (dm-delay, until the test lets it go) pins its
    segment.  drop_cache drops the two idle segments, waits for the busy
    one, and after its time limit (fi_drop_timeout_ms: 300 ms) fails with
    EBUSY, saying how many are busy.  The held read then completes with the
    origin's data.  A second drop_cache, with a limit no guest reaches,
    waits while the fill is held and succeeds once it is let go: nothing
    is left cached."""
    write_stamped(loop64, 0, 8 * SEG_BLOCKS, SEED)
    sh("modprobe", "dm-delay")
    n = dev_sectors(loop64)
    with Dm(dmname(), f"0 {n} delay {loop64} 0 0") as slow, \
            Dm(dmname(), f"0 {n} redcap {slow.path} {SEG} 8 2 policy always") as rc:
        rc.cold()
        rc.message("set", "prefetch", "0")     # a fill per miss, no pair
        read_pattern(rc.path, [2 * SEG_BLOCKS, 3 * SEG_BLOCKS], SEED)
        assert rc.stats()["segments_valid"] == 2
        fault("fi_drop_timeout_ms", 300)
        with slow_down(slow, loop64, n, ms=HELD_MS), kmsg() as k:
            reader = Outcome(read_blocks, rc.path, 0, SEG * 512)
            until("the read never started its fill", lambda: rc.stats()["segments_filling"])
            r = rc.message("drop_cache", check=False)
            assert (r.returncode, r.stderr) == \
                (1, f"message on {rc.name}: Device or resource busy"), r
            assert "drop_cache: 1 segments still busy" in dm_errors(k.lines())
            st = rc.stats()
            assert (st["segments_valid"], st["segments_filling"]) == (0, 1), st
            assert reader.is_alive(), "the held read completed while held"

            set_param("fi_drop_timeout_ms", 600000)
            drop = subprocess.Popen(["dmsetup", "message", rc.name, "0", "drop_cache"],
                                    stderr=subprocess.PIPE, text=True)
            try:
                until("drop_cache never waited in the kernel",
                      lambda: in_kernel_function(drop.pid, "(redcap_message|redcap_msg_drop_cache)"))
                assert drop.poll() is None, "drop_cache returned with a fill held"
            except BaseException:
                drop.kill()
                raise
        # let go: the fill completes, the read returns, the drop ends
        check_sectors(reader.result(), 0, SEED, "the held read: ")
        assert drop.wait(timeout=60 * SLOW) == 0, drop.stderr.read()
        st = rc.stats()
        assert (st["segments_valid"], st["segments_filling"]) == (0, 0), st
        assert (st["fill_ios"], st["fill_errors"], st["fill_stale"]) == (3, 0, 0), st
        read_pattern(rc.path, range(8 * SEG_BLOCKS), SEED)


# --------------------------------------------------------------------------
# The constructor's page allocation


def create_fails_and_leaves_nothing(name, table, error):
    """dmsetup create @name of @table fails with ENOMEM and the target's
    @error, leaves no device, and keeps less than 32 MiB of memory."""
    free = free_memory()
    with kmsg() as k:
        r = sh("dmsetup", "create", name, input=table + "\n", check=False)
        errors = dm_errors(k.lines())
    assert r.returncode == 1, r
    assert re.fullmatch(rf"device-mapper: reload ioctl on {name} \(\d+:\d+\) failed: "
                        r"Cannot allocate memory\nCommand failed\.\n", r.stderr), r.stderr
    assert any(re.fullmatch(rf"\d+:\d+: redcap: {error} \(-ENOMEM\)", e)
               for e in errors), errors
    assert sh("dmsetup", "info", name, check=False).returncode == 1, "a device is left"
    kept = free - free_memory()
    assert kept < 32 * MIB, f"the failed load kept {kept // MIB} MiB"


def test_a_page_allocation_failing_partway_fails_the_load_and_frees_every_page(
        loop64, dmname, fault):
    """A 256 MiB cache whose 60000th page cannot be had (fi_ctr_alloc_fail):
    dmsetup create fails with the target's error, no device is left, the
    234 MiB taken before the failure are given back, and the same create
    then succeeds and serves the origin's data."""
    write_stamped(loop64, 0, 4 * SEG_BLOCKS, SEED)
    n = dev_sectors(loop64)
    segs = (256 * MIB) // (SEG * 512)
    table = f"0 {n} redcap {loop64} {SEG} {segs} 2 policy always"
    name = dmname()
    fault("fi_ctr_alloc_fail", 60000)
    create_fails_and_leaves_nothing(name, table, "Cannot allocate cache memory")

    set_param("fi_ctr_alloc_fail", 0)
    with Dm(name, table) as rc:
        assert rc.stats()["segments"] == segs
        read_pattern(rc.path, range(4 * SEG_BLOCKS), SEED)


def test_a_shrinker_that_cannot_be_registered_fails_the_load_and_the_live_table_serves_on(
        loop64, dmname, fault):
    """A new cache's shrinker cannot be registered (fi_shrinker_fail): the
    create fails with the target's error, no device is left and the cache's
    128 MiB are given back.  On a live device, a reload with a new geometry
    (a new cache) fails the same way and the live table serves on from its
    cache; a reload of the same geometry keeps the live cache, and its
    shrinker, and loads."""
    write_stamped(loop64, 0, 4 * SEG_BLOCKS, SEED)
    n = dev_sectors(loop64)
    segs = (128 * MIB) // (SEG * 512)
    table = f"0 {n} redcap {loop64} {SEG} {segs} 2 policy always"
    name = dmname()
    fault("fi_shrinker_fail", 1)
    create_fails_and_leaves_nothing(name, table, "Cannot register shrinker")

    set_param("fi_shrinker_fail", 0)
    with Dm(name, table) as rc:
        rc.cold()
        rc.message("set", "prefetch", "0")
        read_pattern(rc.path, range(4 * SEG_BLOCKS), SEED)
        set_param("fi_shrinker_fail", 1)
        with kmsg() as k:
            with pytest.raises(RuntimeError, match="Cannot allocate memory"):
                rc.reload(f"0 {n} redcap {loop64} {SEG} {segs // 2} 2 policy always")
            errors = dm_errors(k.lines())
        assert any(e.endswith("redcap: Cannot register shrinker (-ENOMEM)") for e in errors), \
            errors
        assert table_state(name) == "LIVE"
        rc.reload(table)
        rc.suspend()
        rc.resume()
        set_param("fi_shrinker_fail", 0)
        sh("udevadm", "settle")
        rc.settled()                                # udev's probe read what it reads
        before = rc.stats()
        read_pattern(rc.path, range(4 * SEG_BLOCKS), SEED)
        st = rc.stats()
        assert st["segments"] == segs
        assert (st["read_misses"] - before["read_misses"],
                st["read_hits"] - before["read_hits"]) == (0, 4 * SEG_BLOCKS), st


def test_a_load_killed_while_it_allocates_stops_at_once_and_loads_nothing(
        loop64, dmname, fault):
    """dmsetup create of a 32 MiB cache whose every page takes 1 ms
    (fi_ctr_page_delay_us), killed once it is in the constructor: the
    constructor stops at the next page and says why, no table is loaded
    (without the check it would have allocated on for 8 s and left an
    inactive table behind the dead dmsetup), and once the empty device is
    removed the same create succeeds."""
    write_stamped(loop64, 0, 4 * SEG_BLOCKS, SEED)
    n = dev_sectors(loop64)
    segs = (32 * MIB) // (SEG * 512)
    table = f"0 {n} redcap {loop64} {SEG} {segs} 2 policy always"
    name = dmname()
    fault("fi_ctr_page_delay_us", 1000)
    with kmsg() as k:
        p = subprocess.Popen(["dmsetup", "create", name], stdin=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        try:
            p.stdin.write(table + "\n")
            p.stdin.close()
            until("dmsetup create never reached the constructor",
                  lambda: in_kernel_function(p.pid, "redcap_ctr"))
            p.send_signal(signal.SIGKILL)
            p.wait(timeout=120 * SLOW)
        finally:
            p.kill()
            p.wait()
        errors = dm_errors(k.lines())
    set_param("fi_ctr_page_delay_us", 0)
    try:
        # dmsetup died between its create and its load: the device is
        # there, with no table.
        assert table_state(name) == "None", "the killed load loaded its table"
        assert any(re.fullmatch(r"\d+:\d+: redcap: Interrupted while allocating cache "
                                r"memory \(-EINTR\)", e) for e in errors), errors
    finally:
        sh("dmsetup", "remove", name, check=False)
    with Dm(name, table) as rc:
        read_pattern(rc.path, range(4 * SEG_BLOCKS), SEED)


# --------------------------------------------------------------------------
# A load racing a resume for one cache


def test_a_load_while_a_resume_hands_the_cache_over_shares_the_one_cache(
        loop64, dmname, fault):
    """A 128 MiB cache holds 16 segments.  A reload of the same geometry is
    resumed, its preresume held 2 s (fi_preresume_delay_us): the new table
    is live, the old one not yet destroyed.  A second reload's constructor
    runs right then, while the cache has two tables: it takes the same
    cache, allocating nothing (two loads of one device are serialised by dm
    core's type lock, so this is the race a table load can have with
    another table of its device).  After both resumes one cache is left:
    128 MiB in use, not 256; the 16 segments are served from RAM with the
    origin's data; removal gives the memory back."""
    write_stamped(loop64, 0, 16 * SEG_BLOCKS, SEED)
    n = dev_sectors(loop64)
    segs = (128 * MIB) // (SEG * 512)
    table = f"0 {n} redcap {loop64} {SEG} {segs} 2 policy always"
    segments = [s * SEG_BLOCKS for s in range(16)]
    free = free_memory()
    with Dm(dmname(), table) as rc:
        rc.cold()
        read_pattern(rc.path, segments, SEED, bs=SEG * 512)
        one = free - free_memory()
        assert 96 * MIB < one < 192 * MIB, f"one cache took {one // MIB} MiB"
        rc.reload(table.replace(" 2 policy always", " 4 policy always write_policy update"))
        fault("fi_preresume_delay_us", 2000000)
        resume = subprocess.Popen(["dmsetup", "resume", rc.name], stderr=subprocess.PIPE,
                                  text=True)
        try:
            until("the reload's new table never went live",
                  lambda: in_kernel_function(resume.pid, "redcap_preresume"))
            assert rc.table().endswith("write_policy update"), rc.table()
            before = free_memory()
            rc.reload(table)
            took = before - free_memory()
            assert resume.poll() is None, "the resume ended before the second load"
        finally:
            assert resume.wait(timeout=60 * SLOW) == 0, resume.stderr.read()
        set_param("fi_preresume_delay_us", 0)
        assert took < 32 * MIB, f"the load during the hand-over took {took // MIB} MiB"
        rc.resume()
        rc.message("reset_stats")
        read_pattern(rc.path, segments, SEED, bs=SEG * 512)
        st = rc.stats()
        used = free - free_memory()
        # (udev's probe after each resume cached a few segments more)
        assert st["segments"] == segs and st["segments_valid"] >= 16, st
        assert (st["read_hits"], st["read_misses"], st["fill_ios"]) == (16, 0, 0), st
        assert used < one + 32 * MIB, f"{used // MIB} MiB in use, one cache took {one // MIB}"
    kept = free - free_memory()
    assert kept < 32 * MIB, f"{kept // MIB} MiB kept after removal"
