# SPDX-License-Identifier: GPL-2.0
"""Paths no other test reached (issue 51): origin write errors under redcap
(the write's end_io with an error, the guards on the update copy and on
C-Aware's whole-segment allocation), vdisk's error path in both modes, and
STATUSTYPE_IMA of both targets.

The origin is a dm device (`sw`) whose table a reload switches between
linear (I/O reaches the loop device), flakey with error_writes (every write
fails, reads pass) and linear with an error range (a write that covers it
is written around it and fails).  Every write that fails must fail with EIO
at the caller, be counted, and leave nothing in the cache the origin does
not hold: reads through redcap afterwards return what the loop device holds,
LBA-stamped.  udev is held (dmtest.udev_held) from the stack's creation on:
the close of each writer would otherwise have blkid read the devices,
through the cache whose counts are checked."""
import errno
import os

import pytest

from dmtest import (BLOCK, Dm, check_block, dev_sectors, read_blocks, read_pattern, sh,
                    udev_held, write_stamped)

SEG = 128                        # 64 KiB segments
B = SEG * 512 // BLOCK           # 16 blocks of 4 KiB a segment
NSEGS = 16
OLD, NEW, NEWER = 1, 2, 3        # stamps' seeds: what each write wrote


def linear(dev, n):
    return f"0 {n} linear {dev} 0"


def error_writes(dev, n):
    """flakey, down all the time (up 0 s, down 1 s): every write fails, reads pass."""
    return f"0 {n} flakey {dev} 0 0 1 1 error_writes"


def with_error(dev, n, first, count):
    """@dev linearly, except sectors [first, first + count), which fail every I/O."""
    end = first + count
    return "\n".join([f"0 {first} linear {dev} 0",
                      f"{first} {count} error",
                      f"{end} {n - end} linear {dev} {end}"])


def switch(dm, table):
    dm.reload(table)
    dm.resume()


def fails_with_eio(fn, *args):
    with pytest.raises(OSError) as e:
        fn(*args)
    assert e.value.errno == errno.EIO, f"{fn.__name__}{args}: {e.value}"


def check_blocks(dev, seeds):
    """Read blocks 0 .. len(@seeds) - 1 of @dev in one request a segment and
    check block b carries stamp seeds[b]."""
    for first in range(0, len(seeds), B):
        n = min(B, len(seeds) - first)
        data = read_blocks(dev, first * BLOCK, n * BLOCK)
        for i in range(n):
            check_block(data[i * BLOCK:(i + 1) * BLOCK], first + i, seeds[first + i])


# --------------------------------------------------------------------------
# redcap: writes the origin refuses


