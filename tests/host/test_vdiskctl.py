# SPDX-License-Identifier: GPL-2.0
"""vdiskctl without a device: its command line, its exit statuses, and the
checks of a saved tables file (check-file, and load before it touches the
device).  The device side is in tests/guest/test_vdiskctl.py."""
import os
import subprocess

import pytest

TOP = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
VDISKCTL = os.path.join(TOP, "build", "userspace", "vdiskctl")

ID = "wwn:0x5000c500a1b2c3d4-part2"
HEADER = f"vdisk-tables 2 rows=2 cols=3 window=64 capacity=131072 id={ID}"
HEADER_V1 = "vdisk-tables 1 rows=2 cols=3 window=64"
GOOD = [HEADER,
        "r 0 0:1:5000 2:64:640000",
        "r 1",
        "w 0",
        "w 1 1:3:90000"]
GOOD_V1 = [HEADER_V1] + GOOD[1:]
EXPECTED_HEADER = ("bad header (expected 'vdisk-tables 5 rows=<R> cols=<C> window=<W> "
                   "capacity=<sectors> overlap_us=<us> dcache=<S>,<G>,<R>,<M> id=<disk>')")
HEADER_V4 = f"vdisk-tables 4 rows=2 cols=3 window=64 capacity=131072 overlap_us=950 id={ID}"
HEADER_V5 = (f"vdisk-tables 5 rows=2 cols=3 window=64 capacity=131072 overlap_us=950 "
             f"dcache=16,1024,512,150 id={ID}")
EXPECTED_HEADER_V1 = "bad header (expected 'vdisk-tables 1 rows=<R> cols=<C> window=<W>')"


@pytest.fixture(scope="module", autouse=True)
def built():
    subprocess.run(["make", "-s", "-C", os.path.join(TOP, "userspace")], check=True)


def vdiskctl(*args):
    return subprocess.run([VDISKCTL, *args], capture_output=True, text=True)


def tables_file(tmp_path, lines, end="\n"):
    path = tmp_path / "t.tables"
    path.write_text("\n".join(lines) + end)
    return str(path)


# --- command line ----------------------------------------------------------

def test_help_prints_usage_and_exits_0():
    r = vdiskctl("--help")
    assert r.returncode == 0
    assert r.stdout.startswith("usage: vdiskctl stats <dev> [--json]\n")
    assert "check-file <file>" in r.stdout
    assert r.stderr == ""


def test_short_help_is_the_same():
    assert vdiskctl("-h").stdout == vdiskctl("--help").stdout


def test_help_of_a_command_exits_0():
    r = vdiskctl("train", "--help")
    assert r.returncode == 0
    assert "--write" in r.stdout


def test_no_arguments_is_a_usage_error():
    r = vdiskctl()
    assert r.returncode == 2
    assert r.stderr.startswith("usage: vdiskctl ")
    assert r.stdout == ""


def test_unknown_command_is_a_usage_error():
    r = vdiskctl("frobnicate", "vd0")
    assert r.returncode == 2
    assert r.stderr.splitlines()[0] == "vdiskctl: unknown command 'frobnicate'"
    assert r.stderr.splitlines()[1].startswith("usage: vdiskctl ")


@pytest.mark.parametrize("args,message", [
    (["stats"], "vdiskctl: stats: missing operand"),
    (["stats", "a", "b"], "vdiskctl: stats: unexpected operand 'b'"),
    (["stats", "--bogus", "a"], "vdiskctl: stats: unknown option '--bogus'"),
    (["save", "a"], "vdiskctl: save: missing operand"),
    (["load", "a"], "vdiskctl: load: missing operand"),
    (["train", "a", "--time"], "vdiskctl: train: option '--time' needs a value"),
    (["train", "a", "--time", "0"],
     "vdiskctl: train: --time: '0' is not a number of seconds (1 or more)"),
    (["train", "a", "--time", "5s"],
     "vdiskctl: train: --time: '5s' is not a number of seconds (1 or more)"),
    (["train", "a", "--max-kib", "6"],
     "vdiskctl: train: --max-kib: '6' is not a multiple of 4 from 4 to 65536"),
    (["train", "a", "--seed", "-1"], "vdiskctl: train: --seed: '-1' is not a number"),
    (["check-file"], "vdiskctl: check-file: missing operand"),
])
def test_bad_arguments_are_usage_errors(args, message):
    r = vdiskctl(*args)
    assert r.returncode == 2
    assert r.stderr.splitlines()[0] == message


