# SPDX-License-Identifier: GPL-2.0
"""The shadow caches (issue 49): the shadows message says what the reads
redcap received would have cost the disk with other segment sizes and
RAM.  A loop over 96 MiB through a 64 MiB cache over a pinned model: the
shadows with 64 MiB or less miss every pass, those with 128 and 256 MiB
only the first; the sampled reads are exactly those of the regions the
hash picks; reset_stats zeroes them; a stack without a model has none."""
import time

import pytest

from dmtest import Dm, brd_device, dev_sectors, kmsg, read_pattern, sh, write_stamped
from test_redcap_faults import exists, table_errors
from test_redcap_policies import PRICES_7200, pinned_disk

SEG, NSEGS = 256, 512           # 64 MiB of 128 KiB segments
RAM = SEG * NSEGS * 512
SEED = 4949
BRD_MIB = 128
RATE = 5                        # 1 region in 32: rc-shadow.h's RC_SHADOW_MIN_RATE
REGION = 2048                   # sectors: the shadows' 1 MiB sampling regions
SIZES_K = [32, 64, 128, 256, 512, 1024]
M64 = (1 << 64) - 1


def shadow_hash(x):
    """rc-shadow.h's rc_shadow_hash()."""
    x ^= x >> 33
    x = (x * 0xff51afd7ed558ccd) & M64
    x ^= x >> 33
    x = (x * 0xc4ceb9fe1a85ec53) & M64
    x ^= x >> 33
    return x & 0xffffffff


def sampled(region, rate_shift):
    return rate_shift == 0 or shadow_hash(region) >> (32 - rate_shift) == 0


def loop_start(nregions, want):
    """The first region of @nregions consecutive ones of which exactly
    @want are sampled at 1 in 32."""
    for r0 in range(BRD_MIB - nregions):
        if sum(sampled(r, RATE) for r in range(r0, r0 + nregions)) == want:
            return r0
    raise AssertionError("no such run of regions")


def shadows(dev):
    out = dev.query("shadows")
    return {k: int(v) for k, v in (line.split("=", 1) for line in out.split())}


@pytest.fixture(scope="module")
def ram():
    with brd_device(BRD_MIB) as dev:
        write_stamped(dev, 0, BRD_MIB * 256, SEED)
        yield dev


def test_shadows_of_a_loop_larger_than_the_ram(ram, dmname):
    r0 = loop_start(96, 3)
    blocks = range(r0 * 256, (r0 + 96) * 256, 32)      # 128 KiB reads, in 4 KiB blocks
    with pinned_disk(ram, "shd", "hdd7200", PRICES_7200) as (_, meas), \
            Dm(dmname(), f"0 {dev_sectors(meas.path)} redcap {meas.path} {SEG} {NSEGS} "
               "2 policy always") as rc:
        rc.cold()               # drop_cache empties the shadows too
        st = shadows(rc)
        assert st["shadow_ram"] == RAM
        assert st["shadow_bare_us"] == 0
        # 64 MiB: every size sampled at 1 in 32 (the floor); 1 MiB
        # segments: 64 of them, 2 sampled, one in the half-RAM shadow
        for k in SIZES_K:
            assert st[f"shadow_{k}k_sampled"] == 32
            assert st[f"shadow_{k}k_reads"] == 0
        for _ in range(3):
            read_pattern(rc.path, blocks, SEED, bs=128 * 1024)
        st = shadows(rc)
        assert st["shadow_bare_us"] > 0
        for k in SIZES_K:
            # a 128 KiB read is one piece in one region: 3 regions x 8 x 3
            assert st[f"shadow_{k}k_reads"] == 72, k
            half, x1, x2, x4 = (st[f"shadow_{k}k_{r}"] for r in ("half", "x1", "x2", "x4"))
            # LRU's inclusion: more RAM never costs more
            assert half >= x1 >= x2 >= x4, (k, half, x1, x2, x4)
            # 3 sampled regions a pass, scaled down by 32 like the RAM: 24
            # of 16 sampled 128 KiB segments in the 64 MiB shadow (a loop
            # larger than an LRU misses every pass), 32 in the 128 MiB one
            # (only the first pass misses); so at every size
            assert half == x1 and x2 == x4 and x1 > 2.5 * x2, (k, half, x1, x2, x4)
        # an HDC period's end halves the counters: read where no shadow
        # samples (region 2) once the period is over, and once more
        assert not sampled(2, RATE)
        rc.message("set", "hot_period", "1")
        time.sleep(1.1)
        for _ in range(2):
            read_pattern(rc.path, [2 * 256], SEED)
        rc.message("set", "hot_period", "3600")
        st2 = shadows(rc)
        for k in SIZES_K:
            assert st2[f"shadow_{k}k_reads"] == 36, k
            # a ratio: cost and bare price halved alike, the two reads' price
            # added to the bare side only
            assert 0.97 * st[f"shadow_{k}k_x1"] <= st2[f"shadow_{k}k_x1"] \
                <= st[f"shadow_{k}k_x1"], k
        assert st2["shadow_bare_us"] < st["shadow_bare_us"]
        rc.message("reset_stats")
        st = shadows(rc)
        assert st["shadow_bare_us"] == 0
        assert all(st[f"shadow_{k}k_reads"] == 0 for k in SIZES_K)
        assert not [key for key in st if key.endswith(("_half", "_x1", "_x2", "_x4"))]


