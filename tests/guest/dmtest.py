# SPDX-License-Identifier: GPL-2.0
"""Helpers for the guest suite: devices as context managers, dmsetup
wrappers, LBA-stamped data that can be verified later, kernel log checks.
Runs inside the guest as root (tests/vm/run)."""
import collections
import contextlib
import errno
import fcntl
import json
import mmap
import os
import re
import struct
import subprocess
import threading
import time

import libdm

BLOCK = 4096
SECTOR = 512
# The debug kernel of make check-debug (KASAN, lockdep) does the same work
# several times slower.  A test whose load must last through a number of
# steps (fio's runtime, a wait for progress) scales it by SLOW; no test
# asserts on a duration.
SLOW = 6 if os.uname().release.endswith("-redcap-debug") else 1
# How long udev may take over a device's events (dmsetup's cookie, a settle).
UDEV_WAIT = 120 * SLOW


def sh(*args, check=True, input=None, timeout=300 * SLOW, report=True):
    """Run a command; a non-zero exit raises (unless not @check), and so does
    one still running after @timeout seconds, with what the kernel says about
    the tasks that wait (blocked_report) taken before the command is killed:
    a command the kernel never lets finish fails its test, it does not hang
    the suite."""
    with subprocess.Popen(args, stdin=subprocess.PIPE if input is not None else None,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as p:
        try:
            out, err = p.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            try:
                why = blocked_report() if report else ""
            finally:
                p.kill()
            raise AssertionError(f"{' '.join(args)}: still running after {timeout} s\n"
                                 f"{why}") from None
        except BaseException:
            # the test's own limit (SIGALRM) struck first: Popen's exit
            # would wait for the command, with no limit at all
            p.kill()
            raise
    r = subprocess.CompletedProcess(args, p.returncode, out, err)
    if check and r.returncode:
        raise RuntimeError(f"{' '.join(args)}: exit {r.returncode}: {r.stderr.strip()}")
    return r


# --------------------------------------------------------------------------
# Devices


LOOP_CTL_GET_FREE = 0x4C82
LOOP_CONFIGURE = 0x4C0A
LOOP_CLR_FD = 0x4C01
LO_FLAGS_DIRECT_IO = 16
# struct loop_config: fd, block_size, struct loop_info64 (lo_flags at 52),
# reserved
_LOOP_CONFIG = struct.Struct("=II52xI176x64x")


def _loop_attach(path, direct_io):
    """losetup --find --show [--direct-io=on] @path, as ioctls: a free
    loop device (LOOP_CTL_GET_FREE) set up over @path (LOOP_CONFIGURE); a
    device another attach took meanwhile is passed over."""
    backing = os.open(path, os.O_RDWR | (os.O_DIRECT if direct_io else 0))
    try:
        ctl = os.open("/dev/loop-control", os.O_RDWR)
        try:
            for _ in range(8):
                n = fcntl.ioctl(ctl, LOOP_CTL_GET_FREE)
                dev = f"/dev/loop{n}"
                fd = os.open(dev, os.O_RDWR)
                try:
                    fcntl.ioctl(fd, LOOP_CONFIGURE, _LOOP_CONFIG.pack(
                        backing, 0, LO_FLAGS_DIRECT_IO if direct_io else 0))
                    return dev
                except OSError as e:
                    if e.errno != errno.EBUSY:
                        raise
                finally:
                    os.close(fd)
            raise RuntimeError(f"{path}: no free loop device after 8 tries")
        finally:
            os.close(ctl)
    finally:
        os.close(backing)


def _loop_detach(dev):
    """losetup -d @dev: detached now, or when its last user closes it."""
    try:
        fd = os.open(dev, os.O_RDWR)
    except FileNotFoundError:
        return
    try:
        fcntl.ioctl(fd, LOOP_CLR_FD)
    except OSError:             # not attached any more
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def loop_device(size, directory="/tmp", direct_io=False):
    """A loop device over a sparse file of @size bytes in @directory (set up
    by ioctls: a losetup process costs 0.13 s in a TCG guest, and a suite
    sets up some 180 loop devices)."""
    import tempfile
    fd, path = tempfile.mkstemp(dir=directory, prefix="redcap-loop-")
    os.ftruncate(fd, size)
    os.close(fd)
    dev = _loop_attach(path, direct_io)
    try:
        # The attach's change event has udev's blkid read the device for a
        # few hundred milliseconds: not in the test's counts of its reads.
        # Best effort, and short: a make check of bb4e0c4 saw udev's queue
        # never empty again on 6.12 after the harness's stuck-read tests,
        # and a fixture that waited 60 s for it, then failed, failed every
        # test after them.
        sh("udevadm", "settle", "-t", "5", check=False)
        yield dev
    finally:
        _loop_detach(dev)
        os.unlink(path)


@contextlib.contextmanager
def brd_device(size_mib):
    """The brd RAM disk /dev/ram0 of @size_mib MiB (module reloaded)."""
    sh("modprobe", "-r", "brd", check=False)
    sh("modprobe", "brd", "rd_nr=1", f"rd_size={size_mib * 1024}")
    try:
        yield "/dev/ram0"
    finally:
        sh("modprobe", "-r", "brd", check=False)


BLKGETSIZE64 = 0x80081272


def dev_sectors(dev):
    """blockdev --getsz @dev, without a process of its own."""
    fd = os.open(dev, os.O_RDONLY)
    try:
        buf = fcntl.ioctl(fd, BLKGETSIZE64, b"\0" * 8)
    finally:
        os.close(fd)
    return struct.unpack("=Q", buf)[0] // SECTOR


def _ask(fn, *args):
    """A libdm query, with sh()'s limit and its report past it."""
    return fn(*args, timeout=300 * SLOW, on_timeout=blocked_report)


class Dm:
    """One device-mapper device; remove() (or the with-block) takes it away."""

    def __init__(self, name, table):
        self.name = name
        self.path = f"/dev/mapper/{name}"
        # Created as dmsetup creates, udev done with the device's rules (its
        # cookie): the node is there and blkid's probe is over.  A settle
        # on top cost 0.14 s a device, a minute of each guest suite.
        self._do("create", libdm.create, table)
        if not os.path.exists(self.path):
            sh("udevadm", "settle", check=False)
            if not os.path.exists(self.path):
                sh("dmsetup", "mknodes", name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()

    def remove(self, timeout=UDEV_WAIT):
        if os.path.exists(self.path) or self.exists():
            try:
                self._do("remove", libdm.remove, timeout=timeout)
            except AssertionError:
                # the remove waits on its udev cookie, which udev never
                # completed: release every cookie so that the devices the
                # test still holds come down, and fail this test, not the run
                sh("dmsetup", "--yes", "udevcomplete_all", check=False, report=False)
                raise

    def exists(self):
        return bool(_ask(libdm.info, self.name).exists)

    def message(self, *words, check=True):
        """What 'dmsetup message NAME 0 WORDS' would give, as a
        CompletedProcess (stdout: the target's answer; a refusal: exit 1
        and the errno's text in stderr), asked through libdevmapper."""
        args = ["message", self.name, "0", *words]
        try:
            out = _ask(libdm.message, self.name, words)
        except libdm.DmError as e:
            if check:
                raise RuntimeError(f"libdm {' '.join(args)}: {e.strerror}") from None
            return subprocess.CompletedProcess(args, 1, "", f"message on {self.name}: "
                                               f"{e.strerror}")
        return subprocess.CompletedProcess(args, 0, out if not out or out.endswith("\n")
                                           else out + "\n", "")

    def query(self, *words):
        return self.message(*words).stdout

    def refused(self, *words, target="redcap"):
        """A message that must fail: what @target logged for it, the
        device-mapper prefix stripped."""
        with kmsg() as k:
            r = self.message(*words, check=False)
            lines = [strip_dm_prefix(x) for x in k.lines() if target in x]
        assert r.returncode != 0, words
        return lines

    def stats(self):
        out = self.query("stats")
        return {k: _num(v) for k, v in (line.split("=", 1) for line in out.split())}

    def settled(self, timeout=30):
        """redcap: the stats once no fill is in flight (fills ahead and
        write fills complete on their own)."""
        end = time.monotonic() + timeout * SLOW
        while True:
            st = self.stats()
            if not st["segments_filling"]:
                return st
            assert time.monotonic() < end, f"fills still in flight: {st}"
            time.sleep(0.02)

    def cold(self):
        """redcap: forget what udev's probe cached and counted at creation."""
        self.message("drop_cache")
        self.message("reset_stats")

    def status(self):
        return _ask(libdm.status, self.name).split()

    def table(self):
        return _ask(libdm.table, self.name).strip()

    def _do(self, what, fn, *args, timeout=300 * SLOW):
        """fn(name, *args) through libdm: a refusal raises RuntimeError with
        the errno's text, a call past @timeout AssertionError with the
        kernel's view."""
        try:
            return fn(self.name, *args, timeout=timeout, on_timeout=blocked_report)
        except libdm.DmError as e:
            raise RuntimeError(f"libdm {what} {self.name}: {e.strerror}") from None

    def reload(self, table):
        self._do("reload", libdm.reload, table)

    def suspend(self):
        self._do("suspend", libdm.suspend)

    def resume(self):
        self._do("resume", libdm.resume)


def fio(dev, *args):
    """Runs one fio job on @dev; returns the job's read or write stats."""
    cmd = ["fio", "--name=job", f"--filename={dev}", "--direct=1", "--ioengine=psync",
           "--output-format=json", "--randrepeat=1", "--randseed=7", *args]
    out = sh(*cmd, check=True).stdout
    job = json.loads(out[out.index("{"):])["jobs"][0]
    rw = job["read"] if job["read"]["io_bytes"] else job["write"]
    return {"ios": rw["total_ios"], "bw_mbs": rw["bw_bytes"] / 1e6,
            "lat_us": rw["lat_ns"]["mean"] / 1e3}


def _num(v):
    try:
        return int(v)
    except ValueError:
        return v


def dm_major_minor(dev):
    st = os.stat(dev)
    return f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"


def disk_reads(dev):
    """(read ios, sectors read) of a block device from its sysfs stat."""
    name = os.path.basename(os.path.realpath(dev))
    with open(f"/sys/class/block/{name}/stat") as f:
        fields = f.read().split()
    return int(fields[0]), int(fields[2])


def reads_in_flight(dm):
    """Reads @dm has started and not completed (the block layer's count)."""
    with open(f"/sys/class/block/{os.path.basename(os.path.realpath(dm.path))}/inflight") as f:
        return int(f.read().split()[0])


# --------------------------------------------------------------------------
# LBA-stamped data


SECTORS_PER_BLOCK = BLOCK // SECTOR
_RECORD = struct.Struct("<QQ")


# Whole 1 MiB runs of stamps, once made, are kept (the last STAMP_RUNS_KEPT
# of them): a test writes a device's stamps and then checks every block it
# reads against them, often more than once.  In a TCG guest Python makes a
# MiB of stamps in about 56 ms and compares one in 2; checking a 64 MiB
# device read block by block took 6.8 s, 2.6 with the stamps kept.
STAMP_RUN = 2048                    # sectors
STAMP_RUNS_KEPT = 80
_stamp_runs = collections.OrderedDict()


def _make_stamps(first, count, seed):
    return b"".join(_RECORD.pack(s, seed) * (SECTOR // 16) for s in range(first, first + count))


def stamp_sectors(first, count, seed):
    """@count 512-byte sectors from sector @first: each one's every 16 bytes
    say which sector it is (its LBA on the device written) and which write
    (@seed), so a sector read from the wrong place, even within a page, is
    caught."""
    out, s, end = [], first, first + count
    while s < end:
        run, off = divmod(s, STAMP_RUN)
        n = min(end - s, STAMP_RUN - off)
        data = _stamp_runs.get((seed, run))
        if data is None and n == STAMP_RUN:
            data = _stamp_runs[seed, run] = _make_stamps(s, n, seed)
            if len(_stamp_runs) > STAMP_RUNS_KEPT:
                _stamp_runs.popitem(last=False)
        if data is None:
            out.append(_make_stamps(s, n, seed))
        else:
            _stamp_runs.move_to_end((seed, run))
            out.append(data[off * SECTOR:(off + n) * SECTOR])
        s += n
    return out[0] if len(out) == 1 else b"".join(out)


def stamp(blockno, seed):
    """4 KiB block @blockno: its 8 sectors stamped with their own sector
    numbers (stamp_sectors)."""
    return stamp_sectors(blockno * SECTORS_PER_BLOCK, SECTORS_PER_BLOCK, seed)


def stamp_record(data):
    """The (sector, seed) the 512-byte sector @data says it is, or a word
    for what it is instead ('zeroes', 'torn: ...')."""
    if data == bytes(len(data)):
        return "zeroes"
    sector, seed = _RECORD.unpack_from(data)
    if data != _RECORD.pack(sector, seed) * (len(data) // 16):
        return f"torn: starts (sector {sector}, seed {seed}), the rest differs"
    return f"(sector {sector}, seed {seed})"


def check_sectors(data, first, seed, what=""):
    """@data is what a read from sector @first returned: every sector must
    carry its own stamp.  The first that does not fails, saying which sector
    was expected and what was found there."""
    if len(data) % SECTOR:
        raise AssertionError(f"{what}{len(data)} bytes from sector {first}: not whole sectors")
    if data == stamp_sectors(first, len(data) // SECTOR, seed):
        return
    for i in range(len(data) // SECTOR):
        got = data[i * SECTOR:(i + 1) * SECTOR]
        if got != stamp_sectors(first + i, 1, seed):
            raise AssertionError(f"{what}sector {first + i}: expected (sector {first + i}, "
                                 f"seed {seed}), found {stamp_record(got)}")


def aligned(size):
    return mmap.mmap(-1, size)


_scratch = threading.local()
SCRATCH_KEPT = 16 << 20


def scratch(size):
    """This thread's page-aligned buffer of @size bytes, the same one every
    call: in a TCG guest a page faulted in costs about 0.1 ms, so a fresh
    mmap per request cost more than the request.  Not kept past 16 MiB: the
    guest has 2 GiB, and some tests press on its memory.  What it holds is
    the caller's until the thread's next scratch(): copy out what is kept
    (read_blocks() returns bytes)."""
    if size > SCRATCH_KEPT:
        return memoryview(aligned(size))
    buf = getattr(_scratch, "buf", None)
    if buf is None or len(buf) < size:
        buf = _scratch.buf = aligned(size)
    return memoryview(buf)[:size]


def write_stamped(dev, first, count, seed, direct=True):
    flags = os.O_WRONLY | (os.O_DIRECT if direct else 0)
    fd = os.open(dev, flags)
    try:
        # One buffer for every chunk (scratch()): a fresh mmap a chunk took
        # 1.9 of the 2.2 s that stamping a 64 MiB device took.
        chunk = STAMP_RUN // SECTORS_PER_BLOCK
        buf = scratch(max(1, min(chunk, count)) * BLOCK)
        for b in range(first, first + count, chunk):
            n = min(chunk, first + count - b)
            buf[:n * BLOCK] = stamp_sectors(b * SECTORS_PER_BLOCK, n * SECTORS_PER_BLOCK, seed)
            os.pwritev(fd, [buf[:n * BLOCK]], b * BLOCK)
        os.fsync(fd)
    finally:
        os.close(fd)


def read_blocks(dev, offset, length, direct=True):
    fd = os.open(dev, os.O_RDONLY | (os.O_DIRECT if direct else 0))
    try:
        buf = scratch(length)
        n = os.preadv(fd, [buf], offset)
        return bytes(buf[:n])
    finally:
        os.close(fd)


def check_block(data, blockno, seed):
    if len(data) != BLOCK:
        raise AssertionError(f"block {blockno}: {len(data)} bytes, not {BLOCK}")
    check_sectors(data, blockno * SECTORS_PER_BLOCK, seed, what=f"block {blockno}: ")


def read_pattern(dev, blocks, seed, bs=BLOCK):
    """Read 4 KiB-aligned requests of @bs bytes at each block of @blocks
    (in that order) and check every 4 KiB block's stamp."""
    fd = os.open(dev, os.O_RDONLY | os.O_DIRECT)
    buf = aligned(bs)
    try:
        for b in blocks:
            n = os.preadv(fd, [buf], b * BLOCK)
            assert n == bs, f"short read at block {b}: {n}"
            if buf[:] == stamp_sectors(b * SECTORS_PER_BLOCK, bs // SECTOR, seed):
                continue
            for i in range(bs // BLOCK):    # the first wrong block, named
                check_block(buf[i * BLOCK:(i + 1) * BLOCK], b + i, seed)
    finally:
        os.close(fd)


def udev_reload():
    """udevd reloads its rules.  Under a loaded host udevadm's control
    socket now and then answers "Broken pipe" (make check of 1e3ae53, 6.1):
    asked again, it reloads."""
    for _ in range(4):
        r = sh("udevadm", "control", "--reload", check=False)
        if not r.returncode:
            return
        time.sleep(0.5)
    raise RuntimeError(f"udevadm control --reload: exit {r.returncode}: {r.stderr.strip()}")


def udev_rule(path, text):
    """Put the udev rules @text in @path (under /run/udev/rules.d) and have
    udevd load them; remove_udev_rule() takes them back."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    udev_reload()


def remove_udev_rule(path):
    os.unlink(path)
    udev_reload()


HELD_RULES = "/run/udev/rules.d/00-redcap-tests-held.rules"


@contextlib.contextmanager
def udev_held():
    """No udev rule probes a dm device in the with block: a change event (a
    reload) would have blkid read the device, through the cache under test.
    The events run, with the flags of 55-dm.rules that skip the disk rules
    and the others (blkid, probe-bcache).  Not udevadm control
    --stop-exec-queue: after --start-exec-queue, systemd-udevd 252 now and
    then left its queue stalled for good, idle with no worker (a 6.12 guest
    suite under load; dmsetup's cookies then never completed)."""
    udev_rule(HELD_RULES, 'SUBSYSTEM=="block", KERNEL=="dm-[0-9]*", ACTION=="change", '
              'ENV{DM_NOSCAN}="1", ENV{DM_UDEV_DISABLE_DISK_RULES_FLAG}="1", '
              'ENV{DM_UDEV_DISABLE_OTHER_RULES_FLAG}="1"\n')
    try:
        yield
    finally:
        remove_udev_rule(HELD_RULES)


# How long a dm-delay below holds what the test holds: for good (10 min);
# leaving slow_down() reloads the delay, which sends it down at once.
HELD_MS = 600000


@contextlib.contextmanager
def slow_down(delay, dev, n, ms=3000):
    """Make the dm-delay device @delay (over @dev, @n sectors) hold every
    read @ms milliseconds for the with block.  Only once the stack over it
    is built, and with udev held: blkid would read every device of the
    stack, @ms a read."""
    with udev_held():
        delay.reload(f"0 {n} delay {dev} 0 {ms}")
        sh("dmsetup", "resume", "--noudevsync", delay.name)
        try:
            yield
        finally:
            delay.reload(f"0 {n} delay {dev} 0 0")
            sh("dmsetup", "resume", "--noudevsync", delay.name)


def blocked_report():
    """What the kernel says about tasks that wait: sysrq-w's list of blocked
    tasks (into the kernel log, returned from there), the kernel stacks of
    this process's threads, and every dm device's status."""
    out = []
    with kmsg() as k:
        with open("/proc/sysrq-trigger", "w") as f:
            f.write("w")
        time.sleep(0.5)
        out += k.lines()
    for tid in sorted(os.listdir("/proc/self/task"), key=int):
        try:
            with open(f"/proc/self/task/{tid}/stack") as f:
                out.append(f"task {tid}:\n{f.read().rstrip()}")
        except OSError as e:
            out.append(f"task {tid}: {e}")
    out.append(udev_tasks())
    # the udev side of a dmsetup that waits on its cookie: the cookies
    # still held, and whether udev's queue is empty (exit 0)
    for cmd in (("dmsetup", "info", "-c"), ("dmsetup", "table"), ("dmsetup", "status"),
                ("dmsetup", "udevcookies"), ("udevadm", "settle", "-t", "0")):
        try:
            r = sh(*cmd, check=False, timeout=30, report=False)
        except AssertionError as e:
            out.append(str(e))
            continue
        out.append(f"{' '.join(cmd)} (exit {r.returncode}):\n"
                   f"{r.stdout.rstrip()}{r.stderr.rstrip()}")
    return "\n".join(out)


def udev_tasks():
    """Each udev and dmsetup process: its state, where it sleeps and its
    command line (a remove waiting on its udev cookie shows here, not in
    sysrq-w's list of D-state tasks)."""
    out = ["udev and dmsetup processes (pid state wchan cmdline):"]
    for pid in sorted((p for p in os.listdir("/proc") if p.isdigit()), key=int):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
            if not re.search(r"udev|dmsetup", cmd):
                continue
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
            with open(f"/proc/{pid}/wchan") as f:
                wchan = f.read()
        except OSError:		# gone meanwhile
            continue
        out.append(f"  {pid} {state} {wchan or '-'} {cmd}")
    return "\n".join(out)


def join_or_report(threads, timeout=300):
    """Join @threads within @timeout seconds in all.  A thread still blocked
    then fails the test with what the kernel says about the waiters (a read
    the kernel never completes must fail a test, not hang the suite)."""
    deadline = time.monotonic() + timeout
    for t in threads:
        t.join(max(0, deadline - time.monotonic()))
    stuck = sum(t.is_alive() for t in threads)
    if stuck:
        raise AssertionError(f"{stuck} of {len(threads)} threads still blocked after "
                             f"{timeout} s\n{blocked_report()}")


class Outcome(threading.Thread):
    """fn(*args) in a thread of its own, whose outcome the test checks:
    result() joins it (a thread still blocked then fails the test with
    what the kernel says about the waiters) and returns what fn returned,
    or raises what it raised (an EIO included)."""

    def __init__(self, fn, *args):
        super().__init__(daemon=True)
        self.fn, self.args = fn, args
        self.value, self.error = None, None
        self.start()

    def run(self):
        try:
            self.value = self.fn(*self.args)
        except BaseException as e:  # noqa: B902 - raised by result()
            self.error = e

    def result(self, timeout=60 * SLOW):
        join_or_report([self], timeout)
        if self.error is not None:
            raise self.error
        return self.value


def in_kernel_function(pid, name):
    """Whether the task @pid is in the kernel function @name (its stack)."""
    try:
        with open(f"/proc/{pid}/stack") as f:
            return any(re.search(rf"\] {name}\+0x", line) for line in f)
    except OSError:
        return False


def in_threads(fn, args_list, timeout=300):
    """Run fn(*args) for each args in threads; re-raise the first failure.
    A thread still blocked after @timeout seconds fails the caller (a read
    the kernel never completes must fail a test, not hang the suite)."""
    errors = []

    def wrap(args):
        try:
            fn(*args)
        except BaseException as e:  # noqa: B902 - reported below
            errors.append(e)

    threads = [threading.Thread(target=wrap, args=(a,), daemon=True) for a in args_list]
    for t in threads:
        t.start()
    join_or_report(threads, timeout)
    if errors:
        raise errors[0]


def drop_caches():
    sh("sync")
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def drop_slab():
    """The kernel asks every shrinker for what it can give (vm.drop_caches 2):
    an inactive redcap cache gives its pages back."""
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("2\n")


def regrown(rc, probe_block, seed):
    """Read @probe_block, stamped with @seed (each read may start the
    regrow), until no entry of @rc is bare; the stats then.  The regrow runs
    in the background: no time asked."""
    for _ in range(600):
        read_pattern(rc.path, [probe_block], seed)
        st = rc.stats()
        if st["segments_bare"] == 0:
            return st
        time.sleep(0.1)
    raise AssertionError(f"still bare: {st}")


# --------------------------------------------------------------------------
# Kernel log


class Kmsg:
    """Kernel log lines written after creation (reads /dev/kmsg)."""

    def __init__(self):
        self.fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
        os.lseek(self.fd, 0, os.SEEK_END)

    def lines(self):
        out = []
        while True:
            try:
                rec = os.read(self.fd, 8192).decode(errors="replace")
            except BlockingIOError:
                break
            except OSError:  # EPIPE: overwritten records
                continue
            out.append(rec.split(";", 1)[-1].rstrip("\n"))
        return out

    def close(self):
        os.close(self.fd)


@contextlib.contextmanager
def kmsg():
    k = Kmsg()
    try:
        yield k
    finally:
        k.close()


def strip_dm_prefix(line):
    return re.sub(r"^device-mapper: [a-z-]+: ", "", line)


# The fi_* parameters of test builds (make modules FAULT_INJECTION=1).
PARAMS = "/sys/module/dm_redcap/parameters"


def set_param(name, value):
    path = f"{PARAMS}/{name}"
    assert os.path.exists(path), \
        f"{path} missing: the suite needs test builds (make modules FAULT_INJECTION=1)"
    with open(path, "w") as f:
        f.write(f"{value}\n")