# --- errors without a device ----------------------------------------------

def test_load_of_a_missing_file_fails_before_the_device():
    r = vdiskctl("load", "nosuchdev", "/nonexistent")
    assert r.returncode == 1
    assert r.stderr == "vdiskctl: load: /nonexistent: No such file or directory\n"


def test_load_of_a_bad_header_fails_before_the_device(tmp_path):
    path = tables_file(tmp_path, ["vdisk-tables one rows=2 cols=3 window=64"] + GOOD[1:])
    r = vdiskctl("load", "nosuchdev", path)
    assert r.returncode == 1
    assert r.stderr == f"vdiskctl: load: {path}:1: {EXPECTED_HEADER}\n"


def test_load_of_another_version_fails_before_the_device(tmp_path):
    path = tables_file(tmp_path, [HEADER.replace(" 2 ", " 6 ")] + GOOD[1:])
    r = vdiskctl("load", "nosuchdev", path)
    assert r.returncode == 1
    assert r.stderr == f"vdiskctl: load: {path}:1: unsupported version 6 (expected 1 to 5)\n"


def test_load_of_a_bad_id_fails_before_the_device(tmp_path):
    path = tables_file(tmp_path, [HEADER + " x"] + GOOD[1:])
    r = vdiskctl("load", "nosuchdev", path)
    assert r.returncode == 1
    assert r.stderr == (f"vdiskctl: load: {path}:1: id '{ID} x' is not one word of "
                        "printable ASCII\n")


@pytest.mark.parametrize("lines", [GOOD, GOOD_V1, [HEADER_V5] + GOOD[1:]],
                         ids=["v2", "v1", "v5"])
def test_load_of_a_good_file_reaches_the_device(tmp_path, lines):
    r = vdiskctl("load", "nosuchdev", tables_file(tmp_path, lines))
    assert r.returncode == 1
    assert r.stderr.startswith("vdiskctl: nosuchdev: message 'stats': ")


def test_save_to_a_missing_device_fails_and_leaves_no_file(tmp_path):
    out = tmp_path / "out.tables"
    r = vdiskctl("save", "nosuchdev", str(out))
    assert r.returncode == 1
    # The host has no device-mapper; a host that has one has no such device.
    assert r.stderr in ("vdiskctl: nosuchdev: message 'stats': device-mapper is not "
                        "available (no /dev/mapper/control)\n",
                        "vdiskctl: nosuchdev: message 'stats': no such device-mapper device\n")
    assert os.listdir(tmp_path) == []


def test_stats_of_a_path_that_is_not_a_block_device():
    r = vdiskctl("stats", "/dev/null")
    assert r.returncode == 1
    assert r.stderr == "vdiskctl: /dev/null: not a block device\n"


def test_train_of_a_missing_device_fails():
    r = vdiskctl("train", "nosuchdev", "--time", "1")
    assert r.returncode == 1
    assert r.stderr.startswith("vdiskctl: nosuchdev: message 'stats': ")


# --- check-file -------------------------------------------------------------

