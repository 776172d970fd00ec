#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""The on-disk layout of the LKR workload at paper scale, for a trace-driven
simulation (issue 16): read every file of a whole Linux kernel source tree,
in `find TREE -type f | xargs cat` order, from ext4 on a hard disk.

The tree is Debian's linux-source-6.1 (apt-get download; the .deb and the
unpacked tree are kept under CACHE/bench-sim/ and reused).  It is put on a
real ext4 image, built without mounting anything:
    mkfs.ext4 -q -F -b 4096 -d TREE IMAGE SIZE
(a sparse file, SIZE = 1.3 x the tree's du rounded up to 64 MiB, features
from the host's mke2fs.conf: on Debian no inline_data, so every non-empty
file has at least one data block).  debugfs then walks the image, one
process per batch of commands: `ls -p` of every directory of one depth of
the tree at a time, then `stat` and `imap` of every directory and file.

The reading order is find's: pre-order from the root, a directory's entries
in the order debugfs `ls` gives them, which is the order of the directory's
blocks and of the entries inside each block, descending into a subdirectory
where its entry comes.  That is not always the order a mounted ext4 gives:
readdir on a directory that ext4 treats as hashed (an htree directory, and
with dir_index ext4 also hashes a directory of exactly one block even
without an index) returns its entries in hash order (half_md4 with the
filesystem's hash seed), which this does not reproduce.  mkfs.ext4 -d
itself writes linear directories (no htree index).

FILE is CSV, header `kind,ino,size,blocks,path`, one line per read event
(path: relative to the tree's top, "" for the top and the image line):
    image,0,<image bytes>,0+0     first: the filesystem's size
    inode,<ino>,0,<block>+1       the inode-table block holding the inode
                                  of the directory or file about to be
                                  opened (repeats: the consumer dedupes)
    extent,<ino>,0,<block>+1      an extent-tree block (index or leaf node
                                  outside the inode) of that inode, needed
                                  to find its data; in tree order
    dir,<ino>,<size>,<runs>       find reading a directory
    file,<ino>,<size>,<runs>      cat reading a regular file
<runs> is `start+count` pairs joined by `;`, in 4 KiB blocks, in
file-offset order (empty for an empty file).  Symlinks and special files
are skipped (counted in the summary).  A file's blocks add up to
ceil(size / 4096) unless it has holes: mkfs.ext4 -d leaves a block of
zeros in the source unallocated (counted in the summary as well).

usage: lkr-layout.py --out FILE [--cache DIR] [--tree TREE] [--image IMG]
  --cache  default $REDCAP_CACHE or ~/.cache/redcap
  --tree   use this unpacked tree instead of linux-source-6.1 (no download)
  --image  keep the image at IMG (default: a temporary file, removed)
A summary goes to stderr.
"""
import argparse
import csv
import glob
import math
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time

BLOCK = 4096
PKG = "linux-source-6.1"
MEMBER = f"./usr/src/{PKG}.tar.xz"
ROOT_INO = 2
BATCH = 20000			# debugfs commands per process
ENV = dict(os.environ, DEBUGFS_PAGER="__none__", PAGER="__none__", LC_ALL="C")


class LayoutError(Exception):
    pass


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, **kw)
    if r.returncode != 0:
        err = r.stderr.decode(errors="replace") if isinstance(r.stderr, bytes) else r.stderr
        raise LayoutError(f"{' '.join(cmd)}: exit {r.returncode}: {err.strip()}")
    return r


# ---- the tree ----------------------------------------------------------

def fetch_deb(bench):
    """The linux-source-6.1 .deb in bench, downloaded if none is there."""
    debs = sorted(glob.glob(os.path.join(bench, f"{PKG}_*.deb")))
    if debs:
        return debs[-1]
    pol = subprocess.run(["apt-cache", "policy", PKG], capture_output=True, text=True)
    cand = re.search(r"Candidate: (\S+)", pol.stdout)
    if pol.returncode != 0 or not cand or cand.group(1) == "(none)":
        raise LayoutError(f"apt-cache policy {PKG}: no candidate version (run apt-get update?): "
                          f"{(pol.stdout + pol.stderr).strip()}")
    r = subprocess.run(["apt-get", "download", PKG], cwd=bench, capture_output=True, text=True)
    debs = sorted(glob.glob(os.path.join(bench, f"{PKG}_*.deb")))
    if r.returncode != 0 or not debs:
        raise LayoutError(f"apt-get download {PKG} (candidate {cand.group(1)}) failed: "
                          f"{(r.stdout + r.stderr).strip()}")
    return debs[-1]


def unpack_tree(bench, deb):
    """The kernel tree, unpacked once into bench/tree/ (through a temporary
    directory beside it, renamed into place when complete)."""
    final = os.path.join(bench, "tree")
    if not os.path.isdir(final):
        tmp = tempfile.mkdtemp(prefix="tree.", dir=bench)
        try:
            dpkg = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", deb], stdout=subprocess.PIPE)
            member = subprocess.Popen(["tar", "-xOf", "-", MEMBER], stdin=dpkg.stdout,
                                      stdout=subprocess.PIPE)
            dpkg.stdout.close()
            untar = subprocess.run(["tar", "-xJf", "-", "-C", tmp], stdin=member.stdout,
                                   capture_output=True, text=True)
            member.stdout.close()
            if member.wait() or dpkg.wait() or untar.returncode:
                raise LayoutError(f"unpacking {MEMBER} of {deb} failed: {untar.stderr.strip()}")
            os.chmod(tmp, 0o755)
            os.rename(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    tops = os.listdir(final)
    if len(tops) != 1 or not os.path.isdir(os.path.join(final, tops[0])):
        raise LayoutError(f"{final}: expected one top directory, found {tops}")
    return os.path.join(final, tops[0])


# ---- the image ---------------------------------------------------------

def tree_du(tree):
    """The tree's disk usage in bytes, as du counts it."""
    return int(run(["du", "-s", "--block-size=1", tree], text=True).stdout.split()[0])


def image_size(du):
    unit = 64 << 20
    return max(unit, math.ceil(du * 1.3 / unit) * unit)


def make_image(tree, image, size):
    with open(image, "wb") as f:
        f.truncate(size)
    run(["mkfs.ext4", "-q", "-F", "-b", str(BLOCK), "-d", tree, image, str(size // 1024) + "k"],
        env=ENV)


def debugfs(image, cmds):
    """Run cmds (a list of debugfs command lines) in as few debugfs
    processes as BATCH allows; return the output of each, in order.  Each
    command's output is what follows its echo, "debugfs: <cmd>", on stdout.
    Anything on stderr but the version banner is an error."""
    outs = []
    for i in range(0, len(cmds), BATCH):
        part = cmds[i:i + BATCH]
        with tempfile.NamedTemporaryFile("w", prefix="lkr-debugfs.", suffix=".cmd") as f:
            f.write("".join(c + "\n" for c in part))
            f.flush()
            r = run(["debugfs", "-f", f.name, image], env=ENV)
        err = [ln for ln in r.stderr.decode(errors="replace").splitlines()
               if ln.strip() and not ln.startswith("debugfs ")]
        if err:
            raise LayoutError(f"debugfs on {image}: {err[:5]}")
        text = r.stdout.decode("utf-8", errors="surrogateescape")
        # Found in order, as the exact echo: an output need not end in a
        # newline (stat of an empty file ends with "EXTENTS:").
        marks = []
        pos = 0
        for c in part:
            echo = f"debugfs: {c}\n"
            at = text.find(echo, pos)
            if at < 0:
                raise LayoutError(f"debugfs on {image}: no output for {c!r}")
            marks.append((at, at + len(echo)))
            pos = at + len(echo)
        for k, (_, start) in enumerate(marks):
            end = marks[k + 1][0] if k + 1 < len(marks) else len(text)
            outs.append(text[start:end].split("\n"))
    return outs


def features(image):
    out = run(["debugfs", "-R", "stats", image], env=ENV, text=True).stdout
    m = re.search(r"^Filesystem features:\s*(.*)$", out, re.M)
    return set(m.group(1).split()) if m else set()


# ---- the walk ----------------------------------------------------------

LS_RE = re.compile(r"^/(\d+)/(\d+)/-?\d+/-?\d+/(.*)/(\d*)/$")
EXTENT_RE = re.compile(r"\((?:ETB(\d+)|(\d+)(?:-(\d+))?(\[u\])?)\):(\d+)(?:-(\d+))?")


def parse_ls(lines):
    """Entries of `ls -p`: (ino, mode, name, size or None), . and .. left
    out, and so are the unused entries (inode 0) that fill an empty block."""
    entries = []
    for line in lines:
        if not line:
            continue
        m = LS_RE.match(line)
        if not m:
            raise LayoutError(f"ls -p: unexpected line {line!r}")
        name = m.group(3)
        if name in (".", "..") or m.group(1) == "0":
            continue
        size = int(m.group(4)) if m.group(4) else None
        entries.append((int(m.group(1)), int(m.group(2), 8), name, size))
    return entries


def parse_stat(ino, lines):
    """(size, data runs, extent-tree blocks, extents) of an inode from `stat`."""
    text = "\n".join(lines)
    m = re.search(r"\bSize: (\d+)\n", text)
    flags = re.search(r"Flags: 0x([0-9a-f]+)", text)
    if not m or not flags:
        raise LayoutError(f"stat <{ino}>: no size or flags in {text[:200]!r}")
    size, flags = int(m.group(1)), int(flags.group(1), 16)
    if flags & 0x10000000:		# EXT4_INLINE_DATA_FL: the data is in the inode
        return size, [], [], 0
    if not flags & 0x80000:		# not EXT4_EXTENTS_FL: a block map
        raise LayoutError(f"inode {ino} uses a block map, not extents: unsupported")
    i = text.find("EXTENTS:")		# then one line of extents, if any
    if i < 0:
        raise LayoutError(f"stat <{ino}>: no EXTENTS")
    body = text[i + len("EXTENTS:"):].lstrip("\n").split("\n", 1)[0]
    runs, tree, extents, nxt = [], [], 0, 0
    for e in EXTENT_RE.finditer(body):
        if e.group(1) is not None:
            tree.append(int(e.group(5)))
            continue
        lo = int(e.group(2))
        hi = int(e.group(3)) if e.group(3) else lo
        pstart = int(e.group(5))
        if lo < nxt:
            raise LayoutError(f"inode {ino}: extents out of file-offset order")
        nxt = hi + 1
        extents += 1
        if e.group(4):			# unwritten: reads as zeros, no I/O
            continue
        runs.append((pstart, hi - lo + 1))
    return size, runs, tree, extents


def parse_imap(ino, lines):
    m = re.search(r"located at block (\d+)", "\n".join(lines))
    if not m:
        raise LayoutError(f"imap <{ino}>: {lines!r}")
    return int(m.group(1))


def walk(image):
    """The read events of find + cat over the image, and counters.  Events
    are dicts: kind, ino, size, runs [(start, count)], path (relative to
    the root; "" for the root)."""
    t0 = time.monotonic()
    listing = {}
    paths = {ROOT_INO: ""}
    dirs, files = [ROOT_INO], {}
    skipped = {"symlink": 0, "special": 0}
    level = [ROOT_INO]
    while level:
        nxt = []
        for d, out in zip(level, debugfs(image, [f"ls -p <{d}>" for d in level])):
            listing[d] = parse_ls(out)
            for ino, mode, name, size in listing[d]:
                path = os.path.join(paths[d], name)
                if stat.S_ISDIR(mode):
                    if ino in paths:
                        raise LayoutError(f"directory inode {ino} seen twice")
                    paths[ino] = path
                    dirs.append(ino)
                    nxt.append(ino)
                elif stat.S_ISREG(mode):
                    files.setdefault(ino, path)
                elif stat.S_ISLNK(mode):
                    skipped["symlink"] += 1
                else:
                    skipped["special"] += 1
        level = nxt
    t_ls = time.monotonic() - t0

    t0 = time.monotonic()
    inos = dirs + sorted(files)
    outs = debugfs(image, [c for i in inos for c in (f"stat <{i}>", f"imap <{i}>")])
    info = {}
    for k, ino in enumerate(inos):
        size, runs, tree, extents = parse_stat(ino, outs[2 * k])
        info[ino] = (size, runs, tree, extents, parse_imap(ino, outs[2 * k + 1]))
    t_stat = time.monotonic() - t0

    events = []

    def opened(kind, ino, path):
        size, runs, tree, _, iblock = info[ino]
        events.append(dict(kind="inode", ino=ino, size=0, runs=[(iblock, 1)], path=path))
        for b in tree:
            events.append(dict(kind="extent", ino=ino, size=0, runs=[(b, 1)], path=path))
        events.append(dict(kind=kind, ino=ino, size=size, runs=runs, path=path))

    stack = [("dir", ROOT_INO, "")]
    while stack:
        kind, ino, path = stack.pop()
        opened(kind, ino, path)
        if kind == "dir":
            children = []
            for cino, mode, name, _ in listing[ino]:
                if stat.S_ISDIR(mode):
                    children.append(("dir", cino, paths[cino]))
                elif stat.S_ISREG(mode):
                    children.append(("file", cino, os.path.join(path, name)))
            stack.extend(reversed(children))
    return events, dict(skipped=skipped, info=info, t_ls=t_ls, t_stat=t_stat)


def layout_tree(tree, image):
    """Build IMAGE from the unpacked TREE and walk it: (events, stats)."""
    steps = {}
    t0 = time.monotonic()
    du = tree_du(tree)
    size = image_size(du)
    make_image(tree, image, size)
    steps["du+mkfs"] = time.monotonic() - t0
    events, st = walk(image)
    steps["debugfs ls"] = st.pop("t_ls")
    steps["debugfs stat+imap"] = st.pop("t_stat")
    events.insert(0, dict(kind="image", ino=0, size=os.path.getsize(image), runs=[(0, 0)],
                          path=""))
    st.update(du=du, image_bytes=size, features=features(image), steps=steps)
    return events, st


# ---- output ------------------------------------------------------------

def write_csv(events, out):
    tmp = out + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["kind", "ino", "size", "blocks", "path"])
        for e in events:
            runs = ";".join(f"{s}+{c}" for s, c in e["runs"])
            w.writerow([e["kind"], e["ino"], e["size"], runs, e.get("path", "")])
    os.replace(tmp, out)


def summary(events, st):
    fe = [e for e in events if e["kind"] == "file"]
    de = [e for e in events if e["kind"] == "dir"]
    info = st["info"]
    fext = [info[e["ino"]][3] for e in fe]
    holes = sum(1 for e in fe if sum(c for _, c in e["runs"]) != -(-e["size"] // BLOCK))
    lines = [
        f"files: {len(fe)} ({len(set(e['ino'] for e in fe))} inodes), "
        f"directories: {len(de)}, skipped: {st['skipped']['symlink']} symlinks, "
        f"{st['skipped']['special']} special files",
        f"data: {sum(e['size'] for e in fe)} bytes in "
        f"{sum(c for e in fe for _, c in e['runs'])} blocks; directories: "
        f"{sum(c for e in de for _, c in e['runs'])} blocks",
        f"image: {st['image_bytes']} bytes (tree du {st['du']}), features: "
        f"{' '.join(sorted(st['features']))}",
        f"extents: {sum(fext)} of files ({sum(1 for n in fext if n > 1)} files with more than "
        f"one, max {max(fext, default=0)}), {sum(info[e['ino']][3] for e in de)} of directories "
        f"({sum(1 for e in de if info[e['ino']][3] > 1)} with more than one)",
        f"extent-tree blocks: {sum(1 for e in events if e['kind'] == 'extent')} "
        f"(files {sum(1 for e in fe if info[e['ino']][2])}, directories "
        f"{sum(1 for e in de if info[e['ino']][2])}); empty files: "
        f"{sum(1 for e in fe if e['size'] == 0)}; files with holes: {holes}; "
        f"inode-table blocks: {len(set(e['runs'][0][0] for e in events if e['kind'] == 'inode'))}",
        "time: " + ", ".join(f"{k} {v:.1f} s" for k, v in st["steps"].items()),
    ]
    return "".join(f"lkr-layout: {ln}\n" for ln in lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--cache", default=os.environ.get("REDCAP_CACHE",
                                                      os.path.expanduser("~/.cache/redcap")))
    ap.add_argument("--tree", help="an unpacked tree to use instead of " + PKG)
    ap.add_argument("--image", help="keep the image here")
    a = ap.parse_args(argv)
    steps = {}
    try:
        if a.tree:
            tree = a.tree
        else:
            bench = os.path.join(a.cache, "bench-sim")
            os.makedirs(bench, exist_ok=True)
            t0 = time.monotonic()
            deb = fetch_deb(bench)
            steps["download"] = time.monotonic() - t0
            t0 = time.monotonic()
            tree = unpack_tree(bench, deb)
            steps["unpack"] = time.monotonic() - t0
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        tmpdir = None
        if a.image:
            image = a.image
        else:
            tmpdir = tempfile.mkdtemp(prefix="lkr-image.",
                                      dir=os.path.dirname(os.path.abspath(a.out)))
            image = os.path.join(tmpdir, "ext4.img")
        try:
            events, st = layout_tree(tree, image)
        finally:
            if tmpdir:
                shutil.rmtree(tmpdir, ignore_errors=True)
        t0 = time.monotonic()
        write_csv(events, a.out)
        st["steps"] = {**steps, **st["steps"], "write": time.monotonic() - t0}
    except LayoutError as e:
        sys.stderr.write(f"lkr-layout: {e}\n")
        return 1
    sys.stderr.write(f"lkr-layout: {tree} -> {a.out}, {len(events)} events\n")
    sys.stderr.write(summary(events, st))
    return 0


if __name__ == "__main__":
    sys.exit(main())
