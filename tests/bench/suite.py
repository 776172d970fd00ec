#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""The benchmark suite's runner, inside the guest (tests/vm/run --icount).

For every workload x processes x I/O mode x configuration x repetition it
builds the device stack afresh on an emulated hard disk, mounts the ext4
filesystem that holds the data read-only with nothing of it cached (see
cold()), runs the workload and records the application time (start of the first process to
the end of the last) with the disk's counters and redcap's statistics
and shadows (shadows_of()).

The stack, bottom up:  brd /dev/ram0 (the data, written once)
  -> "hdd": vdisk emulate <profile> (the slow disk; its counters are the
     disk's: requests, busy time, bytes read)
  -> "vd": vdisk measure, tables loaded from an off-line training run at
     the start of every run (so redcap's vdisk estimator starts each run
     with the same trained model), learning from the run's requests as a
     model layer does by default (--frozen-model: not)
  -> the configuration under test (nothing, redcap, dm-cache, bcache,
     RapidDisk's rapiddisk-cache)
  -> ext4.
"warm" replaces the emulated disk by brd itself (zero disk latency: the
CPU-only floor); "bound" is not a run but the I/O time the best possible
prefetch would need for the bare run's block trace (BENCH-NOTES.md).
With --traces DIR, that traced run also leaves its whole block trace in DIR
(blkparse's default text, queues and completions: what "redcapctl simulate
--format blkparse" reads), the mount's requests before it (.mount.blkparse:
what "simulate --warm" replays first), which process forked which (.forks) and the
trained tables of "vd" as model-<profile>.tables
(tests/bench/sim-validate.py replays them).

usage: suite.py --out FILE.json [--set server|full|quick|tiny] [--profile P]
                [--workloads ...] [--procs ...] [--configs ...] [--io ...]
                [--reps N] [--part J/N] [--traces DIR]
Progress goes to stderr, one line per run; records are rewritten to --out
after every run, so an interrupted suite keeps what it measured.
"""
import argparse
import fcntl
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

TOP = os.environ.get("REDCAP_TOP", os.path.realpath(
    os.path.join(os.path.dirname(__file__), "..", "..")))
# Real programs as workloads (tests/bench/apps.py): their names, data
# image, chroot and commands.
sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
import apps  # noqa: E402
KREL = os.environ.get("REDCAP_KREL", os.uname().release)
CACHE = os.environ.get("REDCAP_CACHE", os.path.expanduser("~/.cache/redcap"))
MNT = "/tmp/redcap-bench"
# The workloads' programs, copied to a tmpfs: under icount, every access to
# the host's filesystem (virtme-ng's shared root) costs guest time.
BIN = "/run/redcap-bench-bin"
RDPAT = f"{BIN}/rdpat"
BUSYBOX = f"{BIN}/busybox"
# dmsetup from the tmpfs too, with the libraries it was linked with.
DMSETUP = [f"{BIN}/ld.so", "--inhibit-cache", "--library-path", f"{BIN}/lib", f"{BIN}/dmsetup"]
VDISKCTL = DMSETUP[:-1] + [f"{BIN}/vdiskctl"]
SECTOR = 512

# The emulated drives (vdisk profiles), the capacity the RAM disk stands
# for, and the figures the prefetch bound is costed with (BENCH-NOTES.md:
# mean seek + mean rotation per run of blocks, then the media rate).
PROFILES = {
    "hdd7200": {"capacity": 1953125000, "access_s": 0.0085 + 0.00417, "rate": 150e6},
    "hdd15k": {"capacity": 71687369, "access_s": 0.0034 + 0.002, "rate": 48e6},
    # Without platters: a 1 TiB st1-class cloud volume, a network device.
    "st1": {"capacity": 2147483648, "access_s": 0.003, "rate": 262e6},
    "nbd": {"capacity": 2147483648, "access_s": 0.001, "rate": 117e6},
}

# Same RAM budget for every cache: 8 MiB (a set's budget_mib: set_budget()).
BUDGET_SECTORS = 16384


def geometries(budget, sizes=(64, 128, 256, 512)):
    """redcap's geometries at @budget sectors of RAM: segments of @sizes
    sectors (32, 64, 128 and 256 KiB), named "<segments>x<KiB>k"."""
    return {f"{budget // s}x{s // 2}k": (budget // s, s) for s in sizes}


GEOMETRIES = geometries(BUDGET_SECTORS)
# Segments of 512 KiB and 1 MiB, which --configs takes with policy always
# and redcap's default (the adaptive policy's hold at large segments,
# docs/results/2026-12-07-adapt-hold.md); no set runs them.
LARGE_SIZES = (1024, 2048)
LARGE_POLICIES = ("always", "adaptive+caware")
LARGE_GEOMETRIES = geometries(BUDGET_SECTORS, LARGE_SIZES)
POLICIES = {
    "always": "2 policy always",
    "adaptive-spk": "4 policy adaptive estimator spk",
    "adaptive-vdisk": "4 policy adaptive estimator vdisk",
    "caware": "2 policy caware",
    "adaptive+caware": "4 policy adaptive+caware estimator vdisk",
    "adaptive+caware-nobudget": "4 policy adaptive+caware estimator vdisk",
    "adaptive+caware-prefetch0": "4 policy adaptive+caware estimator vdisk",
    "adaptive+caware-prefetch4": "4 policy adaptive+caware estimator vdisk",
    "adaptive+caware-prefetch8": "4 policy adaptive+caware estimator vdisk",
    "adaptive+caware-prefetch4-nobudget": "4 policy adaptive+caware estimator vdisk",
    "always-prefetch4": "2 policy always",
    "adaptive+caware-window16": "4 policy adaptive+caware estimator vdisk",
    # no features: the target's own choices, as redcapctl create leaves
    # them (adaptive+caware, estimator vdisk over the model layer,
    # backward streams read ahead 2 segments, pairs)
    "default": "",
}
# What a configuration sets after its table is loaded ("set <key> <value>").
TUNABLES = {"adaptive+caware-nobudget": [("budget_share", "0")],
            "adaptive+caware-prefetch0": [("prefetch", "0")],
            "adaptive+caware-prefetch4": [("prefetch", "4")],
            "adaptive+caware-prefetch8": [("prefetch", "8")],
            "adaptive+caware-prefetch4-nobudget": [("prefetch", "4"), ("budget_share", "0")],
            "always-prefetch4": [("prefetch", "4")],
            "adaptive+caware-window16": [("window", "16")]}
# The redcap device's read-ahead (KiB) a configuration sets, if any (the
# others keep the kernel's, 128 KiB).  redcapctl's readahead=auto gives
# 1024 here: the larger of 1 MiB and the origin's 128 KiB.
READAHEAD_OF = {"default": 1024}
# Configurations --configs takes that the full set leaves out: the
# read-ahead's degrees, with and without the budget, and windows of 16
# reads (docs/results/2026-12-02-history.md, "Read-ahead of streams").
EXTRA_POLICIES = (
    "adaptive+caware", "adaptive+caware-prefetch0", "adaptive+caware-prefetch4",
    "adaptive+caware-prefetch8", "adaptive+caware-prefetch4-nobudget", "always-prefetch4",
    "adaptive+caware-window16")
# The stack redcap recommends, which the goals are measured on:
# redcapctl create's at the bench's RAM: 128 KiB segments, a table line
# with no features (the target's defaults are redcapctl's) and the
# read-ahead redcapctl sets.  The same stack as redcap-64x128k-default.
RECOMMENDED = "redcap-recommended"
RECOMMENDED_POLICY = "default"
# "bare-equal-ram": the bare disk whose page cache is given the caches' RAM
# as well (the set's memory.max raised by the budget; sets with a bound only).
EQUAL_RAM = "bare-equal-ram"
# Issue 47's HDC on the recommended stack, a configuration --configs takes:
# 50 % of the segments may be pinned (the target's most), and a hot_period
# of 10 s, not the default hour: a run lasts 20 to 90 s of guest time, so
# at an hour no period would end, nothing would be chosen and the
# configuration would be the recommended stack; at 10 s three end in a
# 35 s run (pgbench -S, postmark), each choosing from the counts so far,
# halved at each end.  Shorter periods choose from fewer misses.  (FOR,
# measured beside it on 2026-12-03, is removed.)
RECOMMENDED_HDC = f"{RECOMMENDED}-hdc"
HDC_TUNABLES = [("hdc", "50"), ("hot_period", "10")]
# Issue 48's write cache on the recommended stack, a configuration
# --configs takes: its table line adds "write_policy back" (the mode is
# the table's), as redcaptab's write_policy=back would.
RECOMMENDED_WB = f"{RECOMMENDED}-writeback"
WB_FEATURES = "2 write_policy back"
RECOMMENDED_SEL = f"{RECOMMENDED}-selective"
SEL_FEATURES = "2 write_policy selective"
# Issue 49's measure of the shadows' RAM advice, a configuration --configs
# takes: the recommended stack (its table line, tunables, read-ahead, 128
# KiB segments) with twice its segments, the cache "twice the RAM" of the
# recommended stack's shadows (the set's budget is unchanged: the other
# caches, the equal-RAM page cache and memory.max keep theirs).
RECOMMENDED_2X = f"{RECOMMENDED}-2x"

def geometry_sizes(name):
    """(segments, sectors a segment) of a geometry "<segments>x<KiB>k", in
    GEOMETRIES or not (RECOMMENDED_2X's is twice the set's RAM)."""
    m = re.fullmatch(r"(\d+)x(\d+)k", name)
    return int(m.group(1)), int(m.group(2)) * 2


def config_names():
    """(the recommended stack's geometry and policy, the full set's
    configurations, those --configs takes besides) at GEOMETRIES."""
    g128 = next(g for g, (_, s) in GEOMETRIES.items() if s == 256)	# 128 KiB segments
    extra = ([f"redcap-{g128}-{p}" for p in EXTRA_POLICIES] +
             [EQUAL_RAM, RECOMMENDED_HDC, RECOMMENDED_WB, RECOMMENDED_SEL, RECOMMENDED_2X] +
             [f"redcap-{g}-{p}" for g in LARGE_GEOMETRIES for p in LARGE_POLICIES])
    configs = (["bare", RECOMMENDED] + [f"redcap-{g}-always" for g in GEOMETRIES] +
               [f"redcap-{g128}-{p}" for p in POLICIES
                if p not in ("always", RECOMMENDED_POLICY) and
                f"redcap-{g128}-{p}" not in extra] +
               ["readahead", "dm-cache-brd", "bcache-brd", "bcache-brd-nocutoff",
                "rapiddisk-brd", "warm"])
    return (g128, RECOMMENDED_POLICY), configs, extra


RECOMMENDED_STACK, CONFIGS, EXTRA_CONFIGS = config_names()
READAHEAD_KB = 1024
# RapidDisk's modules (make rapiddisk: Debian's rapiddisk-dkms built for
# the guest's kernel) and the RAM disk rapiddisk-brd caches in: rd0 of
# BUDGET_SECTORS, made and detached with every run.
RAPIDDISK_KO = ["rapiddisk.ko", "rapiddisk-cache.ko"]
RAPIDDISK_MGMT = "/sys/kernel/rapiddisk/mgmt"
RAPIDDISK_RD = 0

WORKLOADS = ["lkr", "ior-r", "tac", "4k-sr", "8k-sr", "512k-sr", "random", "row", "mix"]
# The real programs (apps.WORKLOADS) run on apps.image()'s ext4, not on the
# suite's own data: a suite run takes the ones or the others.
APPS = list(apps.WORKLOADS)
# The workloads "row" and "mix" are made of (lkr is buffered only).
PARTS = ["lkr", "ior-r", "tac", "4k-sr", "8k-sr", "512k-sr", "random"]

# What the server and apps sets run in their first repetition only: the
# alternatives with the same RAM and warm (see "server" below).
ONCE = ["readahead", "dm-cache-brd", "bcache-brd", "rapiddisk-brd", "warm"]

# Each set: groups of (workloads, processes, I/O mode), the configurations
# and the repetitions, and what it changes of the sizes below (configure()).
# "server" is make bench's set: the instrument of issue 46 (see its
# comment).  "full" is issue 17's set at 8 MiB: about an hour of this
# machine with two guests (tests/bench/run --jobs 2 deals the (workload,
# processes, I/O mode) cases out: deal()); docs/results/2026-12-02-history.md
# says how it was scaled down from the matrix.  "quick" and "tiny"
# are smoke runs (make check's guest test runs "tiny").
SETS = {
    # A server's scale (issue 46, "The instrument"):
    # * the caches at redcapctl create's default, 64 MiB: redcap 512 x 128
    #   KiB, and the same RAM for dm-cache, bcache and RapidDisk
    #   (read_ahead_kb=1024 is given none);
    # * data 16 times that: the streams' pool of 16 (+ 4 for row and mix)
    #   files of 80 MiB (IOR-R, TAC and the strided reads each read the
    #   1.25 GiB of 16 of them, dealt out to the processes), a 1 GiB file
    #   the random readers share, 16 copies of a kernel subtree for LKR;
    #   2.9 GiB on the RAM disk behind the emulated disk (an 8 GiB guest);
    # * every run at least 10 s of guest time on the bare hdd7200 (IOR-R and
    #   4K-SR ×1 11 s at 115 MB/s, random 2048 reads at 12.7 ms);
    # * the workloads' page cache bounded: they run in a cgroup v2 whose
    #   memory.max is 256 MiB.  256 MiB is a quarter of one workload's
    #   data (the pool's 1.25 GiB, the random file's 1 GiB), so no
    #   workload's data fits in it, and 4 times the caches' RAM, so the page
    #   cache still does its own job (read-ahead windows of 16 processes,
    #   the metadata of LKR's trees); the RAM disk's pages and the caches'
    #   are the kernel's and drivers', not charged to it;
    # * bare-equal-ram: the bare disk with memory.max raised by the caches'
    #   64 MiB, the page cache given redcap's RAM instead (Zhu & Hu).
    # Buffered only (the page cache is what is bounded), 3 repetitions.
    # Its time, sized on 2026-12-02 from one guest's 48 runs of 12 cells
    # (bare, redcap-recommended, bare-equal-ram and warm; LKR, IOR-R, TAC,
    # 8K-SR, 512K-SR and random ×1 and ×16; hdd7200), on this 2-core
    # machine shared with two other engineers' guests, so an upper
    # bound: a run costs 1 s (random warm) to 86 s (8K-SR ×16 bare) of
    # wall time, about 20 s per 1.25 GiB moved (IOR-R warm: 25 s) plus the
    # disk's requests (8K-SR ×16 bare, 87,000 of them: 86 s).  Taking the
    # other alternatives' runs as long as the bare disk's, ×4 as the mean
    # of ×1 and ×16, 4K-SR as IOR-R, and row and mix as a quarter of each
    # part's: processes 1, 4 and 16 everywhere, 3 repetitions and the
    # prefetch bound would take 152 min per guest with --jobs 2, over the
    # 2 hours a drive may take.  Cut to: no ×4 of the four streams that
    # move the most (IOR-R, TAC, 4K-SR, 8K-SR: 1 and 16), warm (a CPU floor,
    # deterministic) once, no bound (--bound adds it, +6 min): 107 min per
    # guest, plus 5 min of data and training: 112 min per drive with
    # --jobs 2 (4 h 20 with one guest).  21 cells, 7 configurations × 3 +
    # warm × 1 = 462 runs.  Measured (2026-12-02, hdd7200): 150 and 121 min,
    # the cases dealt out round-robin.  So the cases are now dealt by their
    # measured time (deal()), and the four alternatives with the same RAM
    # run once, as warm does: of that set's 26,500 s of application time
    # they were 61 %, and their first repetition alone moves no
    # alternative's geometric mean by more than 0.11 points (bcache's
    # largest cell by 3.8 %, dm-cache's 2.8, the others' under 0.5): the
    # goals' median of 3 is redcap's, the bare disk's and the equal-RAM
    # page cache's.  21 cells × (3 × 3 + 5) = 294 runs.
    "server": dict(groups=[(["lkr", "512k-sr", "random"], [1, 4, 16], "buffered"),
                           (["ior-r", "tac", "4k-sr", "8k-sr"], [1, 16], "buffered"),
                           (["row", "mix"], [1, 4], "buffered")],
                   configs=["bare", EQUAL_RAM, RECOMMENDED, "readahead", "dm-cache-brd",
                            "bcache-brd", "rapiddisk-brd", "warm"],
                   reps=3, once=ONCE, bound=False,
                   budget_mib=64, memory_max_mib=256, pool_mib=80,
                   random_mib=1024, random_ios=2048, lkr_units=16,
                   lkr_dirs=["mm", "block", "ipc", "init", "security"], lkr_unit_mib=12,
                   lkr_batch=True,
                   # The devices without platters answer a read in 1-3 ms, not
                   # 12, and the nbd overlaps them: at the sizes above their
                   # bare runs of random and LKR lasted 0.3 s (nbd random
                   # x16) to 6 s (2026-12-05, 5b82896 and e389368), under
                   # the 10 s floor.  Those two do more of the same on them,
                   # as many times as the shortest run needed: the random
                   # readers more reads of the same file, LKR more copies
                   # (the nbd's RAM disk 4.1 GiB: the set's guest has 8).
                   # 512K-SR (nbd 0.8-8 s) and 8K-SR x16 (nbd 7.5 s) stay
                   # short: the paper's four series over 16 times the data
                   # would take 16 GiB of RAM disk, and more series read
                   # more of each 512 KiB than the paper's workload does
                   # (64 series: half the file, +14 to +105 % through
                   # redcap's stack; 2026-12-05-nbd-floor.md).
                   profiles={"nbd": dict(random_ios=65536, lkr_units=96),
                             "st1": dict(random_ios=8192)}),
    # The real programs (tests/bench/apps.py) at the server set's RAM and
    # bound, on apps.image() (PostgreSQL's 1.2 GiB, a git repository of
    # Linux, room for the writers), 1 and 4 processes (git checkout and the
    # server day: 1), no prefetch bound (a block trace of one program's
    # run says little about what a page cache and a server could have
    # read ahead).  The writers' runs start from the pristine image: the
    # emulated disk sits on a dm-snapshot of it, dropped after each.  The
    # alternatives with the same RAM and warm run once, as in "server".
    "apps": dict(groups=[(APPS, [1, 4], "buffered")],
                 configs=["bare", EQUAL_RAM, RECOMMENDED, "readahead", "dm-cache-brd",
                          "bcache-brd", "rapiddisk-brd", "warm"],
                 reps=3, once=ONCE, budget_mib=64, memory_max_mib=256),
    "full": dict(groups=[(["lkr", "ior-r", "tac", "4k-sr", "8k-sr", "512k-sr", "random"],
                          [1, 2, 4, 8, 16], "buffered"),
                         (["row", "mix"], [1, 2, 4], "buffered"),
                         (["ior-r", "tac", "8k-sr", "random"], [1, 16], "direct")],
                 configs=CONFIGS, reps=3),
    "quick": dict(groups=[(["lkr", "ior-r", "tac", "8k-sr", "random"], [1, 4], "buffered")],
                  configs=["bare", RECOMMENDED, "dm-cache-brd", "warm"],
                  reps=3),
    # the page cache bounded as in "server" (the bound is far above its
    # data: the cgroup is exercised, not felt)
    "tiny": dict(groups=[(["8k-sr"], [1], "buffered")],
                 configs=["bare", RECOMMENDED, EQUAL_RAM], reps=1, memory_max_mib=256),
}

# Data, scaled from the papers' (see docs/results/2026-12-02-history.md).  A run's
# data is the same whatever its number of processes: they share it out, so
# a run costs about the same with 1 or 16 processes and only the
# concurrency changes.
DATA_MIB = 16			# IOR-R, TAC and the strided reads: p files of DATA_MIB/p
RANDOM_MIB = 128		# one file all random readers share (16 x the cache)
RANDOM_IOS = 256		# 4 KiB random reads, shared out among the processes
RANDOM_SEED = 1000	# the random readers' seeds: RANDOM_SEED + process (--random-seed)
LKR_UNITS = 16			# copies of LKR_DIRS, shared out among the processes
LKR_DIRS = ["ipc"]		# of Debian's linux-source-6.1
LKR_BATCH = False		# find -exec cat {} + (one cat for many files), not \;
LKR_UNIT_MIB = 1		# what a copy takes on ext4 (sizes the RAM disk)
PART_SHARE = 4			# in row and mix, each part has 1/4 of its data
# no more processes than LKR copies
MAX_PROCS = {"lkr": LKR_UNITS, "row": LKR_UNITS // PART_SHARE, "mix": LKR_UNITS // PART_SHARE,
             **apps.MAX_PROCS}
# The streams' pool (sets with pool_mib): files of POOL_MIB, the first
# POOL_SINGLE of which every stream workload reads (stream_files()).
# 0: the old layout, p files of DATA_MIB/p per process count.
STREAMS = ["ior-r", "tac", "4k-sr", "8k-sr", "512k-sr"]
POOL_SINGLE = 16
POOL_MIB = 0
# The workloads' cgroup's memory.max in MiB (sets with memory_max_mib), None:
# the workloads run unbounded, where the suite runs.
MEMORY_MAX_MIB = None


def set_budget(mib):
    """Every cache's RAM: @mib MiB, redcap's geometries at it."""
    global BUDGET_SECTORS, GEOMETRIES, LARGE_GEOMETRIES, RECOMMENDED_STACK, CONFIGS, EXTRA_CONFIGS
    BUDGET_SECTORS = mib << 11
    GEOMETRIES = geometries(BUDGET_SECTORS)
    LARGE_GEOMETRIES = geometries(BUDGET_SECTORS, LARGE_SIZES)
    RECOMMENDED_STACK, CONFIGS, EXTRA_CONFIGS = config_names()


def configure(spec, profile=None):
    """The sizes of set @spec (its budget_mib, memory_max_mib, pool_mib,
    random_mib, random_ios, lkr_units, lkr_dirs, lkr_unit_mib, lkr_batch, and
    those its profiles give disk profile @profile), in place of the
    defaults above.  Once per process, before set_scale()."""
    global MEMORY_MAX_MIB, POOL_MIB, RANDOM_MIB, RANDOM_IOS, LKR_UNITS, LKR_DIRS, LKR_BATCH
    global LKR_UNIT_MIB
    spec = {**spec, **spec.get("profiles", {}).get(profile, {})}
    if "budget_mib" in spec:
        set_budget(spec["budget_mib"])
    MEMORY_MAX_MIB = spec.get("memory_max_mib", MEMORY_MAX_MIB)
    POOL_MIB = spec.get("pool_mib", POOL_MIB)
    RANDOM_MIB = spec.get("random_mib", RANDOM_MIB)
    RANDOM_IOS = spec.get("random_ios", RANDOM_IOS)
    LKR_UNITS = spec.get("lkr_units", LKR_UNITS)
    LKR_DIRS = spec.get("lkr_dirs", LKR_DIRS)
    LKR_BATCH = spec.get("lkr_batch", LKR_BATCH)
    LKR_UNIT_MIB = spec.get("lkr_unit_mib", LKR_UNIT_MIB)
    MAX_PROCS.update(lkr=LKR_UNITS, row=LKR_UNITS // PART_SHARE, mix=LKR_UNITS // PART_SHARE)
    if POOL_MIB:
        # a stream part of row and mix has POOL_SINGLE // PART_SHARE files
        for w in ("row", "mix"):
            MAX_PROCS[w] = min(MAX_PROCS[w], POOL_SINGLE // PART_SHARE)
        for w in STREAMS:
            MAX_PROCS[w] = POOL_SINGLE


def memory_max(config):
    """The workloads' cgroup's memory.max in bytes for @config, None when
    the set leaves the page cache unbounded: the set's bound, and for
    bare-equal-ram the caches' RAM (BUDGET_SECTORS) on top of it."""
    if MEMORY_MAX_MIB is None:
        if config == EQUAL_RAM:
            raise ValueError(f"{EQUAL_RAM}: the set bounds no page cache (memory_max_mib)")
        return None
    return (MEMORY_MAX_MIB << 20) + (BUDGET_SECTORS * SECTOR if config == EQUAL_RAM else 0)


def set_scale(n):
    """--scale: @n times the LKR copies and the data of IOR-R, TAC and the
    strided reads (the random file is 16 times the cache already).  Once
    per process."""
    global LKR_UNITS, DATA_MIB, POOL_MIB
    LKR_UNITS, DATA_MIB, POOL_MIB = LKR_UNITS * n, DATA_MIB * n, POOL_MIB * n
    MAX_PROCS.update(lkr=LKR_UNITS, row=LKR_UNITS // PART_SHARE, mix=LKR_UNITS // PART_SHARE)
    if POOL_MIB:
        for w in ("row", "mix"):
            MAX_PROCS[w] = min(MAX_PROCS[w], POOL_SINGLE // PART_SHARE)


def set_random_seed(n):
    """--random-seed: the first random reader's seed."""
    global RANDOM_SEED
    RANDOM_SEED = n


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def sh(*args, check=True, input=None):
    r = subprocess.run(args, capture_output=True, text=True, input=input)
    if check and r.returncode:
        raise RuntimeError(f"{' '.join(args)}: exit {r.returncode}: {r.stderr.strip()}")
    return r


def write(path, value):
    with open(path, "w") as f:
        f.write(str(value))


def dm_create(name, table):
    sh(*DMSETUP, "create", name, input=table + "\n")
    return f"/dev/mapper/{name}"


def dm_remove(name):
    if os.path.exists(f"/dev/mapper/{name}"):
        sh(*DMSETUP, "remove", "--retry", name)


def dm_message(name, *msg):
    return sh(*DMSETUP, "message", name, "0", *msg).stdout


def dm_stats(name):
    out = dm_message(name, "stats")
    stats = {}
    for line in out.splitlines():
        k, _, v = line.partition("=")
        stats[k] = int(v) if re.fullmatch(r"-?\d+", v) else v
    return stats


SHADOW_RAMS = ("half", "x1", "x2", "x4")


def shadows_of(text, segment_bytes):
    """The RAM figures of a "shadows" answer (docs/redcap.rst, "shadows";
    redcapctl's stack_shadows()): the cache's RAM (ram_bytes), the bare
    disk's price of the reads (bare_us), and for the live segment size
    (@segment_bytes) its sampled regions, reads and each RAM's disk time
    in parts per million of bare_us (half, x1, x2, x4: of ram_bytes;
    absent if that shadow priced nothing).  The other sizes' under
    "by_size" ({KiB: {half: ppm, ...}}), for the geometry's advice."""
    rec, by_size = {}, {}
    for line in text.splitlines():
        k, _, v = line.partition("=")
        if not re.fullmatch(r"\d+", v):
            continue
        if k == "shadow_ram":
            rec["ram_bytes"] = int(v)
        elif k == "shadow_bare_us":
            rec["bare_us"] = int(v)
        m = re.fullmatch(r"shadow_(\d+)k_(\w+)", k)
        if m and m.group(2) in SHADOW_RAMS + ("sampled", "reads"):
            by_size.setdefault(int(m.group(1)), {})[m.group(2)] = int(v)
    live = segment_bytes >> 10
    rec["segment_kib"] = live
    rec.update(by_size.pop(live, {}))
    rec["by_size"] = {kib: {r: f[r] for r in SHADOW_RAMS if r in f}
                      for kib, f in sorted(by_size.items())}
    return rec


def ram_advice(shadows):
    """The change of the disk's time a shadows record predicts for each
    RAM against the live cache's (redcapctl status' "twice the RAM -6.6
    %", as a fraction: half, x2, x4), {} when nothing was priced."""
    if not shadows or not shadows.get("x1"):
        return {}
    return {r: shadows[r] / shadows["x1"] - 1 for r in SHADOW_RAMS
            if r != "x1" and r in shadows}


def sectors(dev):
    return int(sh(BUSYBOX, "blockdev", "--getsz", dev).stdout)


def block_stat(dev):
    """@dev's counters in sysfs (Documentation/block/stat.rst): reads,
    merges, sectors read, ..., in flight."""
    rdev = os.stat(dev).st_rdev
    with open(f"/sys/dev/block/{os.major(rdev)}:{os.minor(rdev)}/stat") as f:
        return [int(x) for x in f.read().split()]


def read_sectors(dev):
    """Sectors read from @dev so far."""
    return block_stat(dev)[2]


BLKFLSBUF = 0x1261


def flush_buffers(dev):
    """What blockdev --flushbufs does, without starting a program."""
    fd = os.open(dev, os.O_RDONLY)
    try:
        fcntl.ioctl(fd, BLKFLSBUF, 0)
    finally:
        os.close(fd)


# --------------------------------------------------------------------------
# Data


RANDOM_FILE = f"{MNT}/random"


def data_path(part, procs, share, i):
    """Process @i's file for @part with @procs processes: the single
    workloads share one set per process count, row and mix have their own."""
    return f"{MNT}/s{procs}-{i}" if share == 1 else f"{MNT}/m{procs}-{part}-{i}"


def lkr_path(u):
    return f"{MNT}/l{u}"


def pool_path(k):
    return f"{MNT}/p{k}"


def stream_files(part, procs, share, i):
    """The files process @i of @procs reads for the stream part @part (one
    of STREAMS) on 1/@share of its data, in the order it reads them.  In
    the pool (POOL_MIB): a single workload reads the pool's first
    POOL_SINGLE files; row's and mix's parts POOL_SINGLE // @share each,
    the j-th part of STREAMS from file j * POOL_SINGLE // @share on (parts
    of one run never share a file; every run starts cold, so sharing files
    with other runs changes nothing); process @i takes its part's files
    from its @i-th on by @procs; TAC reads its last file first, each from
    its end."""
    if not POOL_MIB:
        return [data_path(part, procs, share, i)]
    n = POOL_SINGLE // share
    first = 0 if share == 1 else STREAMS.index(part) * n
    mine = [pool_path(first + k) for k in range(n) if k % procs == i]
    return mine[::-1] if part == "tac" else mine


def parts_of(workload, io):
    if workload not in ("row", "mix"):
        return [workload], 1
    return [p for p in PARTS if io == "buffered" or p != "lkr"], PART_SHARE


def data_needed(runs):
    """The files (path -> KiB, in the order to write them) and the number
    of LKR copies that @runs read."""
    files, units = {}, 0
    for w, procs, io in runs:
        if w in APPS:
            continue
        parts, share = parts_of(w, io)
        for part in parts:
            if part == "lkr":
                units = max(units, LKR_UNITS // share)
            elif part == "random":
                files[RANDOM_FILE] = RANDOM_MIB << 10
            else:
                kib = POOL_MIB << 10 if POOL_MIB else (DATA_MIB << 10) // procs // share
                for i in range(procs):
                    for f in stream_files(part, procs, share, i):
                        files[f] = kib
    return files, units


def set_runs(spec, workloads=None, procs=None, ios=None):
    """The (workload, processes, I/O mode) runs of set @spec, those of
    @workloads, @procs (in place of the set's) and @ios if given."""
    return [(w, p, io) for ws, ps, io in spec["groups"] for w in ws
            for p in (procs or ps)
            if (not workloads or w in workloads) and (not ios or io in ios) and
            p <= MAX_PROCS.get(w, p) and not (w == "lkr" and io == "direct")]


RUN_OVERHEAD_S = 8	# a run's guest time besides the application's: stack, drop, check


def deal(runs, n, records=()):
    """@runs dealt out to @n guests, longest first, each to the guest with
    the least so far (LPT): a list of @n lists, each in @runs' order.  A
    case's length is the mean of its records' (an earlier run of the set)
    application time plus RUN_OVERHEAD_S: every case runs as many
    configurations and repetitions, and a set stopped early has fewer
    records of some (a sum dealt the hdd15k's 247 of 294 as 11,358 guest
    seconds against 6,063).  A case they lack counts as their median one
    (all equal without records: round-robin).  The same on every guest."""
    times = {}
    for r in records:
        times.setdefault((r["workload"], r["procs"], r["io"]), []).append(
            r["app_time_s"] + RUN_OVERHEAD_S)
    cost = {k: sum(t) / len(t) for k, t in times.items()}
    known = sorted(cost[r] for r in runs if r in cost)
    fill = known[len(known) // 2] if known else 1
    loads, parts = [0] * n, [[] for _ in range(n)]
    for i in sorted(range(len(runs)), key=lambda i: (-cost.get(runs[i], fill), i)):
        j = loads.index(min(loads))
        loads[j] += cost.get(runs[i], fill)
        parts[j].append(i)
    return [[runs[i] for i in sorted(p)] for p in parts]


def costs_source(results, set_name, profile):
    """The records run --jobs deals a set's cases by: the newest results
    of set @set_name in directory @results on drive @profile, else on any
    drive (the cases' lengths scale alike), else "" (round-robin).  The
    set a run is about to replace counts: the guests read it before the
    new one is written."""
    def newest(pattern):
        found = sorted(glob.glob(os.path.join(results, pattern)))
        return found[-1] if found else ""
    return (newest(f"*-{set_name}-*-{profile}.json")
            or newest(f"*-{set_name}-*.json"))


def set_data(spec, runs):
    """data_needed() for @runs of set @spec: the whole set's data, written
    in its order, whatever part of it runs (then what @runs add).  A cell's
    files lie where they lie in a full run of the set (a strided reader's
    segments, a tree's blocks), so a subset measures the same layout."""
    whole = set_runs(spec)
    return data_needed(whole + [r for r in runs if r not in whole])


def ram_disk_mib(files, units):
    """The RAM disk for @files (path -> KiB) and @units LKR copies: ext4's
    tenth on top, 64 MiB of room."""
    return sum(files.values()) * 11 // 10 // 1024 + units * LKR_UNIT_MIB + 64


def install_programs(rdpat):
    """rdpat, busybox (for find, cat, sh, mount, blockdev), dmsetup and
    vdiskctl with their libraries (run through the copied dynamic loader)
    into a tmpfs."""
    os.makedirs(BIN, exist_ok=True)
    if not os.path.ismount(BIN):
        sh("mount", "-t", "tmpfs", "-o", "size=32m", "redcap-bench", BIN)
    sh("cp", rdpat, RDPAT)
    sh("cp", "/bin/busybox", BUSYBOX)
    dmsetup = shutil.which("dmsetup")
    if not dmsetup:
        raise RuntimeError("dmsetup: not found (the dmsetup package)")
    os.makedirs(f"{BIN}/lib", exist_ok=True)
    for prog in (dmsetup, f"{TOP}/build/userspace/vdiskctl"):
        for line in sh("ldd", prog).stdout.splitlines():
            m = re.match(r"\s*(?:\S+ => )?(/\S+) \(", line)
            if m and "ld-linux" in m.group(1):
                sh("cp", "-L", m.group(1), f"{BIN}/ld.so")
            elif m:
                sh("cp", "-L", m.group(1), f"{BIN}/lib/")
        sh("cp", prog, f"{BIN}/")
    # the first start of each costs a little more: not in a timed run
    run_procs([f"{RDPAT} {RDPAT} seq 4096", f"{BUSYBOX} cat {RDPAT} >/dev/null"])
    sh(*DMSETUP, "version")


def redcap_parts(config):
    """(geometry, policy) of a redcap configuration, keys of GEOMETRIES
    and POLICIES, or None."""
    if config in (RECOMMENDED, RECOMMENDED_HDC, RECOMMENDED_WB, RECOMMENDED_SEL):
        return RECOMMENDED_STACK
    if config == RECOMMENDED_2X:
        segs, seg_sectors = GEOMETRIES[RECOMMENDED_STACK[0]]
        return f"{2 * segs}x{seg_sectors // 2}k", RECOMMENDED_STACK[1]
    m = re.fullmatch(r"redcap-(\d+x\d+k)-(.+)", config)
    if not m or m.group(1) not in {**GEOMETRIES, **LARGE_GEOMETRIES} or \
            m.group(2) not in POLICIES:
        return None
    return m.group(1), m.group(2)


def make_data(args, files, units):
    """ext4 on /dev/ram0: @files (path -> KiB, random content) and @units
    copies of the kernel source subtree."""
    # 4 KiB blocks, as on a server's filesystem (mke2fs gives a disk this
    # small 1 KiB blocks, which RapidDisk, caching whole 4 KiB blocks only,
    # would pass by)
    sh("mkfs.ext4", "-q", "-F", "-b", "4096", "-E", "lazy_itable_init=0,lazy_journal_init=0",
       "/dev/ram0")
    os.makedirs(MNT, exist_ok=True)
    sh(BUSYBOX, "mount", "-t", "ext4", "/dev/ram0", MNT)
    for path, kib in files.items():
        if POOL_MIB:
            # the server set's GiBs past the page cache (the RAM disk holds
            # them already): 1 MiB writes, O_DIRECT
            sh("dd", "if=/dev/urandom", f"of={path}", "bs=1M", f"count={kib // 1024}",
               "oflag=direct", "status=none")
        else:
            sh("dd", "if=/dev/urandom", f"of={path}", "bs=64k", f"count={kib // 64}",
               "status=none")
    if units:
        sh("mkdir", lkr_path(0))
        sh("tar", "-C", lkr_path(0), "-xf", args.lkr_tar, *LKR_DIRS)
        for u in range(1, units):
            sh("cp", "-a", lkr_path(0), lkr_path(u))
    nfiles = int(sh("sh", "-c", f"find {lkr_path(0)} -type f | wc -l").stdout) if units else 0
    kib = int(sh("du", "-sk", lkr_path(0)).stdout.split()[0]) if units else 0
    sh(BUSYBOX, "umount", MNT)
    return {"data_mib": DATA_MIB, "pool_mib": POOL_MIB, "pool_files": len(
                [f for f in files if f.startswith(pool_path(""))]),
            "random_mib": RANDOM_MIB, "random_ios": RANDOM_IOS, "lkr_batch": LKR_BATCH,
            "memory_max_mib": MEMORY_MAX_MIB, "budget_mib": BUDGET_SECTORS >> 11,
            "part_share": PART_SHARE, "files": len(files), "lkr_copies": units,
            "lkr_dirs": LKR_DIRS, "lkr_files": nfiles, "lkr_kib": kib}


# --------------------------------------------------------------------------
# Stacks


def wipe_bcache():
    """Zero where bcache's superblocks go on the RAM disks: if one is left,
    udev's bcache rule registers it whenever a device over it appears."""
    for d, sector in (("/dev/ram2", 16384), ("/dev/ram1", 0)):
        sh(BUSYBOX, "dd", "if=/dev/zero", f"of={d}", "bs=512", f"seek={sector}", "count=16",
           "oflag=direct")


class Base:
    """The devices every run shares, made once: the emulated disk
    (bench-hdd), the measuring vdisk over it (bench-vd, trained off-line;
    every run starts from the trained tables, see fresh_model()) and, for
    the floor, a measuring vdisk straight on the RAM disk (bench-warm)."""

    def __init__(self, args, snapshot=False):
        self.profile = args.profile
        self.n = sectors("/dev/ram0")
        # the real programs' writers: the disk is a snapshot of the image
        # on /dev/ram0, its changes on /dev/ram3, dropped by restore()
        self.snapshot = snapshot
        self.make()
        sh(*VDISKCTL, "train", "bench-vd", "--time", str(args.train),
           *(["--drive-cache"] if args.drive_cache else []))
        dm_message("bench-vd", "train", "off")
        self.learning = not args.frozen_model
        self.tables = f"{BIN}/model.tables"
        sh(*VDISKCTL, "save", "bench-vd", self.tables)
        if args.traces:
            # the model every run's "vd" starts from, for the simulator
            os.makedirs(args.traces, exist_ok=True)
            shutil.copy(self.tables, os.path.join(args.traces, f"model-{args.profile}.tables"))
        self.model = self.model_state()

    def make(self):
        n, data = self.n, "/dev/ram0"
        self.names = ["bench-warm", "bench-vd", "bench-hdd"]
        if self.snapshot:
            # apps.snapshot_table(): non-persistent, 4 KiB chunks; the
            # changes live in /dev/ram3
            data = dm_create("bench-snap", apps.snapshot_table("/dev/ram0", "/dev/ram3", n))
            self.names.append("bench-snap")
        self.hdd = dm_create("bench-hdd", f"0 {n} vdisk {data} 6 mode emulate "
                             f"profile {self.profile} capacity {PROFILES[self.profile]['capacity']}")
        self.vd = dm_create("bench-vd", f"0 {n} vdisk {self.hdd}")
        self.warm = dm_create("bench-warm", f"0 {n} vdisk {data}")

    def restore(self):
        """The data as in the pristine image: the snapshot and the devices
        over it made anew (the trained tables are loaded by every run)."""
        self.close()
        self.make()

    @staticmethod
    def model_state():
        return {k: v for k, v in dm_stats("bench-vd").items()
                if k in ("train", "cells_filled", "model_read_samples", "mean_read_us",
                          "overlap_us") or k.startswith("dcache_")}

    def fresh_model(self):
        """bench-vd's tables back to the trained ones, learning on unless
        --frozen-model: every run starts from the same model, and the
        model learns from the run as an admin's model layer does."""
        dm_message("bench-vd", "train", "off")	# nothing lands during the load
        sh(*VDISKCTL, "load", "bench-vd", self.tables)
        if self.learning:
            dm_message("bench-vd", "train", "on")

    def close(self):
        for name in self.names:
            dm_remove(name)


class Stack:
    """The device stack for one run; .top is what ext4 is on, .disk the
    device whose reads are the disk's."""

    def __init__(self, args, base, config):
        self.names, self.bcache, self.readahead, self.rapiddisk = [], None, None, None
        n = base.n
        self.disk = base.warm if config == "warm" else base.hdd
        vd = self.top = base.warm if config == "warm" else base.vd
        self.model = None
        if config != "warm":
            base.fresh_model()
            self.model = base.model_state()
        self.redcap = None
        if config.startswith("redcap-"):
            geometry, policy = redcap_parts(config)
            segs, seg_sectors = geometry_sizes(geometry)
            features = {RECOMMENDED_WB: WB_FEATURES,
                        RECOMMENDED_SEL: SEL_FEATURES}.get(config, POLICIES[policy])
            self.top = self.dm("bench-rc", f"0 {n} redcap {vd} {seg_sectors} {segs} {features}")
            hdc = HDC_TUNABLES if config == RECOMMENDED_HDC else []
            for key, value in TUNABLES.get(policy, []) + hdc:
                dm_message("bench-rc", "set", key, value)
            if policy in READAHEAD_OF:
                sh(BUSYBOX, "blockdev", "--setra", str(READAHEAD_OF[policy] * 2), self.top)
            self.redcap = "bench-rc"
            self.segment_bytes = seg_sectors * SECTOR
        elif config == "readahead":
            self.readahead = (vd, sh(BUSYBOX, "blockdev", "--getra", vd).stdout.strip())
            sh(BUSYBOX, "blockdev", "--setra", str(READAHEAD_KB * 2), vd)
        elif config == "dm-cache-brd":
            meta = self.dm("bench-cmeta", "0 8192 linear /dev/ram2 0")
            # a zeroed first block: new metadata (admin-guide/device-mapper/cache)
            sh(BUSYBOX, "dd", "if=/dev/zero", f"of={meta}", "bs=4096", "count=1", "oflag=direct")
            cdev = self.dm("bench-cdata", f"0 {BUDGET_SECTORS} linear /dev/ram1 0")
            self.top = self.dm("bench-cache", f"0 {n} cache {meta} {cdev} {vd} 256 "
                               "1 writethrough smq 2 migration_threshold 1048576")
        elif config.startswith("bcache-brd"):
            self.top = self.make_bcache(vd, n, config.endswith("nocutoff"))
        elif config == "rapiddisk-brd":
            self.top = self.make_rapiddisk(vd, n)
        elif config not in ("bare", EQUAL_RAM, "warm"):
            raise ValueError(f"unknown configuration {config}")

    def dm(self, name, table):
        self.names.append(name)
        return dm_create(name, table)

    def make_bcache(self, vd, n, nocutoff):
        """bcache needs its superblock in front of the data: the backing
        device is 16 sectors of /dev/ram2 followed by the disk, so bcache0
        shows the same filesystem."""
        wipe_bcache()
        back = self.dm("bench-bback", f"0 16 linear /dev/ram2 16384\n16 {n} linear {vd} 0")
        cdev = self.dm("bench-bcdata", f"0 {BUDGET_SECTORS} linear /dev/ram1 0")
        # 8 KiB buckets: bcache wants more than 512 of them
        out = sh("make-bcache", "--bucket", "8k", "-B", back, "-C", cdev).stdout
        cset = re.search(r"Set UUID:\s+(\S+)", out).group(1)
        for d in (cdev, back):
            try:
                write("/sys/fs/bcache/register", d)
            except OSError:	# registered already (bcache-tools' udev rule)
                pass
        sys_dir = None
        for _ in range(100):
            devs = [b for b in os.listdir("/sys/block") if b.startswith("bcache")]
            if devs:
                sys_dir = f"/sys/block/{devs[0]}"
                break
            time.sleep(0.1)
        if not sys_dir:
            raise RuntimeError("bcache: no bcache device appeared")
        if not os.path.exists(f"{sys_dir}/bcache/cache"):
            write(f"{sys_dir}/bcache/attach", cset)
        self.bcache = (sys_dir, f"/sys/fs/bcache/{cset}")
        if nocutoff:
            write(f"{sys_dir}/bcache/sequential_cutoff", 0)
            write(f"/sys/fs/bcache/{cset}/congested_read_threshold_us", 0)
            write(f"/sys/fs/bcache/{cset}/congested_write_threshold_us", 0)
        return "/dev/" + os.path.basename(sys_dir)

    def make_rapiddisk(self, vd, n):
        """rapiddisk-cache over the disk, caching in a RapidDisk RAM disk of
        the same 8 MiB: its table is <source> <cache device, /dev/rd*
        only> <cache size in sectors> <mode: 0 write-through, 1
        write-around>, associativity left at its default (512); 4 KiB
        blocks, a read miss of a whole block is filled into the cache
        (rapiddisk-cache.c, cache_ctr() and rc_map())."""
        write(RAPIDDISK_MGMT, f"rapiddisk attach {RAPIDDISK_RD} {BUDGET_SECTORS * SECTOR}")
        self.rapiddisk = rd = f"/dev/rd{RAPIDDISK_RD}"
        for _ in range(100):	# devtmpfs makes the node (udev is held)
            if os.path.exists(rd):
                break
            time.sleep(0.1)
        if sectors(rd) != BUDGET_SECTORS:
            raise RuntimeError(f"{rd}: {sectors(rd)} sectors, not {BUDGET_SECTORS}")
        return self.dm("bench-rdc", f"0 {n} rapiddisk-cache {vd} {rd} {BUDGET_SECTORS} 0")

    def disk_read_bytes(self):
        return read_sectors(self.disk) * SECTOR

    def disk_stats(self):
        return dm_stats(os.path.basename(self.disk))

    def close(self):
        if self.bcache:
            sys_dir, cset = self.bcache
            write(f"{sys_dir}/bcache/stop", 1)
            write(f"{cset}/unregister", 1)
            for _ in range(100):
                if not os.path.exists(sys_dir) and not os.path.exists(cset):
                    break
                time.sleep(0.1)
        for name in reversed(self.names):
            dm_remove(name)
        if self.rapiddisk:	# after the target that holds it: detach does not check
            write(RAPIDDISK_MGMT, f"rapiddisk detach {RAPIDDISK_RD}")
        if self.bcache:
            wipe_bcache()
        if self.readahead:
            sh(BUSYBOX, "blockdev", "--setra", self.readahead[1], self.readahead[0])


# --------------------------------------------------------------------------
# Workloads: each returns one shell command per process.


def part_cmds(part, procs, io, share):
    """One command per process: @part run by @procs processes on 1/@share
    of its data."""
    d = "-d " if io == "direct" else ""
    if part == "lkr":
        units = LKR_UNITS // share
        assert units >= procs, (part, procs, share)
        end = "+" if LKR_BATCH else "\\;"
        return [f"{BUSYBOX} find {' '.join(lkr_path(u) for u in range(i, units, procs))} "
                f"-type f -exec {BUSYBOX} cat {{}} {end} >/dev/null" for i in range(procs)]
    if part == "random":
        n = RANDOM_IOS // procs // share
        return [f"{RDPAT} {d}{RANDOM_FILE} random 4096 {n} {RANDOM_SEED + i}"
                for i in range(procs)]
    pattern = {"ior-r": "seq 65536", "tac": "back 65536", "4k-sr": "stride 4096 4096",
               "8k-sr": "stride 4096 8192"}
    cmds = []
    for i in range(procs):
        one = []
        for f in stream_files(part, procs, share, i):
            rd = f"{RDPAT} {d}{f}"
            if part == "512k-sr":
                one += [f"{rd} stride 4096 524288 {4096 * k}" for k in range(4)]
            else:
                one.append(f"{rd} {pattern[part]}")
        cmds.append(" && ".join(one))
    return cmds


def commands(workload, procs, io):
    parts, share = parts_of(workload, io)
    per_part = [part_cmds(p, procs, io, share) for p in parts]
    if workload == "row":
        return [" && ".join(cmds[i] for cmds in per_part) for i in range(procs)]
    return [c for cmds in per_part for c in cmds]


def workload_env():
    """The processes' directory and environment: the programs' tmpfs.
    busybox sh checks $PWD against "." with a stat of each as it starts;
    from the suite's own directory (host-backed: 9p) those are two round
    trips to the host, and under icount a guest idle while it waits on the
    host has its clock moved on to its next timer (the tick, or further)
    each time it idles: 4 ... 24 ms, once 200 ms, of a run's time in about
    one run of twelve, whatever the configuration (2026-11-28, traced)."""
    return BIN, dict(os.environ, PWD=BIN)


# The workloads' cgroup (cgroup_setup()), None: they run where the suite does.
CGROUP = None
CGROUP_ROOT = "/sys/fs/cgroup"


def cgroup_setup():
    """A cgroup v2 for the workloads, with the memory controller: cgroup2
    mounted at CGROUP_ROOT if it is not (virtme-ng's init may leave it
    out), memory enabled for the root's children."""
    global CGROUP
    with open("/proc/mounts") as f:
        mounted = any(l.split()[1] == CGROUP_ROOT and l.split()[2] == "cgroup2" for l in f)
    if not mounted:
        os.makedirs(CGROUP_ROOT, exist_ok=True)
        sh("mount", "-t", "cgroup2", "none", CGROUP_ROOT)
    with open(f"{CGROUP_ROOT}/cgroup.controllers") as f:
        if "memory" not in f.read().split():
            raise RuntimeError(f"{CGROUP_ROOT}: no memory controller")
    write(f"{CGROUP_ROOT}/cgroup.subtree_control", "+memory")
    CGROUP = f"{CGROUP_ROOT}/redcap-bench"
    os.makedirs(CGROUP, exist_ok=True)


def cgroup_limit(limit):
    """The workloads' memory.max: @limit bytes (None: "max")."""
    if CGROUP:
        write(f"{CGROUP}/memory.max", "max" if limit is None else limit)


def cgroup_join():
    """In a workload's child before it runs: into the workloads' cgroup
    (its page cache charged there from its first read)."""
    if CGROUP:
        with open(f"{CGROUP}/cgroup.procs", "w") as f:
            f.write("0")


def cgroup_events():
    """The cgroup's memory.events (reclaim against memory.max: "max")."""
    if not CGROUP:
        return None
    with open(f"{CGROUP}/memory.events") as f:
        return {k: int(v) for k, v in (l.split() for l in f)}


def run_procs(cmds):
    """Start every command at once, in the workloads' cgroup; seconds
    until the last one ends."""
    cwd, env = workload_env()
    t0 = time.monotonic()
    ps = [subprocess.Popen([BUSYBOX, "sh", "-c", c], stderr=subprocess.PIPE, text=True,
                           cwd=cwd, env=env, preexec_fn=cgroup_join)
          for c in cmds]
    errs = [(c, p.communicate()[1], p.returncode) for c, p in zip(cmds, ps)]
    t = time.monotonic() - t0
    for c, err, rc in errs:
        if rc:
            raise RuntimeError(f"{c}: exit {rc}: {err.strip()}")
    return t


# --------------------------------------------------------------------------
# The best-possible-prefetch bound from a block trace


FORK_EVENT = "/sys/kernel/debug/tracing/events/sched/sched_process_fork/enable"


def forks_start():
    write("/sys/kernel/debug/tracing/trace", "")
    write(FORK_EVENT, 1)


def forks_stop(path):
    """The forks seen since forks_start() into @path, "PARENT CHILD" lines
    after "# root PID" (this process: the workload's processes are its
    children): which process started which, that blktrace does not say."""
    write(FORK_EVENT, 0)
    with open("/sys/kernel/debug/tracing/trace") as f:
        forks = re.findall(r"sched_process_fork: comm=.* pid=(\d+) child_comm=.* child_pid=(\d+)",
                           f.read())
    with open(path, "w") as f:
        f.write(f"# root {os.getpid()}\n" + "".join(f"{a} {b}\n" for a, b in forks))


def blktrace_start(dev, complete):
    """blktrace on @dev into a new directory; (process, directory).
    dm devices are bio-based: a request shows as Q (queued), never D; with
    @complete the completions too (a replay needs the think time)."""
    if not os.path.ismount("/sys/kernel/debug"):
        sh("mount", "-t", "debugfs", "none", "/sys/kernel/debug")
    tdir = tempfile.mkdtemp(prefix="bench-trace-")
    acts = ["-a", "queue"] + (["-a", "complete"] if complete else [])
    bt = subprocess.Popen(["blktrace", "-d", dev, *acts, "-D", tdir, "-o", "t"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(1)
    return bt, tdir


def blktrace_stop(bt):
    bt.terminate()
    bt.wait()


def cold_traced(stack, keep):
    """cold(), with the mount's requests to @keep (blkparse's default text):
    what the stack does before a run, for redcapctl simulate --warm."""
    bt, tdir = blktrace_start(stack.disk, True)
    try:
        cold(stack)
    finally:
        blktrace_stop(bt)
    sh("blkparse", "-q", "-D", tdir, "-i", "t", "-o", keep)
    sh("rm", "-rf", tdir)


def trace_extents(dev, cmds, keep=None):
    """Run @cmds under blktrace on @dev; the (sector, sectors) reads issued.
    With @keep, the whole trace (queues and completions) also goes there as
    blkparse's default text, and the processes' forks to @keep's name with
    .forks for .blkparse."""
    bt, tdir = blktrace_start(dev, bool(keep))
    if keep:
        forks_start()
    try:
        run_procs(cmds)
    finally:
        blktrace_stop(bt)
        if keep:
            forks_stop(keep[:-len(".blkparse")] + ".forks")
    if keep:
        sh("blkparse", "-q", "-D", tdir, "-i", "t", "-o", keep)
    out = sh("blkparse", "-q", "-D", tdir, "-i", "t", "-f", "%a %d %S %n\n").stdout
    sh("rm", "-rf", tdir)
    ext = []
    for line in out.splitlines():
        f = line.split()
        if len(f) == 4 and f[0] == "Q" and "R" in f[1] and int(f[3]) > 0:
            ext.append((int(f[2]), int(f[3])))
    return ext


def prefetch_bound(extents, prof):
    """I/O time if every needed block were read once, in sorted runs merged
    across gaps cheaper to read through than to seek over."""
    if not extents:
        return 0.0, 0
    blocks = sorted(extents)
    gap = prof["access_s"] * prof["rate"] / SECTOR	# sectors
    runs, total = 0, 0
    start, end = blocks[0][0], blocks[0][0] + blocks[0][1]
    for s, n in blocks[1:]:
        if s <= end + gap:
            end = max(end, s + n)
            continue
        runs, total = runs + 1, total + end - start
        start, end = s, s + n
    runs, total = runs + 1, total + end - start
    return runs * prof["access_s"] + total * SECTOR / prof["rate"], runs


# --------------------------------------------------------------------------


SETTLE_POLL_S = 0.1	# guest time: under icount with sleep=off, idle costs no wall time
SETTLE_POLLS = 3
SETTLE_MAX_S = 10


def wait_for(ready, late):
    """Poll @ready() every SETTLE_POLL_S until it is true; RuntimeError(@late)
    after SETTLE_MAX_S."""
    t0 = time.monotonic()
    while not ready():
        if time.monotonic() - t0 > SETTLE_MAX_S:
            raise RuntimeError(late)
        time.sleep(SETTLE_POLL_S)


def settle(stack):
    """Wait until the disk has been idle for SETTLE_POLLS polls in a row.
    ext4 still reads metadata after mount(2) returns; through a cache each
    of those reads may be a whole-segment fill with a seek, and a run
    started at once would queue behind them (and the drive's counters
    would charge them to it)."""
    seen = {"last": None, "quiet": 0}

    def quiet():
        st = block_stat(stack.disk)
        now = (st[0], st[4], st[8])	# reads, writes, in flight
        seen["quiet"] = seen["quiet"] + 1 if now == seen["last"] and not st[8] else 0
        seen["last"] = now
        return seen["quiet"] >= SETTLE_POLLS
    wait_for(quiet, f"{stack.disk}: still busy {SETTLE_MAX_S} s after the mount")


def fills_done(stack):
    """Wait for the fills a run left in flight: a stream's read-ahead
    batches go on after its last read.  The drive counts a request when it
    is sent, redcap a fill when it completes, so the record's counters
    agree (and its bytes read include those fills) only once none is in
    flight.  Under load outside icount, reading them at once saw the drive
    count requests redcap had not (tests/guest/test_bench.py)."""
    wait_for(lambda: not dm_stats(stack.redcap)["segments_filling"],
             f"{stack.redcap}: fills still in flight {SETTLE_MAX_S} s after the run")


def cold(stack, rw=False):
    """Mount the stack's top read-only (@rw: read-write) with nothing of it
    cached anywhere:
    the last unmount dropped the files' pages, the block devices' buffers
    are flushed here and any cache is new.  Once the mount's own reads are
    over (settle()), the drive is reset to its cold state.  (Not
    drop_caches: it would drop the host-backed programs too, and reading
    them back costs guest time under icount.)"""
    for dev in {stack.top, stack.disk}:
        flush_buffers(dev)
    sh(BUSYBOX, "mount", "-t", "ext4", "-o", "rw" if rw else "ro", stack.top, MNT)
    settle(stack)
    reset_counters(stack)


def reset_counters(stack):
    """A cold drive (its cache, head position and counters as at load):
    the counters count the run, not the mount's reads (nor a server's
    start)."""
    dm_message(os.path.basename(stack.disk), "reset")
    if stack.redcap:
        dm_message(stack.redcap, "reset_stats")


def rapiddisk_stats(name):
    """rapiddisk-cache's counters from its status, "cache hits(12)" ->
    {"cache_hits": 12}."""
    out = sh(*DMSETUP, "status", name).stdout
    return {k.replace(" ", "_"): int(v) for k, v in re.findall(r"([a-z][a-z ]*)\((\d+)\)", out)}


def rapiddisk_dir():
    return os.path.join(TOP, "build", KREL, "rapiddisk")


def rapiddisk_built():
    return all(os.path.exists(os.path.join(rapiddisk_dir(), ko)) for ko in RAPIDDISK_KO)


def load_rapiddisk():
    """RapidDisk's two modules from the build tree (make rapiddisk)."""
    d = rapiddisk_dir()
    if not rapiddisk_built():
        raise RuntimeError(f"{d}: no {' or '.join(RAPIDDISK_KO)} (make rapiddisk on the host)")
    for ko in RAPIDDISK_KO:
        if not os.path.isdir(f"/sys/module/{ko[:-3].replace('-', '_')}"):
            sh("insmod", os.path.join(d, ko))


def one_run(args, base, workload, procs, io, config, rep, extra):
    app = workload in APPS
    if app and workload in apps.WRITES:
        base.restore()
    stack = Stack(args, base, config)
    try:
        limit = memory_max(config)
        cgroup_limit(limit)
        cold(stack, rw=app and workload in apps.WRITES)
        if app:
            # untimed: the data bound into the programs' chroot, a server
            # started (in the cgroup) and the disk quiet again
            apps.setup(workload, MNT, CGROUP)
            settle(stack)
            reset_counters(stack)
        before, events = stack.disk_read_bytes(), cgroup_events()
        try:
            t = run_procs(apps.commands(workload, procs, MNT) if app
                          else commands(workload, procs, io))
            # what the run wrote and is not on the disk yet, written: the
            # page cache's dirty pages, then whatever a write cache holds
            # (its flush); app time + sync time is the time to durable
            t_sync = None
            if app and workload in apps.WRITES:
                t0 = time.monotonic()
                sh(BUSYBOX, "sync", "-f", MNT)
                t_sync = time.monotonic() - t0
            if stack.redcap:
                fills_done(stack)
            # the run's counters, before a server's shutdown writes
            rec = {"workload": workload, "procs": procs, "config": config, "io": io,
                   "rep": rep, "app_time_s": round(t, 4),
                   "disk_read_bytes": stack.disk_read_bytes() - before,
                   "kernel": KREL, "disk_profile": args.profile, "set": args.set,
                   "memory_max_bytes": limit, "budget_bytes": BUDGET_SECTORS * SECTOR}
            if t_sync is not None:
                rec["sync_s"] = round(t_sync, 4)
            if events is not None:	# times the page cache was reclaimed at its bound
                rec["memory_max_events"] = cgroup_events()["max"] - events["max"]
            rec["disk_stats"] = stack.disk_stats()
            if stack.redcap:
                rec["redcap_stats"] = dm_stats(stack.redcap)
                # the shadows' RAM advice for the run's reads (priced on the
                # model as it is now, as redcapctl status would)
                rec["shadows"] = shadows_of(dm_message(stack.redcap, "shadows"),
                                            stack.segment_bytes)
            if stack.rapiddisk:
                rec["rapiddisk_stats"] = rapiddisk_stats("bench-rdc")
        finally:
            if app:
                results = apps.results(workload)
                apps.teardown(workload, MNT)
        if app:
            rec["app_results"] = results
        if stack.model:
            # the model layer's state when the stack was made and after the run
            rec["model_run"] = {"start": stack.model, "end": base.model_state()}
        rec.update(extra)
        sh(BUSYBOX, "umount", MNT)
    finally:
        if os.path.ismount(MNT):
            sh(BUSYBOX, "umount", MNT, check=False)
        stack.close()
    return rec


def bound_record(args, base, workload, procs, io, extra):
    stack = Stack(args, base, "bare")
    try:
        cgroup_limit(memory_max("bare"))
        keep = (os.path.join(args.traces, f"{workload}-{procs}-{io}.blkparse")
                if args.traces else None)
        if keep:
            cold_traced(stack, keep[:-len(".blkparse")] + ".mount.blkparse")
        else:
            cold(stack)
        ext = trace_extents(stack.disk, commands(workload, procs, io), keep)
        sh(BUSYBOX, "umount", MNT)
    finally:
        if os.path.ismount(MNT):
            sh(BUSYBOX, "umount", MNT, check=False)
        stack.close()
    t, runs = prefetch_bound(ext, PROFILES[args.profile])
    rec = {"workload": workload, "procs": procs, "config": "bound", "io": io, "rep": 0,
           "app_time_s": round(t, 4),
           "disk_read_bytes": sum(n for _, n in ext) * SECTOR,
           "kernel": KREL, "disk_profile": args.profile, "set": args.set,
           "memory_max_bytes": memory_max("bare"), "budget_bytes": BUDGET_SECTORS * SECTOR,
           "bound_runs": runs, "bound_unique_bytes": unique_sectors(ext) * SECTOR}
    rec.update(extra)
    return rec


def unique_sectors(extents):
    total, end = 0, -1
    for s, n in sorted(extents):
        if s + n > end:
            total += s + n - max(s, end)
            end = s + n
    return total


def write_records(path, records):
    """A JSON list, one record per line."""
    with open(path, "w") as f:
        f.write("[\n" + ",\n".join(json.dumps(r, sort_keys=True) for r in records) + "\n]\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--set", choices=SETS, default="full")
    ap.add_argument("--profile", choices=PROFILES, default="hdd7200")
    ap.add_argument("--workloads", nargs="+", choices=WORKLOADS + APPS,
                    help="only these of the set's workloads")
    ap.add_argument("--procs", nargs="+", type=int, help="instead of the set's")
    ap.add_argument("--io", nargs="+", choices=["buffered", "direct"],
                    help="only these of the set's I/O modes")
    ap.add_argument("--configs", nargs="+",
                    help="instead of the set's (its full set's configurations and "
                    "those EXTRA_CONFIGS adds, at the set's RAM)")
    ap.add_argument("--reps", type=int, help="instead of the set's")
    ap.add_argument("--part", metavar="J/N",
                    help="run only the J-th (from 0) of N parts of the set's "
                    "(workload, processes, I/O mode) cases (deal()); the data on "
                    "disk is the whole set's, as when run in one piece")
    ap.add_argument("--costs", metavar="FILE.json",
                    help="with --part: deal the cases out by their time in these "
                    "records of an earlier run of the set, longest first (deal())")
    ap.add_argument("--no-bound", action="store_true",
                    help="skip the traced runs that give the prefetch bound")
    ap.add_argument("--bound", action="store_true",
                    help="the traced runs that give the prefetch bound, in a set without "
                    "them (server)")
    ap.add_argument("--traces", metavar="DIR",
                    help="keep the bound's block traces (<workload>-<procs>-<io>.blkparse) "
                    "and the trained model (model-<profile>.tables) in DIR, for "
                    "tests/bench/sim-validate.py")
    ap.add_argument("--train", type=int, default=20, help="seconds of model training")
    ap.add_argument("--drive-cache", action="store_true",
                    help="train the model with vdiskctl train --drive-cache: the drive's "
                         "cache learnt and priced")
    ap.add_argument("--frozen-model", action="store_true",
                    help="the model layer does not learn during the runs: every run is "
                    "priced by the off-line training alone (the results up to 2026-11-25)")
    ap.add_argument("--icount", action="store_true",
                    help="say in the records that the guest runs under icount")
    ap.add_argument("--rdpat", default=os.path.join(TOP, "build", "bench", "rdpat"),
                    help="the static reader (tests/bench/rdpat.c)")
    ap.add_argument("--lkr-tar", default=os.path.join(CACHE, "lkr.tar"))
    ap.add_argument("--scale", type=int, default=1, metavar="N",
                    help="N times the LKR copies and the IOR-R/TAC/strided data (LKR's "
                    "16 copies fit in the caches' 8 MiB; --scale 8 makes them 4.5 times it)")
    ap.add_argument("--random-seed", type=int, default=RANDOM_SEED, metavar="N",
                    help="the random readers' seeds are N, N + 1, ... (default %(default)s): "
                    "other offsets, the same pattern")
    args = ap.parse_args()
    spec = SETS[args.set]
    configure(spec, args.profile)
    set_scale(args.scale)
    set_random_seed(args.random_seed)
    bad = [c for c in args.configs or [] if c not in CONFIGS + EXTRA_CONFIGS]
    if bad:
        ap.error(f"--configs: {', '.join(bad)}: not one of {', '.join(CONFIGS + EXTRA_CONFIGS)}")
    if EQUAL_RAM in (args.configs or spec["configs"]) and MEMORY_MAX_MIB is None:
        ap.error(f"{EQUAL_RAM}: set {args.set} bounds no page cache")
    if not args.configs and "rapiddisk-brd" in spec["configs"] and not rapiddisk_built():
        # RapidDisk 9.0.0 does not build for every kernel (6.12): a set
        # goes on without it, --configs rapiddisk-brd fails in load_rapiddisk()
        log(f"bench: no RapidDisk modules in {rapiddisk_dir()}: rapiddisk-brd left out")
        spec = dict(spec, configs=[c for c in spec["configs"] if c != "rapiddisk-brd"])
    args.configs = args.configs or spec["configs"]
    args.reps = args.reps or spec["reps"]
    # configurations run in the first repetition only
    args.once = [c for c in spec.get("once", []) if c in args.configs]
    args.no_bound = args.no_bound or not (spec.get("bound", True) or args.bound)
    if args.traces and args.no_bound:
        ap.error(f"--traces keeps the block traces of the bound's runs, and set {args.set} "
                 "runs none here: add --bound")
    args.runs = set_runs(spec, args.workloads, args.procs, args.io)
    if len({w in APPS for w, _, _ in args.runs}) > 1:
        ap.error("the real programs (apps.WORKLOADS) run in a suite of their own "
                 "(--set apps): their data is apps.image()")
    files, units = set_data(spec, args.runs)
    if args.part:
        j, n = map(int, args.part.split("/"))
        records = []
        if args.costs:
            with open(args.costs) as f:
                records = json.load(f)
        args.runs = deal(args.runs, n, records)[j]
    if not args.runs:
        sys.exit("suite: nothing to run")
    # dmsetup makes its own nodes (udev's dm rules are skipped) ...
    os.environ["DM_DISABLE_UDEV"] = "1"
    # ... but udev's other rules (blkid, bcache-tools' probe-bcache) would
    # still read every new device, through the cache under test, at a time
    # of their own, sometimes during the run: no udev rule runs until the
    # suite is over (the suite registers bcache devices itself).
    udevadm = shutil.which("udevadm")
    if udevadm and sh(udevadm, "control", "--stop-exec-queue", check=False).returncode:
        log("bench: udevadm control failed: no udev daemon, nothing to stop")
        udevadm = None
    try:
        run_suite(args, files, units)
    finally:
        if udevadm:
            # the records are written: a udev daemon too busy to answer in
            # time (a loaded host) is worth a warning, not a failed bench
            r = sh(udevadm, "control", "--start-exec-queue", check=False)
            if r.returncode:
                log(f"bench: udevadm control --start-exec-queue: {r.stderr.strip()}")


def run_suite(args, files, units):
    runs = args.runs
    app = runs[0][0] in APPS
    if app:
        image = apps.image(CACHE)	# built on the host by tests/bench/run
        mib = (os.path.getsize(image) >> 20) + 64
    else:
        mib = ram_disk_mib(files, units)
    if MEMORY_MAX_MIB is not None:
        cgroup_setup()
    sh("modprobe", "-r", "brd", check=False)
    # ram1, ram2: the other caches' RAM and metadata; ram3: the writers' changes
    sh("modprobe", "brd", f"rd_nr={4 if app else 3}", f"rd_size={mib * 1024}")
    if any(c.startswith("bcache") for c in args.configs):
        sh("modprobe", "bcache")
    if "rapiddisk-brd" in args.configs:
        load_rapiddisk()
    t0 = time.monotonic()
    install_programs(args.rdpat)
    if app:
        # the image onto the RAM disk once (its free room left unwritten)
        sh("dd", f"if={image}", "of=/dev/ram0", "bs=4M", "conv=sparse", "status=none")
        os.makedirs(MNT, exist_ok=True)
        data = {"apps_image": os.path.basename(image), **apps.image_info(CACHE),
                "memory_max_mib": MEMORY_MAX_MIB, "budget_mib": BUDGET_SECTORS >> 11}
    else:
        data = make_data(args, files, units)
    base = Base(args, snapshot=app)
    log(f"bench: data on ext4 ({mib} MiB RAM disk) and model ready in "
        f"{time.monotonic() - t0:.0f} s of guest time: {data}, model {base.model}")

    extra = {"scale": data, "icount": args.icount, "model": base.model, "cgroup": CGROUP,
             "model_learning": base.learning, "random_seed": RANDOM_SEED}
    records = []
    total = len(runs) * (len(args.configs) * args.reps - len(args.once) * (args.reps - 1)) + \
        (not args.no_bound) * len([r for r in runs if r[0] not in APPS])
    done = 0
    t0 = time.monotonic()

    def progress(rec):
        nonlocal done
        done += 1
        records.append(rec)
        write_records(args.out + ".tmp", records)
        os.replace(args.out + ".tmp", args.out)
        log(f"[{done}/{total}] {rec['workload']} x{rec['procs']} "
            f"{rec['io']} {rec['config']} rep {rec['rep']}: {rec['app_time_s']:.3f} s, "
            f"{rec['disk_read_bytes'] >> 20} MiB from disk")

    for rep in range(args.reps):
        for w, p, io in runs:
            for config in args.configs:
                if rep == 0 or config not in args.once:
                    progress(one_run(args, base, w, p, io, config, rep, extra))
    if not args.no_bound:
        for w, p, io in runs:
            if w not in APPS:
                progress(bound_record(args, base, w, p, io, extra))
    base.close()
    sh("modprobe", "-r", "brd", check=False)
    log(f"bench: {done} records in {args.out}, {(time.monotonic() - t0) / 60:.1f} min "
        "of guest time")


if __name__ == "__main__":
    main()
