# SPDX-License-Identifier: GPL-2.0
"""tests/crash/logreplay.py on synthetic dm-log-writes logs, written here in
the kernel's on-disk format: listing, replay to an entry and to a mark,
incremental replay, discards, and the exact error texts."""
import os
import struct
import subprocess
import sys

import pytest

TOP = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
TOOL = os.path.join(TOP, "tests", "crash", "logreplay.py")
sys.path.insert(0, os.path.dirname(TOOL))

import logreplay  # noqa: E402

MAGIC = 0x6a736677736872
FLUSH, FUA, DISCARD, MARK, METADATA = 1, 2, 4, 8, 16


def write_log(path, entries, sectorsize=512, nr_entries=None, magic=MAGIC, version=1):
    """A log as dm-log-writes lays it out: the super block padded to a
    sector, then per entry a header sector (a mark's text after the header)
    and, unless a discard or a mark, the data.  @entries: (sector,
    nr_sectors, flags, data or mark text)."""
    out = bytearray(struct.pack("<QQQI", magic, version,
                                len(entries) if nr_entries is None else nr_entries, sectorsize))
    out += bytes(sectorsize - len(out))
    for sector, nr, flags, payload in entries:
        text = payload if flags & MARK else b""
        head = struct.pack("<QQQQ", sector, nr, flags, len(payload)) + text
        out += head + bytes(sectorsize - len(head))
        if not flags & (DISCARD | MARK):
            assert len(payload) == nr * sectorsize
            out += payload
    with open(path, "wb") as f:
        f.write(out)
    return path


def fill(byte, sectors, sectorsize=512):
    return bytes([byte]) * (sectors * sectorsize)


# A small workload: writes, a discard, a flush, a FUA write, two marks.
ENTRIES = [
    (0, 2, 0, fill(0xa1, 2)),                      # 0
    (4, 1, METADATA, fill(0xa2, 1)),               # 1
    (0, 0, FLUSH, b""),                            # 2
    (0, 0, MARK, b"one"),                          # 3
    (2, 2, 0, fill(0xb1, 2)),                      # 4
    (0, 1, 0, fill(0xb2, 1)),                      # 5: over entry 0's first sector
    (4, 1, DISCARD, b""),                          # 6
    (6, 1, FLUSH | FUA, fill(0xb3, 1)),            # 7
    (0, 0, MARK, b"two"),                          # 8
    (7, 1, 0, fill(0xc1, 1)),                      # 9: never flushed
]
LIST = ["0 0 2 -", "1 4 1 METADATA", "2 0 0 FLUSH", "3 0 0 MARK one", "4 2 2 -", "5 0 1 -",
        "6 4 1 DISCARD", "7 6 1 FLUSH|FUA", "8 0 0 MARK two", "9 7 1 -"]


def expected(last, discard_zeroes=False, sectors=16, skip=()):
    """The device after entries 0..@last, computed sector by sector."""
    dev = bytearray(sectors * 512)
    for i, (sector, nr, flags, payload) in enumerate(ENTRIES[:last + 1]):
        if i in skip or flags & MARK:
            continue
        if flags & DISCARD:
            if discard_zeroes:
                dev[sector * 512:(sector + nr) * 512] = bytes(nr * 512)
            continue
        dev[sector * 512:(sector + nr) * 512] = payload
    return bytes(dev)


@pytest.fixture
def log(tmp_path):
    return write_log(tmp_path / "log", ENTRIES)


@pytest.fixture
def dev(tmp_path):
    path = tmp_path / "dev"
    with open(path, "wb") as f:
        f.truncate(16 * 512)
    return path


