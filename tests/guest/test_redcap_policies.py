# SPDX-License-Identifier: GPL-2.0
"""redcap's adaptive policies on an emulated hard disk: activation-deactivation
(estimators spk and vdisk) and C-Aware placement, and switching policies
under load without losing data.

The stack is the one the docs recommend: redcap over a vdisk in measure mode
(the latency model) over the disk, here a vdisk emulating a 7200 rpm drive
over a RAM disk.  Nothing asserts on wall-clock time: the emulated drive's
own accounting (emu_busy_us, the modelled service time of every request it
served) is deterministic for a request stream and seed, so "faster than the
bare disk" is judged on the drive's busy time for the same fio job."""
import contextlib
import os
import threading
import time

import pytest

from dmtest import (Dm, brd_device, dev_sectors, fio, read_pattern, scratch, sh,
                    write_stamped)

BRD_MIB = 256
SEG, NSEGS = 256, 64            # 64 x 128 KiB, the paper's best LKR geometry


@pytest.fixture(scope="module")
def ram():
    with brd_device(BRD_MIB) as dev:
        sh("dd", "if=/dev/urandom", f"of={dev}", "bs=1M", f"count={BRD_MIB}",
           "oflag=direct", "status=none")
        yield dev


def drive_prices(seek_rot_ns, overhead_ns, media_mbps, rows=64):
    """A hard disk's read prices by model row, {row: (ns at distance 0, ns
    elsewhere)}: the overhead and the transfer at the media rate, and
    elsewhere a seek and rotation on top."""
    def xfer(row):
        return (row + 1) * 4096 * 1000 // media_mbps
    return {r: (overhead_ns + xfer(r), seek_rot_ns + overhead_ns + xfer(r)) for r in range(rows)}


# The pinned models.  A 7200 rpm disk whose 128 KiB fill costs a random
# 4 KiB read's seek and rotation plus 2.5 ms of transfer (+20 %: a loss the
# estimator sees plainly), and the hdd15k: 5.5 ms of seek and rotation,
# 50 MB/s.  Prices learnt from measured latencies follow the host's speed
# (a 4 KiB read right after another priced at several ms under load), and
# the decisions with them; pinned, every decision is a function of the
# I/O pattern only, and the tests count exactly.
PRICES_7200 = drive_prices(12500000, 150000, 50)
PRICES_15K = drive_prices(5500000, 100000, 50)


def pin(meas, prices):
    """@meas's read model, not learning, with rows of @prices ({row: (ns at
    distance 0, ns elsewhere)}) in every column and the other rows empty."""
    st = meas.stats()
    meas.message("train", "off")
    for row in range(st["rows"]):
        seq, other = prices.get(row, (None, None))
        cells = ([f"0:64:{64 * seq}"] + [f"{c}:64:{64 * other}" for c in range(1, st["cols"])]
                 if seq else [])
        meas.message("load", "r", str(row), *cells)


@contextlib.contextmanager
def pinned_disk(ram, name, profile, prices, drive=""):
    """emulate @profile (with @drive's features) over the RAM disk, and the
    measuring vdisk over it, its model pinned to @prices."""
    n = dev_sectors(ram)
    feats = f"mode emulate profile {profile} {drive}".split()
    with Dm(f"{name}-emu", f"0 {n} vdisk {ram} {len(feats)} {' '.join(feats)}") as emu, \
            Dm(f"{name}-meas", f"0 {n} vdisk {emu.path}") as meas:
        pin(meas, prices)
        yield emu, meas


@pytest.fixture(scope="module")
def disk(ram):
    with pinned_disk(ram, "pol", "hdd7200", PRICES_7200) as d:
        yield d


@pytest.fixture(scope="module")
def slow_disk(ram):
    """A hdd7200 with a 5 MB/s media rate and no read-ahead, for what is
    judged on measured times (estimator spk, C-Aware's means): its 128 KiB
    fill takes at least 26 ms of transfer, more than any 4 KiB read takes
    in all (a full-stroke seek, a whole rotation: 23 ms), so the host's
    speed, which adds to both, cannot turn a comparison of the two; and
    with no read-ahead, the time between requests does not change what
    the drive serves."""
    with pinned_disk(ram, "slow", "hdd7200", PRICES_7200, "media_mbps 5 readahead 0") as d:
        yield d


def drive_busy_us(emu, dev, *fio_args):
    """The emulated drive's busy time for one fio job on @dev."""
    emu.message("reset_stats")
    r = fio(dev, *fio_args)
    return emu.stats()["emu_busy_us"], r


