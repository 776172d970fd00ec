# SPDX-License-Identifier: GPL-2.0
"""redcapctl layout on real filesystems (FOR, issue 47): ext4 and XFS on a
redcap stack, and on a linear device over it, with files of known sizes, a
sparse one of more extents than one FIEMAP call returns, one with unwritten
extents and a fragmented pair.  The runs of --out are exactly those that
filefrag -v of every file gives under the same rules; the messages keep to
their size and form; btrfs is refused with its exact message."""
import contextlib
import json
import mmap
import os
import re
import subprocess
import tempfile

import jsonschema
import pytest

import dmtest
from dmtest import sh

TOP = os.environ.get("REDCAP_TOP", os.path.realpath(os.path.join(os.path.dirname(__file__),
                                                                  "..", "..")))
RCTL = os.path.join(TOP, "build", "userspace", "redcapctl")
with open(os.path.join(TOP, "docs", "redcapctl.schema.json")) as _f:
    SCHEMA = json.load(_f)
FS_BYTES = 512 << 20            # mkfs.xfs wants 300 MiB at least
BLOCK = 4096
MSG_MAX = 16384                 # LAYOUT_MSG_MAX: bytes of text in one message
FIEMAP_BATCH = 256              # extents one FS_IOC_FIEMAP of redcapctl returns
# filefrag's names of the FIEMAP flags redcapctl skips an extent for
SKIPPED = {"unknown_loc", "delalloc", "encoded", "not_aligned", "inline", "tail_packed"}
HARMLESS = {"last", "eof", "merged", "shared", "unwritten"}
MKFS = {"ext4": ["mkfs.ext4", "-q", "-F", "-b", "4096", "-E", "nodiscard"],
        "xfs": ["mkfs.xfs", "-q", "-f", "-b", "size=4096", "-K"],
        "btrfs": ["mkfs.btrfs", "-q", "-f"]}
PACKAGE = {"ext4": "e2fsprogs", "xfs": "xfsprogs", "btrfs": "btrfs-progs"}


def rctl(*args):
    return subprocess.run([RCTL, *args], capture_output=True, text=True)


# --- stacks and filesystems ---------------------------------------------------

@pytest.fixture
def origin():
    with dmtest.loop_device(FS_BYTES) as dev:
        yield dev


@contextlib.contextmanager
def stack(name, dev):
    """The redcap stack @name over @dev, made by redcapctl, removed after."""
    r = rctl("create", name, dev, "--ram", "8M", "--no-model")
    assert r.returncode == 0, r.stderr
    try:
        yield f"/dev/mapper/{name}"
    finally:
        r = rctl("remove", name)
        assert r.returncode == 0, r.stderr


@contextlib.contextmanager
def mounted(dev, fstype):
    """A new @fstype filesystem on @dev, mounted on a directory of its own."""
    assert subprocess.run(["which", MKFS[fstype][0]], capture_output=True).returncode == 0, \
        f"{MKFS[fstype][0]} not found: install {PACKAGE[fstype]} (make deps)"
    sh(*MKFS[fstype], dev)
    mnt = tempfile.mkdtemp(prefix="redcap-layout-")
    sh("mount", dev, mnt)
    try:
        yield mnt
    finally:
        sh("umount", mnt)
        os.rmdir(mnt)


def remount(dev, mnt):
    """Everything on disk and nothing in flight: no delayed allocation left,
    XFS's preallocations past the end of files trimmed."""
    sh("umount", mnt)
    sh("mount", dev, mnt)


def write(path, size, chunk=1 << 20):
    with open(path, "wb") as f:
        for at in range(0, size, chunk):
            f.write(os.urandom(min(chunk, size - at)))


