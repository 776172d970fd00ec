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


def test_commands_give_every_process_its_own_data():
    assert len(suite.commands("8k-sr", 4, "direct")) == 4
    c = suite.commands("8k-sr", 2, "direct")
    assert c[1] == f"{suite.RDPAT} -d /tmp/redcap-bench/f1 stride 4096 8192"
    assert c[0] == f"{suite.RDPAT} -d /tmp/redcap-bench/f0 stride 4096 8192"
    # 512k-sr: four series at 0, 4, 8, 12 KiB, the later ones after the earlier
    c = suite.commands("512k-sr", 1, "buffered")[0]
    assert c == " && ".join(f"{suite.RDPAT} /tmp/redcap-bench/f0 stride 4096 524288 {k}"
                            for k in (0, 4096, 8192, 12288))
    assert suite.commands("tac", 1, "direct") == [
        f"{suite.RDPAT} -d /tmp/redcap-bench/f0 back 65536"]
    # mix: every part with its own processes, each on a file of its own
    mix = suite.commands("mix", 2, "buffered")
    assert len(mix) == 2 * len(suite.PARTS)
    data = [c for c in mix if suite.RDPAT in c]
    names = [c[c.index("/tmp/redcap-bench/f"):].split()[0] for c in data]
    assert len(set(names)) == len(names) == 2 * (len(suite.PARTS) - 1)
    # direct has no lkr (find | cat is buffered by nature)
    assert all("find" not in c for c in suite.commands("row", 1, "direct"))
    assert f"{suite.BUSYBOX} find /tmp/redcap-bench/l0 -type f -exec {suite.BUSYBOX} cat {{}} " \
        "\\; >/dev/null && " in suite.commands("row", 1, "buffered")[0]


def test_nfiles_covers_mix():
    class A:
        runs = [("ior-r", 16, "buffered"), ("mix", 1, "buffered"), ("mix", 4, "buffered")]
    assert suite.nfiles(A) == 4 * (len(suite.PARTS) - 1)
    A.runs = A.runs[:2]
    assert suite.nfiles(A) == 16


def _rec(w, p, c, rep, t, io="buffered"):
    return {"workload": w, "procs": p, "config": c, "io": io, "rep": rep, "app_time_s": t,
            "disk_read_bytes": 0, "kernel": "6.1.0-x", "disk_profile": "hdd7200",
            "set": "tiny", "icount": True, "scale": {}}


def test_report_tables_and_plot(tmp_path):
    recs = [_rec("8k-sr", 1, "bare", r, t) for r, t in enumerate((10.0, 12.0, 11.0))]
    recs += [_rec("8k-sr", 1, "redcap-64x128k-always", r, t) for r, t in
             enumerate((5.5, 6.6, 7.7))]
    recs += [_rec("8k-sr", 1, "warm", 0, 1.0), _rec("8k-sr", 1, "bound", 0, 3.0)]
    ad = _rec("8k-sr", 1, "redcap-64x128k-adaptive-spk", 0, 11.0)
    ad["redcap_stats"] = {"state": "inactive", "switches": 3}
    recs.append(ad)
    path = tmp_path / "r.json"
    path.write_text(json.dumps(recs))
    subprocess.run(["/usr/bin/python3", os.path.join(TOP, "tests", "bench", "report.py"),
                    str(path), "--command", "make bench"], check=True)
    md = (tmp_path / "r.md").read_text()
    # median 11 s; 5.5/6.6/7.7 are -50/-40/-30 %
    assert "| 8k-sr | 1 | 11.00 | -40 (-50…-30) | -91 | +0 |" in md
    # floor = max(warm 1, bound 3) = 3; (11 - 6.6) / (11 - 3) = 55 %
    assert "| 8k-sr | 1 | 11.00 | 1.00 | 3.00 | 3.00 | 55 | 0 |" in md
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