@pytest.fixture
def redcap(disk, dmname):
    emu, meas = disk
    made = []

    def make(features, seg=SEG, nsegs=NSEGS):
        d = Dm(dmname(), f"0 {dev_sectors(meas.path)} redcap {meas.path} {seg} {nsegs} "
               f"{len(features.split())} {features}")
        made.append(d)
        d.cold()
        return d
    yield make
    for d in made:
        d.remove()


_bare = {}


def compare(disk, rc, *fio_args):
    """The drive's busy time for the same job on the bare disk and through
    redcap; prints both (the figures for the closing note).  The bare run
    of a job is measured once per module: every test of a job compares
    with the same figure, and the suite saves a run per repeat."""
    emu, meas = disk
    if (emu.name, fio_args) not in _bare:
        _bare[emu.name, fio_args] = drive_busy_us(emu, meas.path, *fio_args)
    bare, rb = _bare[emu.name, fio_args]
    cached, rr = drive_busy_us(emu, rc.path, *fio_args)
    st = rc.stats()
    print(f"{' '.join(fio_args)}: drive busy bare {bare} us, redcap {cached} us "
          f"({cached / bare:.3f}); fio mean {rb['lat_us']:.0f} vs {rr['lat_us']:.0f} us; "
          f"state {st['state']}, switches {st['switches']}, windows {st['windows']}, "
          f"cache {st['cache_time_us']} us, est. disk {st['est_disk_time_us']} us; "
          f"fills {st['fill_ios']}, budget bypassed {st['read_bypassed_budget']}, "
          f"spent {st['budget_spent_us']} us, earned {st['budget_earned_us']} us")
    return bare, cached, st


RANDOM = ("--rw=randread", "--bs=4k", "--number_ios=600", "--randseed=11")
RANDOM_SHORT = ("--rw=randread", "--bs=4k", "--number_ios=256", "--randseed=11")
STRIDED = ("--rw=read:8k", "--bs=4k", "--size=16m", "--offset=64m")
SEQUENTIAL = ("--rw=read", "--bs=64k", "--size=64m", "--offset=128m")


@pytest.mark.parametrize("estimator", ["spk", "vdisk"])
def test_adaptive_turns_off_on_random_reads(disk, slow_disk, dmname, estimator):
    """Every miss fills a segment for one 4 KiB read: the cache loses (the
    transfer of the rest of the segment), goes inactive at the first
    verdict (the first window's 128 reads: a hit among its first 32 keeps
    vdisk's from coming early) and stays there for the three windows after
    it (600 reads in all).  Activation-deactivation
    alone: the budget, which would keep most misses from filling, is off.

    vdisk judges on the pinned model (a fill 20 % dearer than the read),
    and the run costs the drive at most 5 % more than the bare disk.  spk
    judges on measured
    times: while inactive it compares the bare reads measured now with the
    fills measured in its first window, and on a drive where a fill costs
    some 6 % more than a read the guest's timers drifted past that
    (switches 2 once on CI); so spk is judged on the slow drive, where a
    fill takes longer than any read, after its whole first window."""
    emu, meas = slow_disk if estimator == "spk" else disk
    with Dm(dmname(), f"0 {dev_sectors(meas.path)} redcap {meas.path} {SEG} {NSEGS} "
            f"4 policy adaptive estimator {estimator}") as rc:
        rc.cold()
        rc.message("set", "budget_share", "0")
        rc.message("set", "prefetch", "0")     # a fill per miss, no pairs
        if estimator == "vdisk":
            bare, cached, st = compare(disk, rc, *RANDOM)
            assert cached <= 1.05 * bare
        else:
            fio(rc.path, *RANDOM)
            st = rc.stats()
    print(f"{estimator}: windows {st['windows']}, unjudged {st['windows_unjudged']}, "
          f"misses {st['read_misses']}, hits {st['read_hits']}, "
          f"bypassed {st['read_bypassed']}, sim {st['sim_misses']}/{st['sim_hits']}")
    assert (st["state"], st["switches"]) == ("inactive", 1), st
    assert (st["windows"], st["windows_unjudged"]) == (4, 0), st
    # the first window's 128 reads were served while active (3 of them hits:
    # no early verdict), and every miss filled; no fill after
    assert (st["read_misses"], st["read_hits"]) == (125, 3), st
    assert st["fill_ios"] == st["read_misses"], st
    # judged while off on the simulated cache: the rest of the run
    assert st["sim_misses"] + st["sim_hits"] == st["read_bypassed"] == 472, st
    assert st["read_bypassed_inactive"] == st["read_bypassed"]


