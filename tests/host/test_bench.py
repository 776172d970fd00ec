# SPDX-License-Identifier: GPL-2.0
"""The benchmark suite's pure parts on the host: the prefetch bound, the
workload commands, the report's arithmetic and output, the TAC reader."""
import json
import os
import re
import subprocess
import sys

import pytest

import benchmod

TOP = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))


suite = benchmod.load("suite")
report = benchmod.load("report")
PROF = {"access_s": 0.01, "rate": 100e6}	# gap = 0.01 * 100e6 / 512 = 1953.125 sectors


def test_sim_spec_carries_a_configurations_tunables():
    """sim-validate simulates a suite configuration as the suite built it:
    its table's options and the tunables it sets afterwards (before
    2fb7fbe the tunables were dropped, so "-budget" ran without one)."""
    validate = benchmod.load("sim-validate")
    assert validate.sim_spec("redcap-64x128k-adaptive+caware-nobudget") == \
        "64x128k:adaptive+caware,budget_share=0,estimator=vdisk"
    assert validate.sim_spec("redcap-64x128k-adaptive+caware") == \
        "64x128k:adaptive+caware,estimator=vdisk"
    assert validate.sim_spec("redcap-64x128k-always") == "64x128k:always,estimator=vdisk"
    # The recommended stack's table names nothing: the target's own choices
    # over the suite's model layer (a KeyError before).
    assert validate.sim_spec("redcap-recommended") == "64x128k:adaptive+caware,estimator=vdisk"
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



def _rec(config, workload, procs, t, rep=0):
    return {"config": config, "workload": workload, "procs": procs, "io": "buffered",
            "app_time_s": t, "rep": rep}


def _merge(tmp_path, earlier, new, *opts):
    for name, recs in (("earlier", earlier), ("new", new)):
        (tmp_path / f"{name}.json").write_text(json.dumps(recs))
    out = tmp_path / "merged.json"
    r = subprocess.run([sys.executable, os.path.join(TOP, "tests", "bench", "merge.py"),
                        str(tmp_path / "earlier.json"), str(tmp_path / "new.json"),
                        "--out", str(out), *opts], capture_output=True, text=True)
    return r, (json.loads(out.read_text()) if out.exists() else None)


def test_merge_keeps_the_new_runs_and_the_earlier_ones_of_other_configurations(tmp_path):
    """merge.py: every new record, and the earlier records of the
    configurations the new set did not run, once the bare runs agree (the
    median of each cell within 1 %)."""
    earlier = [_rec("bare", "lkr", 1, t, i) for i, t in enumerate([1.0, 1.2, 1.0])] + \
        [_rec("bare", "tac", 4, 2.0), _rec("dm-cache-brd", "lkr", 1, 0.5),
         _rec("redcap-recommended", "lkr", 1, 0.9)]
    new = [_rec("bare", "lkr", 1, t, i) for i, t in enumerate([1.005, 1.0, 1.3])] + \
        [_rec("bare", "tac", 4, 1.995), _rec("redcap-recommended", "lkr", 1, 0.4)]
    r, merged = _merge(tmp_path, earlier, new)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines() == [
        "merge: bare: 2 cells in both, largest difference 0.50 % (lkr/1/buffered)",
        "merge: 5 new records (bare, redcap-recommended), 1 earlier ones of 1 configurations"]
    assert merged == [earlier[4]] + new


def test_merge_refuses_runs_that_measured_another_disk(tmp_path):
    """A bare cell 1.5 % apart, or a --same configuration one side lacks:
    exit 1 and nothing written."""
    earlier = [_rec("bare", "lkr", 1, 1.0), _rec("readahead", "lkr", 1, 0.8)]
    new = [_rec("bare", "lkr", 1, 1.015), _rec("redcap-recommended", "lkr", 1, 0.4)]
    r, merged = _merge(tmp_path, earlier, new)
    assert (r.returncode, merged) == (1, None)
    assert r.stdout.splitlines() == [
        "merge: bare: 1 cells in both, largest difference 1.50 % (lkr/1/buffered), over 1.0 %"]
    new[0]["app_time_s"] = 1.0
    r, merged = _merge(tmp_path, earlier, new, "--same", "bare", "readahead")
    assert (r.returncode, merged) == (1, None)
    assert r.stdout.splitlines()[1] == \
        "merge: readahead: 0 cells in both, largest difference 0.00 % (-), over 1.0 %"


