# SPDX-License-Identifier: GPL-2.0
"""The benchmark suite's pure parts on the host: the prefetch bound, the
workload commands, the report's arithmetic and output, the TAC reader."""
import importlib.util
import json
import os
import re
import subprocess
import sys

import pytest

TOP = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))


def _module(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(TOP, "tests", "bench",
                                                                     f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


suite = _module("suite")
report = _module("report")
PROF = {"access_s": 0.01, "rate": 100e6}	# gap = 0.01 * 100e6 / 512 = 1953.125 sectors


def test_sim_spec_carries_a_configurations_tunables():
    """sim-validate simulates a suite configuration as the suite built it:
    its table's options and the tunables it sets afterwards (before
    2fb7fbe the tunables were dropped, so "-budget" ran without one)."""
    validate = _module("sim-validate")
    assert validate.sim_spec("redcap-64x128k-adaptive+caware-nobudget") == \
        "64x128k:adaptive+caware,budget_share=0,estimator=vdisk"
    assert validate.sim_spec("redcap-64x128k-adaptive+caware") == \
        "64x128k:adaptive+caware,estimator=vdisk"
    assert validate.sim_spec("redcap-64x128k-always") == "64x128k:always,estimator=spk"
    assert validate.sim_spec("bare") == "bare"
    assert validate.sim_spec("dm-cache-brd") is None


def test_bound_merges_gaps_cheaper_than_a_seek():
    # 8 KiB reads 1000 sectors apart: one run from 0 to 3016
    ext = [(0, 16), (1000, 16), (2000, 16), (3000, 16)]
    t, runs = suite.prefetch_bound(ext, PROF)
    assert runs == 1
    assert t == pytest.approx(0.01 + 3016 * 512 / 100e6)


def test_bound_seeks_over_gaps_dearer_than_a_seek():
    ext = [(10000, 8), (0, 8), (5000, 8)]	# unsorted, 4992 sectors apart
    t, runs = suite.prefetch_bound(ext, PROF)
    assert runs == 3
    assert t == pytest.approx(3 * 0.01 + 24 * 512 / 100e6)


def test_bound_counts_overlapping_and_repeated_reads_once():
    ext = [(0, 64), (32, 64), (0, 64)]
    t, runs = suite.prefetch_bound(ext, PROF)
    assert runs == 1
    assert t == pytest.approx(0.01 + 96 * 512 / 100e6)
    assert suite.unique_sectors(ext) == 96
    assert suite.unique_sectors([(0, 8), (100, 8), (104, 8)]) == 20
    assert suite.prefetch_bound([], PROF) == (0.0, 0)


def test_workloads_run_in_the_programs_tmpfs(monkeypatch):
    """The timed processes start in the guest's tmpfs with $PWD saying so:
    busybox sh stats $PWD and "." as it starts, and from the host-backed
    directory the suite runs in those stats waited on the host, which
    under icount added 4 ... 24 ms (once 200 ms) to about one run in
    twelve, whatever the configuration (seen in the guest before the fix:
    newfstatat -> v9fs_vfs_getattr_dotl -> p9_client_rpc in the runs that
    took longer)."""
    seen = []

    class Proc:
        returncode = 0

        def __init__(self, argv, **kw):
            seen.append((argv, kw))

        def communicate(self):
            return None, ""

    monkeypatch.setattr(suite.subprocess, "Popen", Proc)
    suite.run_procs(["true", "true"])
    assert [a for a, _ in seen] == [[suite.BUSYBOX, "sh", "-c", "true"]] * 2
    for _, kw in seen:
        assert kw["cwd"] == suite.BIN
        assert kw["env"]["PWD"] == suite.BIN
        assert kw["env"]["PATH"] == os.environ["PATH"]


def test_commands_share_the_data_out():
    M, R = "/tmp/redcap-bench", suite.RDPAT
    assert suite.commands("8k-sr", 2, "direct") == [
        f"{R} -d {M}/s2-0 stride 4096 8192", f"{R} -d {M}/s2-1 stride 4096 8192"]
    # 512k-sr: four series at 0, 4, 8, 12 KiB, the later ones after the earlier
    c = suite.commands("512k-sr", 1, "buffered")[0]
    assert c == " && ".join(f"{R} {M}/s1-0 stride 4096 524288 {k}"
                            for k in (0, 4096, 8192, 12288))
    assert suite.commands("tac", 1, "direct") == [f"{R} -d {M}/s1-0 back 65536"]
    # random: one shared file, the reads shared out, a seed per process
    assert suite.commands("random", 4, "buffered") == [
        f"{R} {M}/random random 4096 64 {1000 + i}" for i in range(4)]
    # lkr: the 16 copies dealt out, every one read by exactly one process
    lkr = suite.commands("lkr", 4, "buffered")
    assert lkr[1] == (f"{suite.BUSYBOX} find {M}/l1 {M}/l5 {M}/l9 {M}/l13 -type f "
                      f"-exec {suite.BUSYBOX} cat {{}} \\; >/dev/null")
    for p in (1, 2, 4, 8, 16):
        units = re.findall(r"/l(\d+)", " ".join(suite.commands("lkr", p, "buffered")))
        assert sorted(map(int, units)) == list(range(suite.LKR_UNITS))
    # mix: every part with its own processes, each on a file of its own
    mix = suite.commands("mix", 2, "buffered")
    assert len(mix) == 2 * len(suite.PARTS)
    names = [n for c in mix for n in re.findall(rf"{M}/m\S+", c)]
    assert len(set(names)) == 2 * (len(suite.PARTS) - 2)	# not lkr, random
    assert sum(f"{M}/random random 4096 32 " in c for c in mix) == 2
    # row: each process runs every part in turn on its own data
    row = suite.commands("row", 2, "buffered")
    assert row[0].startswith(f"{suite.BUSYBOX} find {M}/l0 {M}/l2 -type f")
    assert f"{M}/m2-tac-1 back 65536" in row[1] and "m2-tac-0" not in row[1]
    # direct has no lkr (find | cat is buffered by nature)
    assert all("find" not in c for c in suite.commands("row", 1, "direct"))


def test_repeatability_measures_distance_from_the_cell_median():
    g = report.group([
        {"workload": "tac", "procs": 1, "io": "buffered", "config": c, "app_time_s": t}
        for c, ts in (("bare", (1.0, 1.1, 0.9)), ("redcap", (2.0, 2.0, 3.0)),
                      ("bound", (5.0,)), ("warm", (0.5,))) for t in ts])
    rep = report.repeatability(g)
    # spreads: bare 0.2 / 1.0 = 20 %, redcap 1.0 / 2.0 = 50 %; one-repetition
    # cells do not count
    assert rep["cells"] == 2
    assert rep["median"] == pytest.approx(35.0)
    assert rep["p90"] == pytest.approx(50.0)
    assert rep["wild"] == [(("tac", 1, "buffered"), "redcap")]
    md = "\n".join(report.section_repeatability(g))
    assert "Over 2 cells with repetitions, the spread of a cell (max − min) is 35.0 %" in md
    assert "* tac ×1 buffered redcap" in md
    assert report.repeatability(report.group([])) is None


def test_repeatability_counts_time_outside_the_drive():
    """Repetitions that gave the drive the same work and still took
    different times are counted (the 9p stalls were found that way)."""
    def rec(c, rep, app, busy_us):
        return {"workload": "ior-r", "procs": 1, "io": "buffered", "config": c, "rep": rep,
                "app_time_s": app, "disk_stats": {"busy_us": busy_us}}
    records = [rec("bare", 0, 0.1388, 136400), rec("bare", 1, 0.1499, 136430),
               rec("bare", 2, 0.1388, 136380),
               rec("readahead", 0, 0.1228, 119900), rec("readahead", 1, 0.1229, 119950),
               rec("readahead", 2, 0.1228, 119900),
               # different drive work: not counted, whatever the times
               rec("redcap", 0, 0.1236, 120700), rec("redcap", 1, 0.1313, 121700),
               {"workload": "ior-r", "procs": 1, "io": "buffered", "config": "bound",
                "rep": 0, "app_time_s": 0.1374}]
    assert report.outside_the_drive(records) == (2, 1, 1)
    g = report.group(records)
    md = "\n".join(report.section_repeatability(g, records))
    assert ("Of the 2 cells whose repetitions gave the drive the same work (busy time within "
            "0.1 ms), 1 took times more than 2 ms apart (1 run(s) over their cell's fastest)"
            in md)
    assert report.outside_the_drive([]) == (0, 0, 0)


def test_data_needed_is_what_the_commands_read():
    runs = [(w, p, io) for ws, ps, io in suite.SETS["full"]["groups"] for w in ws for p in ps
            if p <= suite.MAX_PROCS.get(w, p) and not (w == "lkr" and io == "direct")]
    files, units = suite.data_needed(runs)
    read = {n for w, p, io in runs for c in suite.commands(w, p, io)
            for n in re.findall(r"/tmp/redcap-bench/[^/ ]+", c)}
    assert read == set(files) | {suite.lkr_path(u) for u in range(units)}
    assert units == suite.LKR_UNITS
    # the same data whatever the number of processes
    for p in (1, 2, 4, 8, 16):
        assert sum(kib for f, kib in files.items()
                   if f.startswith(f"/tmp/redcap-bench/s{p}-")) == suite.DATA_MIB << 10
    assert files["/tmp/redcap-bench/m4-ior-r-3"] == (suite.DATA_MIB << 10) // 16
    assert files[suite.RANDOM_FILE] == suite.RANDOM_MIB << 10
    assert all(kib % 64 == 0 for kib in files.values())
    assert suite.data_needed([("mix", 1, "direct")]) == (
        {f"/tmp/redcap-bench/m1-{p}-0": (suite.DATA_MIB << 10) // 4
         for p in ("ior-r", "tac", "4k-sr", "8k-sr", "512k-sr")} |
        {suite.RANDOM_FILE: suite.RANDOM_MIB << 10}, 0)


def test_a_subset_writes_its_whole_sets_data_in_the_sets_order():
    full = suite.SETS["full"]
    runs = suite.set_runs(full, ["512k-sr"], [1], ["buffered"])
    assert runs == [("512k-sr", 1, "buffered")]
    assert suite.set_data(full, runs) == suite.data_needed(suite.set_runs(full))
    assert len(suite.set_runs(full)) == 49
    # a process count the set has not: its files come after the set's
    runs = suite.set_runs(full, ["tac"], [3], ["buffered"])
    files, units = suite.set_data(full, runs)
    whole, whole_units = suite.data_needed(suite.set_runs(full))
    assert list(files)[:len(whole)] == list(whole) and units == whole_units
    assert list(files)[len(whole):] == [suite.data_path("tac", 3, 1, i) for i in range(3)]


def test_rapiddisk_brd_is_an_alternative_with_the_same_ram(monkeypatch):
    """rapiddisk-brd: in the full set, the report's alternatives, its
    table at the budget of the other caches, its status read as counters."""
    assert "rapiddisk-brd" in suite.CONFIGS and "rapiddisk-brd" in report.ALTERNATIVES
    assert "rapiddisk-brd" not in suite.SETS["quick"]["configs"]
    tables = []
    monkeypatch.setattr(suite, "write", lambda path, value: tables.append((path, value)))
    monkeypatch.setattr(suite, "sectors", lambda dev: suite.BUDGET_SECTORS)
    monkeypatch.setattr(suite.os.path, "exists", lambda path: True)
    monkeypatch.setattr(suite, "dm_create", lambda name, table: tables.append((name, table)))
    stack = suite.Stack.__new__(suite.Stack)
    stack.names, stack.rapiddisk = [], None
    stack.make_rapiddisk("/dev/mapper/bench-vd", 1000)
    assert tables == [
        (suite.RAPIDDISK_MGMT, f"rapiddisk attach 0 {suite.BUDGET_SECTORS * 512}"),
        ("bench-rdc", f"0 1000 rapiddisk-cache /dev/mapper/bench-vd /dev/rd0 "
         f"{suite.BUDGET_SECTORS} 0")]
    assert stack.names == ["bench-rdc"] and stack.rapiddisk == "/dev/rd0"
    status = ("0 1000 rapiddisk-cache stats:\n\treads(527), writes(1)\n"
              "\tcache hits(264), replacement(0), write replacement(0)\n"
              "\tuncached reads(1), uncached writes(0)\n")
    monkeypatch.setattr(suite, "sh", lambda *a, **k: subprocess.CompletedProcess(a, 0, status))
    assert suite.rapiddisk_stats("bench-rdc") == {
        "reads": 527, "writes": 1, "cache_hits": 264, "replacement": 0,
        "write_replacement": 0, "uncached_reads": 1, "uncached_writes": 0}


def _rec(w, p, c, rep, t, io="buffered"):
    return {"workload": w, "procs": p, "config": c, "io": io, "rep": rep, "app_time_s": t,
            "disk_read_bytes": 0, "kernel": "6.1.0-x", "disk_profile": "hdd7200",
            "set": "tiny", "icount": True, "scale": {}}


def test_report_tables_and_plot(tmp_path):
    recs = [_rec("8k-sr", 1, "bare", r, t) for r, t in enumerate((10.0, 12.0, 11.0))]
    recs += [_rec("8k-sr", 1, "redcap-64x128k-always", r, t) for r, t in
             enumerate((5.5, 6.6, 7.7))]
    recs += [_rec("8k-sr", 1, "warm", 0, 1.0), _rec("8k-sr", 1, "bound", 0, 3.0)]
    recs += [_rec("8k-sr", 1, "dm-cache-brd", 0, 9.9), _rec("8k-sr", 1, "readahead", 0, 12.1)]
    ad = _rec("8k-sr", 1, "redcap-64x128k-adaptive-spk", 0, 11.0)
    ad["redcap_stats"] = {"state": "inactive", "switches": 3}
    recs.append(ad)
    path = tmp_path / "r.json"
    path.write_text(json.dumps(recs))
    subprocess.run(["/usr/bin/python3", os.path.join(TOP, "tests", "bench", "report.py"),
                    str(path), "--command", "make bench"], check=True)
    md = (tmp_path / "r.md").read_text()
    # median 11 s; 5.5/6.6/7.7 are -50/-40/-30 %
    assert "| 8k-sr | 1 | 11.00 | -40 (-50…-30) | -91 | -10 | +10 | +0 |" in md
    # summary: a+c and 32x256 were not run; dm-cache is the best alternative
    assert "| 8k-sr | 1 | 11.00 | – | -40 | – | dm-cache -10 | -91 | -73 |" in md
    # floor = max(warm 1, bound 3) = 3; (11 - 6.6) / (11 - 3) = 55 %
    assert "| 8k-sr | 1 | 11.00 | 1.00 | 3.00 | 3.00 | 55 | 14 | -14 | 0 |" in md
    assert "| 8k-sr | 1 | off/3 |" in md
    assert "Produced by `make bench`" in md
    assert (tmp_path / "r-buffered.png").stat().st_size > 1000
    assert not (tmp_path / "r-direct.png").exists()


@pytest.fixture(scope="module")
def rdpat(tmp_path_factory):
    exe = tmp_path_factory.mktemp("rdpat") / "rdpat"
    subprocess.run(["gcc", "-O2", "-static", "-Wall", "-Wextra", "-Werror", "-o", str(exe),
                    os.path.join(TOP, "tests", "bench", "rdpat.c")], check=True)
    return str(exe)


def _preads(rdpat, path, *args):
    """(offset, length) of every pread of @path, in order."""
    r = subprocess.run(["strace", "-P", str(path), "-e", "trace=pread64", rdpat, str(path),
                        *map(str, args)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    # Anchor at the line's end: the buffer strace prints is random data and
    # may hold any of ", ) =".
    call = re.compile(r", (\d+)\) += (-?\d+)$")
    calls = [call.search(line) for line in r.stderr.splitlines() if line.startswith("pread64(")]
    assert all(calls), r.stderr
    return [(int(m[1]), int(m[2])) for m in calls]


@pytest.mark.parametrize("size", [0, 4096, 65536, 3 * 65536, 3 * 65536 + 4096])
def test_rdpat_seq_and_back_read_every_byte_once(rdpat, tmp_path, size):
    f = tmp_path / "data"
    f.write_bytes(os.urandom(size))
    fwd = [(off, min(65536, size - off)) for off in range(0, size, 65536)]
    assert _preads(rdpat, f, "seq", 65536) == fwd
    assert _preads(rdpat, f, "back", 65536) == fwd[::-1]


def test_rdpat_stride_and_random(rdpat, tmp_path):
    f = tmp_path / "data"
    # data that looks like the end of a strace line must not fool _preads
    f.write_bytes((b'", 7) = 9, 8) = 1\n' * 6000)[:100 << 10])
    assert _preads(rdpat, f, "stride", 4096, 8192) == [(k * 12288, 4096) for k in range(9)]
    assert _preads(rdpat, f, "stride", 4096, 524288, 8192) == [(8192, 4096)]
    # the last stride is cut at the end of the file
    assert _preads(rdpat, f, "stride", 8192, 94208)[-1] == (0, 8192)
    assert _preads(rdpat, f, "stride", 40960, 0, 81920) == [(81920, 20480)]
    r1 = _preads(rdpat, f, "random", 4096, 50, 7)
    assert len(r1) == 50 and all(off % 4096 == 0 and off < 100 << 10 and n == 4096
                                 for off, n in r1)
    assert len({off for off, _ in r1}) > 15
    assert _preads(rdpat, f, "random", 4096, 50, 7) == r1
    assert _preads(rdpat, f, "random", 4096, 50, 8) != r1


@pytest.mark.parametrize("args,rc,err", [
    (["seq"], 2, "usage: rdpat"),
    (["seq", "0"], 2, "rdpat: the request size must not be 0\n"),
    (["seq", "4k"], 2, "rdpat: bad number '4k'\n"),
    (["stride", "4096"], 2, "usage: rdpat"),
    (["random", "4096", "5"], 2, "usage: rdpat"),
    (["jump", "4096"], 2, "usage: rdpat"),
])
def test_rdpat_usage_errors(rdpat, tmp_path, args, rc, err):
    f = tmp_path / "data"
    f.write_bytes(b"x" * 4096)
    r = subprocess.run([rdpat, str(f), *args], capture_output=True, text=True)
    assert r.returncode == rc
    assert r.stderr.startswith(err)


def test_rdpat_io_errors(rdpat, tmp_path):
    r = subprocess.run([rdpat, str(tmp_path / "missing"), "seq", "4096"],
                       capture_output=True, text=True)
    assert (r.returncode, r.stderr) == (1, f"rdpat: {tmp_path / 'missing'}: "
                                        "No such file or directory\n")


def test_random_seed_moves_every_random_readers_seed(monkeypatch):
    monkeypatch.setattr(suite, "RANDOM_SEED", suite.RANDOM_SEED)
    M, R = "/tmp/redcap-bench", suite.RDPAT
    suite.set_random_seed(4000)
    assert suite.commands("random", 2, "direct") == [
        f"{R} -d {M}/random random 4096 128 {4000 + i}" for i in range(2)]
    # mix's random part too: the same file, its own processes' seeds
    seeds = [re.search(r"random 4096 \d+ (\d+)", c) for c in suite.commands("mix", 2, "buffered")]
    assert sorted(int(m.group(1)) for m in seeds if m) == [4000, 4001]


def test_scale_multiplies_the_lkr_copies_and_the_data(monkeypatch):
    for name in ("LKR_UNITS", "DATA_MIB"):
        monkeypatch.setattr(suite, name, getattr(suite, name))
    monkeypatch.setattr(suite, "MAX_PROCS", dict(suite.MAX_PROCS))
    suite.set_scale(8)
    assert (suite.LKR_UNITS, suite.DATA_MIB) == (128, 128)
    assert suite.MAX_PROCS == {"lkr": 128, "row": 32, "mix": 32}
    files, units = suite.data_needed([("lkr", 16, "buffered"), ("tac", 4, "buffered")])
    assert units == 128
    assert sum(files.values()) == 128 << 10
    # 16 processes share the 128 copies out, 8 each
    cmds = suite.commands("lkr", 16, "buffered")
    assert len(cmds) == 16
    assert all(len(re.findall(r"/tmp/redcap-bench/l\d+", c)) >= 8 for c in cmds)


def test_recommended_is_the_64x128k_adaptive_caware_stack():
    # with the read-ahead redcapctl's readahead=auto sets over the bench's disk
    # redcapctl's defaults: the read-ahead it sets over the bench's disk,
    # backward streams read ahead
    assert suite.redcap_parts(suite.RECOMMENDED) == (
        "64x128k", "adaptive+caware-ra1024-prefetch2back-pairs")
    assert suite.READAHEAD_OF["adaptive+caware-ra1024-prefetch2back-pairs"] == 1024
    assert suite.TUNABLES["adaptive+caware-ra1024-prefetch2back-pairs"] == [
        ("prefetch", "2"), ("prefetch_forward", "0"), ("prefetch_pairs", "1")]
    assert "adaptive+caware" not in suite.READAHEAD_OF
    assert suite.redcap_parts("redcap-32x256k-always") == ("32x256k", "always")
    assert suite.redcap_parts("redcap-64x128k-nosuch") is None
    assert suite.RECOMMENDED in suite.CONFIGS
    assert "redcap-64x128k-adaptive+caware" not in suite.CONFIGS
    validate = _module("sim-validate")
    assert validate.sim_spec(suite.RECOMMENDED) == \
        "64x128k:adaptive+caware,estimator=vdisk,prefetch=2,prefetch_forward=0,prefetch_pairs=1"
    assert validate.sim_spec("redcap-64x128k-adaptive+caware") == \
        "64x128k:adaptive+caware,estimator=vdisk"


def test_goals_table_checks_each_goal_on_the_recommended_stack():
    def recs(w, p, times):
        return [{"workload": w, "procs": p, "io": "buffered", "config": c, "app_time_s": t,
                 "rep": 0} for c, t in times.items()]
    rec = report.RECOMMENDED
    records = (recs("random", 1, {"bare": 1.0, rec: 1.015, "readahead": 1.0}) +
               recs("random", 4, {"bare": 1.0, rec: 1.03, "readahead": 1.0}) +
               recs("ior-r", 1, {"bare": 1.0, rec: 0.75, "readahead": 0.70}) +
               recs("ior-r", 16, {"bare": 1.0, rec: 0.90, "readahead": 0.70}) +
               recs("8k-sr", 1, {"bare": 1.0, rec: 0.79}) +
               recs("8k-sr", 4, {"bare": 1.0, rec: 0.50}) +
               recs("tac", 1, {"bare": 1.0, rec: 0.60}) +
               recs("lkr", 16, {"bare": 1.0, rec: 0.41}))
    rows = report.table_goals(report.group(records), "hdd15k")
    assert rows[:2] == ["| goal | target | recommended stack |", "|---|---|---|"]
    assert rows[2] == "| every cell | ≤ +2 % | missed in 1 of 8: random ×4 +3.0 |"
    assert rows[3] == "| random 4 KiB | ≤ +2 % | missed in 1 of 2: random ×4 +3.0 |"
    assert rows[4] == ("| IOR-R, 4K-SR, 1–4 processes | within 3 points of read_ahead_kb | "
                       "missed in 1 of 1: ior-r ×1 -25.0 |")
    assert rows[5] == ("| IOR-R, 4K-SR, 8–16 processes | half of read_ahead_kb's gain | "
                       "missed in 1 of 1: ior-r ×16 -10.0 |")
    assert rows[6] == "| 8K-SR | ≤ -50 % (×1: ≤ -20 %) | met; worst 8k-sr ×1 -21.0 |"
    assert rows[7] == "| TAC | ≤ -35 % | met; worst tac ×1 -40.0 |"
    assert rows[8] == "| LKR, 16 processes | ≤ -60 % | missed in 1 of 1: lkr ×16 -59.0 |"
    # geometric mean over the 4 cells read_ahead_kb ran
    assert rows[9].startswith("| geometric mean vs readahead | ahead | missed: ")
    assert len(rows) == 10
    # hdd7200's limits; no goals without the recommended stack
    assert report.table_goals(report.group(records), "hdd7200")[3] == \
        "| random 4 KiB | ≤ +1 % | missed in 2 of 2: random ×1 +1.5, random ×4 +3.0 |"
    assert report.table_goals(report.group(recs("lkr", 1, {"bare": 1.0})), "hdd15k") == []


def test_goals_table_prices_the_virtual_disk_against_the_bare_runs_busy_time():
    """The virtual disk's goal: the recommended stack's price of the reads
    it received (vdisk_time_us) within 10 % of the bare run's drive busy
    time (emu_busy_us), medians of the repetitions, every cell."""
    rec = report.RECOMMENDED

    def recs(w, p, bare_busy, priced):
        out = []
        for rep, (b, v) in enumerate(zip(bare_busy, priced)):
            out += [{"workload": w, "procs": p, "io": "buffered", "config": "bare",
                     "app_time_s": 1.0, "rep": rep, "disk_stats": {"emu_busy_us": b}},
                    {"workload": w, "procs": p, "io": "buffered", "config": rec,
                     "app_time_s": 0.5, "rep": rep, "redcap_stats": {"vdisk_time_us": v},
                     "disk_stats": {"emu_busy_us": 1}}]
        return out
    records = (recs("lkr", 1, [100, 200, 100], [108, 130, 109]) +   # +9.0: met
               recs("tac", 4, [1000, 1000, 1000], [800, 850, 700]) +  # -20.0
               recs("8k-sr", 1, [400, 400, 400], [480, 480, 440]))   # +20.0
    # a configuration that is neither, and a bare run without the drive's counters
    records += [{"workload": "lkr", "procs": 1, "io": "buffered", "config": "readahead",
                 "app_time_s": 1.0, "rep": 0, "redcap_stats": {"vdisk_time_us": 1}},
                {"workload": "random", "procs": 1, "io": "buffered", "config": "bare",
                 "app_time_s": 1.0, "rep": 0, "disk_stats": {}},
                {"workload": "random", "procs": 1, "io": "buffered", "config": rec,
                 "app_time_s": 1.0, "rep": 0, "redcap_stats": {"vdisk_time_us": 5}}]
    priced = report.prices(records)
    assert priced == pytest.approx({("lkr", 1, "buffered"): 9.0, ("tac", 4, "buffered"): -20.0,
                                    ("8k-sr", 1, "buffered"): 20.0})
    def vdisk_row(priced):
        return [r for r in report.table_goals(report.group(records), "hdd7200", priced)
                if r.startswith("| virtual disk")]
    assert vdisk_row(priced) == [("| virtual disk vs bare run | within ±10 % | "
                        "missed in 2 of 3: tac ×4 -20.0, 8k-sr ×1 +20.0 |")]
    assert vdisk_row({("lkr", 1, "buffered"): 9.0, ("tac", 4, "buffered"): -9.5}) == \
        ["| virtual disk vs bare run | within ±10 % | met; worst tac ×4 -9.5 |"]
    assert vdisk_row(None) == []


def test_virtual_disk_is_also_priced_against_the_bare_disk_at_the_stacks_read_ahead():
    """The recommended stack reads ahead 1 MiB, so the reads it receives
    are those the bare disk gets in `readahead`, not in the bare run:
    prices(records, "readahead") and table_prices() put the same price
    against that run's busy time, and the goals table shows it in a row
    of its own after the goal's."""
    rec = report.RECOMMENDED

    def recs(w, io, bare, ra, priced):
        """A cell's three runs; @ra None: readahead did not run it."""
        runs = [("bare", {"disk_stats": {"emu_busy_us": bare}}),
                (rec, {"redcap_stats": {"vdisk_time_us": priced},
                       "disk_stats": {"emu_busy_us": 1}})]
        if ra is not None:
            runs.append(("readahead", {"disk_stats": {"emu_busy_us": ra}}))
        return [{"workload": w, "procs": 2, "io": io, "config": c, "app_time_s": 1.0, "rep": 0,
                 **extra} for c, extra in runs]
    records = (recs("ior-r", "buffered", 2000, 1000, 1050) +    # -47.5 vs bare, +5.0 vs readahead
               recs("8k-sr", "buffered", 400, 400, 800) +       # +100.0 against both
               recs("random", "direct", 1000, None, 1000))
    assert report.prices(records) == pytest.approx({("ior-r", 2, "buffered"): -47.5,
                                                    ("8k-sr", 2, "buffered"): 100.0,
                                                    ("random", 2, "direct"): 0.0})
    assert report.prices(records, "readahead") == pytest.approx(
        {("ior-r", 2, "buffered"): 5.0, ("8k-sr", 2, "buffered"): 100.0})
    rows = [r for r in report.table_goals(report.group(records), "hdd15k", report.prices(records),
                                          report.prices(records, "readahead"))
            if r.startswith("| virtual disk")]
    assert rows == [
        "| virtual disk vs bare run | within ±10 % | missed in 2 of 3: ior-r ×2 -47.5, "
        "8k-sr ×2 +100.0 |",
        "| virtual disk vs bare at the stack's read-ahead | (within ±10 %) | missed in 1 of 2: "
        "8k-sr ×2 +100.0 |"]
    table = report.table_prices(records)
    assert table[:2] == ["| workload | procs | io | priced ms | bare busy ms | vs bare | "
                         "readahead busy ms | vs readahead |", "|---|---|---|---|---|---|---|---|"]
    assert table[2:5] == ["| ior-r | 2 | buffered | 1.1 | 2.0 | -47.5 % | 1.0 | +5.0 % |",
                          "| 8k-sr | 2 | buffered | 0.8 | 0.4 | +100.0 % | 0.4 | +100.0 % |",
                          "| random | 2 | direct | 1.0 | 1.0 | +0.0 % | – | – |"]
    assert table[5:] == ["", "Within 10 %: 1 of 3 cells against the bare run, "
                         "1 of 2 against `readahead`."]
    assert report.table_prices([r for r in records if r["config"] != rec]) == []