@pytest.mark.parametrize("estimator", ["spk", "vdisk"])
def test_the_first_verdict_comes_early_when_nothing_was_served(disk, redcap, estimator):
    """32 reads of 4 KiB, each in a segment of its own (384 KiB apart), so
    nothing is served from RAM, the budget off: with estimator vdisk the
    first window is judged at the 32nd read, a quarter of it (the early
    verdict; whether the cache goes off is the model's call on a short
    stride); with spk it stays whole (128 reads) and nothing is judged
    yet."""
    rc = redcap(f"policy adaptive estimator {estimator}")
    rc.message("set", "budget_share", "0")
    fio(rc.path, "--rw=read:380k", "--bs=4k", "--number_ios=32", "--offset=16m")
    st = rc.stats()
    assert (st["reads"], st["read_misses"], st["read_hits"], st["read_hits_waited"]) == \
        (32, 32, 0, 0)
    assert (st["windows"], st["windows_unjudged"]) == ((1, 0) if estimator == "vdisk" else (0, 0))


@pytest.fixture(scope="module")
def disk15k(ram):
    """The hdd15k, its model pinned: a random 4 KiB read costs 5.68 ms, and
    a 128 KiB fill 2.54 ms more (the bench's largest loss, +17..+19 %
    before the budget)."""
    with pinned_disk(ram, "pol15", "hdd15k", PRICES_15K) as d:
        yield d


def test_budget_keeps_a_cold_cache_from_filling_random_misses(disk15k, dmname):
    """adaptive+caware as redcapctl create builds it, on 256 random reads of
    the hdd15k (the bench's run).  Without the budget (share 0) a cold
    cache fills every miss until it is full (C-Aware's rule 6); the first
    verdict comes after 128 reads.  With it, five fills start, then one
    each time the reads' share (1/128) has paid for one: what the fills
    cost beyond their reads stays within what the reads earned and five
    fills (six at their mean: fills differ), and the drive works less than
    without the budget, at most 3 % more than on the bare disk."""
    emu, meas = disk15k
    runs = {}
    for share in (0, 128):
        with Dm(dmname(), f"0 {dev_sectors(meas.path)} redcap {meas.path} {SEG} {NSEGS} "
                "4 policy adaptive+caware estimator vdisk") as rc:
            rc.cold()
            rc.message("set", "budget_share", str(share))
            bare, runs[share], st = compare(disk15k, rc, *RANDOM_SHORT)
        assert (st["budget_share"], st["budget_cap_ms"]) == (share, 100)
        assert st["read_bypassed"] >= st["read_bypassed_budget"] + st["caware_bypassed"]
        if not share:
            assert st["read_bypassed_budget"] == 0 and st["budget_spent_us"] == 0
            assert st["read_misses"] >= NSEGS
    # five fills (the overdraft), the other misses refused
    assert (st["read_misses"], st["read_bypassed_budget"]) == (5, 27), st
    fill_us = st["budget_spent_us"] / st["read_misses"]
    assert st["budget_spent_us"] <= st["budget_earned_us"] + 6 * fill_us
    assert -6 * fill_us <= st["budget_us"] <= 100000
    assert runs[128] < runs[0]
    assert runs[128] <= 1.03 * bare


# spk is not judged here: it prices both sides with the wall-clock
# latencies it measures, and on strided and sequential reads the two sides
# cost about the same, so its verdict follows the host's speed (strided
# spk ended inactive after 3 switches in one of five runs under load,
# issue 51).  Its decisions on these patterns are the bench's to measure,
# under --icount (make bench, configuration adaptive-spk).
def test_adaptive_stays_on_for_strided_reads(disk, redcap):
    """4 KiB read, 8 KiB skip: one 128 KiB fill serves ten reads.  The
    paper's v1 flapped here; the state must hold, and the drive must work
    at least 30 % less than on the bare disk."""
    rc = redcap("policy adaptive estimator vdisk")
    bare, cached, st = compare(disk, rc, *STRIDED)
    assert (st["state"], st["switches"]) == ("active", 0), st
    assert st["read_hits"] > 8 * st["read_misses"]
    assert cached <= 0.70 * bare


