# SPDX-License-Identifier: GPL-2.0
"""tests/bench/lkr-layout.py on a tiny tree made here, so without the
linux-source download: its image, its walk of the image with debugfs, the
reading order and the CSV.  Needs mkfs.ext4 and debugfs (e2fsprogs)."""
import importlib.util
import os
import random
import re
import subprocess
import sys

import pytest

TOP = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(TOP, "tests", "bench", "lkr-layout.py")
_spec = importlib.util.spec_from_file_location("lkr_layout", SCRIPT)
lkr = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lkr)

BLOCK = 4096
RNG = random.Random(16)
CONTENT = {
    "one": b"x",
    "a/b/big": RNG.randbytes(200 * 1024),
    "a/b/c/deep": RNG.randbytes(9000),
    "a/empty": b"",
    "top": RNG.randbytes(5000),
    # a block of zeros in the middle: mkfs.ext4 -d leaves it unallocated
    "z/holey": b"a" * BLOCK + bytes(BLOCK) + b"b" * 100,
}
DIRS = ["a", "a/b", "a/b/c", "d", "z"]


def _make_tree(root):
    for d in DIRS:
        os.makedirs(os.path.join(root, d), exist_ok=True)
    for path, data in CONTENT.items():
        with open(os.path.join(root, path), "wb") as f:
            f.write(data)
    os.symlink("../one", os.path.join(root, "a", "link"))
    os.mkfifo(os.path.join(root, "z", "fifo"))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("lkr")
    tree = str(tmp / "tree")
    _make_tree(tree)
    image = str(tmp / "ext4.img")
    events, st = lkr.layout_tree(tree, image)
    return tree, image, events, st


def _read(image, runs):
    with open(image, "rb") as f:
        out = b""
        for start, count in runs:
            f.seek(start * BLOCK)
            out += f.read(count * BLOCK)
        return out


def _debugfs(image, cmd):
    r = subprocess.run(["debugfs", "-R", cmd, image], capture_output=True, text=True,
                       env=lkr.ENV, check=True)
    return r.stdout


def test_the_image_is_64_mib_without_inline_data(built):
    _, image, events, st = built
    assert st["image_bytes"] == os.path.getsize(image) == 64 << 20
    assert events[0] == dict(kind="image", ino=0, size=64 << 20, runs=[(0, 0)], path="")
    # Debian's mke2fs.conf: extents and dir_index, and no inline_data, so even
    # a 1-byte file takes a data block of its own
    assert {"extent", "dir_index", "metadata_csum"} <= st["features"]
    assert "inline_data" not in st["features"]


