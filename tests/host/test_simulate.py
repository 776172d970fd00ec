# SPDX-License-Identifier: GPL-2.0
"""redcapctl simulate on tiny traces: exact counters through the target's own
cache core, the same output twice, csv and blkparse input, and every bad
input answered with its exact error (a bad trace line by its number)."""
import json
import os
import re
import subprocess

import pytest

TOP = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
REDCAPCTL = os.path.join(TOP, "build", "userspace", "redcapctl")


@pytest.fixture(scope="module", autouse=True)
def built():
    subprocess.run(["make", "-s", "-C", os.path.join(TOP, "userspace")], check=True)


def simulate(*args):
    return subprocess.run([REDCAPCTL, "simulate", *map(str, args)], capture_output=True,
                          text=True)


CSV = ("time_ns,pid,op,sector,sectors\n"
       "0,7,R,0,8\n"          # fills segment 0 (128 KiB: sectors 0..255)
       "1,7,R,8,8\n"          # hit
       "2,7,R,248,16\n"       # hit in 0, miss in 1: two pieces
       "3,7,W,300,8\n"        # write to segment 1: invalidates it
       "4,7,R,256,8\n"        # miss again
       "5,7,R,16,8\n")        # hit


def test_exact_counters_through_the_cache_core(tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text(CSV)
    r = simulate("--trace", trace, "--format", "csv", "--config", "bare",
                 "--config", "64x128k:always", "--json")
    assert (r.returncode, r.stderr) == (0, "")
    out = json.loads(r.stdout)
    assert (out["requests"], out["disk"], out["capacity_sectors"]) == (6, "hdd7200", 1 << 21)
    bare, cached = out["results"]
    assert bare["config"] == "bare" and "stats" not in bare
    assert bare["disk_requests"] == 6
    # one process, back to back from time 0: the run is the drive's busy time
    assert bare["app_time_s"] == pytest.approx(bare["disk_busy_s"], abs=1e-9)
    st = cached["stats"]
    assert {k: st[k] for k in ("reads", "read_hits", "read_misses", "fill_ios", "fill_sectors",
                               "read_bypassed", "writes", "invalidations", "state")} == {
        "reads": 6, "read_hits": 3, "read_misses": 3, "fill_ios": 3, "fill_sectors": 768,
        "read_bypassed": 0, "writes": 1, "invalidations": 1, "state": "active"}
    # three fills and the write
    assert cached["disk_requests"] == 4


def test_prefetch_runs_the_kernels_read_ahead_of_streams(tmp_path):
    """A process reading 8 segments backward in 32 KiB reads, prefetch 2
    (the default is 8): the counts of the guest's
    test_a_stream_reads_the_segments_filled_ahead_of_it, from the
    same core: one miss, 8 fills ahead, 7 of them read, in 6 disk requests
    (the miss, two fills ahead alone, three batches of two, each one
    request); without read-ahead (prefetch 0), a fill per segment."""
    trace = tmp_path / "t.csv"
    trace.write_text("time_ns,pid,op,sector,sectors\n" + "".join(
        f"{i},7,R,{512 + 64 * (31 - i)},64\n" for i in range(32)))
    r = simulate("--trace", trace, "--format", "csv", "--config", "64x128k:always,prefetch=2",
                 "--config", "64x128k:always,prefetch=0", "--json")
    assert (r.returncode, r.stderr) == (0, "")
    ahead, plain = json.loads(r.stdout)["results"]
    keys = ("reads", "read_misses", "read_bypassed", "prefetch", "prefetches", "prefetch_hits",
            "prefetch_unused", "fill_ios", "fill_sectors", "segments_valid")
    assert {k: ahead["stats"][k] for k in keys} == {
        "reads": 32, "read_misses": 1, "read_bypassed": 0, "prefetch": 2, "prefetches": 8,
        "prefetch_hits": 7, "prefetch_unused": 0, "fill_ios": 9, "fill_sectors": 9 * 256,
        "segments_valid": 9}
    assert ahead["stats"]["read_hits"] + ahead["stats"]["read_hits_waited"] == 31
    assert ahead["stats"]["fill_joined"] == 3
    assert ahead["disk_requests"] == 6
    assert {k: plain["stats"][k] for k in keys} == {
        "reads": 32, "read_misses": 8, "read_bypassed": 0, "prefetch": 0, "prefetches": 0,
        "prefetch_hits": 0, "prefetch_unused": 0, "fill_ios": 8, "fill_sectors": 8 * 256,
        "segments_valid": 8}


def test_the_same_input_gives_the_same_output(tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text(CSV)
    args = ("--trace", trace, "--format", "csv", "--config", "bare", "--config",
            "16x32k:always", "--config", "16x32k:off,write_policy=update")
    first, second = simulate(*args), simulate(*args)
    assert first.returncode == 0 and first.stdout == second.stdout
    lines = first.stdout.splitlines()
    assert lines[0] == "6 requests on hdd7200 (2097152 sectors)"
    assert lines[3].split()[0] == "bare" and lines[5].split()[-1] == "inactive"


def test_blkparse_text_is_read(tmp_path):
    trace = tmp_path / "t.txt"
    trace.write_text(
        "  8,16   0        1     0.000000000  4321  Q   R 2048 + 8 [fio]\n"
        "  8,16   0        2     0.000001000  4321  D   R 2048 + 8 [fio]\n"
        "  8,16   0        3     0.010000000     0  C   R 2048 + 8 [0]\n"
        "  8,16   0        4     0.015000000  4321  Q   R 2056 + 8 [fio]\n"
        "  8,16   0        5     0.015001000  4321  D   R 2056 + 8 [fio]\n"
        "  8,16   0        6     0.020000000     0  C   R 2056 + 8 [0]\n")
    r = simulate("--trace", trace, "--config", "64x128k:always", "--disk", "hdd15k", "--json")
    assert (r.returncode, r.stderr) == (0, "")
    out = json.loads(r.stdout)
    st = out["results"][0]["stats"]
    assert (out["requests"], out["disk"], st["read_misses"], st["read_hits"]) == (
        2, "hdd15k", 1, 1)
    # the 5 ms the process thought between its two reads are kept
    assert out["results"][0]["app_time_s"] > 0.005


@pytest.mark.parametrize("disk,busy_s", [("st1", 0.006031266), ("nbd", 0.002070016)])
def test_devices_without_platters_cost_latency_and_transfer(tmp_path, disk, busy_s):
    """st1 and nbd: two 4 KiB reads far apart, each its latency (3 ms, 1 ms)
    plus 4 KiB at the link's rate (262, 117 MB/s); no seek, no rotation."""
    trace = tmp_path / "t.trace"
    trace.write_text(
        "  8,16   0        1     0.000000000  4321  Q   R 2048 + 8 [fio]\n"
        "  8,16   0        2     0.000001000  4321  D   R 2048 + 8 [fio]\n"
        "  8,16   0        3     0.010000000     0  C   R 2048 + 8 [0]\n"
        "  8,16   0        4     0.015000000  4321  Q   R 900000 + 8 [fio]\n"
        "  8,16   0        5     0.015001000  4321  D   R 900000 + 8 [fio]\n"
        "  8,16   0        6     0.020000000     0  C   R 900000 + 8 [0]\n")
    r = simulate("--trace", trace, "--config", "bare", "--disk", disk, "--json")
    assert (r.returncode, r.stderr) == (0, "")
    res = json.loads(r.stdout)["results"][0]
    assert (res["disk_requests"], res["disk_busy_s"]) == (2, busy_s)
    # the 5 ms the process thought between its two reads are kept
    assert res["app_time_s"] == pytest.approx(busy_s + 0.005, abs=1e-9)


@pytest.mark.parametrize("args,trace,err", [
    ([], None, "redcapctl: simulate: --trace FILE is needed\n"),
    (["--trace", "T"], None, "redcapctl: simulate: at least one --config is needed "
                             "(bare, or e.g. 64x128k:always)\n"),
    (["--trace", "T", "--config", "64x128k"], None,
     "redcapctl: simulate: config '64x128k': not bare nor <segments>x<size>:<policy>\n"),
    (["--trace", "T", "--config", "bare", "--disk", "ssd"], None,
     "redcapctl: simulate: --disk: no disk profile 'ssd' (hdd7200, hdd15k, st1, nbd)\n"),
    (["--trace", "T", "--config", "bare", "--format", "json"], None,
     "redcapctl: simulate: --format: 'json' is not blkparse or csv\n"),
    (["--trace", "T", "--config", "bare", "--capacity", "1G"], None,
     "redcapctl: simulate: --capacity: '1G' is not a number of sectors\n"),
    (["--trace", "T", "--config", "bare", "--bogus"], None,
     "redcapctl: simulate: unknown option '--bogus'\n"),
    (["--trace", "T", "--config", "bare", "--trace"], None,
     "redcapctl: simulate: option '--trace' needs a value\n"),
    (["--trace", "T", "--config", "bare", "extra"], None,
     "redcapctl: simulate: unexpected 'extra'\n"),
    (["--trace", "T", "--config", "bare", "--model", "M", "--drive-cache"], None,
     "redcapctl: simulate: --drive-cache needs a --disk\n"),
], ids=["no-trace", "no-config", "bad-config", "bad-disk", "bad-format", "bad-capacity",
        "bad-option", "no-value", "operand", "drive-cache-no-disk"])
def test_usage_errors(tmp_path, args, trace, err):
    r = simulate(*[str(tmp_path / "t.csv") if a == "T" else a for a in args])
    assert r.returncode == 2
    assert r.stderr.startswith(err), r.stderr


def test_up_to_128_configurations(tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text(CSV)
    configs = [a for i in range(128) for a in ("--config", f"{i + 1}x32k:always")]
    r = simulate("--trace", trace, "--format", "csv", *configs, "--json")
    assert (r.returncode, r.stderr) == (0, "")
    assert len(json.loads(r.stdout)["results"]) == 128
    r = simulate("--trace", trace, "--format", "csv", *configs, "--config", "bare")
    assert r.returncode == 2
    assert r.stderr.startswith("redcapctl: simulate: at most 128 --config\n")


def test_a_bad_trace_line_is_named(tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text("time_ns,pid,op,sector,sectors\n0,1,R,0,8\n1,1,X,8,8\n")
    r = simulate("--trace", trace, "--format", "csv", "--config", "bare")
    assert r.returncode == 1
    assert r.stderr == f'redcapctl: simulate: {trace}: line 3: op: "X" is not R, W or D\n'
    assert r.stdout == ""


def test_a_request_beyond_the_capacity_is_refused(tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text("time_ns,pid,op,sector,sectors\n0,1,R,4096,8\n")
    r = simulate("--trace", trace, "--format", "csv", "--config", "bare", "--capacity", "4096")
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr == ("redcapctl: simulate: bare: request 0 (sectors 4096+8) is beyond the "
                        "disk's 4096 sectors\n")


CACHE = os.environ.get("REDCAP_CACHE", os.path.expanduser("~/.cache/redcap"))
VENV_PYTHON = os.path.join(CACHE, "venv", "bin", "python")

# libCacheSim's LRU, one object a segment, on the segments of the read pieces.
LCS_MISSES = """
import sys
import libcachesim as lcs
cap, seg = int(sys.argv[1]), int(sys.argv[2])
cache, misses = lcs.LRU(cache_size=cap), 0
for line in sys.stdin:
    sector, sectors = map(int, line.split())
    for s in range(sector // seg, (sector + sectors - 1) // seg + 1):
        misses += not cache.get(lcs.Request(obj_id=s, obj_size=1))
print(misses)
"""


def serial_reads(kind, n, rng, seg):
    """One process, serial reads of 4 to 128 KiB over 1 GiB, each cut at the
    end of its segment of @seg sectors: dm splits a read that crosses
    segments into pieces that go at once, and the kernel makes a piece's
    segment the most recent when it completes, a hit at once and a fill
    later, so only reads of one segment are issued serially."""
    out, sector = [], 0
    for i in range(n):
        length = 8 << rng.randrange(6)
        if kind == "random":
            sector = rng.randrange((1 << 21) // 8 - 64) * 8
        elif kind == "loop":
            sector = (i % 97) * 200
        elif kind == "strided":
            sector, length = i * 24, 8
        out.append((sector, min(length, seg - sector % seg)))
        if kind == "sequential":
            sector += length
    return out


@pytest.mark.parametrize("kind", ["sequential", "random", "loop", "strided"])
def test_fills_equal_libcachesim_lru_misses(tmp_path, kind):
    """With policy always, no read-ahead and one process issuing serially,
    every fill is an LRU miss of a segment: libCacheSim's LRU (PyPI, installed by make deps
    into the harness's venv) counts the same, exactly."""
    import random

    assert subprocess.run([VENV_PYTHON, "-c", "import libcachesim"]).returncode == 0, \
        f"no libcachesim in {VENV_PYTHON}: run 'make deps'"
    for nr, seg_kib in ((16, 128), (64, 128), (256, 32), (8, 1024)):
        reqs = serial_reads(kind, 4000, random.Random(kind), seg_kib * 2)
        trace = tmp_path / "t.csv"
        trace.write_text("time_ns,pid,op,sector,sectors\n" +
                         "".join(f"{i},1,R,{s},{n}\n" for i, (s, n) in enumerate(reqs)))
        r = simulate("--trace", trace, "--format", "csv", "--config",
                     f"{nr}x{seg_kib}k:always,prefetch=0", "--json")
        assert r.returncode == 0, r.stderr
        st = json.loads(r.stdout)["results"][0]["stats"]
        ref = subprocess.run([VENV_PYTHON, "-c", LCS_MISSES, str(nr), str(seg_kib * 2)],
                             input="".join(f"{s} {n}\n" for s, n in reqs),
                             capture_output=True, text=True, check=True)
        assert (st["fill_ios"], st["read_misses"]) == (int(ref.stdout), int(ref.stdout)), \
            (kind, nr, seg_kib)
        assert st["read_hits"] + st["read_misses"] == st["reads"]


def test_progress_in_a_terminal_only(tmp_path):
    """A long trace shows how far each configuration is when standard error
    is a terminal, redrawn in place; into a pipe nothing."""
    import pty

    trace = tmp_path / "t.csv"
    trace.write_text("time_ns,pid,op,sector,sectors\n" +
                     "".join(f"{i},1,R,{i * 8 % (1 << 20)},8\n" for i in range(70000)))
    args = [REDCAPCTL, "simulate", "--trace", str(trace), "--format", "csv",
            "--config", "bare"]
    piped = subprocess.run(args, capture_output=True, text=True)
    assert (piped.returncode, piped.stderr) == (0, "")
    master, slave = pty.openpty()
    r = subprocess.run(args, stdout=subprocess.PIPE, stderr=slave, text=True)
    os.close(slave)
    shown = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    os.close(master)
    assert r.returncode == 0 and r.stdout == piped.stdout
    assert shown.decode() == ("\rsimulate: bare: 65536 of 70000 requests (94 %)"
                              f"\rsimulate: bare: 70000 requests, done{' ' * 20}\r\n")


def tables_file(path, read_cells, capacity=1 << 21, cols=19, rows=64, version=2):
    """A tables file as redcapctl model save writes it: @read_cells maps a
    read row to its cells [(col, n, sum_ns)]; the write table is empty."""
    head = f"vdisk-tables {version} rows={rows} cols={cols} window=64"
    if version >= 2:
        head += f" capacity={capacity} id=test-disk"
    lines = [head]
    for d in "rw":
        for row in range(rows):
            cells = read_cells.get(row, []) if d == "r" else []
            lines.append(f"{d} {row}" + "".join(f" {c}:{n}:{s}" for c, n, s in cells))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_model_alone_is_the_disk(tmp_path):
    """--model without --disk: every request takes the model's estimate,
    here 5 ms for any read, so three serial reads take 15 ms."""
    model = tables_file(tmp_path / "m.tables", {0: [(1, 1, 5000000)]})
    trace = tmp_path / "t.csv"
    trace.write_text("time_ns,pid,op,sector,sectors\n0,1,R,0,8\n1,1,R,800000,8\n2,1,R,8,64\n")
    r = simulate("--trace", trace, "--format", "csv", "--model", model, "--config", "bare",
                 "--config", "64x128k:always", "--json")
    assert (r.returncode, r.stderr) == (0, "")
    out = json.loads(r.stdout)
    assert (out["disk"], out["model"], out["capacity_sectors"]) == (None, str(model), 1 << 21)
    bare, cached = out["results"]
    assert bare["app_time_s"] == pytest.approx(0.015, abs=1e-12)
    assert bare["disk_busy_s"] == pytest.approx(0.015, abs=1e-12)
    # two fills of 128 KiB, priced from the 4 KiB row (the only one): 10 ms,
    # plus the copies of the three reads
    assert cached["disk_busy_s"] == pytest.approx(0.010, abs=1e-12)
    assert cached["stats"]["fill_ios"] == 2
    # a write finds no sample to price it
    trace.write_text("time_ns,pid,op,sector,sectors\n0,1,W,0,8\n")
    r = simulate("--trace", trace, "--format", "csv", "--model", model, "--config", "bare")
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr == ("redcapctl: simulate: bare: the model has no write sample to price "
                        "sectors 0+8\n")


def test_a_bad_model_file_is_named_by_line(tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text("time_ns,pid,op,sector,sectors\n0,1,R,0,8\n")
    model = tables_file(tmp_path / "m.tables", {3: [(1, 65, 5)]})
    r = simulate("--trace", trace, "--format", "csv", "--model", model, "--config", "bare")
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr == (f"redcapctl: simulate: --model: {model}:5: cell '1:65:5': n=65 out "
                        "of range 1..64\n")
    model = tables_file(tmp_path / "m.tables", {}, cols=20)
    r = simulate("--trace", trace, "--format", "csv", "--model", model, "--config", "bare")
    assert r.stderr == (f"redcapctl: simulate: --model: {model}: tables of rows=64 cols=20 "
                        "do not fit a disk of 2097152 sectors\n")
    # version 3 has the backward columns too: 19 + 18
    model = tables_file(tmp_path / "m.tables", {}, cols=19, version=3)
    r = simulate("--trace", trace, "--format", "csv", "--model", model, "--config", "bare")
    assert r.stderr == (f"redcapctl: simulate: --model: {model}: tables of rows=64 cols=19 "
                        "do not fit a disk of 2097152 sectors\n")
    model = tables_file(tmp_path / "m.tables", {0: [(1, 1, 5000000)]}, version=1)
    r = simulate("--trace", trace, "--format", "csv", "--model", model, "--config", "bare")
    assert r.returncode == 2
    assert r.stderr.startswith(f"redcapctl: simulate: --model: {model} does not say the "
                               "disk's capacity (a version 1 file): give --capacity\n")
    r = simulate("--trace", trace, "--format", "csv", "--model", model, "--config", "bare",
                 "--capacity", 1 << 21, "--json")
    assert (r.returncode, r.stderr) == (0, "")


def kernel_stats_names():
    """The names redcap's stats message prints, read from the target's source."""
    import re
    src = open(os.path.join(TOP, "dm-redcap", "redcap-target.c")).read()
    body = src[src.index("static unsigned int redcap_emit_policy"):
               src.index("static void redcap_msg_reset_stats")]
    names = set(re.findall(r'(?:"|\\n)([a-z_0-9]+)=%', body))
    args = open(os.path.join(TOP, "dm-redcap", "rc-args.c")).read()
    table = args[args.index("} rc_tunables[RC_TUN_NR] = {"):]
    tunables = re.findall(r'\] = \{ "(\w+)"', table[:table.index("};")])
    assert len(tunables) == 9, tunables
    names |= set(tunables)
    names.discard("caware_rule%d")
    names |= {f"caware_rule{i}" for i in range(1, 7)}
    policy = open(os.path.join(TOP, "dm-redcap", "rc-policy.c")).read()
    table = policy[policy.index("const char *rc_class_name"):]
    classes = re.findall(r'"(\w+)"', table[:table.index("};")])
    assert len(classes) == 6, classes
    names |= {f"caware_{c}_{s}" for c in classes for s in ("us", "n")}
    return names


def test_stats_carry_the_kernel_targets_names(tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text(CSV)
    r = simulate("--trace", trace, "--format", "csv", "--config",
                 "64x128k:adaptive+caware,estimator=spk,window=3,margin=7,decay_ms=20",
                 "--json")
    assert (r.returncode, r.stderr) == (0, "")
    st = json.loads(r.stdout)["results"][0]["stats"]
    # what a simulation has no equivalent of: fills in flight at the end, a model
    # device, the write cache (the simulator refuses write_policy back), and
    # the kernel reclaiming an inactive cache's pages
    write_cache = {"write_cache", "write_cached", "write_through", "write_waits",
                   "read_bypassed_partial",
                   "dirty_segments", "dirty_max", "dirty_sectors", "writes_inflight", "dirty_age_ms",
                   "writeback_ios", "writeback_sectors", "writeback_errors", "writeback_error",
                   "flushes", "dirty_dropped"}
    reclaim = {"segments_bare", "given_back", "regrown"}
    assert set(st) == kernel_stats_names() - {"segments_filling", "model"} - write_cache - reclaim
    assert {k: st[k] for k in ("policy", "estimator", "window", "margin", "decay_ms",
                               "windows")} == {
        "policy": "adaptive+caware", "estimator": "spk", "window": 3, "margin": 7,
        "decay_ms": 20, "windows": 2}


def test_save_model_writes_what_the_model_layer_learnt(tmp_path):
    """--save-model: the model of the first configuration's replay, in model
    save's format, which --model and vdiskctl check-file read back."""
    import random
    rng = random.Random(3)
    trace = tmp_path / "t.csv"
    trace.write_text("time_ns,pid,op,sector,sectors\n" + "".join(
        f"{i},1,R,{rng.randrange((1 << 21) // 8) * 8},8\n" for i in range(200)))
    saved = tmp_path / "m.tables"
    r = simulate("--trace", trace, "--format", "csv", "--config", "bare", "--config",
                 "64x128k:always", "--save-model", saved)
    assert (r.returncode, r.stderr) == (0, "")
    lines = saved.read_text().splitlines()
    # version 5: 19 forward and 18 backward columns; a disk served one at a
    # time, its cache not priced (no --drive-cache)
    assert lines[0] == ("vdisk-tables 5 rows=64 cols=37 window=64 capacity=2097152 "
                        "overlap_us=0 dcache=0,0,0,0 id=sim-hdd7200")
    assert len(lines) == 1 + 2 * 64
    # 200 reads of 4 KiB: row 0 of the read table only, every sample there
    # (a cell keeps its last 64)
    cells = [c.split(":") for c in lines[1].split()[2:]]
    assert sum(min(int(n), 64) for _, n, _ in cells) == sum(int(n) for _, n, _ in cells)
    assert 64 < sum(int(n) for _, n, _ in cells) <= 200
    assert all(line == f"{line[0]} {line.split()[1]}" for line in lines[2:])
    vdiskctl = os.path.join(TOP, "build", "userspace", "vdiskctl")
    r = subprocess.run([vdiskctl, "check-file", saved], capture_output=True, text=True)
    assert (r.returncode, r.stderr) == (0, "")
    assert r.stdout == (f"{saved}: rows=64 cols=37 window=64 capacity=2097152 "
                        f"overlap_us=0 dcache=0,0,0,0 id=sim-hdd7200 "
                        f"cells_filled={len(cells)}\n")
    # the model as the disk: 200 reads, each at its cell's mean
    r = simulate("--trace", trace, "--format", "csv", "--model", saved, "--config", "bare",
                 "--json")
    assert (r.returncode, r.stderr) == (0, "")
    assert json.loads(r.stdout)["results"][0]["disk_requests"] == 200


def test_a_saved_models_drive_cache_is_saved_and_priced_when_loaded(tmp_path):
    """--drive-cache's cache is saved with the model (version 5), and a
    model file's drive cache is priced when it is loaded: the strided
    reader of the test below, on its frozen model, costs with the file's
    cache what it costs with --drive-cache, and without one a short skip
    each."""
    trace = tmp_path / "t.csv"
    trace.write_text("time_ns,pid,op,sector,sectors\n" +
                     "".join(f"{i * 6000000},1,R,{i * 16},8\n" for i in range(10)))
    saved = tmp_path / "saved.tables"
    r = simulate("--trace", trace, "--format", "csv", "--disk", "hdd15k", "--drive-cache",
                 "--config", "bare", "--save-model", saved)
    assert (r.returncode, r.stderr) == (0, "")
    assert " overlap_us=0 dcache=16,512,256,50 id=sim-hdd15k" in saved.read_text().splitlines()[0]
    cells = {0: [(0, 1, 1000000)] + [(c, 1, 5000000) for c in range(1, 19)]}
    times = {}
    for dcache in ("16,512,256,50", "0,0,0,0"):
        model = tables_file(tmp_path / "m.tables", cells, cols=37, version=5)
        head, rest = model.read_text().split("\n", 1)
        model.write_text(head.replace(" id=", f" overlap_us=0 dcache={dcache} id=") + "\n" + rest)
        r = simulate("--trace", trace, "--format", "csv", "--disk", "hdd15k", "--model", model,
                     "--no-train", "--config", "bare", "--json")
        assert (r.returncode, r.stderr) == (0, "")
        times[dcache] = json.loads(r.stdout)["results"][0]["vdisk_time_s"]
    assert times["16,512,256,50"] == pytest.approx(10 * 0.001, abs=1e-12)
    assert times["0,0,0,0"] == pytest.approx(0.001 + 9 * 0.005, abs=1e-12)


def test_no_train_keeps_the_model_and_bare_is_priced_on_it(tmp_path):
    """--no-train: the model the run starts from is the model it ends with;
    a bare run prices every request on it (vdisk_time_s), here 5 ms each,
    against what the emulated drive took."""
    model = tables_file(tmp_path / "m.tables", {0: [(1, 1, 5000000)]})
    trace = tmp_path / "t.csv"
    trace.write_text("time_ns,pid,op,sector,sectors\n" +
                     "".join(f"{i},1,R,{i * 100000},8\n" for i in range(10)))
    kept = tmp_path / "kept.tables"
    r = simulate("--trace", trace, "--format", "csv", "--disk", "hdd7200", "--model", model,
                 "--no-train", "--save-model", kept, "--config", "bare", "--json")
    assert (r.returncode, r.stderr) == (0, "")
    bare = json.loads(r.stdout)["results"][0]
    assert bare["vdisk_time_s"] == pytest.approx(0.050, abs=1e-12)
    assert bare["vdisk_unestimated"] == 0
    assert bare["disk_busy_s"] != pytest.approx(0.050, abs=1e-6)
    assert kept.read_text().splitlines()[1:] == model.read_text().splitlines()[1:]
    # learning, the model takes the drive's ten samples in
    r = simulate("--trace", trace, "--format", "csv", "--disk", "hdd7200", "--model", model,
                 "--save-model", kept, "--config", "bare")
    assert r.returncode == 0
    assert kept.read_text().splitlines()[1:] != model.read_text().splitlines()[1:]


def test_drive_cache_prices_a_strided_reader_from_the_drives_read_ahead(tmp_path):
    """--drive-cache: one reader of 4 KiB every 8 KiB, thinking 1 ms between
    reads, on a frozen model whose sequential column costs 1 ms and the
    others 5 ms.  The drive reads ahead while the reader thinks, so all but
    the first read are priced as sequential (the first: the head starts at
    0); without the drive's cache each is a short skip, 5 ms."""
    model = tables_file(tmp_path / "m.tables", {0: [(0, 1, 1000000)] +
                                                [(c, 1, 5000000) for c in range(1, 19)]})
    trace = tmp_path / "t.csv"
    trace.write_text("time_ns,pid,op,sector,sectors\n" +
                     "".join(f"{i * 6000000},1,R,{i * 16},8\n" for i in range(10)))
    runs = {}
    for opt in ([], ["--drive-cache"]):
        r = simulate("--trace", trace, "--format", "csv", "--disk", "hdd15k", "--model", model,
                     "--no-train", "--config", "bare", "--json", *opt)
        assert (r.returncode, r.stderr) == (0, "")
        runs[bool(opt)] = json.loads(r.stdout)["results"][0]
    assert runs[False]["vdisk_time_s"] == pytest.approx(0.001 + 9 * 0.005, abs=1e-12)
    assert runs[True]["vdisk_time_s"] == pytest.approx(10 * 0.001, abs=1e-12)
    # the drive is the same either way
    assert runs[True]["disk_busy_s"] == runs[False]["disk_busy_s"]


def test_the_bare_disks_order_interleaves_readers_the_cache_served(tmp_path):
    """Five readers of four 4 KiB reads each, 64 MiB apart, on a frozen
    model whose sequential column costs 1 ms and the others 5 ms.  On the
    bare disk they are served in turn, and each read after the first round
    is 5 ms (its reader's last end is not among the last four).  Through a
    cache, each reader's reads after its first hit and come back to back:
    priced as they came (vdisk_time_s), most are sequential; in the bare
    disk's order (vdisk_ordered_time_s), the readers' turns come between.
    Not all of them: the first reads are fills the disk serves one after
    another, so the last readers' second reads are sent later than the
    bare disk would have had them, and a read not yet sent cannot go
    between (vd-lag.h)."""
    model = tables_file(tmp_path / "m.tables", {0: [(0, 1, 1000000)] +
                                                [(c, 1, 5000000) for c in range(1, 19)]})
    trace = tmp_path / "t.csv"
    trace.write_text("time_ns,pid,op,sector,sectors\n" +
                     "".join(f"0,{p},R,{p * 131072 + 8 * i},8\n"
                             for p in range(5) for i in range(4)))
    r = simulate("--trace", trace, "--format", "csv", "--disk", "hdd7200", "--model", model,
                 "--no-train", "--config", "bare", "--config", "64x128k:always", "--json")
    assert (r.returncode, r.stderr) == (0, "")
    bare, cache = json.loads(r.stdout)["results"]
    round_robin = 0.001 + 4 * 0.005 + 15 * 0.005
    assert bare["vdisk_time_s"] == pytest.approx(round_robin, abs=1e-12)
    assert bare["vdisk_ordered_time_s"] == pytest.approx(round_robin, abs=1e-12)
    assert cache["vdisk_time_s"] + 0.010 <= cache["vdisk_ordered_time_s"] <= round_robin
    assert cache["vdisk_ordered_forced"] == 0


def test_warm_replays_the_mount_first_and_counts_only_the_trace(tmp_path):
    """--warm: its requests go through the same cache first (segment 0
    filled there is a hit for the trace), then the drive is made cold and
    the counters zeroed, as the bench does after its mount."""
    warm, trace = tmp_path / "mount.csv", tmp_path / "t.csv"
    warm.write_text("time_ns,pid,op,sector,sectors\n0,3,R,0,8\n1,3,R,512,8\n")
    trace.write_text(CSV)
    r = simulate("--trace", trace, "--warm", warm, "--format", "csv", "--config", "bare",
                 "--config", "64x128k:always,prefetch=0", "--json")
    assert (r.returncode, r.stderr) == (0, "")
    out = json.loads(r.stdout)
    assert (out["requests"], out["warm"], out["warm_requests"]) == (6, str(warm), 2)
    bare, cached = out["results"]
    assert bare["disk_requests"] == 6
    st = cached["stats"]
    # as test_exact_counters_through_the_cache_core, but segment 0 was filled
    assert {k: st[k] for k in ("reads", "read_hits", "read_misses", "fill_ios",
                               "segments_valid")} == {
        "reads": 6, "read_hits": 4, "read_misses": 2, "fill_ios": 2, "segments_valid": 3}
    assert cached["disk_requests"] == 3
    # no --warm: no warm-up
    r = simulate("--trace", trace, "--format", "csv", "--config", "bare", "--json")
    assert (json.loads(r.stdout)["warm"], json.loads(r.stdout)["warm_requests"]) == (None, 0)
    # a bad warm-up line is named, with its file
    warm.write_text("time_ns,pid,op,sector,sectors\n0,3,Q,0,8\n")
    r = simulate("--trace", trace, "--warm", warm, "--format", "csv", "--config", "bare")
    assert r.returncode == 1
    assert r.stderr == (f'redcapctl: simulate: --warm: {warm}: line 2: op: "Q" is not R, W '
                        'or D\n')


def test_the_budget_sends_the_misses_it_cannot_pay_for_to_the_disk(tmp_path):
    """A whole fill first (with the budget's cap at 0 its cost beyond the
    read leaves the balance negative), then one 4 KiB read at the start of
    each of 8 files of 16 KiB, 1 MiB apart: each one a miss the bar refuses,
    read from the disk, nothing of it cached.  The disk is a model, a read
    of (row + 1) x 4 KiB costing 12.5 ms and 80 us a row anywhere: a 4 KiB
    read 12.58 ms, a 128 KiB fill 2.48 ms more."""
    trace = tmp_path / "refused.csv"
    trace.write_text("time_ns,pid,op,sector,sectors\n0,1,R,0,8\n" +
                     "".join(f"0,1,R,{2048 * (k + 1)},8\n" for k in range(8)))
    model = tables_file(tmp_path / "m.tables", {
        row: [(col, 1, 12500000 + 80000 * (row + 1)) for col in range(19)]
        for row in range(64)})
    r = simulate("--trace", trace, "--format", "csv", "--model", model, "--config",
                 "64x128k:adaptive,estimator=vdisk,budget_cap_ms=0,prefetch=0", "--json")
    assert (r.returncode, r.stderr) == (0, "")
    st = json.loads(r.stdout)["results"][0]["stats"]
    assert (st["read_misses"], st["read_bypassed_budget"], st["read_bypassed"],
            st["fill_sectors"]) == (1, 8, 8, 256)


def test_a_models_overlap_prices_side_by_side_reads(tmp_path):
    """A model's overlap (tables version 4) reaches the simulator's virtual
    disks: 16 processes of random 4 KiB reads on the emulated nbd, priced
    by the same frozen tables with overlap_us=1000 and with 0, and
    --save-model writes the overlap vdiskctl train would measure of the
    emulated drive.  (Before, the simulator's copy of the model dropped
    the overlap, and both were priced alike.)"""
    import random
    rng = random.Random(5)
    trace = tmp_path / "t.csv"
    trace.write_text("time_ns,pid,op,sector,sectors\n" + "".join(
        f"{i},{1 + i % 16},R,{rng.randrange((1 << 21) // 8) * 8},8\n" for i in range(1600)))
    saved = tmp_path / "m.tables"
    r = simulate("--trace", trace, "--format", "csv", "--disk", "nbd", "--config", "bare",
                 "--save-model", saved)
    assert (r.returncode, r.stderr) == (0, "")
    head, rest = saved.read_text().split("\n", 1)
    overlap = int(re.search(r" overlap_us=(\d+) ", head).group(1))
    assert 990 <= overlap <= 1000, head
    prices = {}
    for us in (1000, 0):
        model = tmp_path / f"m{us}.tables"
        model.write_text(re.sub(r"overlap_us=\d+", f"overlap_us={us}", head) + "\n" + rest)
        r = simulate("--trace", trace, "--format", "csv", "--disk", "nbd", "--model", model,
                     "--no-train", "--config", "64x128k:off", "--json")
        assert (r.returncode, r.stderr) == (0, "")
        prices[us] = json.loads(r.stdout)["results"][0]["stats"]["est_disk_time_us"]
    # side by side a read adds its serial part rather than its whole time
    # (the tables, learnt from the same side-by-side reads, hold a mix of
    # both; 56,508 against 105,595 us when written)
    assert prices[1000] * 3 < prices[0] * 2, prices


def test_issue_times_are_the_first_configurations_replay(tmp_path):
    """--issue-times writes the trace as the first configuration replayed it: a
    closed loop's second read goes when the first completed, to the nanosecond."""
    trace, alone, out = tmp_path / "t.csv", tmp_path / "a.csv", tmp_path / "times.csv"
    trace.write_text("time_ns,pid,op,sector,sectors\n"
                     "0,7,R,4096,64\n"
                     "0,7,W,900000,8\n"
                     "0,9,R,50000,8\n")
    alone.write_text("time_ns,pid,op,sector,sectors\n0,7,R,4096,64\n")
    r = simulate("--trace", alone, "--format", "csv", "--config", "bare", "--json")
    first_ns = round(json.loads(r.stdout)["results"][0]["app_time_s"] * 1e9)
    r = simulate("--trace", trace, "--format", "csv", "--config", "bare",
                 "--config", "16x32k:always", "--issue-times", out)
    assert (r.returncode, r.stderr) == (0, "")
    assert out.read_text().splitlines() == [
        "time_ns,pid,op,sector,sectors", "0,7,R,4096,64", f"{first_ns},7,W,900000,8",
        "0,9,R,50000,8"]
    r = simulate("--trace", trace, "--format", "csv", "--config", "bare",
                 "--issue-times", tmp_path / "no" / "times.csv")
    assert r.returncode == 1
    assert r.stderr == (f"redcapctl: simulate: --issue-times: {tmp_path}/no/times.csv: "
                        "No such file or directory\n")


def test_open_loop_sends_each_request_at_its_time(tmp_path):
    """A process's second read waits for its first; with --open-loop it goes at
    its trace time (the disk queues it behind the first: the same busy time)."""
    trace, out = tmp_path / "t.csv", tmp_path / "times.csv"
    trace.write_text("time_ns,pid,op,sector,sectors\n0,7,R,4096,64\n1000,7,R,80000,8\n")
    closed = simulate("--trace", trace, "--format", "csv", "--config", "bare",
                      "--issue-times", out, "--json")
    assert int(out.read_text().splitlines()[2].split(",")[0]) > 1000
    opened = simulate("--trace", trace, "--format", "csv", "--config", "bare",
                      "--issue-times", out, "--open-loop", "--json")
    assert out.read_text().splitlines()[1:] == ["0,7,R,4096,64", "1000,7,R,80000,8"]
    c, o = (json.loads(x.stdout)["results"][0] for x in (closed, opened))
    assert o["disk_busy_s"] == c["disk_busy_s"]