def test_adaptive_does_not_flap_on_sequential_reads(disk, redcap):
    """64 KiB sequential reads (IOR-R): the drive's read-ahead serves the bare
    disk as well as the cache does; the state may settle either way but
    must not flap."""
    rc = redcap("policy adaptive estimator vdisk")
    bare, cached, st = compare(disk, rc, *SEQUENTIAL)
    # Even on the pinned model (a 128 KiB fill priced below two 64 KiB
    # reads) vdisk went off once in three runs: its cache side priced 16
    # fills more as seeks (issue 51's note); so a bound, not a count
    assert st["switches"] <= 2, st
    assert st["windows"] >= 7
    # With the same decisions in every run (2 switches, 78 fills, 504
    # misses refused by the budget) the drive's busy time still follows the
    # gaps between requests, which follow the host: 1.005-1.050 of the bare
    # disk's in 7 runs on 6.1 (CI on 48b0272 failed at 1.0502 against a
    # 1.05 bound).  A fill that broke the drive's read-ahead would cost
    # twice that; so 10 %, not 5.
    assert cached <= 1.10 * bare


RULE3 = 0


def test_caware_bypasses_random_misses_once_full(slow_disk, dmname):
    """C-Aware on random reads: while the cache is not full every miss
    fills (rule 6); once it is full, each miss is judged on the mean
    response times of the reads the cache served against those sent to
    the disk, and every 16th miss rule 5 sends to the disk is cached all
    the same, a probe.  decay 0: the means are not halved by the clock.

    The counts are asserted as identities that hold whatever the means
    were.  How many misses rules 1 and 5 take follows the host's timing: a
    stall of the host while a read is on the disk can inflate its mean,
    and with decay 0 nothing brings it down once rule 1 sends no more
    reads there (under three guests at once: rule 1 429, rule 5 89).  That
    rule 5 wins on random misses is the simulator's test
    (sim_caware_bypasses_random_misses_once_full), on modelled time.  Here
    only the first judged miss is certain, when no read has gone to the
    disk yet: the disk's mean is 0, and rule 5 takes it.  A read of udev's
    probe that bypassed while cold() dropped the cache (the means are not
    reset with the counters) gives the disk a mean, and then rule 1 can
    take them all (seen once, a fresh clone's make check beside three
    other guests, 6.12: rule 1 512, rule 5 0)."""
    emu, meas = slow_disk
    with Dm(dmname(), f"0 {dev_sectors(meas.path)} redcap {meas.path} {SEG} {NSEGS} "
            "2 policy caware") as rc:
        rc.cold()
        rc.message("set", "decay_ms", "0")
        rc.message("set", "prefetch", "0")     # every fill a miss's own, no pair
        fio(rc.path, *RANDOM)
        st = rc.stats()
    print(" ".join(f"{k}={v}" for k, v in st.items() if k.startswith(("caware_", "read_"))))
    assert st["state"] == "active"
    assert (st["caware_rule6"], st["caware_rule3"], st["caware_decays"]) \
        == (NSEGS, RULE3, 0), st
    judged = st["reads"] - st["read_hits"] - NSEGS - RULE3
    rule1, rule5 = st["caware_rule1"], st["caware_rule5"]
    assert rule1 + rule5 == judged, st
    # reads sent to the disk since cold(): rule 5's, less its probes
    before = st["caware_source_read_n"] - st["caware_bypassed"]
    assert rule5 >= 1 or before > 0, st
    assert st["caware_probes"] == rule5 // 16, st
    assert st["read_misses"] == st["fill_ios"] == NSEGS + rule1 + st["caware_probes"], st
    assert st["caware_bypassed"] == st["read_bypassed"] == \
        rule5 + RULE3 - st["caware_probes"], st
    assert st["caware_source_read_n"] > 0 and st["caware_cache_read_n"] > 0


def test_caware_caches_strided_reads(disk, redcap):
    rc = redcap("policy adaptive+caware")
    bare, cached, st = compare(disk, rc, *STRIDED)
    assert st["state"] == "active"
    assert st["read_hits"] > 8 * st["read_misses"]
    assert cached <= 0.70 * bare


