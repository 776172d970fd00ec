# SPDX-License-Identifier: GPL-2.0
"""HDC, host-guided device caching (issue 47): the segments that missed
most pinned in RAM, chosen from the miss counts when the share is set
and at each period's end, filled at the idle priority while the origin
is idle, never evicted by the LRU; the pin and unpin messages and their
exact errors.  Data is read back LBA-stamped; counters are exact."""
import os
import time

import pytest

from dmtest import (Dm, brd_device, dev_sectors, drop_slab, loop_device, read_pattern,
                    regrown, set_param, write_stamped, SLOW)

SEG, NSEGS = 256, 16            # 16 x 128 KiB; hdc 25 pins 4 of them
# the device: 512 segments.  cold() (reset_stats) forgets what udev's probe
# read at creation, in the counts too, so that HDC chooses from the test's reads
UNITS = SEG // 8                # 4 KiB blocks a segment
SEED = 4747
BRD_MIB = 64
HOT = [100, 103, 200, 301]      # far from what udev's probe reads


@pytest.fixture(scope="module")
def stamped():
    with brd_device(BRD_MIB) as dev:
        write_stamped(dev, 0, BRD_MIB * 256, SEED)
        yield dev


def table(dev, policy="always"):
    return f"0 {dev_sectors(dev)} redcap {dev} {SEG} {NSEGS} 2 policy {policy}"


def read_segs(rc, segs):
    """Read each segment whole, checking every block's stamp."""
    read_pattern(rc.path, [s * UNITS for s in segs], SEED, bs=SEG * 512)


def stats_when(rc, ok, what, timeout=30):
    """The stats once @ok(stats) holds and no fill flies (HDC's worker
    looks each second, fills every 50 ms)."""
    end = time.monotonic() + timeout * SLOW
    while True:
        st = rc.stats()
        if ok(st) and not st["segments_filling"]:
            return st
        assert time.monotonic() < end, f"{what}: {st}"
        time.sleep(0.05)


def end_period(rc, seg):
    """hot_period 1 for a moment: a read (of @seg) over a second after the
    last period's end ends this one."""
    periods = rc.stats()["hot_periods"]
    rc.message("set", "hot_period", "1")
    time.sleep(1.1)
    read_segs(rc, [seg])
    rc.message("set", "hot_period", "3600")
    assert rc.stats()["hot_periods"] == periods + 1


def test_pin_and_unpin_messages_and_their_errors(stamped, dmname):
    nsegs = dev_sectors(stamped) // SEG
    with Dm(dmname(), table(stamped)) as rc:
        rc.cold()
        st = rc.stats()
        assert (st["hdc"], st["hdc_max"], st["hdc_pinned"], st["hot_period"]) == (25, 4, 0, 3600)
        rc.message("set", "hdc", "0")
        assert rc.refused("pin", "3") == ["pin: hdc is 0: set a pinned share first"]
        assert rc.refused("prefill", "3") == ["prefill: hdc is 0: set a pinned share first"]
        assert rc.refused("set", "hdc", "51") == ["set: hdc must be 0..50"]
        assert rc.refused("set", "hot_period", "0") == ["set: hot_period must be 1..86400"]
        rc.message("set", "hdc", "25")
        assert rc.stats()["hdc_max"] == 4
        assert rc.refused("pin") == ["pin: wrong number of arguments"]
        assert rc.refused("pin", "7", "x7") == ["pin: 'x7' is not a segment number"]
        assert rc.refused("unpin", f"{nsegs}") == [
            f"unpin: segment {nsegs} is beyond the device's {nsegs}"]
        assert rc.stats()["hdc_pinned"] == 0            # one bad word: nothing done
        read_segs(rc, [7])                              # cached: pinned where it is
        rc.message("pin", "7", "8", "9", "7", "10")     # 8, 9, 10: filled now
        assert rc.refused("pin", "11") == ["pin: the pinned set is full (4 segments)"]
        st = rc.settled()
        assert (st["hdc_pinned"], st["hdc_fills"], st["fill_ios"]) == (4, 3, 4), st
        rc.message("unpin", "8", "12")                  # 12 was not pinned: no error
        assert rc.stats()["hdc_pinned"] == 3
        read_segs(rc, [7, 8, 9, 10])
        st = rc.stats()
        assert (st["read_hits"], st["hdc_hits"], st["read_misses"]) == (4, 3, 1), st
        # a share of 0 unpins all
        rc.message("set", "hdc", "0")
        stats_when(rc, lambda st: st["hdc_pinned"] == 0, "all unpinned")