# --------------------------------------------------------------------------
# The server set (issue 46): sizes, the page cache's bound, the report's
# pictures.  Each test configures a fresh copy of the suite: configure()
# changes the module's sizes.


def _server():
    srv = benchmod.load("suite")
    srv.configure(srv.SETS["server"])
    return srv


def test_server_set_gives_every_cache_64_mib():
    srv = _server()
    assert srv.BUDGET_SECTORS == 131072
    assert srv.GEOMETRIES == {"2048x32k": (2048, 64), "1024x64k": (1024, 128),
                              "512x128k": (512, 256), "256x256k": (256, 512)}
    # redcapctl create's default: 64 MiB of 128 KiB segments, a table line
    # with no features (the target's defaults are redcapctl's), its read-ahead
    assert srv.redcap_parts(srv.RECOMMENDED) == ("512x128k", "default")
    assert srv.POLICIES["default"] == "" and srv.READAHEAD_OF["default"] == 1024
    assert "redcap-512x128k-always" in srv.CONFIGS
    assert "redcap-512x128k-adaptive+caware" in srv.EXTRA_CONFIGS
    assert srv.SETS["server"]["configs"] == [
        "bare", "bare-equal-ram", "redcap-recommended", "readahead", "dm-cache-brd",
        "bcache-brd", "rapiddisk-brd", "warm"]
    # the 8 MiB sets keep their names
    assert suite.BUDGET_SECTORS == 16384 and suite.RECOMMENDED_STACK[0] == "64x128k"
    assert "redcap-32x256k-always" in suite.CONFIGS


def test_hdc_is_the_recommended_stack_with_its_tunables():
    """Issue 47's configuration: the recommended stack, then HDC's share
    and a period short enough to end within a run."""
    srv = _server()
    c = "redcap-recommended-hdc"
    assert c in srv.EXTRA_CONFIGS and c not in srv.CONFIGS
    assert srv.redcap_parts(c) == srv.RECOMMENDED_STACK == ("512x128k", "default")
    assert dict(srv.HDC_TUNABLES) == {"hdc": "50", "hot_period": "10"}
    assert "redcap-recommended-for" not in srv.EXTRA_CONFIGS + srv.CONFIGS


def test_writeback_is_the_recommended_stack_with_write_policy_back():
    """Issue 48's configurations: the recommended geometry, its table line
    "write_policy back" (or selective) and nothing else."""
    srv = _server()
    c = "redcap-recommended-writeback"
    assert c in srv.EXTRA_CONFIGS and c not in srv.CONFIGS
    assert srv.redcap_parts(c) == srv.RECOMMENDED_STACK
    assert srv.WB_FEATURES == "2 write_policy back"
    c = "redcap-recommended-selective"
    assert c in srv.EXTRA_CONFIGS and c not in srv.CONFIGS
    assert srv.redcap_parts(c) == srv.RECOMMENDED_STACK
    assert srv.SEL_FEATURES == "2 write_policy selective"


def test_recommended_2x_is_the_recommended_stack_with_twice_the_segments():
    """Issue 49's configuration: the recommended stack's table line,
    tunables and 128 KiB segments, 1024 of them (128 MiB); the set's budget,
    memory.max and default configurations unchanged."""
    srv = _server()
    c = "redcap-recommended-2x"
    assert c in srv.EXTRA_CONFIGS and c not in srv.CONFIGS
    assert all(c not in spec["configs"] for spec in srv.SETS.values())
    assert srv.redcap_parts(c) == ("1024x128k", "default")
    assert srv.geometry_sizes("1024x128k") == (1024, 256)
    assert srv.geometry_sizes(srv.RECOMMENDED_STACK[0]) == srv.GEOMETRIES["512x128k"]
    assert srv.memory_max(c) == srv.memory_max(srv.RECOMMENDED)
    assert srv.BUDGET_SECTORS == 131072


SHADOWS = """shadow_ram=67108864
shadow_bare_us=8612345
shadow_32k_sampled=32
shadow_32k_reads=160
shadow_32k_half=402113
shadow_32k_x1=351920
shadow_32k_x2=301766
shadow_32k_x4=280334
shadow_128k_sampled=30
shadow_128k_reads=150
shadow_128k_half=500000
shadow_128k_x1=400000
shadow_128k_x2=373600
shadow_1024k_x1=1000
"""