def test_caware_whole_segment_writes_fill_free_segments(ram, dmname):
    """Rules 6 and 4 for writes: with free segments, a write of a whole
    segment fills it with its own data; later reads hit without a fill, and
    read back what was written.  A partial write only invalidates.  64 KiB
    segments, each written by its own bio: brd's bios stop at 127 KiB
    (max_sectors_kb), so a larger write would reach redcap cut elsewhere
    than at segment boundaries.

    Rule 4 weighs the copy of a whole segment into RAM against the mean
    write to the origin.  Over the bare RAM disk both are RAM speed and the
    order is a matter of timing: the whole suite on 6.12 once saw the copy
    lose, and rule 4 refused 7 of the 8 allocations.  dm-delay makes every
    origin write take 20 ms, so the rules' inputs are what the test means.
    No read-ahead: the segments after the 8 would be filled ahead of the
    reads, and counted."""
    n = dev_sectors(ram)
    seg = 128
    blocks = seg // 8                                  # 4 KiB blocks a segment
    sh("modprobe", "dm-delay")
    with Dm(dmname(), f"0 {n} delay {ram} 0 0 {ram} 0 20") as slow, \
            Dm(dmname(), f"0 {n} redcap {slow.path} {seg} 16 2 policy caware") as rc:
        rc.message("set", "prefetch", "0")
        rc.cold()
        # One partial write first: with source_write never timed (mean 0),
        # rule 4 would leave the first whole write after an allocation alone.
        write_stamped(rc.path, 8 * blocks, 1, seed=5)
        for s in range(8):
            write_stamped(rc.path, s * blocks, blocks, seed=5)
        st = rc.settled()
        assert (st["write_allocs"], st["caware_rule6"], st["segments_valid"]) == (8, 8, 8)
        assert st["caware_cache_write_n"] == 8 and st["caware_source_write_n"] == 1
        read_pattern(rc.path, range(8 * blocks), 5)
        st = rc.stats()
        assert (st["read_hits"], st["read_misses"], st["fill_ios"]) == (8 * blocks, 0, 0)
        write_stamped(rc.path, 3, 1, seed=6)            # 4 KiB into segment 0
        st = rc.settled()
        assert (st["write_allocs"], st["invalidations"], st["segments_valid"]) == (8, 1, 7)
        assert st["caware_source_write_n"] == 2
        read_pattern(rc.path, [0, 1, 2, 4], 5)
        read_pattern(rc.path, [3], 6)


def test_policy_switches_under_fio_verify_lose_no_data(ram, dmname):
    """50 policy switches while fio writes and verifies through redcap:
    fills, hits, bypasses and ghost entries all change hands mid-flight.
    fio runs until the 50 are done; each run checks every block it wrote,
    as it goes (verify_backlog) and all of them at its end."""
    n = dev_sectors(ram)
    policies = ["always", "off", "adaptive", "caware", "adaptive+caware"]
    with Dm(dmname(), f"0 {n} redcap {ram} {SEG} 16 2 policy adaptive") as rc:
        rc.message("set", "window", "16")
        switched = []

        def switcher():
            while len(switched) < 50:
                p = policies[len(switched) % len(policies)]
                rc.message("policy", p)
                switched.append(p)
                time.sleep(0.02)
        t = threading.Thread(target=switcher)
        t.start()
        runs = 0
        try:
            while t.is_alive() or not runs:
                fio(rc.path, "--rw=randrw", "--rwmixread=50", "--bs=4k", "--size=48m",
                    "--io_size=32m", "--verify=crc32c", "--verify_backlog=32",
                    "--verify_fatal=1", f"--randseed={runs + 1}")
                runs += 1
        finally:
            t.join()
        st = rc.stats()
        print(f"{runs} fio runs; reads {st['reads']}, hits {st['read_hits']}, "
              f"misses {st['read_misses']}, simulated misses {st['sim_misses']}")
        assert len(switched) == 50
        assert st["read_hits"] > 0 and st["read_misses"] > 0 and st["sim_misses"] > 0


@contextlib.contextmanager
def filled_flat_stack(ram, dmname, name, overlap_us):
    """redcap (adaptive, windows of 64 reads) over a device whose model is
    a flat 10 ms a read with @overlap_us of it overlapping the next; its
    first 16 segments filled by this process, the counters reset: (the
    stack, this process's O_DIRECT descriptor of it)."""
    flat = {r: (10 * 10 ** 6, 10 * 10 ** 6) for r in range(64)}
    with pinned_disk(ram, name, "hdd7200", flat) as (_, meas):
        meas.message("overlap", str(overlap_us))
        with Dm(dmname(), f"0 {dev_sectors(meas.path)} redcap {meas.path} {SEG} {NSEGS} "
                f"2 policy adaptive") as rc:
            rc.message("set", "window", "64")
            fd = os.open(rc.path, os.O_RDONLY | os.O_DIRECT)
            try:
                for k in range(16):
                    assert os.preadv(fd, [scratch(128 << 10)], k << 17) == 128 << 10
                assert rc.stats()["fill_ios"] >= 16
                rc.message("reset_stats")
                yield rc, fd
            finally:
                os.close(fd)


