#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Reads a dm-log-writes log and replays it onto a device up to a chosen
entry: the replayer of the crash-consistency harness (xfstests' generic/482).

The log's format (drivers/md/dm-log-writes.c, log-writes.rst): a super
block in the log's first sector (magic, version, the number of entries, the
sector size: the logged device's logical block size, the unit of every
sector number and count below), then, entry after entry, a header sector
(sector, nr_sectors, flags, data_len; a MARK's text follows the header in
that sector) and the nr_sectors of data written, none for a DISCARD.
Entries are in the order the writes reached stable storage: a write
completed before a FLUSH was issued is logged before that FLUSH.

As a module: Log reads the log (entries are scanned lazily, once), and
Replayer applies them onto a device, continuing where its last apply_to()
stopped, so that checking every point of a long log is not quadratic.
As a command: see main() or 'logreplay.py --help'.
"""
import argparse
import fcntl
import os
import stat
import struct
import sys

FLUSH = 1 << 0
FUA = 1 << 1
DISCARD = 1 << 2
MARK = 1 << 3
METADATA = 1 << 4
FLAG_NAMES = ((FLUSH, "FLUSH"), (FUA, "FUA"), (DISCARD, "DISCARD"), (MARK, "MARK"),
              (METADATA, "METADATA"))

MAGIC = 0x6a736677736872
VERSION = 1
SUPER = struct.Struct("<QQQI")          # magic, version, nr_entries, sectorsize
ENTRY = struct.Struct("<QQQQ")          # sector, nr_sectors, flags, data_len
# bdev_logical_block_size(): 512 up to a page, 64 KiB with large folios
MIN_SECTOR, MAX_SECTOR = 512, 65536
CHUNK = 1 << 20                         # bytes read or written at a time
BLKSSZGET = 0x1268                      # <linux/fs.h>: logical block size


class LogError(Exception):
    """What is wrong with a log or a replay; the command prints it after
    'logreplay: ' and exits 1."""


def flag_text(flags):
    """'FLUSH|FUA' for the flags @flags; unknown bits in hex; '-' for none."""
    names = [name for bit, name in FLAG_NAMES if flags & bit]
    rest = flags & ~sum(bit for bit, _ in FLAG_NAMES)
    if rest:
        names.append(f"{rest:#x}")
    return "|".join(names) or "-"


class Entry:
    """One logged entry.  @sector and @nr_sectors are in the log's sector
    size; @offset is where its data starts in the log (bytes); @mark is a
    MARK's text, else None."""
    __slots__ = ("index", "sector", "nr_sectors", "flags", "mark", "offset")

    def __init__(self, index, sector, nr_sectors, flags, mark, offset):
        self.index, self.sector, self.nr_sectors = index, sector, nr_sectors
        self.flags, self.mark, self.offset = flags, mark, offset

    @property
    def is_point(self):
        """A crash right after this entry must leave a consistent state:
        a FLUSH or FUA completed, or the workload marked the place."""
        return bool(self.flags & (FLUSH | FUA | MARK))

    def line(self):
        """The entry as 'logreplay.py list' prints it."""
        text = f"{self.index} {self.sector} {self.nr_sectors} {flag_text(self.flags)}"
        return text if self.mark is None else f"{text} {self.mark}"