def test_a_runs_shadows_keep_the_live_sizes_ram_figures():
    """What one_run() keeps of the "shadows" answer (docs/redcap.rst), and
    the advice redcapctl status prints from it: twice the RAM -6.6 %; a
    shadow that priced nothing (x4 here) gives no advice."""
    rec = suite.shadows_of(SHADOWS, 128 << 10)
    assert rec == {"ram_bytes": 64 << 20, "bare_us": 8612345, "segment_kib": 128,
                   "sampled": 30, "reads": 150, "half": 500000, "x1": 400000, "x2": 373600,
                   "by_size": {32: {"half": 402113, "x1": 351920, "x2": 301766,
                                    "x4": 280334}, 1024: {"x1": 1000}}}
    adv = suite.ram_advice(rec)
    assert set(adv) == {"half", "x2"}
    assert round(100 * adv["x2"], 1) == -6.6 and round(100 * adv["half"], 1) == 25.0
    assert suite.ram_advice(suite.shadows_of("shadow_ram=1\n", 128 << 10)) == {}
    assert suite.ram_advice(None) == {}
    json.dumps(rec, sort_keys=True)	# into the records as it is


def test_ram_advice_compares_the_prediction_with_the_2x_run():
    ra = benchmod.load("ram-advice")
    one = {"workload": "lkr", "procs": 4, "io": "buffered", "config": "redcap-recommended",
           "app_time_s": 10.0, "disk_stats": {"busy_us": 4_000_000},
           "shadows": suite.shadows_of(SHADOWS, 128 << 10)}
    two = dict(one, config="redcap-recommended-2x", app_time_s=9.0,
               disk_stats={"busy_us": 3_500_000}, shadows={"bare_us": 8_000_000})
    bare = dict(one, config="bare")
    [c] = ra.cells([bare, one, two, dict(one, workload="tac")])
    assert round(c["predicted"], 1) == -6.6 and round(c["busy"], 1) == -12.5
    assert round(c["app"], 1) == -10.0 and round(c["error"], 1) == 5.9 and not c["within"]
    assert c["lru1"] == 40.0 and round(c["cache1"], 1) == 46.4 and c["cache2"] == 43.75
    assert c["history"] is None and "history_within" not in c
    text = ra.report([c], "cmd")
    assert "in **0 of 1** cells (the shadows)." in text
    assert "| lkr | 4 | -6.6 | – | -12.5 | -10.0 | +5.9 | no |" in text
    # the eviction history: 50 fills saved of 400 read requests sent down
    stats = {"fill_ios": 380, "fill_joined": 30, "read_bypassed": 52, "read_joined": 2,
             "x2_fills_saved": 50}
    [c] = ra.cells([dict(one, redcap_stats=stats), two])
    assert c["history"] == -12.5 and c["history_within"]
    assert ra.history_advice(dict(stats, x2_fills_saved=0)) == 0.0
    assert ra.history_advice({"fill_ios": 1}) is None
    text = ra.report([c], "cmd")
    assert "in **0 of 1** cells (the shadows), **1 of 1** (the eviction history)." in text
    assert "| lkr | 4 | -6.6 | -12.5 | -12.5 | -10.0 | +5.9 | no |" in text


def test_server_set_bounds_the_page_cache_and_gives_equal_ram_the_caches_ram():
    srv = _server()
    assert srv.memory_max("bare") == 256 << 20 == 268435456
    assert srv.memory_max("redcap-recommended") == 268435456
    assert srv.memory_max("bare-equal-ram") == (256 + 64) << 20 == 335544320
    # the 8 MiB full set bounds nothing: no equal-RAM configuration there
    full = benchmod.load("suite")
    full.configure(full.SETS["full"])
    assert full.memory_max("bare") is None
    with pytest.raises(ValueError):
        full.memory_max("bare-equal-ram")
    # tiny (make check) runs the cgroup path: 8 MiB caches, the same bound
    tiny = benchmod.load("suite")
    tiny.configure(tiny.SETS["tiny"])
    assert tiny.memory_max("bare-equal-ram") == (256 + 8) << 20