def populate(mnt):
    """The test's files; the paths of the regular ones."""
    files = []

    def path(name):
        p = os.path.join(mnt, name)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        files.append(p)
        return p
    for name, size in [("empty", 0), ("one-byte", 1), ("4k", 4096), ("4k-and-1", 4097),
                       ("64k", 64 << 10), ("1m", 1 << 20), ("3m-and-100", (3 << 20) + 100)]:
        write(path(name), size)
    for i in range(24):
        write(path(f"tree/{i % 3}/{i % 2}/small-{i}"), 1 + i * 1500)
    # Runs enough for more than one message.
    for i in range(4000):
        write(path(f"many/{i // 1000}/{i}"), BLOCK)
    # More extents than one FIEMAP call: a block every other block.
    fd = os.open(path("sparse"), os.O_WRONLY | os.O_CREAT, 0o644)
    for i in range(FIEMAP_BATCH + 44):
        os.pwrite(fd, os.urandom(BLOCK), 2 * i * BLOCK)
    os.close(fd)
    # Unwritten extents between written ones, contiguous on disk.
    fd = os.open(path("unwritten"), os.O_WRONLY | os.O_CREAT, 0o644)
    os.posix_fallocate(fd, 0, 256 << 10)
    os.pwrite(fd, os.urandom(BLOCK), 64 << 10)
    os.pwrite(fd, os.urandom(2 * BLOCK), 200 << 10)
    os.close(fd)
    # Two files appended to in turn, a block at a time, each on disk at once.
    buf = mmap.mmap(-1, BLOCK)
    fds = [os.open(path(f"fragmented-{c}"), os.O_WRONLY | os.O_CREAT | os.O_DIRECT, 0o644)
           for c in "ab"]
    for i in range(32):
        for fd in fds:
            buf[:] = os.urandom(BLOCK)
            os.pwritev(fd, [buf], i * BLOCK)
            os.fsync(fd)
    for fd in fds:
        os.close(fd)
    return files


# --- what filefrag says, and what redcapctl wrote -------------------------------

FILEFRAG_EXTENT = re.compile(r"\s*\d+:\s+(\d+)\.\.\s*(\d+):\s+(\d+)\.\.\s*(\d+):\s+(\d+):"
                             r"(?:\s+\d+:)?\s*(\S*)")


def filefrag(paths):
    """{path: [(logical, physical, length, {flags})]} of @paths in 4 KiB
    blocks, as filefrag -v prints their FIEMAP extents."""
    out = sh("filefrag", "-v", "-b4096", *paths).stdout
    extents, path = {}, None
    for line in out.splitlines():
        m = re.match(r"File size of (.+) is \d+ \(", line)
        if m:
            path = m.group(1)
            extents[path] = []
            continue
        m = FILEFRAG_EXTENT.fullmatch(line)
        if m:
            flags = set(m.group(6).split(",")) - {""}
            assert flags <= HARMLESS | SKIPPED, f"{path}: unexpected flags {flags}"
            assert int(m.group(4)) - int(m.group(3)) + 1 == int(m.group(5)), line
            extents[path].append((int(m.group(1)), int(m.group(3)), int(m.group(5)), flags))
    assert sorted(extents) == sorted(paths)
    return extents