@pytest.mark.parametrize("version", ["2", "3"])
def test_check_file_prints_the_disk_and_counts_the_cells(tmp_path, version):
    path = tables_file(tmp_path, replace(GOOD, 0, HEADER.replace(" 2 ", f" {version} ")))
    r = vdiskctl("check-file", path)
    assert (r.returncode, r.stderr) == (0, "")
    assert r.stdout == (f"{path}: rows=2 cols=3 window=64 capacity=131072 id={ID} "
                        "cells_filled=3\n")


@pytest.mark.parametrize("header,shown", [(HEADER_V4, ""), (HEADER_V5, "dcache=16,1024,512,150 ")],
                         ids=["v4-overlap", "v5-drive-cache"])
def test_check_file_prints_the_overlap_and_the_drive_cache(tmp_path, header, shown):
    path = tables_file(tmp_path, replace(GOOD, 0, header))
    r = vdiskctl("check-file", path)
    assert (r.returncode, r.stderr) == (0, "")
    assert r.stdout == (f"{path}: rows=2 cols=3 window=64 capacity=131072 overlap_us=950 "
                        f"{shown}id={ID} cells_filled=3\n")


def test_check_file_accepts_a_version_1_file_without_a_disk(tmp_path):
    path = tables_file(tmp_path, GOOD_V1)
    r = vdiskctl("check-file", path)
    assert (r.returncode, r.stderr) == (0, "")
    assert r.stdout == f"{path}: rows=2 cols=3 window=64 cells_filled=3\n"


@pytest.mark.parametrize("identity", [
    "loop:/var/lib/disk%20images/a.img",     # a saved escape is taken as it is
    "dev:8:16",
    "serial:WDC_WD10EZEX-00BN5A0_WD-WCC3F1234567",
    "dm-uuid:LVM-abc=def",                  # '=' in the id: the id is the rest of the line
    "!" * 300,
])
def test_check_file_takes_any_one_word_id(tmp_path, identity):
    path = tables_file(tmp_path, replace(GOOD, 0, HEADER.replace(ID, identity)))
    r = vdiskctl("check-file", path)
    assert (r.returncode, r.stderr) == (0, "")
    assert f" capacity=131072 id={identity} cells_filled=3\n" in r.stdout


def test_check_file_takes_the_largest_capacity(tmp_path):
    big = 2 ** 64 - 1
    path = tables_file(tmp_path, replace(GOOD, 0, HEADER.replace("131072", str(big))))
    r = vdiskctl("check-file", path)
    assert r.returncode == 0, r.stderr
    assert f" capacity={big} " in r.stdout


def test_check_file_accepts_a_missing_last_newline(tmp_path):
    assert vdiskctl("check-file", tables_file(tmp_path, GOOD, end="")).returncode == 0


def replace(lines, i, line):
    return lines[:i] + [line] + lines[i + 1:]