def test_server_set_matrix_and_data():
    srv = _server()
    spec = srv.SETS["server"]
    runs = srv.set_runs(spec)
    assert len(runs) == 21
    assert {p for w, p, io in runs if w == "lkr"} == {1, 4, 16}
    assert {p for w, p, io in runs if w == "tac"} == {1, 16}
    assert {p for w, p, io in runs if w == "row"} == {1, 4} and all(
        io == "buffered" for _, _, io in runs)
    # the set's comment: redcap, the bare disk and the equal-RAM page cache
    # 3 times, the alternatives with the same RAM and warm once (their
    # later repetitions moved no geometric mean by more than 0.11 points)
    assert set(spec["configs"]) - set(spec["once"]) == {"bare", srv.EQUAL_RAM, srv.RECOMMENDED}
    assert len(runs) * (3 * 3 + len(spec["once"])) == 294
    assert spec["reps"] == 3 and spec["bound"] is False
    files, units = srv.set_data(srv.SETS["server"], runs)
    # the streams' pool: 20 files of 80 MiB; the random readers' 1 GiB
    assert files == {**{f"/tmp/redcap-bench/p{k}": 80 << 10 for k in range(20)},
                     srv.RANDOM_FILE: 1 << 20}
    assert units == 16
    # 16 times the caches' RAM: each single stream workload reads 16 files
    assert sum(80 << 10 for _ in srv.stream_files("ior-r", 1, 1, 0)) == 1280 << 10
    read = {n for w, p, io in runs for c in srv.commands(w, p, io)
            for n in re.findall(r"/tmp/redcap-bench/[^/ ]+", c)}
    assert read == set(files) | {srv.lkr_path(u) for u in range(units)}


def test_server_set_on_the_devices_without_platters_does_more_of_the_same():
    """The nbd and st1 answer in 1-3 ms: their random readers read more,
    the nbd's LKR has more copies; 512K-SR keeps the paper's four series;
    the data of the rest, and every other profile, as the set says; the
    nbd's RAM disk fits its 8 GiB guest."""
    sizes = {}
    for profile in ("hdd7200", "hdd15k", "st1", "nbd"):
        srv = benchmod.load("suite")
        srv.configure(srv.SETS["server"], profile)
        runs = srv.set_runs(srv.SETS["server"])
        files, units = srv.set_data(srv.SETS["server"], runs)
        sizes[profile] = (srv.RANDOM_IOS, units, srv.MAX_PROCS["lkr"],
                          srv.ram_disk_mib(files, units))
        if profile == "nbd":
            P, R = "/tmp/redcap-bench/p", srv.RDPAT
            assert srv.commands("512k-sr", 16, "buffered")[3] == " && ".join(
                f"{R} {P}3 stride 4096 524288 {4096 * k}" for k in range(4))
            assert srv.commands("random", 16, "buffered")[0] == \
                f"{R} /tmp/redcap-bench/random random 4096 4096 1000"
            assert len(srv.commands("lkr", 16, "buffered")[0].split("/tmp/redcap-bench/l")) == 7
    assert sizes == {"hdd7200": (2048, 16, 16, 3142), "hdd15k": (2048, 16, 16, 3142),
                     "st1": (8192, 16, 16, 3142), "nbd": (65536, 96, 96, 4102)}


def test_server_set_deals_the_pool_out():
    srv = _server()
    P = "/tmp/redcap-bench/p"
    assert srv.stream_files("ior-r", 4, 1, 1) == [f"{P}1", f"{P}5", f"{P}9", f"{P}13"]
    assert srv.stream_files("tac", 4, 1, 1) == [f"{P}13", f"{P}9", f"{P}5", f"{P}1"]
    assert srv.stream_files("8k-sr", 16, 1, 15) == [f"{P}15"]
    # row and mix: a quarter each, the 5th part after the single workloads' 16
    assert srv.stream_files("ior-r", 1, 4, 0) == [f"{P}{k}" for k in range(4)]
    assert srv.stream_files("512k-sr", 4, 4, 2) == [f"{P}18"]
    R = srv.RDPAT
    assert srv.commands("512k-sr", 16, "buffered")[3] == " && ".join(
        f"{R} {P}3 stride 4096 524288 {k}" for k in (0, 4096, 8192, 12288))
    assert srv.commands("tac", 1, "buffered")[0].startswith(f"{R} {P}15 back 65536 && ")
    assert srv.commands("random", 16, "buffered")[0] == \
        f"{R} /tmp/redcap-bench/random random 4096 128 1000"
    lkr = srv.commands("lkr", 4, "buffered")
    assert lkr[0] == (f"{srv.BUSYBOX} find /tmp/redcap-bench/l0 /tmp/redcap-bench/l4 "
                      "/tmp/redcap-bench/l8 /tmp/redcap-bench/l12 -type f "
                      f"-exec {srv.BUSYBOX} cat {{}} + >/dev/null")
    mix = srv.commands("mix", 4, "buffered")
    names = [n for c in mix for n in re.findall(rf"{P}\d+", c)]
    assert len(set(names)) == 20	# 512k-sr reads each of its files 4 times