@pytest.mark.parametrize("write_policy", ["invalidate", "update"])
def test_refused_write_fails_with_eio_and_the_cache_keeps_what_the_origin_holds(
        loop64, dmname, write_policy):
    """Segments 0-3 cached; the origin then refuses every write: a part of
    cached segment 0, the whole of cached segment 1 and a part of uncached
    segment 5 each fail with EIO, are counted as writes, and drop segments 0
    and 1 (invalidate: at the write's start; update: at its end, with no
    copy, since the write failed); nothing is updated or allocated.  Then a
    whole write of cached segment 3 over an origin that fails its blocks 4-7
    only: EIO, the origin holds the new data around the old, and so must the
    cache (it drops the segment).  Read back, every block is what the loop
    device holds; the segments not written (2) are still served from RAM.
    Last, a write the origin takes updates (or invalidates) as the policy
    says, so the test sees the policy at work."""
    n = dev_sectors(loop64)
    segs = 8
    seeds = [OLD] * (segs * B)
    write_stamped(loop64, 0, segs * B, OLD)
    with udev_held(), \
            Dm(dmname(), linear(loop64, n)) as sw, \
            Dm(dmname(), f"0 {n} redcap {sw.path} {SEG} {NSEGS} 4 policy always "
                         f"write_policy {write_policy}") as rc:
        rc.cold()
        rc.message("set", "prefetch", "0")     # one fill per segment read
        read_pattern(rc.path, range(4 * B), OLD)
        st = rc.stats()
        assert (st["segments_valid"], st["read_misses"], st["fill_ios"]) == (4, 4, 4), st

        switch(sw, error_writes(loop64, n))
        rc.message("reset_stats")
        fails_with_eio(write_stamped, rc.path, 0 * B + 3, 1, NEW)      # in cached segment 0
        fails_with_eio(write_stamped, rc.path, 1 * B, B, NEW)          # all of cached segment 1
        fails_with_eio(write_stamped, rc.path, 5 * B + 7, 1, NEW)      # in segment 5, not cached
        st = rc.settled()
        assert (st["writes"], st["write_sectors"]) == (3, 8 + SEG + 8), st
        assert (st["invalidations"], st["updates"], st["write_allocs"]) == (2, 0, 0), st
        assert (st["segments_valid"], st["fill_ios"], st["fill_errors"]) == (2, 0, 0), st

        # Blocks 4-7 of segment 3 refuse the write; the rest takes it.
        bad = 3 * B + 4
        switch(sw, with_error(loop64, n, bad * 8, 4 * 8))
        fails_with_eio(write_stamped, rc.path, 3 * B, B, NEW)
        for b in range(3 * B, 4 * B):
            if not bad <= b < bad + 4:
                seeds[b] = NEW
        st = rc.settled()
        assert (st["writes"], st["invalidations"], st["updates"], st["write_allocs"]) == \
            (4, 3, 0, 0), st
        assert st["segments_valid"] == 1, st

        switch(sw, linear(loop64, n))
        check_blocks(loop64, seeds)                 # what the origin holds
        rc.message("reset_stats")
        check_blocks(rc.path, seeds)                # one request a segment
        st = rc.stats()
        # segment 2 from RAM, the 7 others filled by a miss each
        assert (st["read_hits"], st["read_misses"], st["fill_ios"]) == (1, 7, 7), st
        assert st["segments_valid"] == 8, st

        # A write the origin takes, into cached segment 2.
        write_stamped(rc.path, 2 * B + 1, 1, NEWER)
        seeds[2 * B + 1] = NEWER
        st = rc.settled()
        if write_policy == "update":
            assert (st["updates"], st["invalidations"], st["segments_valid"]) == (1, 0, 8), st
        else:
            assert (st["updates"], st["invalidations"], st["segments_valid"]) == (0, 1, 7), st
        check_blocks(rc.path, seeds)
        check_blocks(loop64, seeds)