def test_the_eviction_history_counts_the_fills_more_ram_would_not_make(ram, dmname):
    """A loop over 24 segments through a cache of 16 (a plain LRU: no
    read-ahead): every read misses; from the second pass on, each segment
    was evicted with 7 others after it, at depth 16 + 8 of the LRU stack,
    which a cache of 32 segments (or 64) holds: every fill is one that twice
    (four times) the RAM would not make.  No model needed."""
    with Dm(dmname(), f"0 {dev_sectors(ram)} redcap {ram} {SEG} 16 2 policy always") as rc:
        rc.cold()
        rc.message("set", "prefetch", "0")
        loop = [(100 + s) * 32 for s in range(24)]           # 128 KiB reads, 4 KiB blocks
        read_pattern(rc.path, loop, SEED, bs=128 * 1024)
        st = rc.stats()
        assert (st["read_misses"], st["evictions"], st["x2_fills_saved"],
                st["x4_fills_saved"]) == (24, 8, 0, 0), st
        read_pattern(rc.path, loop, SEED, bs=128 * 1024)
        read_pattern(rc.path, loop, SEED, bs=128 * 1024)
        st = rc.stats()
        assert (st["read_misses"], st["read_hits"], st["evictions"], st["x2_fills_saved"],
                st["x4_fills_saved"]) == (72, 0, 56, 48, 48), st
        rc.message("reset_stats")
        st = rc.stats()
        assert (st["x2_fills_saved"], st["x4_fills_saved"]) == (0, 0), st


def test_a_stack_without_a_model_has_no_shadow_prices(ram, dmname):
    with Dm(dmname(), f"0 {dev_sectors(ram)} redcap {ram} {SEG} {NSEGS} 2 policy always") as rc:
        rc.cold()
        read_pattern(rc.path, range(0, 2048, 32), SEED, bs=128 * 1024)
        st = shadows(rc)
        assert st["shadow_ram"] == RAM
        assert st["shadow_bare_us"] == 0
        assert all(st[f"shadow_{k}k_reads"] == 0 for k in SIZES_K)


def test_shadows_message_takes_no_arguments(ram, dmname):
    with Dm(dmname(), f"0 {dev_sectors(ram)} redcap {ram} {SEG} {NSEGS}") as rc:
        assert rc.refused("shadows", "1") == ["shadows: wrong number of arguments"]


def test_shadows_without_memory(ram, dmname, fault):
    """The shadows' memory not found: a new cache is refused whole, and the
    shadows message fails with its reason, the stack serving on."""
    name = dmname()
    line = f"0 {dev_sectors(ram)} redcap {ram} {SEG} {NSEGS} 2 policy always\n"
    fault("fi_shadow_alloc_fail", 1)
    with kmsg() as k:
        r = sh("dmsetup", "create", name, input=line, check=False)
        lines = k.lines()
    assert r.returncode != 0
    assert table_errors(lines) == ["Cannot allocate cache memory (-ENOMEM)"], lines
    assert not exists(name)
    fault("fi_shadow_alloc_fail", 0)
    with Dm(dmname(), line.strip()) as rc:
        rc.cold()
        fault("fi_shadow_alloc_fail", 1)
        assert rc.refused("shadows") == ["shadows: out of memory"]
        read_pattern(rc.path, range(0, 512, 32), SEED, bs=128 * 1024)   # stamps checked
        fault("fi_shadow_alloc_fail", 0)
        assert shadows(rc)["shadow_ram"] == RAM
        st = rc.stats()
        assert st["read_hits"] + st["read_misses"] == 16, st
