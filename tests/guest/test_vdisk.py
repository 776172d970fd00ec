# SPDX-License-Identifier: GPL-2.0
"""vdisk: the hard-disk emulator (emulate), the timing sidecar (measure),
the latency tables and their messages, and redcap finding the model.

Timing: nothing here asserts on wall-clock speed.  The emulated drive's own
accounting (emu_* counters: the modelled service times) is deterministic for
a request stream and seed, so the acceptance figures of the emulator are
checked on it; what fio measured is printed, and it must never be *faster*
than the model (a bio cannot complete before its modelled time)."""
import os
import random
import re
import subprocess
import threading
import time

import pytest

from dmtest import (SLOW, Dm, brd_device, dev_sectors, dm_major_minor, fio, kmsg, read_blocks,
                    read_pattern, sh, write_stamped)

TABLE_ERR = re.compile(r"^device-mapper: table: \d+:\d+: vdisk: (.*)$")
VDISK_ERR = re.compile(r"^device-mapper: vdisk: (.*)$")
REDCAP_TABLE_ERR = re.compile(r"^device-mapper: table: \d+:\d+: redcap: (.*)$")

BRD_MIB = 256


@pytest.fixture(scope="module")
def ram():
    """One RAM disk for the module (reloading brd costs seconds per test);
    every test writes what it reads back."""
    with brd_device(BRD_MIB) as dev:
        yield dev


@pytest.fixture
def emu(ram, dmname):
    """An emulated hdd7200 over a 256 MiB RAM disk (whole-stroke scaling)."""
    with Dm(dmname(), f"0 {dev_sectors(ram)} vdisk {ram} 4 mode emulate profile hdd7200") as d:
        d.message("reset")
        yield d


def model_mean_us(st):
    return st["emu_busy_us"] / st["emu_requests"]


def errors(regex, lines):
    return [m.group(1) for m in map(regex.match, lines) if m]


def exists(name):
    return sh("dmsetup", "info", name, check=False).returncode == 0


# --------------------------------------------------------------------------
# 1. The emulated drive


def test_emulate_sequential_128k_reads_run_at_media_rate(emu):
    """The stream never moves the head and never beats the 150 MB/s media:
    what fio sees is the media rate less the host's own gaps (printed; the
    figure for the docs comes from the benchmark run)."""
    r = fio(emu.path, "--rw=read", "--bs=128k", "--size=32m")
    st = emu.stats()
    print(f"seq 128 KiB: fio {r['bw_mbs']:.1f} MB/s, mean {r['lat_us']:.0f} us; "
          f"drive busy {st['emu_busy_us']} us")
    assert st["emu_requests"] == 256
    assert st["emu_seeks"] == 0, "a sequential stream should not move the head"
    assert st["emu_ra_hits"] + st["emu_cache_hits"] == 255
    assert r["bw_mbs"] <= 150 * 1.02
    assert r["lat_us"] >= 0.99 * model_mean_us(st)


def test_emulate_random_4k_reads_take_a_seek_and_a_rotation(emu):
    r = fio(emu.path, "--rw=randread", "--bs=4k", "--number_ios=300", "--size=100%")
    st = emu.stats()
    print(f"random 4 KiB: fio mean {r['lat_us']:.0f} us; model {model_mean_us(st):.0f} us")
    assert st["emu_requests"] == 300
    assert 8000 <= model_mean_us(st) <= 16000
    assert st["emu_seeks"] >= 290
    assert st["emu_cache_hits"] <= 5
    assert r["lat_us"] >= 0.99 * model_mean_us(st)


def test_emulate_rereads_are_served_from_the_drive_cache(emu):
    fio(emu.path, "--rw=read", "--bs=4k", "--size=64k", "--offset=8m")
    emu.message("reset_stats")
    r = fio(emu.path, "--rw=read", "--bs=4k", "--size=64k", "--offset=8m", "--loops=10")
    st = emu.stats()
    print(f"re-read 4 KiB: fio mean {r['lat_us']:.0f} us; model {model_mean_us(st):.0f} us")
    assert st["emu_requests"] == 160
    assert st["emu_cache_hits"] == 160
    assert st["emu_seeks"] == 0
    assert model_mean_us(st) < 1000
    assert r["lat_us"] >= 0.99 * model_mean_us(st)


def test_emulate_serves_concurrent_requests_to_the_end(emu, dmname):
    """Several requests queued on the drive at once, under a measuring vdisk
    (whose clones dm issues only after its map returns), most of them drive
    cache hits due within microseconds: one whose time has come while its
    data is still on the way must not leave the next one without a timer
    (make demo hung here: four find processes on ext4)."""
    n = dev_sectors(emu.path)
    with Dm(dmname(), f"0 {n} vdisk {emu.path}") as top:
        emu.message("reset_stats")      # udev's probe of the new device
        cmd = ["fio", f"--filename={top.path}", "--direct=1", "--ioengine=libaio",
               "--iodepth=8", "--rw=read", "--bs=4k", "--size=2m", "--output-format=terse",
               "--terse-version=3"]
        for j in range(4):
            cmd += [f"--name=job{j}", f"--offset={j * 4}m"]
        # Busy CPUs preempt submitters between a bio's map and its clone.
        hogs = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(4)]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        finally:
            for h in hogs:
                h.kill()
                h.wait()
        assert r.returncode == 0, r.stderr
    st = emu.stats()
    assert st["emu_requests"] == 4 * 512
    assert st["queued"] == 0 and st["queued_max"] > 1