def run(*args):
    r = subprocess.run([sys.executable, TOOL, *map(str, args)], capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def test_list_prints_one_line_per_entry(log):
    assert run("list", log) == (0, "\n".join(LIST) + "\n", "")


def test_list_points_prints_flushes_fuas_and_marks_only(log):
    assert run("list", "--points", log) == (0, "\n".join(LIST[i] for i in (2, 3, 7, 8)) + "\n",
                                            "")


def test_replay_to_an_entry_writes_that_entry_and_those_before_it_only(log, dev):
    assert run("replay", "--to", 5, log, dev) == (0, "", "")
    assert dev.read_bytes() == expected(5)
    assert dev.read_bytes()[:512] == fill(0xb2, 1), "entry 5 is applied after entry 0"


def test_replay_to_a_mark_stops_at_that_mark(log, dev):
    assert run("replay", "--to-mark", "one", log, dev) == (0, "", "")
    assert dev.read_bytes() == expected(3)


def test_replay_of_the_whole_log_includes_what_no_flush_covered(log, dev):
    assert run("replay", "--to", 9, log, dev) == (0, "", "")
    assert dev.read_bytes() == expected(9)


def test_replay_skips_discards_unless_asked_to_write_zeroes(log, dev, tmp_path):
    assert run("replay", "--to", 7, log, dev) == (0, "", "")
    assert dev.read_bytes()[4 * 512:5 * 512] == fill(0xa2, 1)
    zeroed = tmp_path / "zeroed"
    zeroed.write_bytes(bytes(16 * 512))
    assert run("replay", "--discard-zeroes", "--to", 7, log, zeroed) == (0, "", "")
    assert zeroed.read_bytes() == expected(7, discard_zeroes=True)
    assert zeroed.read_bytes()[4 * 512:5 * 512] == bytes(512)


def test_help_says_what_replay_does_with_discards():
    code, out, err = run("replay", "--help")
    assert code == 0 and err == ""
    assert "Discards are skipped, leaving what REPLAYDEV held, unless --discard-zeroes" in \
        " ".join(out.split())


def test_incremental_replay_continues_without_starting_over(log, dev):
    with logreplay.Log(str(log)) as lg, logreplay.Replayer(lg, str(dev)) as r:
        r.apply_to(3)
        assert dev.read_bytes() == expected(3)
        # scribble over what entry 0 wrote: a replay from the start would
        # write it again, a continued one leaves it
        with open(dev, "r+b") as f:
            f.seek(512)
            f.write(fill(0xee, 1))
        r.apply_to(8)
        want = bytearray(expected(8))
        want[512:1024] = fill(0xee, 1)
        assert dev.read_bytes() == bytes(want)
        assert r.next == 9


def test_incremental_replay_over_every_point_matches_a_replay_from_zero(log, dev, tmp_path):
    with logreplay.Log(str(log)) as lg, logreplay.Replayer(lg, str(dev)) as r:
        points = [e.index for e in lg.points()]
        assert points == [2, 3, 7, 8]
        for p in points:
            r.apply_to(p)
            assert dev.read_bytes() == expected(p), p


def test_replayer_refuses_to_go_back(log, dev):
    with logreplay.Log(str(log)) as lg, logreplay.Replayer(lg, str(dev)) as r:
        r.apply_to(5)
        r.apply_to(5)                  # nothing new: allowed
        with pytest.raises(logreplay.LogError) as e:
            r.apply_to(3)
    assert str(e.value) == f"{dev}: entries up to 5 are applied already, cannot go back to 3"


def test_replayer_can_leave_out_entries_for_a_negative_control(log, dev):
    with logreplay.Log(str(log)) as lg, logreplay.Replayer(lg, str(dev)) as r:
        r.apply_to(8, skip={4})
    assert dev.read_bytes() == expected(8, skip={4})
    assert dev.read_bytes() != expected(8)


def test_entries_carry_their_fields_and_mark_text(log):
    with logreplay.Log(str(log)) as lg:
        assert (len(lg), lg.sectorsize) == (10, 512)
        e = lg.find_mark("two")
        assert (e.index, e.flags, e.mark, e.is_point) == (8, MARK, "two", True)
        e = lg.entry(7)
        assert (e.sector, e.nr_sectors, e.mark) == (6, 1, None)
        assert b"".join(lg.data(e)) == fill(0xb3, 1)
        assert not lg.entry(4).is_point


def test_a_4k_sector_log_counts_sectors_of_4k(tmp_path):
    log = write_log(tmp_path / "log", [(1, 1, FUA, fill(0x5a, 1, 4096)),
                                       (0, 0, MARK, b"m")], sectorsize=4096)
    dev = tmp_path / "dev"
    dev.write_bytes(bytes(3 * 4096))
    assert run("list", log) == (0, "0 1 1 FUA\n1 0 0 MARK m\n", "")
    assert run("replay", "--to-mark", "m", log, dev) == (0, "", "")
    assert dev.read_bytes() == bytes(4096) + fill(0x5a, 1, 4096) + bytes(4096)


def test_unknown_flag_bits_are_listed_in_hex(tmp_path):
    log = write_log(tmp_path / "log", [(0, 1, FLUSH | 0x40, fill(1, 1))])
    assert run("list", log) == (0, "0 0 1 FLUSH|0x40\n", "")


# --------------------------------------------------------------------------
# Errors


def test_a_bad_magic_is_refused(tmp_path, dev):
    log = write_log(tmp_path / "log", ENTRIES, magic=0x1234)
    want = f"logreplay: {log}: not a dm-log-writes log: magic 0x1234, expected 0x6a736677736872\n"
    assert run("list", log) == (1, "", want)
    assert run("replay", "--to", 0, log, dev) == (1, "", want)
    assert dev.read_bytes() == bytes(16 * 512)


def test_an_unknown_version_is_refused(tmp_path):
    log = write_log(tmp_path / "log", ENTRIES, version=2)
    assert run("list", log) == (1, "", f"logreplay: {log}: log version 2, this replayer "
                                "reads version 1\n")


@pytest.mark.parametrize("size", [0, 256, 1000, 131072])
def test_a_bad_sector_size_is_refused(tmp_path, size):
    log = tmp_path / "log"
    log.write_bytes(struct.pack("<QQQI", MAGIC, 1, 0, size) + bytes(4096))
    assert run("list", log) == (1, "", f"logreplay: {log}: bad sector size {size} in the "
                                "super block (a power of two from 512 to 65536)\n")


def test_a_log_shorter_than_its_super_block_is_truncated(tmp_path):
    log = tmp_path / "log"
    log.write_bytes(struct.pack("<QQ", MAGIC, 1))
    assert run("list", log) == (1, "", f"logreplay: {log}: truncated log: 16 bytes, less "
                                "than a super block\n")


def test_a_log_cut_in_an_entrys_data_is_truncated(tmp_path, dev):
    log = write_log(tmp_path / "log", ENTRIES)
    # the super block, then entries 0 to 6 end at byte 7168; entry 7's
    # header is the next sector, its data the one after: cut in its middle
    assert log.stat().st_size == 9728
    os.truncate(log, 7900)
    err = (f"logreplay: {log}: truncated log: entry 7's data ends at byte 8192, past the "
           "log's end at byte 7900\n")
    assert run("list", log) == (1, "\n".join(LIST[:7]) + "\n", err)
    # a replay up to an entry before the cut works; past it, nothing is written
    assert run("replay", "--to", 6, log, dev) == (0, "", "")
    fresh = tmp_path / "fresh"
    fresh.write_bytes(bytes(16 * 512))
    assert run("replay", "--to", 8, log, fresh) == (1, "", err)
    assert fresh.read_bytes() == bytes(16 * 512)


def test_a_log_cut_before_an_entrys_header_is_truncated(tmp_path):
    log = write_log(tmp_path / "log", ENTRIES[:3], nr_entries=5)
    size = log.stat().st_size
    assert run("list", log) == (1, "\n".join(LIST[:3]) + "\n",
                                f"logreplay: {log}: truncated log: entry 3's header at byte "
                                f"{size} ends past the log's end at byte {size} (the super "
                                "block counts 5 entries)\n")


def test_a_mark_longer_than_its_header_sector_is_refused(tmp_path):
    log = write_log(tmp_path / "log", [(0, 0, MARK, b"x")])
    with open(log, "r+b") as f:        # data_len of entry 0: 481 > 512 - 32
        f.seek(512 + 24)
        f.write(struct.pack("<Q", 481))
    assert run("list", log) == (1, "", f"logreplay: {log}: entry 0: a mark of 481 bytes "
                                "does not fit in its header sector of 512 bytes\n")


def test_replay_past_the_last_entry_is_refused(log, dev):
    assert run("replay", "--to", 10, log, dev) == (1, "", f"logreplay: {log}: no entry 10: "
                                                   "the log has 10 entries\n")


def test_replay_to_a_missing_mark_is_refused(log, dev):
    assert run("replay", "--to-mark", "three", log, dev) == (1, "", f"logreplay: {log}: no "
                                                             "mark 'three'\n")


def test_replay_past_the_devices_end_is_refused(log, tmp_path):
    small = tmp_path / "small"
    small.write_bytes(bytes(4 * 512))
    assert run("replay", "--to", 1, log, small) == (1, "", f"logreplay: {small}: entry 1 "
                                                    "writes up to byte 2560, past the "
                                                    "device's end at byte 2048\n")


def test_a_missing_log_is_an_error(tmp_path, dev):
    assert run("replay", "--to", 0, tmp_path / "nolog", dev) == (
        1, "", f"logreplay: {tmp_path / 'nolog'}: No such file or directory\n")


@pytest.mark.parametrize("args, why", [
    (["replay", "LOG", "DEV"], "one of the arguments --to --to-mark is required"),
    (["replay", "--to", "1", "--to-mark", "a", "LOG", "DEV"],
     "argument --to-mark: not allowed with argument --to"),
    (["replay", "--to", "-1", "LOG", "DEV"], "argument --to: not an entry index: '-1'"),
    (["replay", "--to", "x", "LOG", "DEV"], "argument --to: not an entry index: 'x'"),
    (["list"], "the following arguments are required: LOGDEV"),
])
def test_usage_errors_exit_2(args, why):
    code, out, err = run(*args)
    assert (code, out) == (2, "")
    assert err.splitlines()[-1].endswith(f"error: {why}")
