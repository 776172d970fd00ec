# SPDX-License-Identifier: GPL-2.0
"""The crash checks' machinery (xfstests generic/482's method, on
dm-log-writes): a workload that fsyncs and marks the log, and the replay of
the log to every FLUSH, FUA and mark onto a scratch device, each state
mounted through a throw-away snapshot, compared with what was fsync'ed
before it and checked read-only.  Used by the guest tests marked crash
(make check-crash); runs in the guest."""
import contextlib
import ctypes
import os

import logreplay
from dmtest import Dm, dev_sectors, loop_device, sh

SIZE = 64 << 20
LOG_SIZE = 256 << 20
# mkfs.xfs refuses a filesystem under 300 MB, and a log under 64 MB, unless
# fstests runs it: these are the variables it looks for.
FSTESTS_ENV = ["env", "TEST_DIR=/tmp", "TEST_DEV=/dev/null", "QA_CHECK_FS=1"]
FILESYSTEMS = {
    # the inode tables and the journal written by mkfs, not in the
    # background after the mount; blocks of 4 KiB, as on a real disk (under
    # 512 MiB mke2fs makes 1 KiB blocks, whose writes mostly miss the write
    # cache's 4 KiB units and go through: with them, selective cached none
    # of this workload's 670 writes and back a third)
    "ext4": {"tool": "mkfs.ext4",
             "mkfs": ["mkfs.ext4", "-q", "-F", "-b", "4096", "-E",
                      "lazy_itable_init=0,lazy_journal_init=0"],
             "fsck": ["fsck.ext4", "-fn"]},
    "xfs": {"tool": "mkfs.xfs", "mkfs": FSTESTS_ENV + ["mkfs.xfs", "-q", "-f"],
            "fsck": ["xfs_repair", "-n"]},
}
END_MARK = "dm-log-writes-end"      # the target's own, when it is removed


def content(name, version, size):
    """@size bytes that say, every 64, which file, which version and which
    offset they are: a block from elsewhere or of another version shows."""
    lines = (f"{name} v{version} @{off:08d}".ljust(63).encode() + b"\n"
             for off in range(0, size, 64))
    return b"".join(lines)[:size]


_libc = ctypes.CDLL(None, use_errno=True)
SYNC_FILE_RANGE_WRITE = 2           # <linux/fs.h>; Python's os has no sync_file_range


def start_writeback(fd):
    """sync_file_range(@fd, 0, 0, SYNC_FILE_RANGE_WRITE): the file's dirty
    pages sent down now, not waited for."""
    if _libc.sync_file_range(fd, ctypes.c_int64(0), ctypes.c_int64(0),
                             ctypes.c_uint(SYNC_FILE_RANGE_WRITE)):
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


