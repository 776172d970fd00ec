# SPDX-License-Identifier: GPL-2.0
"""vdiskctl against the real vdisk target: training fills the tables, save
and load give back exactly the same tables, --write training keeps the data."""
import hashlib
import json
import os
import re
import subprocess

import pytest

from dmtest import Dm, aligned, dev_sectors, write_stamped

TOP = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
VDISKCTL = os.path.join(TOP, "build", "userspace", "vdiskctl")
NBLOCKS = (64 << 20) // 4096        # the whole 64 MiB loop device

PROGRESS = re.compile(r"^train: \d+/\d+ s, \d+ requests, cells_filled=\d+$")
SUMMARY = re.compile(r"^train: \d+ s, (\d+) requests \((\d+) reads, (\d+) writes\), \d+ MiB, "
                     r"seed=(\d+), cells_filled=(\d+)\n$")


@pytest.fixture(scope="module", autouse=True)
def built():
    subprocess.run(["make", "-s", "-C", os.path.join(TOP, "userspace")], check=True)


@pytest.fixture
def vdisk(loop64, dmname):
    """A measure-mode vdisk on the loop device, learning, tables empty."""
    with Dm(dmname(), f"0 {dev_sectors(loop64)} vdisk {loop64}") as vd:
        vd.message("reset")
        yield vd


def vdiskctl(*args, check=True):
    r = subprocess.run([VDISKCTL, *args], capture_output=True, text=True, timeout=300)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def train(vd, *args):
    return vdiskctl("train", vd.name, *args)


def vd_table(vd, rw, rows):
    """(row, column, samples, ns) of every filled cell of a table."""
    out = vd.query("table", rw, "0", str(rows))
    return [(int(line.split()[0]), *map(int, cell.split(":"))) for line in out.splitlines()
            for cell in line.split()[1:]]


def cells_in_file(path):
    out = vdiskctl("check-file", str(path)).stdout
    return int(re.search(r"cells_filled=(\d+)$", out).group(1))


def empty_tables(rows, cols):
    return "".join([f"vdisk-tables 1 rows={rows} cols={cols} window=64\n"] +
                   [f"{d} {r}\n" for d in "rw" for r in range(rows)])


def checksum(dev):
    h = hashlib.sha256()
    buf = aligned(1 << 20)
    fd = os.open(dev, os.O_RDONLY | os.O_DIRECT)
    try:
        while True:
            n = os.readv(fd, [buf])
            if not n:
                break
            h.update(buf[:n])
    finally:
        os.close(fd)
    return h.hexdigest()


def test_train_reads_and_fills_the_tables(vdisk):
    r = train(vdisk, "--time", "5", "--seed", "1")
    m = SUMMARY.match(r.stdout)
    assert m, r.stdout
    requests, reads, writes, seed, _ = map(int, m.groups())
    assert (reads, writes, seed) == (requests, 0, 1)
    st = vdisk.stats()
    assert st["read_samples"] >= requests > 0
    assert st["write_samples"] == 0
    assert st["cells_filled"] > 0
    # half the requests go on where the last one ended: the sequential
    # column (0) is measured, and so are the seeks
    table = vd_table(vdisk, "r", st["rows"])
    assert {c for _, c, _, _ in table} > {0}
    # every size up to --max-kib (128 KiB: rows 0..31) was read sequentially
    assert {r for r, c, _, _ in table if c == 0} == set(range(32))


def test_train_shows_progress_once_a_second(vdisk):
    r = train(vdisk, "--time", "3")
    lines = r.stderr.splitlines()
    assert lines, "no progress line"
    assert all(PROGRESS.match(line) for line in lines), r.stderr


def test_train_switches_learning_back_off(vdisk):
    vdisk.message("train", "off")
    train(vdisk, "--time", "2")
    st = vdisk.stats()
    assert st["train"] == "off"
    assert st["cells_filled"] > 0


