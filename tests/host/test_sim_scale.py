# SPDX-License-Identifier: GPL-2.0
"""make bench-sim's trace maker (tests/bench/sim-scale.py): the page cache's
read-ahead as Linux 6.1 turns each workload's reads into block requests,
LKR's find order over a layout, and a --quick run end to end."""
import collections
import importlib.util
import json
import os
import subprocess

import pytest

TOP = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(TOP, "tests", "bench", "sim-scale.py")
_spec = importlib.util.spec_from_file_location("sim_scale", SCRIPT)
ss = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ss)

MIB8 = 8 << 20


@pytest.fixture
def small(monkeypatch):
    monkeypatch.setattr(ss, "FILE_BYTES", MIB8)


def sizes(reqs):
    return collections.Counter(n for _, n in reqs)


def test_sequential_reads_come_in_128k_windows(small):
    reqs = ss.pattern_requests("ior-r", 0)
    # 64 KiB reads: the first window is already the whole 128 KiB
    assert sizes(reqs) == {256: MIB8 // (128 << 10)}
    assert all(b[0] == a[0] + a[1] for a, b in zip(reqs, reqs[1:]))
    assert reqs[0][0] == ss.FILE_GAP // 512


def test_backward_reads_get_no_read_ahead(small):
    reqs = ss.pattern_requests("tac", 0)
    assert sizes(reqs) == {128: MIB8 // (64 << 10)}
    assert all(b[0] == a[0] - 128 for a, b in zip(reqs, reqs[1:]))


def test_4k_read_4k_skip_becomes_a_stream_and_8k_skip_does_not(small):
    # 4 KiB read, 4 KiB skipped: the read after the first window starts
    # where it ended, and the windows grow 16 KiB, 32, 64, then 128 KiB
    reqs = ss.pattern_requests("4k-sr", 0)
    assert [n for _, n in reqs[:5]] == [32, 64, 128, 256, 256]
    assert sum(n for _, n in reqs) * 512 == MIB8
    # 8 KiB skipped: after the first window, one 4 KiB request a read
    reqs = ss.pattern_requests("8k-sr", 0)
    assert reqs[0][1] == 32
    assert sizes(reqs[1:]) == {8: len(reqs) - 1}
    reads = -(-MIB8 // 12288)
    # the first window (16 KiB) holds the second read (at 12 KiB) too
    assert len(reqs) == 1 + reads - 2


def test_every_process_has_its_own_file(small):
    a, b = ss.pattern_requests("ior-r", 0), ss.pattern_requests("ior-r", 1)
    assert b[0][0] - a[0][0] == (MIB8 + ss.FILE_GAP) // 512


LAYOUT = """kind,ino,size,blocks,path
image,0,67108864,0+0,
inode,2,0,10+1,
dir,2,4096,100+1,
inode,11,0,10+1,big
dir,11,8192,101+2,big
inode,12,0,10+1,big/b
file,12,100,200+1,big/b
inode,13,0,10+1,big/a
file,13,100,201+1,big/a
inode,14,0,11+1,small
dir,14,4096,103+1,small
inode,15,0,11+1,small/x
file,15,5000,300+2,small/x
inode,16,0,11+1,small/y
file,16,5000,302+2,small/y
inode,17,0,11+1,small/z
file,17,5000,304+2,small/z
"""


def test_lkr_reads_one_block_directories_in_hash_order(tmp_path):
    path = tmp_path / "layout.csv"
    path.write_text(LAYOUT)
    image, events = ss.load_layout(str(path))
    assert image == 64 << 20
    dirs = [runs[0][0] for kind, _, runs in events if kind == "dir"]
    files = [runs[0][0] for kind, _, runs in events if kind == "file"]
    # pre-order: each directory's files follow it
    assert dirs[0] == 100 and sorted(dirs[1:]) == [101, 103]
    first = [200, 201] if dirs[1] == 101 else [300, 302, 304]
    assert sorted(files[:len(first)]) == first
    # big/ is of two blocks (linear): block order, b (200) before a (201)
    assert [f for f in files if f < 300] == [200, 201]
    # small/ is of one block: the order of its names' hashes
    want = sorted(["x", "y", "z"], key=lambda n: __import__("hashlib").md5(
        b"redcap" + n.encode()).digest())
    assert [f for f in files if f >= 300] == [{"x": 300, "y": 302, "z": 304}[n] for n in want]
    # the same order every time
    assert ss.load_layout(str(path))[1] == events


def test_lkr_requests_read_inode_blocks_ahead_and_each_block_once(tmp_path):
    path = tmp_path / "layout.csv"
    path.write_text(LAYOUT)
    layout = ss.load_layout(str(path))
    reqs = ss.lkr_requests(layout, 0)
    base = ss.FILE_GAP // 512
    # inode blocks 10 and 11: one 128 KiB read of blocks 0..31
    assert reqs.count((base, 32 * 8)) == 1
    blocks = [(s - base) // 8 for s, _ in reqs]
    assert len(blocks) == len(set(blocks))
    assert sum(n for _, n in reqs) == 8 * (32 + 4 + 2 + 6)
    # the second copy is the image and a gap further on
    assert ss.lkr_requests(layout, 1)[0][0] - reqs[0][0] == (
        (64 << 20) + ss.FILE_GAP) // 512


def test_quick_run_end_to_end(tmp_path):
    path = tmp_path / "layout.csv"
    path.write_text(LAYOUT)
    subprocess.run(["make", "-s", "-C", os.path.join(TOP, "userspace")], check=True)
    env = dict(os.environ, SIM_SCALE_FILE_MIB="8")
    r = subprocess.run(["/usr/bin/python3", SCRIPT, "--out", str(tmp_path / "out"), "--quick",
                        "--lkr-layout", str(path), "--date", "D"], capture_output=True,
                       text=True, env=env)
    assert r.returncode == 0, r.stderr
    recs = json.loads((tmp_path / "out" / "D-bench-sim.json").read_text())
    cases = {(x["workload"], x["procs"], x["disk"]) for x in recs}
    assert cases == {(w, p, d) for w in ss.WORKLOADS for p in (1, 4) for d in ss.DISKS}
    assert len(recs) == len(cases) * len(ss.CONFIGS)
    for x in recs:
        assert x["app_time_s"] > 0 and x["disk_busy_s"] > 0
        assert (x["config"] == "bare") == ("state" not in x)
    md = (tmp_path / "out" / "D-bench-sim.md").read_text()
    assert "| lkr | 1 |" in md and "## hdd15k" in md
    assert sorted(os.listdir(tmp_path / "out")) == sorted(
        ["D-bench-sim.json", "D-bench-sim.md"] +
        [f"D-bench-sim-{d}-{k}.png" for d in ss.DISKS for k in ("procs", "cache")])