def test_a_pinned_segment_survives_a_flood_and_a_write_ends_its_pin(stamped, dmname):
    with Dm(dmname(), table(stamped)) as rc:
        rc.cold()
        rc.message("set", "prefetch", "0")
        rc.message("set", "hdc", "25")
        rc.message("pin", "5")
        st = rc.settled()
        assert (st["hdc_pinned"], st["hdc_fills"], st["fill_sectors"]) == (1, 1, SEG), st
        flood = list(range(400, 440))                  # 40 segments through 16 entries
        read_segs(rc, flood)
        read_segs(rc, [5])
        st = rc.stats()
        assert (st["read_hits"], st["hdc_hits"], st["read_misses"], st["evictions"]) == \
            (1, 1, 40, 40 - 15), st
        # a write drops the pinned copy (write policy invalidate): the pin ends
        write_stamped(rc.path, 5 * UNITS + 1, 2, SEED)  # the same stamps: data unchanged
        st = rc.stats()
        assert (st["hdc_pinned"], st["hdc_dropped"], st["invalidations"]) == (0, 1, 1), st
        read_segs(rc, [5])


def read_hot_and_a_flood(rc):
    """From cold, with a 25 % share and no read-ahead: each of HOT read three
    times, a flood of 60 other segments read once between (each a fill)."""
    rc.cold()
    rc.message("set", "prefetch", "0")
    rc.message("set", "hdc", "25")
    for r in range(3):
        read_segs(rc, HOT)
        read_segs(rc, range(320 + 20 * r, 340 + 20 * r))


def test_the_segments_that_missed_most_are_chosen_and_filled(stamped, dmname):
    """Each of HOT is read three times (a flood of others between: each a
    fill), each flood segment once.  A larger share waits for the period's
    end; then HDC chooses HOT (at least two reads each: the flood's single
    reads are not worth a fill), fills them while the origin is idle, and
    serves them from then on whatever else is read.  Inactive too."""
    with Dm(dmname(), table(stamped)) as rc:
        read_hot_and_a_flood(rc)
        hot = rc.query("hot", "4").split()
        assert hot[2:] == [f"{k}={v}" for s in HOT for k, v in
                           (("segment", s), ("misses", 3), ("err", 0))], hot
        st = rc.stats()
        assert (st["hdc_pinned"], st["fill_ios"]) == (0, 72), st
        end_period(rc, 319)                           # the 73rd fill
        st = stats_when(rc, lambda st: st["hdc_pinned"] == 4, "HOT pinned")
        assert (st["hdc_fills"], st["fill_ios"], st["fill_sectors"]) == \
            (4, 73 + 4, (73 + 4) * SEG), st
        read_segs(rc, range(400, 440))
        read_segs(rc, HOT)
        st = rc.stats()
        assert (st["hdc_hits"], st["hdc_dropped"], st["hdc_pinned"]) == (4, 0, 4), st
        # inactive, the pinned segments still serve, and nothing else
        rc.message("policy", "off")
        read_segs(rc, HOT + [400])
        st = rc.stats()
        assert (st["hdc_hits"], st["read_bypassed_inactive"]) == (8, 1), st


def test_an_inactive_bare_cache_regrows_for_the_set_chosen_and_keeps_it(stamped, dmname):
    """Inactive and with no set chosen yet, the cache gives every page back.
    At the period's end HDC chooses HOT: its share is short of pages, so
    the cache regrows, fills HOT and serves it while inactive; the kernel
    reclaiming again takes every page but the share's."""
    with Dm(dmname(), table(stamped)) as rc:
        read_hot_and_a_flood(rc)
        rc.message("policy", "off")
        drop_slab()
        st = rc.stats()
        assert (st["segments_bare"], st["given_back"], st["hdc_pinned"]) == (NSEGS, NSEGS, 0), st
        end_period(rc, 319)
        # Once chosen, a read starts the regrow; the fills of HOT may have
        # started by the time the stats are read, so only the regrow is asked.
        st = regrown(rc, 319 * UNITS, SEED)
        assert st["regrown"] == NSEGS, st
        st = stats_when(rc, lambda st: st["hdc_pinned"] == 4, "HOT pinned")
        assert (st["segments_bare"], st["regrown"], st["hdc_fills"]) == (0, NSEGS, 4), st
        drop_slab()
        st = rc.stats()
        assert (st["segments_bare"], st["given_back"]) == (NSEGS - 4, 2 * NSEGS - 4), st
        read_segs(rc, HOT)
        st = rc.stats()
        assert (st["hdc_hits"], st["hdc_pinned"], st["hdc_dropped"]) == (4, 4, 0), st