def test_caware_refused_whole_segment_write_allocates_nothing(loop64, dmname):
    """C-Aware's rule 6 gives a whole-segment write a free entry filled from
    its data (seen once, write_allocs 1).  Then the origin refuses writes:
    four whole-segment writes of segments 1-4 fail with EIO and allocate
    nothing (no rule is even asked, no write is timed), a fifth of the
    allocated segment 0 drops it; one over an origin that refuses blocks
    4-7 of segment 5 only fails too and caches neither its data nor the
    origin's.  Read back, every block is what the loop device holds.
    Origin writes take 20 ms (dm-delay, below the switch) so that rule 4
    does not decide instead (test_redcap_policies.py)."""
    n = dev_sectors(loop64)
    segs = 9
    seeds = [OLD] * (segs * B)
    write_stamped(loop64, 0, segs * B, OLD)
    sh("modprobe", "dm-delay")
    with udev_held(), \
            Dm(dmname(), f"0 {n} delay {loop64} 0 0 {loop64} 0 20") as slow, \
            Dm(dmname(), linear(slow.path, n)) as sw, \
            Dm(dmname(), f"0 {n} redcap {sw.path} {SEG} {NSEGS} 2 policy caware") as rc:
        rc.cold()
        write_stamped(rc.path, 8 * B, 1, OLD)        # times source_write
        write_stamped(rc.path, 0, B, NEW)            # rule 6: allocated
        seeds[:B] = [NEW] * B
        st = rc.settled()
        assert (st["write_allocs"], st["caware_rule6"], st["segments_valid"]) == (1, 1, 1), st
        before = dict(st)

        switch(sw, error_writes(slow.path, n))
        for s in range(1, 5):
            fails_with_eio(write_stamped, rc.path, s * B, B, NEW)
        fails_with_eio(write_stamped, rc.path, 0, B, NEWER)
        st = rc.settled()
        assert st["writes"] - before["writes"] == 5, st
        assert (st["write_allocs"], st["segments_valid"], st["segments_filling"]) == (1, 0, 0), st
        assert st["invalidations"] - before["invalidations"] == 1, st
        for k in [f"caware_rule{i}" for i in range(1, 7)] + \
                ["caware_source_write_n", "caware_cache_write_n", "updates", "fill_ios"]:
            assert st[k] == before[k], (k, st)

        bad = 5 * B + 4
        switch(sw, with_error(slow.path, n, bad * 8, 4 * 8))
        fails_with_eio(write_stamped, rc.path, 5 * B, B, NEW)
        for b in range(5 * B, 6 * B):
            if not bad <= b < bad + 4:
                seeds[b] = NEW
        st = rc.settled()
        assert (st["write_allocs"], st["segments_valid"], st["segments_filling"]) == (1, 0, 0), st
        for k in [f"caware_rule{i}" for i in range(1, 7)] + ["caware_source_write_n"]:
            assert st[k] == before[k], (k, st)

        switch(sw, linear(slow.path, n))
        check_blocks(loop64, seeds)
        check_blocks(rc.path, seeds)


# --------------------------------------------------------------------------
# vdisk: I/O the disk fails


def model_tables(vd):
    rows = vd.stats()["rows"]
    return vd.query("table", "r", "0", str(rows)), vd.query("table", "w", "0", str(rows))


LEARNT = ("read_samples", "write_samples", "model_read_samples", "model_write_samples",
          "cells_filled", "mean_read_us", "mean_write_us")


@pytest.mark.parametrize("mode", ["measure", "emulate"])
def test_vdisk_counts_failed_io_and_learns_nothing_from_it(loop64, dmname, mode):
    """A vdisk over a disk that fails every I/O (the error target): 10 reads
    and 5 writes each fail with EIO at the caller and count once in
    `errors`; no sample is taken and both model tables are unchanged.  Once
    the disk works again, a read is sampled and learnt as before."""
    n = dev_sectors(loop64)
    write_stamped(loop64, 0, 64, OLD)
    features = " 2 mode emulate" if mode == "emulate" else ""
    with udev_held(), \
            Dm(dmname(), linear(loop64, n)) as sw, \
            Dm(dmname(), f"0 {n} vdisk {sw.path}{features}") as vd:
        read_pattern(vd.path, range(0, 64, 4), OLD)
        write_stamped(vd.path, 32, 4, NEW)
        st = vd.stats()
        assert st["mode"] == mode and st["train"] == "on", st
        assert st["model_read_samples"] >= 16 and st["model_write_samples"] >= 1, st
        before, tables = st, model_tables(vd)

        switch(sw, f"0 {n} error")
        for b in range(10):
            fails_with_eio(read_blocks, vd.path, (b * 5) * BLOCK, BLOCK)
        for b in range(5):
            fails_with_eio(write_stamped, vd.path, 40 + b, 1, NEWER)
        st = vd.stats()
        assert st["errors"] - before["errors"] == 15, st
        assert {k: st[k] for k in LEARNT} == {k: before[k] for k in LEARNT}, st
        assert model_tables(vd) == tables

        switch(sw, linear(loop64, n))
        read_pattern(vd.path, [1], OLD)
        st = vd.stats()
        assert st["errors"] - before["errors"] == 15, st
        assert (st["read_samples"] - before["read_samples"],
                st["model_read_samples"] - before["model_read_samples"]) == (1, 1), st
    check_blocks(loop64, [OLD] * 32 + [NEW] * 4 + [OLD] * 28)