def test_save_reset_load_gives_back_the_same_tables(vdisk, tmp_path):
    train(vdisk, "--time", "5", "--seed", "1")
    vdisk.message("train", "off")
    st = vdisk.stats()
    first, second = tmp_path / "first.tables", tmp_path / "second.tables"

    vdiskctl("save", vdisk.name, str(first))
    assert first.read_text().splitlines()[0] == \
        f"vdisk-tables 1 rows={st['rows']} cols={st['cols']} window=64"
    assert cells_in_file(first) == st["cells_filled"] > 0

    vdisk.message("reset")
    assert vdisk.stats()["cells_filled"] == 0

    vdiskctl("load", vdisk.name, str(first))
    assert vdisk.stats()["cells_filled"] == st["cells_filled"]
    vdiskctl("save", vdisk.name, str(second))
    assert second.read_bytes() == first.read_bytes()
    assert not os.path.exists(f"{second}.tmp")


def test_load_empties_the_rows_the_file_has_empty(vdisk, tmp_path):
    st = vdisk.stats()
    empty = tmp_path / "empty.tables"
    empty.write_text(empty_tables(st["rows"], st["cols"]))
    train(vdisk, "--time", "2")
    assert vdisk.stats()["cells_filled"] > 0
    vdisk.message("train", "off")

    vdiskctl("load", vdisk.name, str(empty))
    assert vdisk.stats()["cells_filled"] == 0
    again = tmp_path / "again.tables"
    vdiskctl("save", vdisk.name, str(again))
    assert again.read_text() == empty.read_text()


def test_load_refuses_a_file_of_another_geometry(vdisk, tmp_path):
    st = vdisk.stats()
    rows, cols = st["rows"], st["cols"]
    path = tmp_path / "bigger.tables"
    path.write_text(empty_tables(rows + 1, cols))
    train(vdisk, "--time", "1")
    vdisk.message("train", "off")
    filled = vdisk.stats()["cells_filled"]

    r = vdiskctl("load", vdisk.name, str(path), check=False)
    assert r.returncode == 1
    assert r.stderr == (f"vdiskctl: load: {path}: table geometry rows={rows + 1} cols={cols} "
                        f"does not match device rows={rows} cols={cols}\n")
    assert vdisk.stats()["cells_filled"] == filled


def test_train_with_write_keeps_the_data(vdisk):
    write_stamped(vdisk.path, 0, NBLOCKS, seed=3)
    before = checksum(vdisk.path)
    vdisk.message("reset_stats")

    r = train(vdisk, "--time", "5", "--seed", "2", "--write")
    requests, reads, writes, _, _ = map(int, SUMMARY.match(r.stdout).groups())
    assert reads > 0 and writes > 0 and reads + writes == requests
    assert vdisk.stats()["write_samples"] > 0
    assert checksum(vdisk.path) == before


def test_stats_json_has_numbers_as_numbers(vdisk):
    got = json.loads(vdiskctl("stats", vdisk.name, "--json").stdout)
    assert got["mode"] == "measure"
    assert got["train"] == "on"
    assert got["window"] == 64
    assert isinstance(got["rows"], int) and isinstance(got["cells_filled"], int)
    assert set(got) == set(vdisk.stats())


def test_stats_json_is_pretty_printed_in_the_order_of_the_stats(vdisk):
    out = vdiskctl("stats", vdisk.name, "--json").stdout
    got = json.loads(out)
    assert out == json.dumps(got, indent=2) + "\n"
    st = vdisk.stats()
    assert list(got) == list(st)
    assert [type(v) for v in got.values()] == [type(v) for v in st.values()]


def test_stats_takes_the_device_path(vdisk):
    by_path = vdiskctl("stats", vdisk.path).stdout
    assert "mode=measure\n" in by_path
    keys = [line.split("=")[0] for line in by_path.splitlines()]
    assert keys == list(vdisk.stats())


def test_stats_of_a_missing_device(vdisk):
    r = vdiskctl("stats", "nosuchdev", check=False)
    assert r.returncode == 1
    assert r.stderr == "vdiskctl: nosuchdev: message 'stats': no such device-mapper device\n"