BAD_FILES = {
    "empty": ([], "1: empty file"),
    "magic": (replace(GOOD, 0, "vdisk-table 2 rows=2 cols=3 window=64 capacity=8 id=x"),
              "1: " + EXPECTED_HEADER),
    "no-version": (replace(GOOD, 0, "vdisk-tables rows=2 cols=3 window=64"),
                   "1: " + EXPECTED_HEADER),
    "no-window": (replace(GOOD, 0, "vdisk-tables 2 rows=2 cols=3 capacity=8 id=x"),
                  "1: " + EXPECTED_HEADER),
    "no-capacity": (replace(GOOD, 0, "vdisk-tables 2 rows=2 cols=3 window=64 id=x"),
                    "1: " + EXPECTED_HEADER),
    "no-id": (replace(GOOD, 0, "vdisk-tables 2 rows=2 cols=3 window=64 capacity=8"),
              "1: " + EXPECTED_HEADER),
    "empty-id": (replace(GOOD, 0, "vdisk-tables 2 rows=2 cols=3 window=64 capacity=8 id="),
                 "1: " + EXPECTED_HEADER),
    "id-first": (replace(GOOD, 0, "vdisk-tables 2 rows=2 cols=3 window=64 id=x capacity=8"),
                 "1: " + EXPECTED_HEADER),
    "capacity-sign": (replace(GOOD, 0, "vdisk-tables 2 rows=2 cols=3 window=64 capacity=-8 id=x"),
                      "1: " + EXPECTED_HEADER),
    "capacity-overflow": (replace(GOOD, 0, HEADER.replace("131072", str(2 ** 64))),
                          "1: " + EXPECTED_HEADER),
    "v4-no-overlap": (replace(GOOD, 0, HEADER.replace(" 2 ", " 4 ")), "1: " + EXPECTED_HEADER),
    "v4-overlap-after-id": (replace(GOOD, 0, HEADER.replace(" 2 ", " 4 ") + " overlap_us=1"),
                            "1: " + EXPECTED_HEADER),
    "v4-overlap-range": (replace(GOOD, 0, HEADER_V4.replace("=950", "=10000001")),
                         "1: overlap_us=10000001 out of range (at most 10000000)"),
    "v5-no-dcache": (replace(GOOD, 0, HEADER_V4.replace(" 4 ", " 5 ")), "1: " + EXPECTED_HEADER),
    "v5-dcache-three": (replace(GOOD, 0, HEADER_V5.replace("16,1024,512,150", "16,1024,512")),
                        "1: " + EXPECTED_HEADER),
    "v5-dcache-space": (replace(GOOD, 0, HEADER_V5.replace("16,1024", "16, 1024")),
                        "1: " + EXPECTED_HEADER),
    "v5-dcache-overflow": (replace(GOOD, 0, HEADER_V5.replace(",150", ",4294967296")),
                           "1: " + EXPECTED_HEADER),
    "v5-dcache-segments": (replace(GOOD, 0, HEADER_V5.replace("16,1024", "17,1024")),
                           "1: dcache=17,1024,512,150 out of range (segments 0 to 16; with "
                           "segments, segment sectors and MB/s above 0)"),
    "v5-dcache-no-rate": (replace(GOOD, 0, HEADER_V5.replace(",150", ",0")),
                          "1: dcache=16,1024,512,0 out of range (segments 0 to 16; with "
                          "segments, segment sectors and MB/s above 0)"),
    "capacity-zero": (replace(GOOD, 0, HEADER.replace("131072", "0")),
                      "1: capacity=0 out of range"),
    "id-space": (replace(GOOD, 0, HEADER + " "), f"1: id '{ID} ' is not one word of printable ASCII"),
    "id-tab": (replace(GOOD, 0, "vdisk-tables 2 rows=2 cols=3 window=64 capacity=8 id=a\tb"),
               "1: id 'a\tb' is not one word of printable ASCII"),
    "id-utf8": (replace(GOOD, 0, "vdisk-tables 2 rows=2 cols=3 window=64 capacity=8 id=disk\u00e9"),
                "1: id 'disk\u00e9' is not one word of printable ASCII"),
    "id-long": (replace(GOOD, 0, HEADER.replace(ID, "x" * 100 + " y")),
                "1: id '" + "x" * 60 + "' is not one word of printable ASCII"),
    "v1-no-window": (replace(GOOD, 0, "vdisk-tables 1 rows=2 cols=3"), "1: " + EXPECTED_HEADER_V1),
    "v1-trailing-space": (replace(GOOD, 0, HEADER_V1 + " "), "1: " + EXPECTED_HEADER_V1),
    "v1-with-id": (replace(GOOD, 0, HEADER_V1 + " capacity=8 id=x"), "1: " + EXPECTED_HEADER_V1),
    "version": (replace(GOOD, 0, HEADER.replace(" 2 ", " 7 ")),
                "1: unsupported version 7 (expected 1 to 5)"),
    "version-0": (replace(GOOD, 0, "vdisk-tables 0 rows=2 cols=3 window=64"),
                  "1: unsupported version 0 (expected 1 to 5)"),
    "zero-rows": (replace(GOOD, 0, HEADER.replace("rows=2", "rows=0")),
                  "1: geometry rows=0 cols=3 window=64 out of range"),
    "v1-zero-rows": (replace(GOOD, 0, "vdisk-tables 1 rows=0 cols=3 window=64"),
                     "1: geometry rows=0 cols=3 window=64 out of range"),
    "truncated": (GOOD[:-1], "5: file ends before row 'w 1'"),
    "header-only": (GOOD[:1], "2: file ends before row 'r 0'"),
    "rows-swapped": (GOOD[:1] + [GOOD[2], GOOD[1]] + GOOD[3:], "2: expected row 'r 0'"),
    "write-first": (GOOD[:1] + GOOD[3:] + GOOD[1:3], "2: expected row 'r 0'"),
    "row-number": (replace(GOOD, 2, "r 10"), "3: expected row 'r 1'"),
    "extra-row": (GOOD + ["w 2"], "6: data after the last row"),
    "blank-line-at-end": (GOOD + [""], "6: data after the last row"),
    "bad-cell": (replace(GOOD, 2, "r 1 1:x:5"),
                 "3: bad cell '1:x:5' (expected <col>:<n>:<sum_ns>)"),
    "short-cell": (replace(GOOD, 2, "r 1 1:5"),
                   "3: bad cell '1:5' (expected <col>:<n>:<sum_ns>)"),
    "negative": (replace(GOOD, 2, "r 1 1:-5:5"),
                 "3: bad cell '1:-5:5' (expected <col>:<n>:<sum_ns>)"),
    "overflow": (replace(GOOD, 2, "r 1 1:1:99999999999999999999"),
                 "3: bad cell '1:1:99999999999999999999' (expected <col>:<n>:<sum_ns>)"),
    "column": (replace(GOOD, 2, "r 1 3:1:5"), "3: cell '3:1:5': column 3 out of range 0..2"),
    "order": (replace(GOOD, 2, "r 1 2:1:5 1:1:5"), "3: cell '1:1:5': columns out of order"),
    "duplicate": (replace(GOOD, 2, "r 1 1:1:5 1:1:5"), "3: cell '1:1:5': columns out of order"),
    "n-zero": (replace(GOOD, 2, "r 1 1:0:0"), "3: cell '1:0:0': n=0 out of range 1..64"),
    "n-window": (replace(GOOD, 2, "r 1 1:65:5"), "3: cell '1:65:5': n=65 out of range 1..64"),
    "sum": (replace(GOOD, 2, "r 1 1:1:4294967296"),
            "3: cell '1:1:4294967296': sum over n * 4294967295 ns"),
    "double-space": (replace(GOOD, 2, "r 1  1:1:5"), "3: stray space in row 1"),
    "trailing-space": (replace(GOOD, 2, "r 1 1:1:5 "), "3: stray space in row 1"),
    "nul": (replace(GOOD, 2, "r 1 1:1:5\0"), "3: NUL byte in line"),
}


@pytest.mark.parametrize("case", BAD_FILES)
def test_check_file_rejects_a_bad_file_with_its_line(tmp_path, case):
    lines, why = BAD_FILES[case]
    path = tables_file(tmp_path, lines, end="\n" if lines else "")
    r = vdiskctl("check-file", path)
    assert r.returncode == 1
    assert r.stdout == ""
    assert r.stderr == f"vdiskctl: check-file: {path}:{why}\n"


def test_check_file_accepts_the_largest_sum(tmp_path):
    path = tables_file(tmp_path, replace(GOOD, 2, "r 1 1:2:8589934590"))
    assert vdiskctl("check-file", path).returncode == 0


def test_check_file_of_a_missing_file():
    r = vdiskctl("check-file", "/nonexistent")
    assert r.returncode == 1
    assert r.stderr == "vdiskctl: check-file: /nonexistent: No such file or directory\n"