class _Device:
    """An open file descriptor (self.fd), closed by close() or a with-block."""

    fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class Log(_Device):
    """A dm-log-writes log, opened read-only: a log device or a copy of one
    in a file.  The super block is checked here; entries are scanned when
    first asked for (entry(), iteration), each header once.  Raises
    LogError for a log it cannot read."""

    def __init__(self, path):
        self.path = path
        self.fd = os.open(path, os.O_RDONLY)
        try:
            self.size = os.lseek(self.fd, 0, os.SEEK_END)
            self._read_super()
        except BaseException:
            os.close(self.fd)
            raise
        self._entries = []
        self._next = self.sectorsize    # byte offset of the next header to scan


    def _error(self, why):
        return LogError(f"{self.path}: {why}")

    def _read(self, offset, length):
        data = os.pread(self.fd, length, offset)
        while len(data) < length:
            more = os.pread(self.fd, length - len(data), offset + len(data))
            if not more:
                raise self._error(f"truncated log: {length} bytes at byte {offset}, "
                                  f"past the log's end at byte {self.size}")
            data += more
        return data

    def _read_super(self):
        if self.size < SUPER.size:
            raise self._error(f"truncated log: {self.size} bytes, less than a super block")
        magic, version, self.nr_entries, self.sectorsize = SUPER.unpack(
            self._read(0, SUPER.size))
        if magic != MAGIC:
            raise self._error(f"not a dm-log-writes log: magic {magic:#x}, "
                              f"expected {MAGIC:#x}")
        if version != VERSION:
            raise self._error(f"log version {version}, this replayer reads version {VERSION}")
        ss = self.sectorsize
        if not MIN_SECTOR <= ss <= MAX_SECTOR or ss & (ss - 1):
            raise self._error(f"bad sector size {ss} in the super block "
                              f"(a power of two from {MIN_SECTOR} to {MAX_SECTOR})")

    def __len__(self):
        return self.nr_entries

    def _scan_one(self):
        index, pos, ss = len(self._entries), self._next, self.sectorsize
        if pos + ss > self.size:
            raise self._error(f"truncated log: entry {index}'s header at byte {pos} "
                              f"ends past the log's end at byte {self.size} "
                              f"(the super block counts {self.nr_entries} entries)")
        head = self._read(pos, ss)
        sector, nr_sectors, flags, data_len = ENTRY.unpack_from(head)
        mark = None
        if flags & MARK:
            if data_len > ss - ENTRY.size:
                raise self._error(f"entry {index}: a mark of {data_len} bytes does not "
                                  f"fit in its header sector of {ss} bytes")
            mark = head[ENTRY.size:ENTRY.size + data_len].decode(errors="replace")
        data_bytes = 0 if flags & DISCARD else nr_sectors * ss
        end = pos + ss + data_bytes
        if end > self.size:
            raise self._error(f"truncated log: entry {index}'s data ends at byte {end}, "
                              f"past the log's end at byte {self.size}")
        self._entries.append(Entry(index, sector, nr_sectors, flags, mark, pos + ss))
        self._next = end

    def entry(self, index):
        """Entry @index (0-based); LogError if the log has no such entry."""
        if not 0 <= index < self.nr_entries:
            raise self._error(f"no entry {index}: the log has {self.nr_entries} entries")
        while len(self._entries) <= index:
            self._scan_one()
        return self._entries[index]

    def __iter__(self):
        for i in range(self.nr_entries):
            yield self.entry(i)

    def points(self):
        """The entries after which a crash must leave a consistent state."""
        return [e for e in self if e.is_point]

    def find_mark(self, name):
        """The first MARK entry whose text is @name."""
        for e in self:
            if e.mark == name:
                return e
        raise self._error(f"no mark '{name}'")

    def data(self, entry):
        """The data @entry wrote, in pieces of at most CHUNK bytes."""
        left = 0 if entry.flags & DISCARD else entry.nr_sectors * self.sectorsize
        pos = entry.offset
        while left:
            n = min(left, CHUNK)
            yield self._read(pos, n)
            pos += n
            left -= n