def fsync_path(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Workload:
    """Writes files under @mnt; each step fsyncs what it wrote (and the
    directories naming it), then marks the log.  self.marks: what every
    file fsync'ed before each mark must hold."""

    def __init__(self, mnt, lw, small=0):
        self.mnt, self.lw, self.small = mnt, lw, small
        self.durable = {}               # relative path -> bytes
        self.marks = {}

    def write(self, rel, data, append=False, in_place=False, sync=True, early=False):
        """Write @data to @rel and fsync it (@sync).  @early: its writeback
        started first, without waiting (sync_file_range), as the page
        cache's flusher does: those writes carry no REQ_SYNC, so selective
        caches them too, and the fsync's flush must write them back."""
        path = os.path.join(self.mnt, rel)
        flags = os.O_WRONLY | (os.O_APPEND if append else 0) | \
            (0 if in_place or append else os.O_CREAT | os.O_TRUNC)
        fd = os.open(path, flags, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if early:
                start_writeback(fd)
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
        if sync:
            fsync_path(os.path.dirname(path))
            self.durable[rel] = self.durable.get(rel, b"") + data if append else data

    def mark(self, name):
        self.lw.message("mark", name)
        self.marks[name] = dict(self.durable)

    def run(self):
        self.write("a", content("a", 1, 4096))
        self.mark("a")
        self.write("noise", content("noise", 1, 200 << 10), sync=False)
        self.write("b", content("b", 1, 300 << 10), early=True)
        self.mark("b")
        os.mkdir(os.path.join(self.mnt, "d"))
        self.write("d/c", content("c", 1, 64 << 10))
        os.mkdir(os.path.join(self.mnt, "s"))
        fsync_path(self.mnt)
        self.mark("c")
        self.write("a", content("a", 2, 4096), in_place=True)
        self.mark("a2")
        self.write("b", content("b", 2, 100 << 10), append=True, early=True)
        self.mark("b2")
        self.write("e.tmp", content("e", 1, 12 << 10))
        os.rename(os.path.join(self.mnt, "e.tmp"), os.path.join(self.mnt, "e"))
        fsync_path(self.mnt)
        self.durable["e"] = self.durable.pop("e.tmp")
        self.mark("e")
        self.write("big", content("big", 1, 1 << 20))
        self.mark("big")
        self.write("f", content("f", 1, 100))
        self.mark("f")
        for i in range(self.small):     # many fsyncs: many flush points
            self.write(f"s/{i}", content(f"s{i}", 1, 4096 * (1 + i % 5)), early=i % 2 == 1)
            if i % 4 == 3:
                self.mark(f"s{i}")


class Recording:
    """A filesystem made and used on dm-log-writes: the log device, and
    what each mark promises (file -> content)."""

    def __init__(self, fs, log, marks, stats=None):
        self.fs, self.log, self.marks = fs, log, marks
        self.stats = stats or {}       # the redcap stack's, before its removal


def check_files(root, expect):
    """What differs between the files under @root and @expect (relative
    path -> content): one line per file, [] when all match."""
    problems = []
    for rel, want in sorted(expect.items()):
        try:
            with open(os.path.join(root, rel), "rb") as f:
                got = f.read()
        except OSError as e:
            problems.append(f"{rel}: {e.strerror}")
            continue
        if got == want:
            continue
        at = next((i for i in range(min(len(got), len(want))) if got[i] != want[i]),
                  min(len(got), len(want)))
        problems.append(f"{rel}: {len(got)} bytes, {len(want)} expected; first difference "
                        f"at byte {at}: {got[at - at % 64:][:40]!r}")
    return problems


def check_state(fs, scratch, cow, mnt, expect):
    """Mount a throw-away snapshot of @scratch (journal recovery writes to
    @cow only), compare the files with @expect (if not None), unmount,
    check it read-only.  The problems found, [] for none."""
    problems = []
    n = dev_sectors(scratch)
    with Dm(f"rc-lw-snap-{fs}", f"0 {n} snapshot {scratch} {cow} N 8") as snap:
        try:
            sh("mount", snap.path, mnt)
        except RuntimeError as e:
            return [str(e)]
        try:
            if expect is not None:
                problems += check_files(mnt, expect)
        finally:
            sh("umount", mnt)
        r = sh(*FILESYSTEMS[fs]["fsck"], snap.path, check=False)
        if r.returncode:
            tail = (r.stdout + r.stderr).strip().splitlines()[-8:]
            problems.append(f"{FILESYSTEMS[fs]['fsck'][0]}: exit {r.returncode}: "
                            + " | ".join(tail))
    return problems


class Replay:
    """What replay_points() found: how many points, how many distinct
    states checked, and the problems, each with the points of its state
    (all of them in @problems, those of each mark's state in @at_mark)."""

    def __init__(self):
        self.points, self.states, self.problems, self.at_mark = 0, 0, [], {}


def replay_points(rec, mnt):
    """Replay @rec's log onto a fresh scratch device, point after point from
    the mkfs mark on, and check each.  Consecutive points with no write between them are one
    state, checked once (with the files of the last mark among them)."""
    out = Replay()
    with loop_device(SIZE) as scratch, loop_device(SIZE) as cow, \
            logreplay.Log(rec.log) as log, logreplay.Replayer(log, scratch) as rp:
        first = log.find_mark("mkfs").index
        points = [e for e in log.points() if e.index >= first]

        def writes(a, b):
            """Whether entries a..b change the replayed device."""
            return any(log.entry(j).nr_sectors and not log.entry(j).flags & logreplay.DISCARD
                       for j in range(a, b + 1))

        group = []
        for i, e in enumerate(points):
            rp.apply_to(e.index)
            group.append(e)
            if i + 1 < len(points) and not writes(e.index + 1, points[i + 1].index):
                continue                # the next point's state is this one
            marks = [p.mark for p in group if p.mark is not None]
            expect = None
            for m in marks:
                assert m in rec.marks, f"an unknown mark in the log: {m}"
                if rec.marks[m] is not None:
                    expect = rec.marks[m]
            out.points += len(group)
            out.states += 1
            where = ", ".join(f"{p.index} {logreplay.flag_text(p.flags)}"
                              + (f" {p.mark}" if p.mark else "") for p in group)
            found = check_state(rec.fs, scratch, cow, mnt, expect)
            out.problems += [f"entries {where}: {p}" for p in found]
            for m in marks:
                out.at_mark[m] = found
            group = []
    return out


@contextlib.contextmanager
def record(fs, mnt, redcap=None, small=0):
    """Make filesystem @fs on dm-log-writes (over a loop device), or on a
    redcap stack over it with write_policy @redcap, run the workload (with
    @small more fsync'ed files) and unmount (and remove the stack, which
    writes back).  Yields the Recording."""
    spec = FILESYSTEMS[fs]
    stats = None
    with loop_device(SIZE) as data, loop_device(LOG_SIZE) as log:
        n = dev_sectors(data)
        with Dm(f"rc-lw-{fs}", f"0 {n} log-writes {data} {log}") as lw:
            top = lw
            if redcap:
                # 8 MiB, a quarter of it dirty at most: write-back all along
                top = Dm(f"rc-crash-{fs}", f"0 {n} redcap {lw.path} 256 64 "
                                           f"4 policy always write_policy {redcap}")
            try:
                sh(*spec["mkfs"], top.path)
                sh("sync")      # mkfs's last writes, before the mark
                lw.message("mark", "mkfs")
                sh("mount", top.path, mnt)
                try:
                    work = Workload(mnt, lw, small)
                    work.run()
                    # not fsync'ed: durable once unmounted
                    work.durable["noise"] = content("noise", 1, 200 << 10)
                finally:
                    sh("umount", mnt)
            finally:
                if top is not lw:
                    stats = top.stats()
                    top.remove()
            work.mark("umount")
        work.marks["mkfs"] = None      # a filesystem, no file of ours yet
        work.marks[END_MARK] = work.marks["umount"]
        yield Recording(fs, log, work.marks, stats if redcap else None)


def check_recording(rec, mnt):
    """Every point of @rec consistent, every mark holding what was fsync'ed
    before it: asserts; returns the Replay."""
    with logreplay.Log(rec.log) as log:
        entries = len(log)
        marks = [e.mark for e in log if e.mark is not None]
    assert marks[-1] == END_MARK, "the log ends with the target's own mark: none was lost"
    assert set(marks) == set(rec.marks)
    r = replay_points(rec, mnt)
    print(f"{rec.fs}: {entries} entries, {r.points} points checked as {r.states} states")
    assert r.problems == []
    assert set(r.at_mark) == set(marks)
    assert r.points > len(marks)
    return r