def test_a_reader_served_from_ram_is_priced_one_read_at_a_time(ram, dmname):
    """A device that overlaps requests in flight (the nbd's 1 ms of wire,
    here 9.9 ms of a flat 10 ms) must not price one reader's reads as if
    they overlapped: served from the cache, they come back to back, but on
    the bare disk each would have waited for the one before.  With nothing
    else in flight, each read the cache serves is priced its whole 10 ms on
    the bare disk's virtual disk: a window of 64 hits, 640 ms exactly.
    Before, each was priced from its arrival (about the time a hit takes),
    the cache looked no better than the bare disk, and went off.  One
    reader throughout (this process): its first hit waits for its last
    fill's read, wherever the virtual disk is by then.  (With the hits read
    by another process than the fills, the first hit is a new stream and
    overlaps the last fill's read by however far the virtual disk is
    behind: the test would follow the host's speed.)"""
    with filled_flat_stack(ram, dmname, "strm", 9900) as (rc, fd):
        for k in range(512):
            assert os.preadv(fd, [scratch(4096)], k << 12) == 4096
        st = rc.stats()
    assert (st["state"], st["read_hits"], st["read_hits_waited"]) == ("active", 512, 0)
    assert st["windows"] == 8 and st["windows_unjudged"] == 0
    assert (st["last_est_disk_time_us"], st["est_disk_time_us"]) == (640000, 8 * 640000)


def test_the_rest_of_a_cut_read_is_priced_with_its_first_piece(ram, dmname):
    """A 256 KiB read over two cached segments reaches map() twice: map()
    keeps the first segment's piece and dm sends the rest back.  On the
    bare disk it is one request, so the rest joins the first piece there:
    on a flat 10 ms model (every size) with 1 ms of overlap, the read is
    priced 10 ms whole, 320 ms a window of 64 pieces (608 ms when the rest
    was priced as a request of its own behind the first piece's 9 ms of
    serial time, 640 ms if it waited for it).  The rest comes back right
    after its first piece whatever the host's speed: nothing else is read
    in between."""
    with filled_flat_stack(ram, dmname, "cutr", 1000) as (rc, fd):
        for k in range(128):
            assert os.preadv(fd, [scratch(256 << 10)], (k % 8) << 18) == 256 << 10
        st = rc.stats()
    assert (st["state"], st["read_hits"], st["reads"]) == ("active", 256, 256)
    assert st["windows"] == 4 and st["windows_unjudged"] == 0
    assert (st["last_est_disk_time_us"], st["est_disk_time_us"]) == (320000, 4 * 320000)


def test_tunables_and_estimator_show_in_stats(disk, redcap):
    rc = redcap("policy adaptive+caware estimator spk")
    assert rc.table().endswith(f"{SEG} {NSEGS} 2 estimator spk")
    for key, value in (("window", "64"), ("margin", "10"), ("decay_ms", "250"),
                       ("budget_share", "0"), ("budget_cap_ms", "7"), ("prefetch", "5")):
        rc.message("set", key, value)
    rc.message("estimator", "vdisk")
    st = rc.stats()
    # the six tunables, and nothing else
    assert (st["window"], st["margin"], st["decay_ms"], st["budget_share"],
            st["budget_cap_ms"], st["prefetch"], st["estimator"]) == (64, 10, 250, 0, 7, 5, "vdisk")
    assert "dwell" not in st
    assert st["policy"] == "adaptive+caware"
    # Like the policy message, it shows in the table line a reload would
    # keep: here nothing, vdisk over a vdisk being the target's own choice.
    assert rc.table().endswith(f"{SEG} {NSEGS}")


def test_off_then_adaptive_starts_inactive_and_table_names_the_estimator(disk, redcap):
    rc = redcap("policy off estimator vdisk")
    assert rc.stats()["state"] == "inactive"
    rc.message("policy", "adaptive")
    st = rc.stats()
    assert (st["state"], st["policy"], st["switches"]) == ("inactive", "adaptive", 0)
    assert rc.table().endswith(f"{SEG} {NSEGS} 2 policy adaptive")