class Replayer(_Device):
    """Applies the entries of @log, in log order, onto the device (or file)
    @path, which must start as the logged device started (zeroes, for a log
    from a fresh device).  apply_to(n) writes the entries from where the
    last call stopped up to n, so the device can be checked between calls.
    DISCARDs are skipped (the device keeps what it held) unless
    @discard_zeroes, which writes zeroes over them: a check that passes
    only one way depends on discarded contents, which no device promises."""

    def __init__(self, log, path, discard_zeroes=False):
        self.log, self.path, self.discard_zeroes = log, path, discard_zeroes
        self.next = 0                   # the first entry not yet applied
        self.fd = os.open(path, os.O_WRONLY)
        try:
            self.size = os.lseek(self.fd, 0, os.SEEK_END)
            if stat.S_ISBLK(os.fstat(self.fd).st_mode):
                lbs = struct.unpack("i", fcntl.ioctl(self.fd, BLKSSZGET, b"\0" * 4))[0]
                if lbs > log.sectorsize:
                    raise LogError(f"{path}: logical block size {lbs} is larger than the "
                                   f"log's sector size {log.sectorsize}")
        except BaseException:
            os.close(self.fd)
            raise


    def apply_to(self, index, skip=()):
        """Apply entries self.next..@index, leaving out the indexes in
        @skip (a negative control: a write lost), and make them durable on
        the device.  Asking for an entry already applied is an error: the
        device cannot go back."""
        if index < self.next - 1:
            raise LogError(f"{self.path}: entries up to {self.next - 1} are applied "
                           f"already, cannot go back to {index}")
        self.log.entry(index)           # a missing entry fails before any write
        for i in range(self.next, index + 1):
            e = self.log.entry(i)
            if i not in skip:
                self._apply(e)
            self.next = i + 1
        os.fsync(self.fd)

    def _apply(self, e):
        if e.flags & MARK or not e.nr_sectors:
            return
        if e.flags & DISCARD and not self.discard_zeroes:
            return
        ss = self.log.sectorsize
        start, end = e.sector * ss, (e.sector + e.nr_sectors) * ss
        if end > self.size:
            raise LogError(f"{self.path}: entry {e.index} writes up to byte {end}, past "
                           f"the device's end at byte {self.size}")
        if e.flags & DISCARD:
            pieces = (bytes(min(CHUNK, end - p)) for p in range(start, end, CHUNK))
        else:
            pieces = self.log.data(e)
        pos = start
        for piece in pieces:
            view = memoryview(piece)
            while view:
                n = os.pwrite(self.fd, view, pos)
                view, pos = view[n:], pos + n


def _entry_index(text):
    try:
        n = int(text)
    except ValueError:
        n = -1
    if n < 0:
        raise argparse.ArgumentTypeError(f"not an entry index: '{text}'")
    return n


def parser():
    p = argparse.ArgumentParser(
        prog="logreplay.py",
        description="List or replay a dm-log-writes log.  Entry indexes start at 0; "
        "sectors are in the log's sector size (the logged device's logical block size).")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    ls = sub.add_parser("list", help="print the log's entries",
                        description="Print one line per entry: index, sector, number of "
                        "sectors, flags ('FLUSH|FUA', '-' for none) and a mark's text.")
    ls.add_argument("--points", action="store_true",
                    help="only the entries after which a crash must leave a consistent "
                    "state: FLUSH and FUA entries, and marks")
    ls.add_argument("log", metavar="LOGDEV")
    rp = sub.add_parser("replay", help="write entries 0..N onto a device",
                        description="Write the log's entries 0 to N, in log order, onto "
                        "REPLAYDEV, which must hold what the logged device held when "
                        "logging began (zeroes, for a fresh device).  Discards are "
                        "skipped, leaving what REPLAYDEV held, unless --discard-zeroes: "
                        "a filesystem check must not depend on discarded contents.")
    to = rp.add_mutually_exclusive_group(required=True)
    to.add_argument("--to", type=_entry_index, metavar="N",
                    help="the last entry to write (included)")
    to.add_argument("--to-mark", metavar="NAME",
                    help="up to the first mark NAME (included)")
    rp.add_argument("--discard-zeroes", action="store_true",
                    help="write zeroes over discarded ranges (default: skip discards)")
    rp.add_argument("log", metavar="LOGDEV")
    rp.add_argument("dev", metavar="REPLAYDEV")
    return p


def main(argv=None):
    args = parser().parse_args(argv)
    try:
        with Log(args.log) as log:
            if args.command == "list":
                for e in log:
                    if e.is_point or not args.points:
                        print(e.line())
                return 0
            last = log.find_mark(args.to_mark).index if args.to is None else args.to
            log.entry(last)
            with Replayer(log, args.dev, discard_zeroes=args.discard_zeroes) as r:
                r.apply_to(last)
            return 0
    except LogError as e:
        print(f"logreplay: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"logreplay: {e.filename}: {e.strerror}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