def test_workloads_join_the_cgroup(monkeypatch, tmp_path):
    """Every workload process writes itself into the cgroup's procs
    before it runs; no cgroup (the 8 MiB sets): nothing written."""
    srv = benchmod.load("suite")
    assert srv.cgroup_join() is None
    monkeypatch.setattr(srv, "CGROUP", str(tmp_path))
    srv.cgroup_join()
    assert (tmp_path / "cgroup.procs").read_text() == "0"
    srv.cgroup_limit(335544320)
    assert (tmp_path / "memory.max").read_text() == "335544320"
    srv.cgroup_limit(None)
    assert (tmp_path / "memory.max").read_text() == "max"
    (tmp_path / "memory.events").write_text("low 0\nhigh 0\nmax 17\noom 0\noom_kill 0\n")
    assert srv.cgroup_events()["max"] == 17


def _g(cells):
    return report.group([_rec(c, w, p, t, rep=i) for (w, p, c), ts in cells.items()
                         for i, t in enumerate(ts)])


def test_report_relative_times_and_the_equal_ram_rows():
    g = _g({("tac", 1, "bare"): [20.0, 22.0, 21.0], ("tac", 1, "bare-equal-ram"): [18.9],
            ("tac", 1, "redcap-recommended"): [10.5, 12.0, 9.0],
            ("lkr", 4, "bare"): [10.0], ("lkr", 4, "bare-equal-ram"): [10.0],
            ("lkr", 4, "redcap-recommended"): [4.0],
            ("random", 1, "bare"): [11.0], ("random", 1, "bare-equal-ram"): [11.0]})
    rel = report.relative(g, "buffered", ["bare", "redcap-recommended"])
    assert rel[("tac", 1)] == {"bare": 100.0, "redcap-recommended": 50.0}
    assert rel[("random", 1)] == {"bare": 100.0}
    rows, mean = report.equal_ram(g, "buffered")
    # random lacks redcap: left out; LKR before TAC
    assert [(w, p) for w, p, _ in rows] == [("lkr", 4), ("tac", 1)]
    assert rows[1][2]["bare-equal-ram"] == pytest.approx(90.0)
    assert mean["bare"] == pytest.approx(100.0)
    assert mean["redcap-recommended"] == pytest.approx(100 * (0.4 * 0.5) ** 0.5)
    assert mean["bare-equal-ram"] == pytest.approx(100 * 0.9 ** 0.5)
    assert report.table_equal_ram(g, "buffered")[-1] == "| geometric mean | | | 95 % | 45 % |"
    assert report.equal_ram(g, "direct") == ([], None)


def test_report_draws_the_bars_and_the_equal_ram_picture(tmp_path):
    recs = []
    for w in ("lkr", "tac"):
        for p in (1, 4):
            for c, t in (("bare", 10.0), ("bare-equal-ram", 9.0), ("redcap-recommended", 5.0),
                         ("dm-cache-brd", 8.0)):
                r = _rec(c, w, p, t)
                r.update(kernel="6.1", disk_profile="hdd7200", set="server",
                         memory_max_bytes=(320 if c == "bare-equal-ram" else 256) << 20,
                         budget_bytes=64 << 20, disk_read_bytes=0)
                recs.append(r)
    (tmp_path / "s.json").write_text(json.dumps(recs))
    # Debian's python3, with python3-matplotlib (make deps)
    subprocess.run(["/usr/bin/python3", os.path.join(TOP, "tests", "bench", "report.py"),
                    str(tmp_path / "s.json")], check=True, capture_output=True)
    md = (tmp_path / "s.md").read_text()
    assert "![buffered: equal RAM](s-buffered-equal-ram.png)" in md
    assert "(s-buffered-bars.png)" in md
    assert "| tac | 4 | 10.00 | 90 % | 50 % |" in md
    assert "bounded their page cache to 256 MiB" in md
    for png in ("s-buffered-bars.png", "s-buffered-equal-ram.png"):
        assert (tmp_path / png).stat().st_size > 1000