# --------------------------------------------------------------------------
# STATUSTYPE_IMA


IMA = "/sys/kernel/security/ima"
IMA_RULE = "measure func=CRITICAL_DATA label=device-mapper template=ima-buf\n"


@pytest.fixture(scope="module")
def ima():
    """The IMA measurement log, measuring device-mapper's critical data.
    Debian's kernels have IMA with no policy of their own (and no
    CONFIG_IMA_WRITE_POLICY): the policy file takes one write a boot, then
    goes away.  So it is written here if it is still there; if it is gone,
    it was written earlier in this boot (by this file: no other test writes
    one), and the test checks that table loads are measured all the same.
    Every later table load of the guest suite adds an entry to the log: a
    few hundred bytes each."""
    if not os.path.isdir(IMA):
        sh("mount", "-t", "securityfs", "securityfs", "/sys/kernel/security", check=False)
    assert os.path.isdir(IMA), "no IMA in securityfs: the kernel has no CONFIG_IMA?"
    if os.path.exists(f"{IMA}/policy"):
        with open(f"{IMA}/policy", "w") as f:
            f.write(IMA_RULE)
    return IMA


def table_loads(name):
    """The payloads of the dm_table_load measurements of device @name, oldest
    first: "dm_version=...;name=<name>,uuid=...;target_index=0,...;"."""
    out = []
    with open(f"{IMA}/ascii_runtime_measurements") as f:
        for line in f:
            # <pcr> <template hash> ima-buf <algo:digest> dm_table_load <hex payload>
            w = line.split()
            if len(w) == 6 and w[2] == "ima-buf" and w[4] == "dm_table_load":
                data = bytes.fromhex(w[5]).decode()
                if f";name={name}," in data:
                    out.append(data)
    return out


def targets_part(data):
    """What the targets emitted, after dm's own "...num_targets=N;"."""
    i = data.index("num_targets=")
    return data[data.index(";", i) + 1:]


def target_version(name):
    for line in sh("dmsetup", "targets").stdout.splitlines():
        w = line.split()
        if w[0] == name:
            return w[1].lstrip("v")
    raise AssertionError(f"no target {name}")


def expect_ima(lines):
    """dm-ima's per-target prefix, then what each target emitted."""
    return "".join(f"target_index={i},target_begin={b},target_len={n},{t}"
                   for i, (b, n, t) in enumerate(lines))


def redcap_ima(origin, seg, nsegs, policy="adaptive+caware", write_policy="invalidate",
               estimator="spk", model=None):
    return (f"target_name=redcap,target_version={target_version('redcap')},"
            f"origin_name={origin},segment_sectors={seg},segments={nsegs},policy={policy},"
            f"write_policy={write_policy},estimator={estimator}"
            + (f",model_name={model}" if model else "") + ";")


def vdisk_ima(dev, capacity, mode="measure", profile="hdd7200", rows=64):
    return (f"target_name=vdisk,target_version={target_version('vdisk')},"
            f"device_name={dev},mode={mode},profile={profile},capacity={capacity},rows={rows};")


def measure(dm):
    """`dmsetup measure` (DM_IMA_MEASUREMENT_FLAG): the live table's
    STATUSTYPE_IMA lines, "<start> <len> <target> <what the target emitted>"."""
    return sh("dmsetup", "measure", dm.name).stdout.strip()


