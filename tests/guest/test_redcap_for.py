# SPDX-License-Identifier: GPL-2.0
"""FOR, file-oriented fills (issue 47): the files' layout loaded through
layout_clear / layout_runs, shown in the status line and the stats, and a
miss the speculation budget refuses filling its file's run instead of
bypassing, read back LBA-stamped.  The model is pinned (as in
test_redcap_policies.py), so every decision follows from the reads alone
and the counters are exact."""
import pytest

from dmtest import Dm, brd_device, dev_sectors, read_pattern, set_param, sh, write_stamped
from test_redcap_policies import PRICES_7200, pinned_disk

SEG, NSEGS = 256, 64            # 64 x 128 KiB: 32 units of 4 KiB a segment
UNITS = SEG // 8
SEED = 47
BRD_MIB = 64


@pytest.fixture(scope="module")
def stamped():
    with brd_device(BRD_MIB) as dev:
        write_stamped(dev, 0, BRD_MIB * 256, SEED)
        yield dev


def info(rc):
    """The layout's three fields at the end of the status line."""
    unit, ends, age = rc.status()[-3:]
    return int(unit), int(ends), int(age)


def test_layout_messages_load_replace_and_remove_a_layout(stamped, dmname):
    n = dev_sectors(stamped)
    with Dm(dmname(), f"0 {n} redcap {stamped} {SEG} {NSEGS}") as rc:
        assert info(rc) == (0, 0, 0)
        rc.message("layout_clear", "8")
        assert info(rc)[:2] == (8, 0)
        # two runs, the second 2 units after the first's end; a duplicate end
        rc.message("layout_runs", "10:3", "+2:1", "10:3")
        assert info(rc)[:2] == (8, 2)
        st = rc.stats()
        assert (st["layout_unit_sectors"], st["layout_ends"]) == (8, 2)
        # all or nothing: a bad fourth word adds none of the three before it
        units = n // 8
        assert rc.refused("layout_runs", "20:1", "30:1", "40:1", f"{units:x}:1") == [
            f"layout_runs: word 4 '{units:x}:1': run ends past the origin's {units:#x} units"]
        assert rc.refused("layout_runs", "20:0") == [
            "layout_runs: word 1 '20:0': LEN must be at least 1"]
        assert rc.refused("layout_runs", "0x20:1") == [
            "layout_runs: word 1 '0x20:1': expected START:LEN or +GAP:LEN in hex units"]
        assert info(rc)[:2] == (8, 2)
        # the last unit of the device is a run's end
        rc.message("layout_runs", f"{units - 1:x}:1")
        assert info(rc)[:2] == (8, 3)
        # a new unit: a new, empty layout; none at all
        rc.message("layout_clear")
        assert info(rc) == (0, 0, 0)
        assert rc.refused("layout_runs", "0:1") == [
            "layout_runs: no layout: send layout_clear UNIT first"]
        rc.message("layout_clear", "2048")
        assert info(rc)[:2] == (2048, 0)
        # no memory for a new one: the old one stays
        set_param("fi_layout_alloc_fail", "Y")
        try:
            assert rc.refused("layout_clear", "8") == [
                f"layout_clear: cannot allocate {-(-n // 512) * 8} bytes"]
        finally:
            set_param("fi_layout_alloc_fail", "N")
        assert info(rc)[:2] == (2048, 0)
        # the layout is the cache's: a reload keeps it
        rc.message("layout_clear", "8")
        rc.message("layout_runs", "0:4")
        rc.reload(f"0 {n} redcap {stamped} {SEG} {NSEGS}")
        sh("dmsetup", "resume", rc.name)
        assert info(rc)[:2] == (8, 1)


@pytest.fixture(scope="module")
def disk(stamped):
    with pinned_disk(stamped, "for", "hdd7200", PRICES_7200) as d:
        yield d