def test_apps_set_runs_the_real_programs_on_their_own_image():
    """The apps set: every one of apps.WORKLOADS with 1 and 4 processes
    (those apps.MAX_PROCS holds to one: once), nothing of the suite's own
    data, the server set's RAM and bound."""
    srv = benchmod.load("suite")
    spec = srv.SETS["apps"]
    srv.configure(spec)
    apps = srv.apps
    runs = srv.set_runs(spec)
    assert runs == [(w, p, "buffered") for w in apps.WORKLOADS for p in (1, 4)
                    if p <= apps.MAX_PROCS.get(w, p)]
    assert srv.set_data(spec, runs) == ({}, 0)
    assert srv.memory_max("bare-equal-ram") == 335544320
    assert spec["configs"] == srv.SETS["server"]["configs"]
    assert set(srv.APPS) == set(apps.WORKLOADS) and not set(srv.APPS) & set(srv.WORKLOADS)


def test_deal_gives_the_guests_equal_measured_time():
    """--part J/N deals the cases longest first to the least loaded guest
    (the hdd7200 server set of 2026-12-02, dealt round-robin, kept one
    guest 150 min and the other 121): exact parts, each in the set's
    order, every case once; a case the records lack counts as their
    median one; without records it is round-robin.  A case's length is
    its records' mean: a set stopped early has fewer records of some."""
    runs = [("a", 1, "buffered"), ("b", 1, "buffered"), ("c", 1, "buffered"),
            ("d", 1, "buffered"), ("e", 1, "buffered")]
    rec = [{"workload": w, "procs": 1, "io": "buffered", "app_time_s": t}
           for w, t in (("a", 92), ("a", 100), ("b", 12), ("c", 52), ("d", 32))]
    # costs with 8 s a record: a 104, b 20, c 60, d 40, e (none) the
    # median of a, b, c, d (the upper one): 60
    a, b, c, d, e = runs
    assert suite.deal(runs, 2, rec) == [[a, d], [b, c, e]]
    assert suite.deal(runs, 3, rec) == [[a], [c, d], [b, e]]
    # a stopped set: one record of x (108 s) against three of y (48 s each)
    x, y, z = runs[:3]
    part = [{"workload": w, "procs": 1, "io": "buffered", "app_time_s": t}
            for w, t in (("a", 100), ("b", 40), ("b", 40), ("b", 40), ("c", 70))]
    assert suite.deal([x, y, z], 2, part) == [[x], [y, z]]
    assert suite.deal(runs, 2) == [runs[0::2], runs[1::2]]
    assert sorted(r for p in suite.deal(runs, 4, rec) for r in p) == runs


def test_costs_come_from_the_newest_set_on_the_same_drive(tmp_path):
    """run --jobs deals by the newest results of the set on the same drive,
    the one about to be replaced included, else on another drive, else
    none.  (Before, a set whose only earlier run on its drive was the file
    it replaces made run exit at once: grep found nothing, under
    pipefail.)"""
    def put(name):
        (tmp_path / name).write_text("[]")
        return str(tmp_path / name)

    assert suite.costs_source(str(tmp_path), "server", "hdd15k") == ""
    a = put("2026-11-30-server-6.1-hdd7200.json")
    assert suite.costs_source(str(tmp_path), "server", "hdd15k") == a
    b = put("2026-12-01-server-6.1-hdd15k.json")
    put("2026-12-02-server-6.1-hdd15k.json.part0")
    put("2026-12-03-apps-6.1-hdd15k.json")
    assert suite.costs_source(str(tmp_path), "server", "hdd15k") == b
    c = put("2026-12-02-server-6.1-hdd7200.json")
    assert suite.costs_source(str(tmp_path), "server", "hdd7200") == c
    assert suite.costs_source(str(tmp_path), "server", "hdd15k") == b
    assert suite.costs_source(str(tmp_path), "apps", "hdd7200") == \
        str(tmp_path / "2026-12-03-apps-6.1-hdd15k.json")