def test_emulate_is_deterministic_for_a_seed(ram, dmname):
    """Same stream and seed, same drive time; another seed, other rotations.
    Without read-ahead, so that how long the host paused between requests
    (how far the drive read ahead meanwhile) cannot move the head."""
    runs = []
    for seed in (42, 42, 43):
        with Dm(dmname(), f"0 {dev_sectors(ram)} vdisk {ram} 8 mode emulate seed {seed} "
                          "profile hdd15k readahead 0") as d:
            d.message("reset")
            fio(d.path, "--rw=randread", "--bs=4k", "--number_ios=50", "--size=100%")
            st = d.stats()
            runs.append((st["emu_busy_us"], st["emu_rotation_us"], st["emu_seeks"]))
    assert runs[0] == runs[1]
    assert runs[2][1] != runs[0][1]
    assert runs[2][2] == runs[0][2]


@pytest.mark.parametrize("profile,lat_us,mbps,iops", [("st1", 3000, 262, 500),
                                                      ("nbd", 1000, 117, 0)])
def test_emulate_devices_without_platters(ram, dmname, profile, lat_us, mbps, iops):
    """A cloud volume and a network block device: no seek, rotation or
    drive cache; each request costs the latency plus its transfer, and
    requests in flight together overlap, paced by the I/O and throughput
    caps.  Checked on the emulator's own clock (emu_busy_us: the union of
    the requests' spans), which the host's speed does not move."""
    with Dm(dmname(), f"0 {dev_sectors(ram)} vdisk {ram} 4 mode emulate profile {profile}") as d:
        d.message("reset")
        # One at a time: every request pays its latency and transfer.
        fio(d.path, "--rw=randread", "--bs=4k", "--number_ios=100", "--size=100%")
        st = d.stats()
        xfer_us = 4096 / mbps
        assert st["emu_requests"] == 100
        assert st["emu_seeks"] == st["emu_cache_hits"] == st["emu_rotation_us"] == 0
        assert st["emu_seek_us"] == 0
        assert abs(st["emu_busy_us"] - 100 * (lat_us + xfer_us)) <= 100
        r = fio(d.path, "--rw=randread", "--bs=4k", "--number_ios=100", "--size=100%")
        assert r["lat_us"] >= 0.99 * (lat_us + xfer_us)
        # Write then read back through it: the data is the RAM disk's.
        write_stamped(d.path, 0, 64, seed=5)
        read_pattern(d.path, range(64), seed=5)
    # 32 in flight: they overlap, so the device is busy for less than the
    # sum of their times; the I/O cap, where there is one, spaces them at
    # least 1 / iops apart.  With the latency raised to 50 ms, so that they
    # are in flight together on any kernel: the debug kernel under icount
    # takes more of the guest's time to submit one than nbd's 1 ms, and
    # served them one after another (2026-12-06).
    lat_us = 50000
    features = f"mode emulate profile {profile} latency_us {lat_us}"
    with Dm(dmname(), f"0 {dev_sectors(ram)} vdisk {ram} {len(features.split())} {features}") as d:
        d.message("reset")
        fio(d.path, "--rw=randread", "--bs=4k", "--number_ios=100", "--size=100%",
            "--ioengine=libaio", "--iodepth=32")
        st = d.stats()
        assert st["emu_requests"] == 100
        assert st["queued_max"] > 1
        floor = 99 * 1e6 / iops + lat_us if iops else lat_us
        assert floor - 100 <= st["emu_busy_us"] < 0.9 * 100 * (lat_us + xfer_us)
        # The model learns what each request added, as a real device's
        # completion gaps show it: the samples sum to the busy time.
        assert st["read_samples"] == 100
        assert abs(100 * st["mean_read_us"] - st["emu_busy_us"]) <= 100


def test_emulate_writes_go_to_the_media_and_drop_cached_segments(emu):
    fio(emu.path, "--rw=read", "--bs=4k", "--size=16k", "--offset=4m")
    write_stamped(emu.path, 1024, 1, seed=5)     # block 1024 = 4 MiB
    emu.message("reset_stats")
    fio(emu.path, "--rw=read", "--bs=4k", "--size=4k", "--offset=4m")
    st = emu.stats()
    assert (st["emu_requests"], st["emu_cache_hits"], st["emu_ra_hits"]) == (1, 0, 0)
    read_pattern(emu.path, [1024], seed=5)