def test_pins_survive_suspend_and_drop_cache_drops_them(stamped, dmname):
    with Dm(dmname(), table(stamped)) as rc:
        rc.cold()
        rc.message("set", "hdc", "25")
        rc.message("pin", "20", "21")
        rc.settled()
        rc.suspend()
        rc.resume()
        rc.reload(table(stamped))
        rc.resume()
        st = rc.stats()
        assert (st["hdc_pinned"], st["hdc"]) == (2, 25), st
        read_segs(rc, [20, 21])
        assert rc.stats()["hdc_hits"] == 2
        rc.message("drop_cache")
        st = rc.stats()
        assert (st["hdc_pinned"], st["hdc_dropped"], st["segments_valid"]) == (0, 2, 0), st


def test_a_period_ends_and_the_set_is_chosen_again(stamped, dmname):
    """A pin lasts until the next period's choice: segment 30, pinned by
    hand and read once since, is not worth a fill (a pinned count weighs a
    quarter more, 1.25 < 2) and goes back to the LRU; 40, read twice, each
    time a miss, is chosen and filled."""
    with Dm(dmname(), table(stamped)) as rc:
        rc.cold()
        rc.message("set", "prefetch", "0")
        rc.message("set", "hdc", "25")
        rc.message("pin", "30")
        rc.settled()
        read_segs(rc, [30])
        for r in range(2):
            read_segs(rc, [40])
            read_segs(rc, range(450 + 20 * r, 470 + 20 * r))
        end_period(rc, 41)
        st = stats_when(rc, lambda st: st["hdc_fills"] == 2, "40 filled")
        assert (st["hdc_pinned"], st["hdc_hits"], st["hdc_dropped"]) == (1, 1, 0), st
        read_segs(rc, range(200, 220))                # 30 is evicted, 40 stays
        read_segs(rc, [40, 30])
        st = rc.stats()
        assert (st["hdc_hits"], st["read_misses"]) == (2, 43 + 20 + 1), st


def test_a_choice_without_memory_changes_nothing_and_is_made_again(stamped, dmname):
    """A share cut chooses at once; with no memory for the choice, what is
    pinned stays pinned (3 over the new most, 1), and the worker tries
    again each second until it can: then nothing is worth a pin (the
    segments were never read) and all three go back to the LRU."""
    with Dm(dmname(), table(stamped)) as rc:
        rc.cold()
        rc.message("set", "hdc", "25")
        rc.message("pin", "50", "51", "52")
        rc.settled()
        set_param("fi_hdc_alloc_fail", "Y")
        try:
            rc.message("set", "hdc", "10")
            time.sleep(2.5)                            # two tries at least
            st = rc.stats()
            assert (st["hdc_pinned"], st["hdc_max"]) == (3, 1), st
        finally:
            set_param("fi_hdc_alloc_fail", "N")
        st = stats_when(rc, lambda st: st["hdc_pinned"] == 0, "the cut made")
        assert (st["segments_valid"], st["hdc_dropped"]) == (3, 0), st


def test_a_pin_whose_fill_cannot_be_set_up_fails_and_leaves_nothing(stamped, dmname, fault):
    """No bio for the fill (every set-up fails): pin answers -ENOMEM with
    the segment, nothing is pinned, counted or cached; then it works."""
    with Dm(dmname(), table(stamped)) as rc:
        rc.cold()
        rc.message("set", "hdc", "25")
        fault("fi_fill_alloc_fail", 1)
        assert rc.refused("pin", "60") == ["pin: segment 60: no memory for its fill"]
        fault("fi_fill_alloc_fail", 0)
        st = rc.stats()
        assert (st["hdc_pinned"], st["hdc_fills"], st["fill_ios"], st["segments_valid"],
                st["segments_filling"]) == (0, 0, 0, 0, 0), st
        rc.message("pin", "60")
        st = stats_when(rc, lambda st: st["hdc_pinned"] == 1, "60 pinned")
        assert (st["hdc_fills"], st["fill_ios"], st["segments_valid"]) == (1, 1, 1), st
        read_segs(rc, [60])
        assert rc.stats()["hdc_hits"] == 1