def test_ima_measurements_of_both_targets_on_load_and_reload(loop64, dmname, ima):
    """Each table load of a vdisk and of a redcap device is measured into
    the IMA log with exactly the fields STATUSTYPE_IMA emits (redcap:
    origin_name, segment_sectors, segments, policy, write_policy,
    estimator, model_name when the table names a model; vdisk: device_name, mode, profile, capacity, rows), the
    features of the table loaded, for every target of a table, and again
    on a reload.  `dmsetup measure` asks the live table the same: after a
    message changes redcap's policy, it shows the cache's (the live
    table's) choices."""
    n = dev_sectors(loop64)
    lo = f"{os.major(os.stat(loop64).st_rdev)}:{os.minor(os.stat(loop64).st_rdev)}"
    with udev_held(), \
            Dm(dmname(), f"0 {n} vdisk {loop64} 6 mode emulate profile hdd15k rows 32") as vd:
        vd_mm = f"{os.major(os.stat(vd.path).st_rdev)}:{os.minor(os.stat(vd.path).st_rdev)}"
        loads = table_loads(vd.name)
        assert loads, ("no dm_table_load measurement of the table loaded: this boot's IMA "
                       "policy does not measure device-mapper's critical data (another "
                       "policy was written before this test?)")
        assert len(loads) == 1, loads
        assert targets_part(loads[0]) == expect_ima(
            [(0, n, vdisk_ima(lo, n, "emulate", "hdd15k", 32))])
        vd.reload(f"0 {n} vdisk {loop64} 4 capacity {2 * n} rows 32")
        vd.resume()
        loads = table_loads(vd.name)
        assert len(loads) == 2, loads
        assert targets_part(loads[1]) == expect_ima([(0, n, vdisk_ima(lo, 2 * n, rows=32))])
        assert measure(vd) == f"0 {n} vdisk " + vdisk_ima(lo, 2 * n, rows=32)

        with Dm(dmname(), f"0 {n} redcap {vd.path} 256 16 6 policy adaptive+caware "
                          "write_policy update estimator vdisk") as rc:
            loads = table_loads(rc.name)
            assert len(loads) == 1, loads
            assert targets_part(loads[0]) == expect_ima(
                [(0, n, redcap_ima(vd_mm, 256, 16, "adaptive+caware", "update", "vdisk"))])
            rc.message("policy", "off")
            assert measure(rc) == f"0 {n} redcap " + redcap_ima(vd_mm, 256, 16, "off",
                                                                "update", "vdisk")
            # the same geometry: the cache stays, the new table's features
            # show, here the target's own choices: its default policy, and
            # the estimator vdisk over a vdisk origin
            rc.reload(f"0 {n} redcap {vd.path} 256 16")
            loads = table_loads(rc.name)
            assert len(loads) == 2, loads
            assert targets_part(loads[1]) == expect_ima(
                [(0, n, redcap_ima(vd_mm, 256, 16, estimator="vdisk"))])
            rc.resume()
            # another geometry and two targets, the second a vdisk
            h = n // 2
            rc.reload(f"0 {h} redcap {loop64} 128 32 2 write_policy update\n"
                      f"{h} {h} vdisk {loop64} 4 mode emulate rows 16")
            rc.resume()
            loads = table_loads(rc.name)
            assert len(loads) == 3, loads
            assert targets_part(loads[2]) == expect_ima(
                [(0, h, redcap_ima(lo, 128, 32, write_policy="update")),
                 (h, h, vdisk_ima(lo, h, "emulate", rows=16))])
            assert measure(rc).splitlines() == [
                f"0 {h} redcap " + redcap_ima(lo, 128, 32, write_policy="update"),
                f"{h} {h} vdisk " + vdisk_ima(lo, h, "emulate", rows=16)]
            # a table that names its model measures it too (TABLE shows it)
            rc.reload(f"0 {n} redcap {loop64} 128 32 4 estimator vdisk model {vd.path}")
            rc.resume()
            loads = table_loads(rc.name)
            assert len(loads) == 4, loads
            ima = redcap_ima(lo, 128, 32, estimator="vdisk", model=vd_mm)
            assert targets_part(loads[3]) == expect_ima([(0, n, ima)])
            assert measure(rc) == f"0 {n} redcap " + ima