# --------------------------------------------------------------------------
# 2. Data integrity through both modes


def test_data_written_through_emulate_and_measure_reads_back(emu, ram, dmname):
    write_stamped(emu.path, 0, 512, seed=21)
    read_pattern(emu.path, range(512), seed=21)
    read_pattern(ram, range(512), seed=21)
    with Dm(dmname(), f"0 {dev_sectors(ram)} vdisk {emu.path}") as meas:
        write_stamped(meas.path, 512, 512, seed=22)
        read_pattern(meas.path, range(512, 1024), seed=22)
        read_pattern(meas.path, range(512), seed=21)
        read_pattern(ram, range(512, 1024), seed=22)
        st = meas.stats()
        assert st["mode"] == "measure"
        assert st["read_samples"] >= 1024 and st["write_samples"] >= 1


def test_mode_switches_and_suspends_under_verifying_fio_lose_nothing(emu):
    """20 mode switches, every fifth followed by a suspend and a resume,
    each made while fio writes and verifies (as it goes and at its end).
    The number of switches is a count, not what a time window allowed: fio
    runs again, run after run, until the 20 are done, and each switch
    waits for a fio run to be under way."""
    done = threading.Event()
    runs, current = [], []

    def writer():
        seed = 3
        while not done.is_set():
            p = subprocess.Popen(
                ["fio", "--name=v", f"--filename={emu.path}", "--direct=1",
                 "--ioengine=libaio", "--iodepth=4", "--rw=randrw", "--bs=4k", "--size=8m",
                 "--io_size=2m", "--verify=crc32c", "--verify_backlog=64", "--verify_fatal=1",
                 f"--randseed={seed}", "--verify_state_save=0"],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd="/tmp")
            current[:] = [p]
            out, _ = p.communicate(timeout=300 * SLOW)
            runs.append((p.returncode, out))
            if p.returncode:
                return
            seed += 1

    def fio_running():
        return bool(current) and current[0].poll() is None
    t = threading.Thread(target=writer)
    t.start()
    switches = suspends = 0
    try:
        while switches < 20:
            while not fio_running():
                assert t.is_alive(), runs[-1]
                time.sleep(0.01)
            emu.message("mode", "measure" if switches % 2 == 0 else "emulate")
            switches += 1
            if switches % 5 == 0:
                emu.suspend()
                emu.resume()
                suspends += 1
    finally:
        done.set()
        t.join(timeout=600 * SLOW)
    assert not t.is_alive()
    assert [r for r in runs if r[0]] == []
    assert (switches, suspends) == (20, 4)
    st = emu.stats()
    assert st["mode"] == "emulate"
    assert st["inflight"] == 0 and st["queued"] == 0
    assert st["errors"] == 0
    print(f"{len(runs)} fio runs for 20 switches")


# --------------------------------------------------------------------------
# 3. The model: measure on emulate


def test_emulate_model_prices_random_reads_within_15_percent_of_the_drive(emu):
    """The model's price of the stream it learnt from, what redcap relies
    on: in emulate mode the model learns the emulated drive's own service
    times, so its virtual disk is compared with the drive's busy time on
    the drive's clock (emu_busy_us), which the host's speed does not move.
    How the model prices what a measuring vdisk timed on the wall clock is
    the bench's figure (tests/bench/vdisk-accuracy.sh, under --icount)."""
    r = fio(emu.path, "--rw=randread", "--bs=4k", "--number_ios=1000", "--size=100%")
    st = emu.stats()
    print(f"drive mean {model_mean_us(st):.0f} us (fio {r['lat_us']:.0f} us); "
          f"drive busy {st['emu_busy_us']} us, virtual {st['virtual_busy_us']} us")
    assert st["read_samples"] == st["emu_requests"] == st["virtual_requests"] == 1000
    assert abs(st["virtual_busy_us"] - st["emu_busy_us"]) <= 0.15 * st["emu_busy_us"]
    assert st["virtual_unestimated"] == 1     # only the very first request
    assert st["cells_filled"] > 5


def pinned_price_ns(dir_, distance, sectors):
    """The prices test_a_pinned_model_prices_a_stream_exactly loads: a 4 KiB
    or 64 KiB read, sequential (distance 0) or not."""
    return {(8, True): 300000, (8, False): 9000000,
            (128, True): 1200000, (128, False): 10000000}[sectors, distance == 0]