def test_every_regular_file_once_with_its_size_and_its_bytes(built):
    _, image, events, st = built
    files = [e for e in events if e["kind"] == "file"]
    assert sorted(e["path"] for e in files) == sorted(CONTENT)
    for e in files:
        data = CONTENT[e["path"]]
        assert e["size"] == len(data)
        if e["path"] == "z/holey":
            # blocks 0 and 2, two extents (adjacent on disk: the hole costs no block)
            (s0, c0), (s1, c1) = e["runs"]
            assert (c0, c1, s1) == (1, 1, s0 + 1)
            assert _read(image, e["runs"]) == data[:BLOCK] + data[2 * BLOCK:].ljust(BLOCK, b"\0")
            continue
        assert sum(c for _, c in e["runs"]) == -(-len(data) // BLOCK)
        assert _read(image, e["runs"])[:len(data)] == data
    by_path = {e["path"]: e for e in files}
    assert by_path["a/empty"]["runs"] == []
    assert len(by_path["one"]["runs"]) == 1 and by_path["one"]["runs"][0][1] == 1
    assert by_path["a/b/big"]["runs"][0][1] == 50
    assert st["skipped"] == {"symlink": 1, "special": 1}


def test_directories_with_their_blocks(built):
    tree, image, events, _ = built
    dirs = {e["path"]: e for e in events if e["kind"] == "dir"}
    assert sorted(dirs) == sorted(["", "lost+found"] + DIRS)
    assert dirs[""]["ino"] == 2
    assert (dirs["lost+found"]["size"], [c for _, c in dirs["lost+found"]["runs"]]) == (16384, [4])
    for d in DIRS:
        assert dirs[d]["size"] == BLOCK and len(dirs[d]["runs"]) == 1
        (start, count), = dirs[d]["runs"]
        assert count == 1
        # the block holds the directory's entries: every child's name is in it
        names = [n for n in os.listdir(os.path.join(tree, d))]
        block = _read(image, dirs[d]["runs"])
        assert all(n.encode() in block for n in names)


def test_each_open_reads_its_inode_block_first(built):
    _, image, events, _ = built
    stats = _debugfs(image, "stats")
    ipg = int(re.search(r"^Inodes per group:\s+(\d+)", stats, re.M).group(1))
    isize = int(re.search(r"^Inode size:\s+(\d+)", stats, re.M).group(1))
    tables = [int(t) for t in re.findall(r"inode table at (\d+)", stats)]
    assert not [e for e in events if e["kind"] == "extent"]
    for k, e in enumerate(events[1:], 1):
        if e["kind"] in ("dir", "file"):
            ino = e["ino"]
            want = tables[(ino - 1) // ipg] + (ino - 1) % ipg * isize // BLOCK
            assert events[k - 1] == dict(kind="inode", ino=ino, size=0, runs=[(want, 1)],
                                         path=e["path"])
        else:
            assert e["kind"] == "inode" and events[k + 1]["ino"] == e["ino"]


def test_the_order_is_find_pre_order_in_directory_block_order(built):
    _, image, events, _ = built
    seq = [e for e in events if e["kind"] in ("dir", "file")]
    paths = [e["path"] for e in seq]
    assert paths[0] == ""
    for i, e in enumerate(seq):
        if e["kind"] != "dir" or e["path"] == "":
            continue
        # a directory comes before its contents, and they all follow it at once
        inside = [j for j, p in enumerate(paths) if p.startswith(e["path"] + "/")]
        assert inside == list(range(i + 1, i + 1 + len(inside)))
    # siblings in the order of the directory's blocks (debugfs ls, one call a directory)
    for e in seq:
        if e["kind"] != "dir":
            continue
        listed = []
        for line in _debugfs(image, f"ls -p <{e['ino']}>").splitlines():
            f = line.split("/")
            if len(f) == 8 and f[5] not in (".", "..") and f[1] != "0" and \
                    f[2][:2] in ("04", "10"):
                listed.append(os.path.join(e["path"], f[5]))
        children = [p for p in paths if p and os.path.dirname(p) == e["path"]]
        assert children == listed
    # pre-order, rebuilt from the listings above: the same sequence
    kids = {}
    for p in paths[1:]:
        kids.setdefault(os.path.dirname(p), []).append(p)

    def pre(p):
        return [p] + [q for c in kids.get(p, []) for q in pre(c)]
    assert pre("") == paths


def test_the_command_writes_the_csv_and_a_summary(built, tmp_path):
    tree, _, events, _ = built
    out = tmp_path / "sub" / "layout.csv"
    r = subprocess.run([sys.executable, SCRIPT, "--tree", tree, "--out", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = out.read_text().splitlines()
    assert lines[0] == "kind,ino,size,blocks,path"
    assert lines[1] == f"image,0,{64 << 20},0+0,"
    # a second image of the same tree: the same events, the same blocks
    want = [f"{e['kind']},{e['ino']},{e['size']},"
            + ";".join(f"{s}+{c}" for s, c in e["runs"]) + f",{e['path']}" for e in events[1:]]
    assert lines[2:] == want
    kinds = [ln.split(",")[0] for ln in lines[1:]]
    assert kinds.count("file") == len(CONTENT) and kinds.count("dir") == len(DIRS) + 2
    assert re.search(r"^lkr-layout: files: 6 \(6 inodes\), directories: 7, skipped: 1 symlinks, "
                     r"1 special files$", r.stderr, re.M), r.stderr
    assert re.search(r"files with holes: 1;", r.stderr), r.stderr
    assert os.listdir(tmp_path / "sub") == ["layout.csv"]	# its image is gone