def test_a_refused_miss_fills_its_files_run_and_extends_on_the_rest(disk, dmname):
    """With the budget's cap at 0, the first fill's cost beyond its read
    leaves the balance negative, and the bar refuses every miss after it.
    Without a layout such a miss bypasses; with one, it fills from its
    page to the end of its file's run: the file is taken as asked for, the
    rest of the segment as speculation.  A later read outside the part
    held is a miss that refills the entry wider; once a read is served
    from RAM, the balance (capped at 0) is back at 0, and the bar admits
    whole segments again: a read outside a part held, of a segment the
    bar refused lately, is what a whole fill would have served, and the
    refused fills' ghost pays that back to the balance."""
    emu, meas = disk
    n = dev_sectors(meas.path)
    with Dm(dmname(), f"0 {n} redcap {meas.path} {SEG} {NSEGS} "
            "4 policy adaptive estimator vdisk") as rc:
        rc.cold()
        rc.message("set", "prefetch", "0")          # no fills ahead: one fill a plan
        rc.message("set", "budget_cap_ms", "0")
        seg = 20 * UNITS                               # the first unit of segment 20
        read_pattern(rc.path, [10 * UNITS + 5], SEED)  # a whole fill: the balance < 0
        read_pattern(rc.path, [30 * UNITS + 3], SEED)  # refused, no layout: bypassed
        st = rc.settled()
        assert (st["read_misses"], st["read_bypassed_budget"], st["fill_sectors"]) == \
            (1, 1, SEG), st
        # a file of 3 units at units 2..4 of segment 20, the next at 5..9
        rc.message("layout_clear", "8")
        rc.message("layout_runs", f"{seg + 2:x}:3", "+0:5")
        read_pattern(rc.path, [seg + 3], SEED)         # fills units 3, 4
        st = rc.settled()
        assert (st["read_misses"], st["for_fills"], st["fill_sectors"],
                st["for_saved_sectors"]) == (2, 1, SEG + 16, SEG - 16), st
        read_pattern(rc.path, [seg + 2], SEED)         # before it: units 2..4
        st = rc.settled()
        assert (st["read_misses"], st["read_extended"], st["for_fills"],
                st["fill_sectors"]) == (3, 1, 2, SEG + 16 + 24), st
        read_pattern(rc.path, [seg + 3, seg + 4], SEED)   # both held: hits
        st = rc.settled()
        assert (st["read_hits"], st["read_misses"]) == (2, 3), st
        read_pattern(rc.path, [seg + 7], SEED)         # admitted again: the whole segment
        st = rc.settled()
        assert (st["read_misses"], st["read_extended"], st["for_fills"],
                st["fill_sectors"]) == (4, 2, 2, 2 * SEG + 16 + 24), st
        read_pattern(rc.path, range(seg, seg + UNITS), SEED)
        st = rc.settled()
        assert (st["read_hits"], st["read_misses"], st["read_bypassed"]) == \
            (2 + UNITS, 4, 1), st


def hot(rc, *n):
    """The hot message: (total misses, exact, [(segment, misses, err)] in its order)."""
    lines = rc.query("hot", *n).split("\n")
    head = dict(line.split("=") for line in lines[:2])
    top = [tuple(int(w.split("=")[1]) for w in line.split()) for line in lines[2:] if line]
    return int(head["misses"]), int(head["exact"]), top


def test_hot_lists_the_segments_that_missed_most(stamped, dmname):
    """HDC's counts: each read the LRU does not serve is a miss of its
    segment.
    Segment 30 misses 3 times (the cache dropped between), 20 twice, 40
    once; whatever udev's probe read at creation counts too (reset_stats
    would forget it all), and the list is ranked by misses, then by
    segment."""
    n = dev_sectors(stamped)
    with Dm(dmname(), f"0 {n} redcap {stamped} {SEG} {NSEGS} 2 policy always") as rc:
        rc.message("set", "prefetch", "0")
        for seg, times in ((30, 3), (20, 2), (40, 1)):
            for _ in range(times):
                rc.message("drop_cache")
                read_pattern(rc.path, [seg * UNITS + 1], SEED)
        total, exact, top = hot(rc, "64")
        assert exact == 1                       # 512 segments: exact counters
        got = {s: (m, e) for s, m, e in top}
        assert (got[30], got[20], got[40]) == ((3, 0), (2, 0), (1, 0)), top
        assert total == sum(m for _, m, _ in top)
        assert top == sorted(top, key=lambda t: (-t[1], t[0]))
        # the default: 16; and N
        assert len(hot(rc)[2]) == min(16, len(top))
        assert hot(rc, "2")[2] == top[:2]
        # a hit counts nothing
        read_pattern(rc.path, [40 * UNITS + 2], SEED)
        assert hot(rc, "64")[2] == top