def test_counters_wait_for_the_fills_a_run_left_in_flight(monkeypatch):
    """A stream's read-ahead goes on after its last read: the drive counts
    a request when it is sent, redcap a fill when it completes.  The
    record's counters are read once redcap has no fill in flight, and a
    fill that never ends is an error, not a record."""
    filling = [3, 1, 0]
    polls = []
    monkeypatch.setattr(suite, "dm_stats", lambda name: polls.append(name) or
                        {"segments_filling": filling.pop(0)})
    monkeypatch.setattr(suite.time, "sleep", lambda s: None)

    class Stack:
        redcap = "bench-rc"
    suite.fills_done(Stack())
    assert polls == ["bench-rc"] * 3 and not filling
    clock = iter(range(0, 100, 4))
    monkeypatch.setattr(suite.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(suite, "dm_stats", lambda name: {"segments_filling": 1})
    with pytest.raises(RuntimeError, match="bench-rc: fills still in flight 10 s after the run"):
        suite.fills_done(Stack())


def test_report_draws_no_empty_picture_without_a_bare_run(tmp_path):
    """A set run without the bare disk (the RAM advice's two stacks) has no
    change against bare to draw: no per-process picture, and the report
    does not point at one (two such pictures of empty axes were committed)."""
    recs = []
    for p in (1, 4):
        for c, t in (("redcap-recommended", 5.0), ("redcap-recommended-2x", 4.0)):
            r = _rec(c, "tac", p, t)
            r.update(kernel="6.1", disk_profile="hdd7200", set="server", disk_read_bytes=0)
            recs.append(r)
    (tmp_path / "s.json").write_text(json.dumps(recs))
    subprocess.run(["/usr/bin/python3", os.path.join(TOP, "tests", "bench", "report.py"),
                    str(tmp_path / "s.json")], check=True, capture_output=True)
    assert "![buffered](s-buffered.png)" not in (tmp_path / "s.md").read_text()
    assert not (tmp_path / "s-buffered.png").exists()


def test_traces_without_the_bounds_runs_is_refused(tmp_path):
    """--traces keeps the block traces of the bound's runs: in a set that
    runs none (server, without --bound) it would keep nothing, after the
    whole run (seen: 17 min of guest time for no trace)."""
    r = subprocess.run([sys.executable, os.path.join(TOP, "tests", "bench", "suite.py"),
                        "--out", str(tmp_path / "o.json"), "--set", "server",
                        "--workloads", "lkr", "--procs", "1", "--configs", "bare",
                        "--traces", str(tmp_path / "t")], capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr.splitlines()[-1] == (
        "suite.py: error: --traces keeps the block traces of the bound's runs, and set "
        "server runs none here: add --bound")
    assert not (tmp_path / "o.json").exists() and not (tmp_path / "t").exists()


def test_traces_outside_the_tree_are_refused_before_the_guest(tmp_path):
    """The guest writes only under the tree: --traces elsewhere failed with a
    read-only file system once the guest had booted (2026-12-07)."""
    r = subprocess.run([os.path.join(TOP, "tests", "bench", "run"), "--tiny", "--",
                        "--bound", "--traces", str(tmp_path / "t")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert r.stderr == (f"bench: --traces {tmp_path / 't'}: the guest writes only "
                        f"under {TOP}\n")
    assert not (tmp_path / "t").exists()


def test_trace_starts_moves_each_process_whole(tmp_path):
    """trace-starts.py: each process's events move by one amount (its think
    times kept), the processes begin STAGGER ms apart in the order they
    began, and a completion goes with the process that queued its sector,
    whatever pid blkparse names for it."""
    src, dst = tmp_path / "in.blkparse", tmp_path / "out.blkparse"
    src.write_text(
        "254,0 0 1 0.000000100 7 Q RM 100 + 8 [x]\n"
        "254,0 0 2 0.030000000 9 Q RM 500 + 8 [y]\n"
        "254,0 0 3 0.030002000 7 C RM 100 + 8 [0]\n"
        "254,0 0 4 0.030003000 7 Q RM 124 + 8 [x]\n"
        "254,0 0 5 0.031000000 0 C RM 500 + 8 [0]\n")
    r = subprocess.run([sys.executable, os.path.join(TOP, "tests", "bench", "trace-starts.py"),
                        str(src), "2", str(dst)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    got = [(w[3], w[4], w[5], w[7]) for w in (line.split() for line in dst.read_text().splitlines())]
    assert got == [("0.000000100", "7", "Q", "100"),
                   ("0.002000100", "9", "Q", "500"),
                   ("0.003000100", "0", "C", "500"),
                   ("0.030002000", "7", "C", "100"),
                   ("0.030003000", "7", "Q", "124")]