def runs_of(extents, unit, offset):
    """FOR's rules on one file's filefrag extents: skipped flags, unwritten
    extents apart, neighbours in the file and on disk merged; a run covers
    the units its bytes touch, on the stack (@offset bytes further)."""
    runs, cur = [], None
    for logical, physical, length, flags in extents:
        if flags & SKIPPED:
            continue
        if cur and "unwritten" not in flags and not cur[3] and \
                logical == cur[0] and physical == cur[2]:
            cur[0] += length
            cur[2] += length
            continue
        if cur:
            runs.append((cur[1], cur[2]))
        cur = [logical + length, physical, physical + length, "unwritten" in flags]
    if cur:
        runs.append((cur[1], cur[2]))
    out = []
    for first, end in runs:
        a, b = first * BLOCK + offset, end * BLOCK + offset
        out.append((a // unit, (b - 1) // unit - a // unit + 1))
    return out


def parse_messages(text, unit):
    """The runs of a --out file, checked for form on the way: layout_clear
    with the unit in sectors first, then layout_runs messages, each within
    MSG_MAX, starting absolute, +GAP wherever a run does not start before
    the end of the one before it."""
    lines = text.split("\n")
    assert lines[-1] == "" and lines[0] == f"layout_clear {unit // 512}", lines[:1]
    runs = []
    for line in lines[1:-1]:
        assert len(line) <= MSG_MAX and line.startswith("layout_runs "), line[:80]
        prev_end = None
        for word in line.split(" ")[1:]:
            m = re.fullmatch(r"(\+?)([0-9a-f]+):([0-9a-f]+)", word)
            assert m, word
            start, length = int(m.group(2), 16), int(m.group(3), 16)
            if m.group(1):
                assert prev_end is not None, f"a message starts with {word}"
                start += prev_end
            else:
                assert prev_end is None or start < prev_end, f"{word}: +GAP expected"
            assert length > 0, word
            runs.append((start, length))
            prev_end = start + length
        assert prev_end is not None, "an empty layout_runs"
    # every message but the last as full as the next word allows
    for line in lines[1:-2]:
        assert len(line) + 35 > MSG_MAX, len(line)
    return runs


def check_layout(name, mnt, files, out, unit, offset=0):
    """redcapctl layout @name --out @out in @unit against filefrag of @files."""
    r = rctl("layout", name, "--unit", f"{unit >> 10}K", "--out", out)
    assert (r.returncode, r.stderr) == (0, "")
    want = set()
    for extents in filefrag(files).values():
        want.update(runs_of(extents, unit, offset))
    with open(out) as f:
        got = parse_messages(f.read(), unit)
    assert got == sorted(got), "runs out of order"
    assert len(got) == len(set(got)), "a run twice"
    missing, extra = sorted(want - set(got)), sorted(set(got) - want)
    assert (missing[:10], extra[:10]) == ([], []), f"{len(missing)} missing, {len(extra)} extra"
    return r.stdout, got


# --- the layout against filefrag ----------------------------------------------

@pytest.mark.parametrize("fstype,unit", [("ext4", 4096), ("xfs", 4096), ("ext4", 64 << 10),
                                         ("xfs", 1 << 20)])
def test_layout_is_filefrag_of_every_file(dmname, origin, tmp_path, fstype, unit):
    name = dmname()
    with stack(name, origin) as dev, mounted(dev, fstype) as mnt:
        files = populate(mnt)
        remount(dev, mnt)
        out = str(tmp_path / "layout")
        stdout, got = check_layout(name, mnt, files, out, unit)
        with open(out) as f:
            nmsgs = f.read().count("\n")
        unit_text = f"{unit >> 20} MiB" if unit >= 1 << 20 else f"{unit >> 10} KiB"
        assert re.fullmatch(
            rf"{re.escape(f'{name}: {mnt} ({fstype}): {len(files)} files, ')}\d+ extents, "
            rf"{len(got)} runs of {unit_text}; {nmsgs} messages written to {re.escape(out)}, "
            r"\d+\.\d\d s of CPU\n", stdout), stdout
        # What the files were made to be.
        extents = {os.path.basename(f): e for f, e in filefrag(files).items()}
        assert extents["empty"] == []
        assert len(extents["sparse"]) > FIEMAP_BATCH
        flags = [("unwritten" in e[3]) for e in extents["unwritten"]]
        assert flags[:2] == [True, False] and flags.count(False) == 2, extents["unwritten"]
        frag = runs_of(extents["fragmented-a"], BLOCK, 0)
        assert len(frag) > 1, f"fragmented-a is not fragmented: {extents['fragmented-a']}"


def test_layout_adds_the_offset_of_a_linear_device_over_the_stack(dmname, origin, tmp_path):
    """An ext4 on a linear device 1 MiB + 4 KiB into the stack (as kpartx
    or lvm2 would make it): every run 257 units further."""
    name = dmname()
    with stack(name, origin) as dev:
        offset = 2056                   # sectors
        sectors = dmtest.dev_sectors(dev) - offset
        with dmtest.Dm(f"{name}-part", f"0 {sectors} linear {dev} {offset}") as part, \
                mounted(part.path, "ext4") as mnt:
            files = populate(mnt)
            remount(part.path, mnt)
            stdout, got = check_layout(name, mnt, files, str(tmp_path / "layout"), BLOCK,
                                       offset * 512)
            assert stdout.startswith(f"{name}: {mnt} (ext4): {len(files)} files, ")
            assert min(got)[0] >= offset // 8


def test_layout_out_dash_writes_the_messages_on_standard_output(dmname, origin):
    name = dmname()
    with stack(name, origin) as dev, mounted(dev, "ext4") as mnt:
        write(os.path.join(mnt, "f"), 3 * BLOCK)
        remount(dev, mnt)
        r = rctl("layout", name, "--out", "-")
        assert r.returncode == 0
        [(start, length)] = parse_messages(r.stdout, BLOCK)
        assert length == 3
        assert re.fullmatch(re.escape(f"{name}: {mnt} (ext4): 1 files, 1 extents, 1 runs of "
                                      "4 KiB; 2 messages written to standard output, ") +
                            r"\d+\.\d\d s of CPU\n", r.stderr), r.stderr


def test_layout_json_says_what_it_found(dmname, origin, tmp_path):
    name = dmname()
    with stack(name, origin) as dev, mounted(dev, "xfs") as mnt:
        for i in range(3):
            write(os.path.join(mnt, f"f{i}"), (i + 1) * BLOCK)
        remount(dev, mnt)
        out = str(tmp_path / "layout")
        r = rctl("layout", name, "--out", out, "--json")
        assert (r.returncode, r.stderr) == (0, "")
        doc = json.loads(r.stdout)
        jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)
        assert doc.pop("cpu_s") >= 0
        [fs] = doc["filesystems"]
        assert os.stat(fs.pop("device")).st_rdev == os.stat(dev).st_rdev
        assert doc == {"schema": 1, "name": name, "unit_bytes": BLOCK,
                       "filesystems": [{"mountpoint": mnt, "type": "xfs"}],
                       "files": 3, "files_skipped": 0, "extents": 3, "extents_skipped": 0,
                       "runs": 3, "messages": 2, "out": out}


def test_layout_is_sent_to_the_cache(dmname, origin):
    """Without --out, layout_clear and layout_runs go to the target."""
    name = dmname()
    with stack(name, origin) as dev, mounted(dev, "ext4") as mnt:
        populate(mnt)
        remount(dev, mnt)
        r = rctl("layout", name)
        assert (r.returncode, r.stderr) == (0, "")
        assert re.fullmatch(re.escape(f"{name}: {mnt} (ext4): ") + r"\d+ files, \d+ extents, "
                            r"\d+ runs of 4 KiB; \d+ messages sent, \d+\.\d\d s of CPU\n",
                            r.stdout), r.stdout


# --- refusals -----------------------------------------------------------------

def test_btrfs_is_refused(dmname, origin, tmp_path):
    name = dmname()
    out = tmp_path / "layout"
    with stack(name, origin) as dev, mounted(dev, "btrfs") as mnt:
        write(os.path.join(mnt, "f"), BLOCK)
        r = rctl("layout", name, "--out", str(out))
    assert (r.returncode, r.stdout, r.stderr) == (
        1, "", f"redcapctl: layout: {name}: btrfs is not supported (FIEMAP returns btrfs "
               "logical addresses, not device offsets)\n")
    assert not out.exists()


def test_a_stack_with_nothing_mounted_has_no_layout(dmname, origin):
    name = dmname()
    with stack(name, origin):
        r = rctl("layout", name, "--out", "-")
    assert (r.returncode, r.stdout, r.stderr) == (
        1, "", f"redcapctl: layout: {name}: no filesystem on it is mounted\n")


def test_a_device_that_is_not_a_stack_is_refused(dmname, origin):
    name = dmname()
    with dmtest.Dm(name, f"0 {dmtest.dev_sectors(origin)} linear {origin} 0"):
        r = rctl("layout", name)
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr == (f"redcapctl: {name}: /dev/mapper/{name} is not a redcap stack (its DM "
                        f"UUID is '', not 'REDCAP-{name}')\n")