def test_a_pinned_model_prices_a_stream_exactly(emu, ram, dmname):
    """A measuring vdisk whose model is loaded (load) and frozen (train
    off) prices every request by the loaded cells, whatever the disk
    below took: its virtual disk's busy time for a stream of 4 KiB and
    64 KiB reads, some sequential (starting at one of the last 4 ends),
    the others anywhere, is the sum of those prices to the microsecond."""
    n = dev_sectors(ram)
    with Dm(dmname(), f"0 {n} vdisk {emu.path}") as meas:
        meas.message("train", "off")
        meas.message("reset")           # empty tables, counters, virtual disk
        cols = meas.stats()["cols"]
        for row, sectors in ((0, 8), (15, 128)):
            seq, other = pinned_price_ns("r", 0, sectors), pinned_price_ns("r", 1, sectors)
            meas.message("load", "r", str(row), f"0:64:{64 * seq}",
                         *(f"{c}:64:{64 * other}" for c in range(1, cols)))
        assert int(meas.query("estimate", "r", str(n // 3), "8")) == 9000
        assert int(meas.query("estimate", "r", "0", "128")) == 1200
        rnd = random.Random(5)
        ends, want_ns, end = [], 0, None
        for i in range(300):
            sectors = rnd.choice((8, 128))
            if end is not None and rnd.random() < 0.4:
                start = end                                 # sequential
            else:
                start = rnd.randrange(2048, n - 4096, 8)    # clear of udev's probes
            if start + sectors > n:
                start = 2048
            d = 0 if start in ends[-4:] else 1
            want_ns += pinned_price_ns("r", d, sectors)
            read_blocks(meas.path, start * 512, sectors * 512)
            end = start + sectors
            ends.append(end)
        st = meas.stats()
        assert (st["read_samples"], st["virtual_requests"], st["virtual_unestimated"]) == \
            (300, 300, 0), st
        assert st["virtual_busy_us"] == want_ns // 1000, (st, want_ns)
        assert meas.stats()["train"] == "off" and st["cells_filled"] == 2 * cols


def test_table_dump_and_load_round_trip(emu, ram, dmname):
    with Dm(dmname(), f"0 {dev_sectors(ram)} vdisk {emu.path}") as meas:
        fio(meas.path, "--rw=randrw", "--bsrange=4k-64k", "--number_ios=300",
            "--size=100%")
        st = meas.stats()
        rows = st["rows"]
        dump = {d: meas.query("table", d, "0", str(rows)) for d in "rw"}
        assert len(dump["r"].splitlines()) == rows
        assert st["cells_filled"] > 0
        meas.message("reset")
        assert meas.stats()["cells_filled"] == 0
        for d in "rw":      # the rows holding cells (all are empty now)
            for line in dump[d].splitlines():
                if len(line.split()) > 1:
                    meas.message("load", d, *line.split())
        assert {d: meas.query("table", d, "0", str(rows)) for d in "rw"} == dump
        assert meas.stats()["cells_filled"] == st["cells_filled"]


def test_table_and_load_cross_their_1024_column_chunks(ram, dmname):
    """table and load walk a row 1024 columns per lock hold: a model of a
    5 TiB disk (5121 GiB columns) loaded with cells on both sides of each
    chunk boundary dumps exactly those cells, and loads back from the
    dump after a reset."""
    capacity = 5 << 31                  # sectors: 5 TiB
    with Dm(dmname(), f"0 {dev_sectors(ram)} vdisk {ram} 2 capacity {capacity}") as d:
        d.message("train", "off")       # only the loaded cells
        d.message("reset")
        st = d.stats()
        assert st["cols"] > 4096, st
        cols = [0, 1, 1022, 1023, 1024, 1025, 2047, 2048, 2049, 3071, 3072, 4095, 4096,
                st["cols"] - 1]
        cells = [f"{c}:{1 + i % 3}:{1000 * (c + 1)}" for i, c in enumerate(cols)]
        d.message("load", "r", "3", *cells)
        dump = d.query("table", "r", "3", "1")
        assert dump.split() == ["3"] + cells, dump
        assert d.stats()["cells_filled"] == len(cols)
        d.message("reset")
        assert d.query("table", "r", "3", "1").split() == ["3"]
        d.message("load", "r", *dump.split())
        assert d.query("table", "r", "3", "1") == dump


def test_a_read_is_measured_from_the_nearest_recent_end_with_its_direction(emu):
    """The seek distance a sample goes in with (vd_seek): from the nearest
    of the last 4 request ends, a step back in a backward column."""
    fwd = emu.stats()["cols"] - 18
    for sector in (8000, 16000, 7984, 8008):
        read_blocks(emu.path, sector * 512, 4096)
    cells = [c.split(":")[:2] for c in emu.query("table", "r", "0", "1").split()[1:]]
    # 0 -> 8000 and 8008 -> 16000: column 10; 8008 -> 7984: 24 back, backward
    # column 2; 8008 again: distance 0 from the end of the first read
    assert cells == [["0", "1"], ["10", "2"], [str(fwd + 1), "1"]]


def test_train_off_freezes_the_tables(emu, ram, dmname):
    with Dm(dmname(), f"0 {dev_sectors(ram)} vdisk {emu.path}") as meas:
        fio(meas.path, "--rw=randread", "--bs=4k", "--number_ios=50", "--size=100%")
        meas.message("train", "off")
        before = meas.query("table", "r", "0", "4")
        fio(meas.path, "--rw=randread", "--bs=8k", "--number_ios=50", "--size=100%")
        assert meas.query("table", "r", "0", "4") == before
        assert meas.stats()["train"] == "off"
        meas.message("train", "on")
        fio(meas.path, "--rw=randread", "--bs=8k", "--number_ios=50", "--size=100%")
        assert meas.query("table", "r", "0", "4") != before


def test_estimate_before_any_sample_fails_with_enodata(emu):
    emu.message("reset")
    with kmsg() as k:
        r = emu.message("estimate", "w", "0", "8", check=False)
        lines = k.lines()
    assert r.returncode != 0
    assert "No data available" in r.stderr
    assert errors(VDISK_ERR, lines) == ["estimate: no write samples yet"]


def test_a_reload_of_the_same_geometry_keeps_what_was_learnt(ram, dmname):
    n = dev_sectors(ram)
    with Dm(dmname(), f"0 {n} vdisk {ram}") as d:
        fio(d.path, "--rw=randread", "--bs=4k", "--number_ios=1000", "--size=100%")
        d.message("dcache", "4", "256", "128", "100")
        before = d.stats()
        assert before["model_read_samples"] >= 1000
        d.reload(f"0 {n} vdisk {ram} 2 mode emulate")
        d.suspend()
        d.resume()
        st = d.stats()
        assert st["mode"] == "emulate"
        assert st["model_read_samples"] >= before["model_read_samples"]
        assert st["cells_filled"] >= before["cells_filled"]
        # and the drive cache it prices, and what it learnt of it
        assert [st[f"dcache_{k}"] for k in DCACHE_KEYS] == [4, 256, 128, 100]
        assert st["learnt_dcache_reads"] >= before["learnt_dcache_reads"] > 0
        # Another geometry: a new model.  udev's probe after the resume may
        # already have fed it its reads (102 were seen), never the 1000 above.
        d.reload(f"0 {n} vdisk {ram} 2 rows 32")
        d.suspend()
        d.resume()
        st = d.stats()
        assert st["rows"] == 32
        assert st["model_read_samples"] < 500
        assert st["dcache_segments"] == 0


# --------------------------------------------------------------------------
# 4. Table lines, status, bad input


@pytest.mark.parametrize("features", [
    "",
    "2 mode emulate",
    "4 mode emulate profile hdd15k",
    "6 capacity 976773168 seed 9 rows 32",
    "23 mode emulate rpm 5400 cylinders 50000 seek 1000000 60000 5000 5000000 90 "
    "media_mbps 100 bus_mbps 300 overhead_us 200 cache 8 512 readahead 256",
    "9 mode emulate profile st1 latency_us 5000 iops 250 2048",
], ids=["none", "mode", "mode_profile", "capacity_seed_rows", "explicit_drive",
        "flat_drive"])
def test_table_line_round_trips(ram, dmname, features):
    n = dev_sectors(ram)
    given = f"0 {n} vdisk {ram} {features}".rstrip()
    expected = given.replace(ram, dm_major_minor(ram), 1)
    with Dm(dmname(), given) as d:
        assert d.table() == expected
        with Dm(dmname(), d.table()) as again:
            assert again.table() == expected
            write_stamped(again.path, 0, 4, seed=1)
            read_pattern(again.path, range(4), seed=1)


def test_status_info_fields(emu):
    fio(emu.path, "--rw=read", "--bs=4k", "--size=16k")
    st = emu.status()[3:]
    s = emu.stats()
    assert st == ["emulate", str(s["read_samples"]), "0", str(s["cells_filled"]),
                  str(s["mean_read_us"]), "0", str(s["emu_requests"]),
                  str(s["emu_cache_hits"]), str(s["emu_seeks"])]
    # The first read goes to the media; the drive's read-ahead serves the rest.
    assert s["read_samples"] == 4
    assert s["emu_cache_hits"] + s["emu_ra_hits"] == 3


BAD_TABLES = [
    ("no_device", "", "Missing device argument (-EINVAL)"),
    ("feature_count_too_big", "{dev} 3 mode emulate", "Invalid number of feature args (-EINVAL)"),
    ("unknown_feature", "{dev} 1 turbo", "Unrecognised feature requested (-EINVAL)"),
    ("bad_mode", "{dev} 2 mode fast", "Invalid mode (-EINVAL)"),
    ("unknown_profile", "{dev} 2 profile ssd", "Unknown profile (-EINVAL)"),
    ("duplicate_feature", "{dev} 4 mode emulate mode measure", "Duplicate feature (-EINVAL)"),
    ("zero_capacity", "{dev} 2 capacity 0", "Invalid capacity (-EINVAL)"),
    ("capacity_below_device", "{dev} 2 capacity 1024", "Capacity smaller than the device (-EINVAL)"),
    ("rows_zero", "{dev} 2 rows 0", "Invalid rows (-EINVAL)"),
    ("rows_too_many", "{dev} 2 rows 4096", "Invalid rows (-EINVAL)"),
    ("rpm_not_a_number", "{dev} 2 rpm x", "Invalid rpm (-EINVAL)"),
    ("rpm_zero_with_a_drive_cache", "{dev} 2 rpm 0", "Invalid drive parameters (-EINVAL)"),
    ("latency_over_a_second", "{dev} 2 latency_us 1000001", "Invalid latency_us (-EINVAL)"),
    ("iops_missing_io_size", "{dev} 2 iops 500", "Invalid iops (-EINVAL)"),
    ("seek_missing_values", "{dev} 3 seek 1 2", "Invalid seek curve (-EINVAL)"),
    ("seek_not_a_number", "{dev} 6 seek 1 2 3 4 x", "Invalid seek curve (-EINVAL)"),
    ("too_many_cache_segments", "{dev} 3 cache 65 512", "Invalid cache geometry (-EINVAL)"),
    ("cache_without_segment_size", "{dev} 3 cache 4 0", "Invalid cache geometry (-EINVAL)"),
    ("media_zero", "{dev} 2 media_mbps 0", "Invalid media_mbps (-EINVAL)"),
    ("trailing_argument", "{dev} 2 mode emulate extra", "Too many arguments (-EINVAL)"),
    ("no_such_device", "/dev/vdisk-no-such-device", None),
]


@pytest.mark.parametrize("args,expected", [c[1:] for c in BAD_TABLES],
                         ids=[c[0] for c in BAD_TABLES])
def test_bad_table_line_is_refused_with_exact_error(ram, dmname, args, expected):
    name = dmname()
    line = f"0 {dev_sectors(ram)} vdisk {args.format(dev=ram)}".rstrip()
    with kmsg() as k:
        r = sh("dmsetup", "create", name, input=line + "\n", check=False)
        lines = k.lines()
    assert r.returncode != 0, f"'{line}' was accepted"
    got = errors(TABLE_ERR, lines)
    if expected is None:
        assert len(got) == 1 and got[0].startswith("Device lookup failed"), lines
    else:
        assert got == [expected], lines
    assert not exists(name)


DCACHE_USAGE = ("dcache: usage: dcache learnt|none|<segments 0..16> <segment sectors> "
                "<readahead sectors> <media MB/s>")
BAD_MESSAGES = [
    ("unknown_verb", "frobnicate", "Unrecognised message 'frobnicate'"),
    ("stats_with_argument", "stats now", "stats: wrong number of arguments"),
    ("mode_without_name", "mode", "mode: wrong number of arguments"),
    ("unknown_mode", "mode fast", "mode: unknown mode 'fast'"),
    ("train_maybe", "train maybe", "train: expected on or off, not 'maybe'"),
    ("overlap_too_long", "overlap 10000001",
     "overlap: expected microseconds from 0 to 10000000, not '10000001'"),
    ("dcache_too_many_segments", "dcache 17 1024 512 150", DCACHE_USAGE),
    ("dcache_no_rate", "dcache 16 1024 512 0", DCACHE_USAGE),
    ("dcache_unknown_word", "dcache learned", DCACHE_USAGE),
    ("estimate_bad_dir", "estimate x 0 8",
     "estimate: usage: estimate <r|w> <[-]distance sectors> <size sectors>"),
    ("estimate_zero_size", "estimate r 0 0",
     "estimate: usage: estimate <r|w> <[-]distance sectors> <size sectors>"),
    ("table_past_last_row", "table r 64 1",
     "table: usage: table <r|w> <first row> <nr rows> (rows 0..63)"),
    ("table_too_many_rows", "table r 60 5",
     "table: usage: table <r|w> <first row> <nr rows> (rows 0..63)"),
    ("load_bad_row", "load r 64", "load: usage: load <r|w> <row> [<col>:<n>:<sum ns>]..."),
    ("load_too_many_samples", "load r 0 1:65:100", "load: bad cell '1:65:100'"),
    # 256 MiB: 19 forward and 18 backward columns
    ("load_column_out_of_range", "load r 0 37:1:100", "load: bad cell '37:1:100'"),
    ("load_sum_too_big", "load r 0 1:1:4294967296", "load: bad cell '1:1:4294967296'"),
    ("load_garbage", "load r 0 1:1:100x", "load: bad cell '1:1:100x'"),
]


@pytest.fixture(scope="module")
def emu_with_samples(ram):
    """One emulated disk, with samples in its tables, for all the bad
    messages: each test compares the state before and after its own
    message, so a message that changed anything fails its own test (and a
    fresh device per message cost make check half a minute per kernel)."""
    with Dm("rc-bad-messages", f"0 {dev_sectors(ram)} vdisk {ram} 4 mode emulate "
            "profile hdd7200") as d:
        d.message("reset")
        fio(d.path, "--rw=read", "--bs=4k", "--size=16k")
        yield d


@pytest.mark.parametrize("msg,expected", [c[1:] for c in BAD_MESSAGES],
                         ids=[c[0] for c in BAD_MESSAGES])
def test_bad_message_is_refused_and_changes_nothing(emu_with_samples, msg, expected):
    emu = emu_with_samples
    before = (emu.stats(), emu.query("table", "r", "0", "64"), emu.table())
    assert before[0]["emu_requests"] > 0
    with kmsg() as k:
        r = emu.message(*msg.split(), check=False)
        lines = k.lines()
    assert r.returncode != 0, f"message '{msg}' was accepted"
    assert errors(VDISK_ERR, lines) == [expected], lines
    assert (emu.stats(), emu.query("table", "r", "0", "64"), emu.table()) == before


DCACHE_KEYS = ("segments", "segment_sectors", "readahead_sectors", "media_mbps")


def test_dcache_message_sets_the_drive_cache_the_model_prices(emu):
    """dcache <shape> gives the model a drive cache, dcache none takes it
    away; dcache learnt, with nothing learnt, is refused and changes
    nothing."""
    def shape(st, what="dcache"):
        return tuple(st[f"{what}_{k}"] for k in DCACHE_KEYS)

    st = emu.stats()
    assert shape(st) == shape(st, "learnt_dcache") == (0, 0, 0, 0)
    assert (st["learnt_dcache_reads"], st["learnt_dcache_hits"]) == (0, 0)
    emu.message("dcache", "4", "256", "128", "100")
    assert shape(emu.stats()) == (4, 256, 128, 100)
    before = (emu.stats(), emu.table())
    with kmsg() as k:
        r = emu.message("dcache", "learnt", check=False)
        lines = k.lines()
    assert r.returncode != 0 and "No data available" in r.stderr, r
    assert errors(VDISK_ERR, lines) == [
        "dcache: no drive cache learnt yet (0 reads timed alone, 0 hits)"], lines
    assert (emu.stats(), emu.table()) == before
    emu.message("dcache", "none")
    assert shape(emu.stats()) == (0, 0, 0, 0)
    # every read timed alone is seen, a write is not a read
    fio(emu.path, "--rw=read", "--bs=4k", "--size=64k")
    assert emu.stats()["learnt_dcache_reads"] == 16
    emu.message("dcache", "4", "256", "128", "100")
    emu.message("reset")
    st = emu.stats()
    assert shape(st) == (0, 0, 0, 0) and st["learnt_dcache_reads"] == 0


def test_reset_without_memory_is_refused_and_changes_nothing(emu):
    """reset builds its empty tables aside before it swaps them in: when
    that allocation fails (fi_reset_alloc_fail, test builds), the message
    fails with ENOMEM and the tables, counters and table line stay."""
    fio(emu.path, "--rw=read", "--bs=4k", "--size=16k")
    before = (emu.stats(), emu.query("table", "r", "0", "64"), emu.table())
    param = "/sys/module/dm_vdisk/parameters/fi_reset_alloc_fail"
    assert os.path.exists(param), f"{param} missing: the suite needs test builds"
    with open(param, "w") as f:
        f.write("1\n")
    try:
        with kmsg() as k:
            r = emu.message("reset", check=False)
            lines = k.lines()
    finally:
        with open(param, "w") as f:
            f.write("0\n")
    assert r.returncode != 0 and "Cannot allocate memory" in r.stderr, r
    assert errors(VDISK_ERR, lines) == ["reset: cannot allocate model tables"], lines
    assert (emu.stats(), emu.query("table", "r", "0", "64"), emu.table()) == before
    emu.message("reset")
    assert emu.query("table", "r", "0", "64") != before[1]


# --------------------------------------------------------------------------
# 5. redcap finds the model


def test_redcap_over_a_vdisk_uses_its_model(emu, ram, dmname):
    n = dev_sectors(ram)
    fio(emu.path, "--rw=randread", "--bs=4k", "--number_ios=100", "--size=100%")
    with Dm(dmname(), f"0 {n} redcap {emu.path} 256 16") as rc:
        rc.cold()
        st = rc.stats()
        assert st["model"] == dm_major_minor(emu.path)
        fio(rc.path, "--rw=randread", "--bs=4k", "--number_ios=20", "--size=100%")
        st = rc.stats()
        assert st["vdisk_requests"] == 20
        assert st["vdisk_unestimated"] == 0
        assert st["vdisk_time_us"] > 20 * 1000     # 20 random reads on a hard disk
        assert rc.table() == f"0 {n} redcap {dm_major_minor(emu.path)} 256 16"


def test_redcap_prices_a_bio_cut_at_a_segments_end_as_one_request(emu, ram, dmname):
    """A 128 KiB read across two 128 KiB segments reaches redcap as two
    pieces (its map() cuts it), but the bare disk would have received it
    whole: the virtual disk replays each read once (40 before the rest of a
    cut joined it on the bare disk), and each write."""
    n = dev_sectors(ram)
    fio(emu.path, "--rw=randread", "--bs=4k", "--number_ios=100", "--size=100%")
    fio(emu.path, "--rw=randwrite", "--bs=4k", "--number_ios=100", "--size=100%")
    with Dm(dmname(), f"0 {n} redcap {emu.path} 256 16") as rc:
        rc.cold()
        fio(rc.path, "--rw=read", "--bs=128k", "--offset=64k", "--number_ios=20")
        st = rc.stats()
        assert (st["reads"], st["vdisk_requests"], st["vdisk_unestimated"]) == (40, 20, 0)
        # Writes are cut the same way, and joined the same way.
        rc.message("reset_stats")
        fio(rc.path, "--rw=write", "--bs=128k", "--offset=64k", "--number_ios=20")
        st = rc.stats()
        assert (st["writes"], st["vdisk_requests"], st["vdisk_unestimated"]) == (40, 20, 0)


@pytest.mark.parametrize("policy,counter", [("back", "write_cached"),
                                            ("selective", "write_through")])
def test_the_write_cache_prices_a_cut_write_as_one_request(emu, ram, dmname, policy, counter):
    """With the write cache on, a 128 KiB write across two cached segments
    is still cut in two, and its pieces take the cache's two ways: copied
    in and completed (back), or sent through, updating the copy
    (selective: fio's O_DIRECT writes are REQ_SYNC).  Either way the bare
    disk would have received it whole: one request a write.  The dirty cap
    (50 % of 16 segments) holds the 7 segments written, so no piece waits
    for a write-back."""
    n = dev_sectors(ram)
    fio(emu.path, "--rw=randwrite", "--bs=4k", "--number_ios=100", "--size=100%")
    with Dm(dmname(), f"0 {n} redcap {emu.path} 256 16 "
                      f"4 policy always write_policy {policy}") as rc:
        rc.message("set", "dirty", "50")
        fio(rc.path, "--rw=read", "--bs=128k", "--offset=64k", "--number_ios=6")
        rc.message("reset_stats")
        fio(rc.path, "--rw=write", "--bs=128k", "--offset=64k", "--number_ios=6")
        st = rc.stats()
        assert (st["writes"], st[counter], st["write_waits"]) == (12, 12, 0), st
        assert (st["vdisk_requests"], st["vdisk_unestimated"]) == (6, 0), st


def test_redcap_model_feature_names_the_vdisk_explicitly(emu, ram, dmname):
    n = dev_sectors(ram)
    with Dm(dmname(), f"0 {n} redcap {ram} 256 16 2 model {emu.path}") as rc:
        assert rc.stats()["model"] == dm_major_minor(emu.path)
        assert rc.table() == \
            f"0 {n} redcap {dm_major_minor(ram)} 256 16 2 model {dm_major_minor(emu.path)}"


def test_redcap_without_a_vdisk_below_has_no_model(ram, dmname):
    with Dm(dmname(), f"0 {dev_sectors(ram)} redcap {ram} 256 16") as rc:
        st = rc.stats()
        assert (st["model"], st["vdisk_requests"], st["vdisk_time_us"]) == ("none", 0, 0)


@pytest.mark.parametrize("model,expected", [
    ("{ram}", "Model device is not a vdisk device (-EINVAL)"),
    ("/dev/no-such-vdisk", "Model device lookup failed (-ENODEV)"),
], ids=["not_a_vdisk", "no_such_device"])
def test_redcap_model_feature_refuses_what_is_not_a_vdisk(ram, dmname, model, expected):
    name = dmname()
    line = f"0 {dev_sectors(ram)} redcap {ram} 256 16 2 model {model.format(ram=ram)}"
    with kmsg() as k:
        r = sh("dmsetup", "create", name, input=line + "\n", check=False)
        lines = k.lines()
    assert r.returncode != 0
    assert errors(REDCAP_TABLE_ERR, lines) == [expected], lines
    assert not exists(name)


def test_model_outlives_the_vdisk_device_redcap_holds(ram, dmname):
    """redcap keeps its model reference after the vdisk table is replaced by
    one of another geometry (a new model): no use after free, stats work."""
    n = dev_sectors(ram)
    with Dm(dmname(), f"0 {n} vdisk {ram}") as vd:
        fio(vd.path, "--rw=randread", "--bs=4k", "--number_ios=20", "--size=100%")
        with Dm(dmname(), f"0 {n} redcap {vd.path} 256 16") as rc:
            vd.reload(f"0 {n} vdisk {ram} 2 rows 16")
            vd.suspend()
            vd.resume()
            fio(rc.path, "--rw=randread", "--bs=4k", "--number_ios=10", "--size=100%")
            assert rc.stats()["vdisk_requests"] >= 10