def chosen(rc, *start):
    return dict(line.split("=", 1) for line in rc.query("chosen", *start).splitlines())


def test_chosen_lists_the_set_and_prefill_adds_to_it(stamped, dmname, fault):
    """prefill adds segments to the chosen set (as many as there is room
    for, lowest first) and fills nothing at once: the worker fills them
    once the origin is idle, and they serve from then on.  chosen lists the
    set from an index, with its generation; errors are exact."""
    nsegs = dev_sectors(stamped) // SEG
    with Dm(dmname(), table(stamped)) as rc:
        rc.cold()
        assert chosen(rc) == {"chosen": "0", "gen": "0", "from": "0", "segments": ""}
        assert rc.refused("prefill", "1", "x") == ["prefill: 'x' is not a segment number"]
        assert rc.refused("prefill", f"{nsegs}") == [
            f"prefill: segment {nsegs} is beyond the device's {nsegs}"]
        assert rc.refused("chosen", "-1") == ["chosen: FROM must be 0..4294967295"]
        assert chosen(rc)["gen"] == "0"                 # nothing done
        fault("fi_hdc_alloc_fail", 1)
        assert rc.refused("prefill", "300") == ["prefill: no memory for the chosen set"]
        fault("fi_hdc_alloc_fail", 0)
        assert rc.query("prefill", "300", "100", "200", "100").split() == ["chosen=3", "added=3"]
        st = stats_when(rc, lambda st: st["hdc_pinned"] == 3, "prefilled")
        assert (st["hdc_fills"], st["fill_ios"], st["read_misses"]) == (3, 3, 0), st
        # room for one more: the lowest new one
        assert rc.query("prefill", "70", "60", "300").split() == ["chosen=4", "added=1"]
        assert chosen(rc) == {"chosen": "4", "gen": "2", "from": "0",
                              "segments": "60 100 200 300"}
        assert chosen(rc, "2") == {"chosen": "4", "gen": "2", "from": "2",
                                   "segments": "200 300"}
        assert chosen(rc, "4")["segments"] == ""
        stats_when(rc, lambda st: st["hdc_pinned"] == 4, "60 prefilled")
        read_segs(rc, range(400, 440))                  # a flood: they stay
        read_segs(rc, [60, 100, 200, 300])
        st = rc.stats()
        assert (st["hdc_fills"], st["hdc_hits"], st["hdc_dropped"]) == (4, 4, 0), st
        # a period's choice replaces the set: none of them missed twice since
        end_period(rc, 441)
        stats_when(rc, lambda st: st["hdc_pinned"] == 0, "the set chosen again")
        assert chosen(rc) == {"chosen": "0", "gen": "3", "from": "0", "segments": ""}


def flushes_done(dev):
    """Flush requests @dev completed (/sys/block/X/stat, field 16)."""
    name = os.path.basename(os.path.realpath(dev))
    with open(f"/sys/block/{name}/stat") as f:
        return int(f.read().split()[15])


def test_a_flush_passed_to_the_origin_leaves_it_idle(dmname):
    """With the write cache off, an empty flush is the origin's: redcap
    remaps it and counts it back at its end, so the origin is idle again
    and the prefill goes on.  (The flush was left counted in flight, a
    busy origin for ever, and a boot's ext4 journal commits stopped HDC's
    prefill: make check-boot s7a, hdc_pinned 0 of 57 in 300 s.)"""
    with loop_device(BRD_MIB << 20) as dev:
        write_stamped(dev, 0, BRD_MIB * 256, SEED)
        with Dm(dmname(), table(dev)) as rc:
            rc.cold()
            with open(f"/sys/block/{os.path.basename(os.path.realpath(rc.path))}"
                      "/queue/write_cache") as f:
                assert f.read() == "write back\n"       # the origin's: flushes reach redcap
            before = flushes_done(dev)
            fd = os.open(rc.path, os.O_WRONLY)
            try:
                os.fsync(fd)                            # an empty flush
            finally:
                os.close(fd)
            assert flushes_done(dev) == before + 1      # passed down
            assert rc.query("prefill", "100", "200").split() == ["chosen=2", "added=2"]
            st = stats_when(rc, lambda st: st["hdc_pinned"] == 2, "prefilled after a flush")
            assert (st["hdc_fills"], st["fill_ios"], st["read_misses"]) == (2, 2, 0), st
            read_segs(rc, [100, 200])
            assert rc.stats()["hdc_hits"] == 2
