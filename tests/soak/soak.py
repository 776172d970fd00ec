#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Soak test of redcap: everything at once for N minutes, then verify.

Runs inside the guest as root (tests/soak/run boots it; by hand:
tests/vm/run -- python3 tests/soak/soak.py --minutes 3 --out $PWD/build/soak-dev).

Stack A, a raw block device verified block by block:
    loop (sparse 64 MiB file in /tmp) <- soak-fl (linear, reloaded to flakey
    now and then) <- soak-a (redcap, 128 KiB x 64 to start, policy always)
  4 readers (random 4..64 KiB O_DIRECT reads, every 4 KiB block's LBA stamp
  checked) and 2 writers (random 4..32 KiB O_DIRECT writes of stamped
  blocks, a fresh seed each) over the same ranges, checked against a model
  of each block's acceptable contents (a seed, or zero after a discard).
  Striped locks (block % 1024) are held across an I/O and its model update
  or check, so different blocks of one segment are read and written at once.
  A chaos thread does, every 1-3 s, in shuffled rounds of all kinds: policy
  and write_policy switches (a message within write-through, invalidate and
  update, or within the write cache, back and selective; a reload between
  them), drop_cache, a discard and a write-zeroes of a
  range (BLKDISCARD / BLKZEROOUT), suspend+resume under I/O, a reload of the
  same geometry (other features), a reload of another geometry, removal and
  re-creation of soak-a (workers paused), and a flakey phase (soak-fl
  reloaded to `flakey <loop> 0 1 1` for ~8 s: I/O fails every other second).
  A write or discard that fails with EIO leaves each block it covers with
  {old..., new} acceptable until the next successful write, or until the
  flakey phase ends and the block is read at the origin (the loop device)
  and expected as it is there (with a write cache, after a flush has
  written its dirty data back; a failed discard or write-zeroes there leaves
  any stamp of the block acceptable until then, since the dirty data in its
  range was dropped first); a read that fails with EIO while the flakey
  phase is on is counted, not an error.  The flakey phase also does a
  discard and a write-zeroes while I/O fails.

Stack B, a filesystem in use:
    loop (96 MiB) <- soak-b (redcap 128 KiB x 64, write_policy update to
    start, then any, as on A) <- ext4
  stress-ng --hdd --verify runs back to back (each must succeed), fstrim
  every ~30 s, the page cache and the slabs dropped every 3 s (vm.drop_caches
  3 calls every shrinker: an inactive cache of either stack gives its pages
  back, and regrows them once a chaos switch makes it active), and a second chaos thread
  (policy, write_policy, drop_cache, suspend+resume, same-geometry reload)
  every 2-5 s.

At the end (workers stopped, soak-fl linear, both caches switched to policy
always so that whatever they hold is served): soak-a is read whole and
checked against the model as cached, then after drop_cache, and compared
with the loop device byte for byte; ext4 is unmounted, soak-b must equal its
loop device and e2fsck -fn must be clean.  redcap's read counters must add
up (docs/redcap.rst, stats).  Writes DIR/summary.json, DIR/summary.md, DIR/actions.log (every
chaos action with its time) and DIR/kmsg-soak.txt (the kernel log during the
run).  Exit status 0 only if no block ever read back wrong and every step
(dmsetup, stress-ng, fstrim, e2fsck, comparisons) succeeded.

--self-test proves the checker: once, ~20 s in, it writes a bogus stamp to
one block of stack A's loop device behind redcap's back (holding that
block's lock), drops the cache and reads the block through soak-a: the soak
must then report a verify error and fail.
"""
import argparse
import collections
import errno
import fcntl
import importlib.machinery
import importlib.util
import json
import os
import platform
import random
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback

TOP = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "guest"))

from dmtest import BLOCK, SECTORS_PER_BLOCK, Kmsg, aligned, stamp  # noqa: E402

BLKDISCARD = 0x1277             # _IO(0x12, 119): <linux/fs.h>
BLKZEROOUT = 0x127f             # _IO(0x12, 127)

A_SIZE = 64 << 20
A_BLOCKS = A_SIZE // BLOCK
B_SIZE = 96 << 20
GEOMETRIES = [(256, 64), (128, 128), (512, 16)]     # (segment sectors, segments)
POLICIES = ["always", "off", "adaptive", "caware", "adaptive+caware"]
WRITE_POLICIES = ["invalidate", "update", "back", "selective"]
# A message switches within one of these; between them takes a reload.
WRITE_FAMILIES = [("invalidate", "update"), ("back", "selective")]
ANY = -1                        # model value: any stamp of the block, or zeroes
NSTRIPES = 1024
ZERO = 0                        # model value: zeroes (seeds are >= 1)
ZERO_BLOCK = bytes(BLOCK)
INITIAL_SEED = 1
NREADERS, NWRITERS = 4, 2
VHOT = (4096, 128)              # a very hot 512 KiB (4 segments): (first block, blocks)
HOT = (0, 2048)                 # a hot 8 MiB
A_KINDS = ["policy", "write_policy", "prefetch", "drop_cache", "discard", "zeroout",
           "suspend_resume", "reload_same", "reload_geometry", "recreate", "flakey"]
B_KINDS = ["policy", "write_policy", "prefetch", "drop_cache", "suspend_resume", "reload_same"]
# The read-ahead of backward streams: segments ahead (the target's default is
# 2).  Several fills ahead go down in one request (a run), which fails or
# completes as a whole.
PREFETCH = [0, 1, 2, 4, 8]
FLAKEY_SECONDS = 8
CMD_TIMEOUT = 600               # a dmsetup step taking longer is a hang
STALL_SECONDS = 300             # no I/O completing on A for this long is a hang
MAX_VERIFY_KEPT = 20
# soak-a's counters summed over the caches it had (summary: "soak-a, all").
CUMULATIVE = ["reads", "read_hits", "read_hits_waited", "read_misses",
              "read_bypassed",
              "read_bypassed_held", "read_resent", "fill_ios", "fill_joined", "fill_along",
              "fill_errors",
              "fill_stale", "prefetches", "prefetch_hits", "writes", "invalidations", "updates",
              "write_allocs", "evictions", "switches", "write_cached", "write_through",
              "write_waits", "writeback_ios", "writeback_errors", "flushes", "given_back",
              "regrown"]


def now():
    return time.monotonic()


def load_kreports():
    path = os.path.join(TOP, "tests", "vm", "kreports")
    loader = importlib.machinery.SourceFileLoader("kreports", path)
    spec = importlib.util.spec_from_loader("kreports", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


class Soak:
    def __init__(self, args):
        self.args = args
        self.out = args.out
        self.rng_a = random.Random(args.seed * 3 + 1)      # chaos A
        self.rng_b = random.Random(args.seed * 3 + 2)      # chaos B
        self.tl = threading.local()                         # failures per thread
        self.t0 = now()
        self.deadline = self.t0 + args.minutes * 60
        self.lock = threading.Lock()            # counters, failures, logs
        self.count = collections.Counter()
        self.actions = {"A": collections.Counter(), "B": collections.Counter()}
        self.action_time = {"A": collections.defaultdict(float), "B": collections.defaultdict(float)}
        self.failures = []
        self.verify_errors = []
        self.nverify = 0
        self.stress = {"runs": 0, "failures": 0, "failed_runs": []}
        self.final = {}
        self.stats = {}
        self.retired = collections.Counter()    # counters of soak-a's earlier caches
        self.kernel_reports = []
        self.actlog = open(os.path.join(self.out, "actions.log"), "w", buffering=1)
        self.kmsg_file = open(os.path.join(self.out, "kmsg-soak.txt"), "w", buffering=1)
        # Stack A's model: the acceptable contents of each block.
        self.model = [(INITIAL_SEED,)] * A_BLOCKS
        self.stripes = [threading.Lock() for _ in range(NSTRIPES)]
        self.seed_lock = threading.Lock()
        self.next_seed = INITIAL_SEED + 1
        # Odd while soak-fl is (or is becoming, or leaving) flakey.
        self.epoch = 0
        self.stop_a = threading.Event()
        self.stop_b = threading.Event()
        self.stop_kmsg = threading.Event()
        self.gate = Gate()
        self.progress_t = now()                 # last I/O completed on A
        self.a_state = {"geometry": GEOMETRIES[0], "policy": "always", "write_policy": "invalidate"}
        self.b_state = {"policy": "always", "write_policy": "update"}
        self.loops = []
        self.files = []
        self.dms = []                           # created, removed in reverse order
        self.mnt = None
        self.path_a = "/dev/mapper/soak-a"      # soak-a's node (node_of)
        self.self_test_done = False

    # ------------------------------------------------------------------
    # Book-keeping

    def elapsed(self):
        return now() - self.t0

    def inc(self, key, n=1):
        with self.lock:
            self.count[key] += n

    def fail(self, what):
        line = f"[{self.elapsed():8.1f}] FAILURE {what}"
        with self.lock:
            self.failures.append(what)
        self.tl.failures = getattr(self.tl, "failures", 0) + 1
        self.actlog.write(line + "\n")
        print(f"soak: {line}", flush=True)

    def log(self, stack, text):
        self.actlog.write(f"[{self.elapsed():8.1f}] {time.strftime('%H:%M:%S')} {stack} {text}\n")

    def run(self, *argv, input=None, timeout=CMD_TIMEOUT, what=None, check=True):
        """Runs a command; a non-zero exit (or a hang) is a soak failure when
        @check.  Returns (exit status, stdout, stderr)."""
        what = what or " ".join(argv)
        try:
            p = subprocess.Popen(argv, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        except OSError as e:
            if check:
                self.fail(f"{what}: {e}")
            return -1, "", str(e)
        try:
            out, err = p.communicate(input=input, timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            try:
                out, err = p.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                out, err = "", ""
            if check:
                self.fail(f"{what}: no answer after {timeout} s (killed)")
            return -2, out or "", err or ""
        if p.returncode and check:
            self.fail(f"{what}: exit {p.returncode}: {err.strip()[-500:]}")
        return p.returncode, out, err

    def dmsetup(self, *args, input=None, check=True):
        t = now()
        rc, out, err = self.run("dmsetup", *args, input=input, check=check)
        steps = getattr(self.tl, "steps", None)
        if steps is not None:
            steps.append(f"{args[0]} {now() - t:.1f}")
        return rc == 0, out

    def new_seed(self):
        with self.seed_lock:
            s = self.next_seed
            self.next_seed += 1
            return s

    # ------------------------------------------------------------------
    # Devices

    def loop_device(self, size):
        fd, path = tempfile.mkstemp(dir="/tmp", prefix="soak-loop-")
        os.ftruncate(fd, size)
        os.close(fd)
        self.files.append(path)
        rc, out, _ = self.run("losetup", "--find", "--show", path)
        if rc:
            raise RuntimeError("losetup failed")
        dev = out.strip()
        self.loops.append(dev)
        return dev

    def dm_create(self, name, table, settle=True):
        """dmsetup create, waiting for udev to handle its event and settle.
        Without @settle, udev is not waited for at all (--noudevsync): on the
        debug kernel udev took 30-50 s to handle one event while stack B's
        resumes kept it busy probing, and the workers on A wait meanwhile.
        They open the kernel's own node (node_of), not udev's link."""
        sync = [] if settle else ["--noudevsync"]
        ok, _ = self.dmsetup("create", *sync, name, input=table + "\n")
        if not ok:
            return False
        if name not in self.dms:
            self.dms.append(name)
        if settle:
            self.run("udevadm", "settle", check=False)
            if not os.path.exists(f"/dev/mapper/{name}"):
                self.dmsetup("mknodes", name)
        if name == "soak-a":
            self.path_a = self.node_of(name)
        return True

    def node_of(self, name):
        """/dev/dm-N of dm device @name: devtmpfs creates it in the kernel
        when the device is added, whatever udev is doing."""
        for d in os.listdir("/sys/block"):
            try:
                with open(f"/sys/block/{d}/dm/name") as f:
                    if f.read().strip() != name:
                        continue
            except OSError:
                continue
            if os.path.exists(f"/dev/{d}"):
                return f"/dev/{d}"
        return f"/dev/mapper/{name}"

    def open_count(self, name):
        ok, out = self.dmsetup("info", "-c", "--noheadings", "-o", "open", name, check=False)
        try:
            return int(out) if ok else -1
        except ValueError:
            return -1

    def dm_remove(self, name, check=True, settle=True):
        """dmsetup remove --retry.  Without @settle, udev is not waited for
        (--noudevsync), and if the device is still open (udev's blkid
        probing it after a resume), wait up to 120 s for it to be closed
        and try again."""
        if settle:
            self.run("udevadm", "settle", check=False)
        sync = [] if settle else ["--noudevsync"]
        ok, _ = self.dmsetup("remove", *sync, "--retry", name, check=check and settle)
        if not ok and not settle:
            deadline = now() + 120
            while self.open_count(name) > 0 and now() < deadline:
                time.sleep(0.5)
            ok, _ = self.dmsetup("remove", *sync, "--retry", name, check=check)
        if ok and name in self.dms:
            self.dms.remove(name)
        return ok

    def resume(self, name, check=True):
        """Resume without waiting for udev: its rules (blkid reading the
        device) run in the background, while the I/O and the next actions
        go on; waiting for them made each resume 3-6 s under TCG.  Removal
        waits for the device to be closed (dm_remove)."""
        return self.dmsetup("resume", "--noudevsync", name, check=check)[0]

    def reload(self, name, table):
        """Load @table and swap it in: reload, suspend, resume."""
        return (self.dmsetup("reload", name, input=table + "\n")[0] and
                self.dmsetup("suspend", name)[0] and self.resume(name))

    def flush(self, name):
        """fsync of dm device @name: an empty flush down its stack."""
        try:
            fd = os.open(self.node_of(name), os.O_WRONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as e:
            self.fail(f"flush of {name}: {e}")
            return False
        return True

    def dm_table(self, name):
        ok, out = self.dmsetup("table", name, check=False)
        return out.strip() if ok else ""

    def stats_of(self, name):
        ok, out = self.dmsetup("message", name, "0", "stats", check=False)
        if not ok:
            return {}
        st = {}
        for line in out.split():
            k, _, v = line.partition("=")
            try:
                st[k] = int(v)
            except ValueError:
                st[k] = v
        return st

    def table_a(self, geometry=None, policy=None, write_policy=None):
        seg, nsegs = geometry or self.a_state["geometry"]
        p = policy or self.a_state["policy"]
        wp = write_policy or self.a_state["write_policy"]
        return f"0 {A_SIZE // 512} redcap /dev/mapper/soak-fl {seg} {nsegs} 4 policy {p} write_policy {wp}"

    def table_b(self, policy=None, write_policy=None):
        p = policy or self.b_state["policy"]
        wp = write_policy or self.b_state["write_policy"]
        return f"0 {B_SIZE // 512} redcap {self.loop_b} 256 64 4 policy {p} write_policy {wp}"

    def check_table(self, name, geometry, policy, write_policy):
        """The live table says what was loaded (features apply at resume)."""
        words = self.dm_table(name).split()
        try:
            seg, nsegs = int(words[4]), int(words[5])
            feats = words[7:7 + int(words[6])] if len(words) > 6 else []
        except (IndexError, ValueError):
            self.fail(f"{name}: unreadable table {' '.join(words)!r}")
            return
        f = dict(zip(feats[0::2], feats[1::2]))
        # dmsetup table leaves out what is the target's default
        got = ((seg, nsegs), f.get("policy", "adaptive+caware"),
               f.get("write_policy", "invalidate"))
        if got != (tuple(geometry), policy, write_policy):
            self.fail(f"{name}: live table {' '.join(words)!r} is not geometry {geometry} "
                      f"policy {policy} write_policy {write_policy}")

    def setup(self):
        self.run("modprobe", "dm-flakey")
        self.loop_a = self.loop_device(A_SIZE)
        name = os.path.basename(self.loop_a)
        with open(f"/sys/block/{name}/queue/discard_max_bytes") as f:
            if int(f.read()) == 0:
                raise RuntimeError(f"{self.loop_a} does not support discard")
        self.stamp_all(self.loop_a)
        if not self.dm_create("soak-fl", f"0 {A_SIZE // 512} linear {self.loop_a} 0"):
            raise RuntimeError("cannot create soak-fl")
        if not self.dm_create("soak-a", self.table_a()):
            raise RuntimeError("cannot create soak-a")
        self.loop_b = self.loop_device(B_SIZE)
        if not self.dm_create("soak-b", self.table_b()):
            raise RuntimeError("cannot create soak-b")
        if self.run("mkfs.ext4", "-q", "-F", "-E", "nodiscard", "/dev/mapper/soak-b")[0]:
            raise RuntimeError("mkfs.ext4 failed")
        self.mnt = tempfile.mkdtemp(prefix="soak-mnt-")
        if self.run("mount", "/dev/mapper/soak-b", self.mnt)[0]:
            os.rmdir(self.mnt)
            self.mnt = None
            raise RuntimeError("mount failed")

    def stamp_all(self, dev):
        fd = os.open(dev, os.O_WRONLY | os.O_DIRECT)
        try:
            chunk = 256
            buf = aligned(chunk * BLOCK)
            for b in range(0, A_BLOCKS, chunk):
                for i in range(chunk):
                    buf[i * BLOCK:(i + 1) * BLOCK] = stamp(b + i, INITIAL_SEED)
                os.pwritev(fd, [buf], b * BLOCK)
        finally:
            os.close(fd)

    def teardown(self):
        if self.mnt:
            if self.run("umount", self.mnt, check=False)[0]:
                self.run("umount", "-l", self.mnt, check=False)
            try:
                os.rmdir(self.mnt)
            except OSError:
                pass
            self.mnt = None
        for name in reversed(list(self.dms)):
            self.resume(name, check=False)
            self.dm_remove(name, check=False)
        for dev in self.loops:
            self.run("losetup", "-d", dev, check=False)
        for path in self.files:
            try:
                os.unlink(path)
            except OSError:
                pass
        left = [n for n in ("soak-a", "soak-fl", "soak-b")
                if self.run("dmsetup", "info", n, check=False)[0] == 0]
        if left:
            self.fail(f"teardown left {left}")

    # ------------------------------------------------------------------
    # Stack A: model and checks

    def lock_blocks(self, first, n):
        idx = sorted({b % NSTRIPES for b in range(first, first + min(n, NSTRIPES))})
        for i in idx:
            self.stripes[i].acquire()
        return idx

    def unlock(self, idx):
        for i in reversed(idx):
            self.stripes[i].release()

    def eio_expected(self, e0):
        e1 = self.epoch
        return e0 % 2 or e1 % 2 or e0 != e1

    def match(self, block, data):
        """The acceptable content of @block that @data is, or None."""
        for v in self.model[block]:
            if v == ANY:
                if data == ZERO_BLOCK:
                    return ZERO
                _, seed = struct.unpack_from("<QQ", data)
                if data == stamp(block, seed):
                    return seed
            elif data == (ZERO_BLOCK if v == ZERO else stamp(block, v)):
                return v
        return None

    def resolve(self):
        """After a flakey phase: a block a failed write or discard left with
        two acceptable contents has one at the origin.  Read it there (the
        loop device; reading behind redcap's back is harmless) with the
        block's lock held, and expect that one only from now on, so that a
        cache holding the other is caught.  Returns the blocks resolved."""
        fd = os.open(self.loop_a, os.O_RDONLY | os.O_DIRECT)
        buf = aligned(16 * BLOCK)
        n, b = 0, 0
        try:
            while b < A_BLOCKS:
                if len(self.model[b]) < 2:
                    b += 1
                    continue
                run = 1                 # a run of such blocks, read at once
                while run < 16 and b + run < A_BLOCKS and len(self.model[b + run]) > 1:
                    run += 1
                idx = self.lock_blocks(b, run)
                try:
                    os.preadv(fd, [memoryview(buf)[:run * BLOCK]], b * BLOCK)
                    for j in range(b, b + run):
                        data = buf[(j - b) * BLOCK:(j - b + 1) * BLOCK]
                        if len(self.model[j]) > 1 and self.verify(j, data, "origin after flakey"):
                            self.model[j] = (self.match(j, data),)
                            n += 1
                finally:
                    self.unlock(idx)
                b += run
        finally:
            os.close(fd)
        return n

    def verify(self, block, data, where):
        """@data is what a read of @block returned; the model must accept it.
        Called with the block's stripe held (or single-threaded)."""
        ok = self.model[block]
        if self.match(block, data) is not None:
            return True
        rec = {"block": block, "where": where, "t": round(self.elapsed(), 2),
               "expected": ["ZERO" if v == ZERO else v for v in ok],
               "got": self.describe(data)}
        if where == "read":
            # Where the stale copy lives: the origin too, or the cache only.
            rec["origin"] = self.describe(self.read_origin(block))
        with self.lock:
            self.nverify += 1
            if len(self.verify_errors) < MAX_VERIFY_KEPT:
                self.verify_errors.append(rec)
        self.log("A", f"VERIFY ERROR {json.dumps(rec)}")
        if self.nverify <= MAX_VERIFY_KEPT:
            print(f"soak: VERIFY ERROR {json.dumps(rec)}", flush=True)
        return False

    @staticmethod
    def describe(data):
        """A block's contents for a report: ZERO or the stamp it carries (a
        block's stamps carry the sector number of each of its sectors)."""
        if data == ZERO_BLOCK:
            return "ZERO"
        gsec, gs = struct.unpack_from("<QQ", data)
        gb = gsec // SECTORS_PER_BLOCK
        return {"block": gb, "sector": gsec, "seed": gs, "whole_block": data == stamp(gb, gs)}

    def read_origin(self, block):
        """@block as soak-a's origin (the loop device) holds it now."""
        buf = aligned(BLOCK)
        fd = os.open(self.loop_a, os.O_RDONLY | os.O_DIRECT)
        try:
            os.preadv(fd, [buf], block * BLOCK)
        finally:
            os.close(fd)
        return bytes(buf)

    def pick(self, rng, n):
        """A first block for an I/O of @n blocks: mostly hot ranges, shared
        by every worker so that they overlap."""
        r = rng.random()
        if r < 0.3:
            first, size = VHOT
        elif r < 0.7:
            first, size = HOT
        else:
            first, size = 0, A_BLOCKS
        return first + rng.randrange(max(1, size - n + 1))

    def reader(self, i):
        rng = random.Random(self.args.seed * 1000 + i)
        buf = aligned(16 * BLOCK)
        mv = memoryview(buf)
        self.worker_loop(lambda fd: self.read_once(fd, rng, buf, mv), os.O_RDONLY, f"reader{i}")

    def writer(self, i):
        rng = random.Random(self.args.seed * 1000 + 100 + i)
        buf = aligned(8 * BLOCK)
        mv = memoryview(buf)
        self.worker_loop(lambda fd: self.write_once(fd, rng, buf, mv), os.O_WRONLY, f"writer{i}")

    def worker_loop(self, once, flags, name):
        try:
            while not self.stop_a.is_set():
                with self.gate.inside() as running:
                    if not running:
                        continue
                    fd = os.open(self.path_a, flags | os.O_DIRECT)
                    try:
                        while not self.stop_a.is_set() and not self.gate.pausing():
                            once(fd)
                            self.progress_t = now()
                    finally:
                        os.close(fd)
        except BaseException:  # noqa: B902 - a worker's death is a failure
            self.fail(f"{name} died: {traceback.format_exc()}")

    def io_error(self, kind, e, e0, first, n):
        if e.errno == errno.EIO and self.eio_expected(e0):
            self.inc(f"{kind}_eio")
            return
        self.inc(f"{kind}_error_unexpected")
        self.fail(f"{kind} of blocks {first}..{first + n - 1}: {e} "
                  f"(flakey epoch {e0}->{self.epoch})")

    def read_once(self, fd, rng, buf, mv):
        n = rng.randint(1, 16)
        first = self.pick(rng, n)
        idx = self.lock_blocks(first, n)
        try:
            e0 = self.epoch
            try:
                got = os.preadv(fd, [mv[:n * BLOCK]], first * BLOCK)
            except OSError as e:
                self.io_error("read", e, e0, first, n)
                return
            if got != n * BLOCK:
                self.fail(f"read of blocks {first}..{first + n - 1}: {got} bytes")
                return
            for j in range(n):
                self.verify(first + j, buf[j * BLOCK:(j + 1) * BLOCK], "read")
        finally:
            self.unlock(idx)
        self.inc("reads")
        self.inc("read_blocks", n)

    def write_once(self, fd, rng, buf, mv):
        n = rng.randint(1, 8)
        first = self.pick(rng, n)
        seed = self.new_seed()
        for j in range(n):
            buf[j * BLOCK:(j + 1) * BLOCK] = stamp(first + j, seed)
        idx = self.lock_blocks(first, n)
        try:
            e0 = self.epoch
            try:
                got = os.pwritev(fd, [mv[:n * BLOCK]], first * BLOCK)
            except OSError as e:
                for b in range(first, first + n):
                    self.model[b] = tuple(set(self.model[b]) | {seed})
                self.io_error("write", e, e0, first, n)
                return
            if got != n * BLOCK:
                for b in range(first, first + n):
                    self.model[b] = tuple(set(self.model[b]) | {seed})
                self.fail(f"write of blocks {first}..{first + n - 1}: {got} bytes")
                return
            for b in range(first, first + n):
                self.model[b] = (seed,)
        finally:
            self.unlock(idx)
        self.inc("writes")
        self.inc("write_blocks", n)

    def zero_range(self, op):
        """BLKDISCARD or BLKZEROOUT of a random aligned range of soak-a; the
        model says zeroes (or either, if it failed)."""
        n = self.rng_a.choice([1, 8, 32, 64, 256, 512])
        first = self.pick(self.rng_a, n) // n * n
        idx = self.lock_blocks(first, n)
        fd = os.open(self.path_a, os.O_WRONLY)
        try:
            e0 = self.epoch
            try:
                fcntl.ioctl(fd, op, struct.pack("QQ", first * BLOCK, n * BLOCK))
            except OSError as e:
                # The write cache drops the range's dirty data before the
                # origin refuses: what the origin held before shows (a
                # failed write leaves its range undefined), resolved there.
                extra = {ANY} if self.caching() else {ZERO}
                for b in range(first, first + n):
                    self.model[b] = tuple(set(self.model[b]) | extra)
                self.io_error("discard" if op == BLKDISCARD else "zeroout", e, e0, first, n)
                return f"blocks {first}+{n}: {e.strerror}"
            for b in range(first, first + n):
                self.model[b] = (ZERO,)
            return f"blocks {first}+{n}"
        finally:
            os.close(fd)
            self.unlock(idx)

    def self_test_corrupt(self):
        """Write a bogus stamp to one block on the loop device, behind
        redcap's back, then read it through soak-a: a verify error."""
        block = VHOT[0] + self.rng_a.randrange(VHOT[1])
        idx = self.lock_blocks(block, 1)
        try:
            buf = aligned(BLOCK)
            buf[:] = stamp(block, 0xbad5eed)
            fd = os.open(self.loop_a, os.O_WRONLY | os.O_DIRECT)
            try:
                os.pwritev(fd, [buf], block * BLOCK)
            finally:
                os.close(fd)
            self.dmsetup("message", "soak-a", "0", "drop_cache")
            fd = os.open(self.path_a, os.O_RDONLY | os.O_DIRECT)
            try:
                os.preadv(fd, [buf], block * BLOCK)
            finally:
                os.close(fd)
            caught = not self.verify(block, bytes(buf), "self-test")
        finally:
            self.unlock(idx)
        self.self_test_done = True
        return f"block {block} stamped with seed {0xbad5eed} on {self.loop_a}; " \
               f"read back through soak-a: {'verify error' if caught else 'NOT CAUGHT'}"

    # ------------------------------------------------------------------
    # Chaos

    def chaos(self, stack, kinds, interval, stop, do):
        rng = random.Random(self.args.seed * 7 + (1 if stack == "A" else 2))
        try:
            while not stop.is_set():
                order = list(kinds)
                rng.shuffle(order)
                for kind in order:
                    if stop.wait(rng.uniform(*interval)):
                        return
                    if (stack == "A" and self.args.self_test and not self.self_test_done and
                            self.elapsed() > 20):
                        self.timed(stack, "self_test", self.self_test_corrupt)
                    self.timed(stack, kind, lambda: do(kind))
        except BaseException:  # noqa: B902
            self.fail(f"chaos {stack} died: {traceback.format_exc()}")

    def timed(self, stack, kind, fn):
        t = now()
        nfail = getattr(self.tl, "failures", 0)
        self.tl.steps = []
        detail = fn() or ""
        dt = now() - t
        if self.tl.steps:
            detail += f" [{', '.join(self.tl.steps)}]"
        self.tl.steps = None
        with self.lock:
            self.actions[stack][kind] += 1
            self.action_time[stack][kind] += dt
        bad = " FAILED" if getattr(self.tl, "failures", 0) > nfail else ""
        self.log(stack, f"{kind} {detail} ({dt:.2f} s){bad}")

    @staticmethod
    def other_write_policy(rng, wp):
        """The write policy a message may switch @wp to."""
        family = next(f for f in WRITE_FAMILIES if wp in f)
        return rng.choice([x for x in family if x != wp])

    def caching(self):
        """Whether soak-a's write policy keeps dirty data."""
        return self.a_state["write_policy"] in WRITE_FAMILIES[1]

    def set_prefetch(self, name, rng):
        n = rng.choice(PREFETCH)
        self.dmsetup("message", name, "0", "set", "prefetch", str(n))
        return str(n)

    def chaos_a(self, kind):
        st = self.a_state
        if kind == "policy":
            p = self.rng_a.choice([x for x in POLICIES if x != st["policy"]])
            if self.dmsetup("message", "soak-a", "0", "policy", p)[0]:
                st["policy"] = p
            return p
        if kind == "write_policy":
            wp = self.other_write_policy(self.rng_a, st["write_policy"])
            if self.dmsetup("message", "soak-a", "0", "write_policy", wp)[0]:
                st["write_policy"] = wp
            return wp
        if kind == "prefetch":
            return self.set_prefetch("soak-a", self.rng_a)
        if kind == "drop_cache":
            self.dmsetup("message", "soak-a", "0", "drop_cache")
            return ""
        if kind == "discard":
            return self.zero_range(BLKDISCARD)
        if kind == "zeroout":
            return self.zero_range(BLKZEROOUT)
        if kind == "suspend_resume":
            if self.dmsetup("suspend", "soak-a")[0]:
                time.sleep(self.rng_a.uniform(0, 0.5))
            self.resume("soak-a")
            return ""
        if kind in ("reload_same", "reload_geometry"):
            geo = st["geometry"]
            if kind == "reload_geometry":
                geo = self.rng_a.choice([g for g in GEOMETRIES if g != geo])
                self.retire_counters()
            p, wp = self.rng_a.choice(POLICIES), self.rng_a.choice(WRITE_POLICIES)
            if self.reload("soak-a", self.table_a(geo, p, wp)):
                st.update(geometry=geo, policy=p, write_policy=wp)
                self.check_table("soak-a", geo, p, wp)
            else:
                self.resume("soak-a", check=False)
            return f"{geo[0]}x{geo[1]} policy {p} write_policy {wp}"
        if kind == "recreate":
            t = now()
            if not self.gate.pause(STALL_SECONDS):
                self.fail("recreate: workers did not stop within "
                          f"{STALL_SECONDS} s")
                self.gate.resume()
                return ""
            try:
                paused = now() - t
                self.retire_counters()
                if self.dm_remove("soak-a", settle=False):
                    self.dm_create("soak-a", self.table_a(), settle=False)
                    self.check_table("soak-a", st["geometry"], st["policy"], st["write_policy"])
            finally:
                self.gate.resume()
            return f"as {self.path_a} (workers paused in {paused:.2f} s, for {now() - t:.1f} s)"
        if kind == "flakey":
            return self.flakey_phase()
        raise ValueError(kind)

    def retire_counters(self):
        """soak-a's cache is about to be replaced by a new one (new geometry,
        re-creation), whose counters start at zero: keep the old one's."""
        for k, v in self.stats_of("soak-a").items():
            if isinstance(v, int) and k in CUMULATIVE:
                self.retired[k] += v

    def flakey_phase(self):
        n = A_SIZE // 512
        details = []
        with self.lock:
            self.epoch += 1
        try:
            if self.reload("soak-fl", f"0 {n} flakey {self.loop_a} 0 1 1"):
                end = now() + FLAKEY_SECONDS
                # A discard and a write-zeroes while I/O fails every other second.
                for op in (BLKDISCARD, BLKZEROOUT):
                    if self.stop_a.wait(self.rng_a.uniform(0.5, 3)):
                        break
                    details.append(("discard " if op == BLKDISCARD else "zeroout ") +
                                   self.zero_range(op))
                self.stop_a.wait(max(0, end - now()))
            else:
                self.resume("soak-fl", check=False)
        finally:
            ok = self.reload("soak-fl", f"0 {n} linear {self.loop_a} 0")
            if not ok:
                self.resume("soak-fl", check=False)
            with self.lock:
                self.epoch += 1
        if self.caching():
            # What the stack serves is on the origin once a flush is done.
            details.append("flush " + ("done" if self.flush("soak-a") else "FAILED"))
        details.append(f"{self.resolve()} blocks resolved at the origin")
        return f"{FLAKEY_SECONDS} s: " + "; ".join(details)

    def chaos_b(self, kind):
        st = self.b_state
        if kind == "policy":
            p = self.rng_b.choice([x for x in POLICIES if x != st["policy"]])
            if self.dmsetup("message", "soak-b", "0", "policy", p)[0]:
                st["policy"] = p
            return p
        if kind == "write_policy":
            wp = self.other_write_policy(self.rng_b, st["write_policy"])
            if self.dmsetup("message", "soak-b", "0", "write_policy", wp)[0]:
                st["write_policy"] = wp
            return wp
        if kind == "prefetch":
            return self.set_prefetch("soak-b", self.rng_b)
        if kind == "drop_cache":
            self.dmsetup("message", "soak-b", "0", "drop_cache")
            return ""
        if kind == "suspend_resume":
            if self.dmsetup("suspend", "soak-b")[0]:
                time.sleep(self.rng_b.uniform(0, 0.5))
            self.resume("soak-b")
            return ""
        if kind == "reload_same":
            p, wp = self.rng_b.choice(POLICIES), self.rng_b.choice(WRITE_POLICIES)
            if self.reload("soak-b", self.table_b(p, wp)):
                st.update(policy=p, write_policy=wp)
                self.check_table("soak-b", (256, 64), p, wp)
            else:
                self.resume("soak-b", check=False)
            return f"policy {p} write_policy {wp}"
        raise ValueError(kind)

    # ------------------------------------------------------------------
    # Stack B: stress-ng, fstrim, page cache

    def stress_loop(self):
        opts = ["wr-seq,rd-rnd", "direct,wr-rnd,rd-seq"]
        i = 0
        try:
            while not self.stop_b.is_set():
                o = opts[i % 2]
                i += 1
                t = now()
                rc, out, err = self.run(
                    "stress-ng", "--hdd", "2", "--hdd-bytes", "8M", "--hdd-opts", o,
                    "--verify", "--timeout", "60s", "--temp-path", self.mnt,
                    timeout=1800, check=False)
                text = out + err
                ok = rc == 0 and "successful run completed" in text and \
                    "unsuccessful" not in text and "fail" not in text.lower()
                with self.lock:
                    self.stress["runs"] += 1
                    if not ok:
                        self.stress["failures"] += 1
                        self.stress["failed_runs"].append(
                            {"opts": o, "exit": rc, "t": round(self.elapsed(), 1),
                             "tail": text.strip().splitlines()[-30:]})
                self.log("B", f"stress-ng {o}: exit {rc} ({now() - t:.1f} s)"
                         f"{'' if ok else ' FAILED'}")
                if not ok:
                    self.fail(f"stress-ng --hdd-opts {o}: exit {rc}")
        except BaseException:  # noqa: B902
            self.fail(f"stress-ng loop died: {traceback.format_exc()}")

    def trimmer(self):
        while not self.stop_b.wait(30):
            t = now()
            rc, out, _ = self.run("fstrim", "-v", self.mnt, what="fstrim")
            self.inc("fstrim")
            self.log("B", f"fstrim: {out.strip()} ({now() - t:.2f} s){' FAILED' if rc else ''}")

    def dropper(self):
        while not self.stop_b.wait(3):
            try:
                with open("/proc/sys/vm/drop_caches", "w") as f:
                    f.write("3\n")
                self.inc("page_cache_drops")
            except OSError as e:
                self.fail(f"drop_caches: {e}")

    def kmsg_reader(self):
        k = Kmsg()
        try:
            while True:
                stop = self.stop_kmsg.wait(1)
                for line in k.lines():
                    self.kmsg_file.write(line + "\n")
                if stop:
                    return
        finally:
            k.close()

    # ------------------------------------------------------------------
    # Progress, final checks, summary

    def progress_line(self):
        c = self.count
        na = sum(self.actions["A"].values())
        nb = sum(self.actions["B"].values())
        return (f"soak: {self.elapsed() / 60:5.1f} min: reads {c['reads']} "
                f"({c['read_blocks']} blocks verified), writes {c['writes']}, "
                f"EIO r/w {c['read_eio']}/{c['write_eio']}, actions A {na} B {nb}, "
                f"stress-ng {self.stress['runs']} ({self.stress['failures']} failed), "
                f"verify errors {self.nverify}, failures {len(self.failures)}")

    def chunks(self, dev):
        """@dev read whole in 1 MiB O_DIRECT chunks: yields (offset, bytes)."""
        chunk = 1 << 20
        fd = os.open(dev, os.O_RDONLY | os.O_DIRECT)
        buf = aligned(chunk)
        try:
            size = os.lseek(fd, 0, os.SEEK_END)
            for off in range(0, size, chunk):
                n = os.preadv(fd, [buf], off)
                if n != chunk:
                    raise OSError(f"{dev}: short read at {off}: {n}")
                yield off, buf[:]
        finally:
            os.close(fd)

    def check_model(self, where):
        before = self.nverify
        for off, data in self.chunks(self.path_a):
            for j in range(len(data) // BLOCK):
                self.verify(off // BLOCK + j, data[j * BLOCK:(j + 1) * BLOCK], where)
        return self.nverify - before

    def compare(self, a, b):
        """Byte-for-byte comparison of two devices: the MiBs that differ."""
        diff = []
        for (off, x), (_, y) in zip(self.chunks(a), self.chunks(b), strict=True):
            if x != y:
                diff.append(off >> 20)
        return diff

    def finish_a(self):
        """Workers and chaos stopped: check stack A."""
        if not self.dm_table("soak-fl").split()[2:3] == ["linear"]:
            self.reload("soak-fl", f"0 {A_SIZE // 512} linear {self.loop_a} 0")
        for name in ("soak-fl", "soak-a"):
            self.resume(name, check=False)
        self.run("udevadm", "settle", check=False)
        f = self.final
        # Policy always: whatever is cached, even while an adaptive policy
        # had the cache inactive, is served and checked.
        self.dmsetup("message", "soak-a", "0", "policy", "always")
        f["a_model_errors_as_cached"] = self.check_model("final, as cached")
        self.dmsetup("message", "soak-a", "0", "drop_cache")
        f["a_model_errors_after_drop_cache"] = self.check_model("final, after drop_cache")
        diff = self.compare(self.path_a, self.loop_a)
        f["a_identical"] = not diff
        if diff:
            self.fail(f"soak-a and {self.loop_a} differ in MiB {diff[:20]}")
        f["a_ambiguous_blocks"] = sum(len(v) > 1 for v in self.model)
        self.stats["soak-a"] = self.stats_of("soak-a")
        self.stats["soak-a, all caches"] = {
            k: self.retired[k] + self.stats["soak-a"].get(k, 0) for k in CUMULATIVE}

    def finish_b(self):
        f = self.final
        self.run("udevadm", "settle", check=False)
        rc, _, _ = self.run("umount", self.mnt)
        if rc == 0:
            os.rmdir(self.mnt)
            self.mnt = None
        # What is cached is compared first, served whatever the policy was;
        # a write cache's dirty data is on the origin after a flush.
        self.dmsetup("message", "soak-b", "0", "policy", "always")
        self.flush("soak-b")
        diff = self.compare("/dev/mapper/soak-b", self.loop_b)
        f["b_identical"] = not diff
        if diff:
            self.fail(f"soak-b and {self.loop_b} differ in MiB {diff[:20]}")
        rc, out, err = self.run("e2fsck", "-f", "-n", "/dev/mapper/soak-b", check=False)
        f["e2fsck"] = {"exit": rc, "clean": rc == 0,
                       "tail": (out + err).strip().splitlines()[-15:]}
        if rc:
            self.fail(f"e2fsck -fn soak-b: exit {rc}")
        self.stats["soak-b"] = self.stats_of("soak-b")

    def check_identities(self):
        for name, st in self.stats.items():
            if not st or "all" in name:     # the sum is approximate
                continue
            ok = st["reads"] == (st["read_hits"] + st["read_hits_waited"] + st["read_misses"] +
                                 st["read_bypassed"] + st["read_resent"])
            self.final[f"{name}_read_identity"] = ok
            if not ok:
                self.fail(f"{name}: reads != hits + waited + misses + bypassed + resent: {st}")
            if st.get("segments_filling"):
                self.fail(f"{name}: segments_filling={st['segments_filling']} at rest")

    def scan_kmsg(self):
        try:
            kr = load_kreports()
            with open(os.path.join(self.out, "kmsg-soak.txt"), errors="replace") as f:
                self.kernel_reports = kr.reports(f)
        except Exception as e:  # noqa: BLE001
            self.fail(f"kernel log scan: {e}")
        if self.kernel_reports:
            self.fail(f"{len(self.kernel_reports)} kernel report(s) in the log")

    def summary(self, teardown_done):
        ok = not self.failures and not self.nverify
        s = {
            "ok": ok,
            "minutes": self.args.minutes, "seed": self.args.seed, "self_test": self.args.self_test,
            "duration_s": round(self.elapsed(), 1),
            "kernel": platform.release(),
            "teardown_done": teardown_done,
            "verify_errors": self.nverify,
            "verify_errors_first": self.verify_errors,
            "failures": len(self.failures),
            "failures_first": self.failures[:50],
            "io_a": dict(self.count),
            "actions_a": dict(self.actions["A"]),
            "actions_b": dict(self.actions["B"]),
            "action_seconds_a": {k: round(v, 2) for k, v in self.action_time["A"].items()},
            "action_seconds_b": {k: round(v, 2) for k, v in self.action_time["B"].items()},
            "stress_ng": self.stress,
            "final": self.final,
            "stats": self.stats,
            "kernel_reports": self.kernel_reports,
        }
        with open(os.path.join(self.out, "summary.json"), "w") as f:
            json.dump(s, f, indent=1)
        with open(os.path.join(self.out, "summary.md"), "w") as f:
            f.write(self.markdown(s))
        return ok

    def markdown(self, s):
        c = s["io_a"]
        f = s["final"]
        yn = {True: "yes", False: "**NO**", None: "not checked"}
        lines = [
            f"# redcap soak: {'PASS' if s['ok'] else '**FAIL**'}", "",
            "| | |", "| --- | --- |",
            f"| duration | {s['duration_s'] / 60:.1f} min (asked {s['minutes']}), seed {s['seed']}"
            f"{', **self-test**' if s['self_test'] else ''} |",
            f"| kernel | {s['kernel']} |",
            f"| A reads verified | {c.get('reads', 0)} ({c.get('read_blocks', 0)} blocks) |",
            f"| A writes | {c.get('writes', 0)} ({c.get('write_blocks', 0)} blocks) |",
            f"| A EIOs (flakey) | reads {c.get('read_eio', 0)}, writes {c.get('write_eio', 0)}, "
            f"discards {c.get('discard_eio', 0)}, zeroouts {c.get('zeroout_eio', 0)} |",
            f"| B stress-ng runs | {s['stress_ng']['runs']} ({s['stress_ng']['failures']} failed) |",
            f"| B fstrim runs, page cache drops | {c.get('fstrim', 0)}, {c.get('page_cache_drops', 0)} |",
            f"| **verify errors** | **{s['verify_errors']}** |",
            f"| step failures | {s['failures']} |",
            f"| A final check, as cached / after drop_cache | "
            f"{f.get('a_model_errors_as_cached', 'not run')} / "
            f"{f.get('a_model_errors_after_drop_cache', 'not run')} errors "
            f"({f.get('a_ambiguous_blocks', '?')} blocks with two acceptable contents) |",
            f"| soak-a identical to its loop device | {yn[f.get('a_identical')]} |",
            f"| soak-b identical to its loop device | {yn[f.get('b_identical')]} |",
            f"| e2fsck -fn soak-b | "
            f"{'clean' if f.get('e2fsck', {}).get('clean') else 'NOT clean / not run'} |",
            f"| kernel reports (soak's own scan) | {len(s['kernel_reports'])} |",
            "", "## Actions", "",
            "| action | A | B | A s | B s |", "| --- | --- | --- | --- | --- |"]
        kinds = A_KINDS + (["self_test"] if s["self_test"] else [])
        for k in kinds + [k for k in B_KINDS if k not in kinds]:
            lines.append(f"| {k} | {s['actions_a'].get(k, '-')} | {s['actions_b'].get(k, '-')} | "
                         f"{s['action_seconds_a'].get(k, '-')} | {s['action_seconds_b'].get(k, '-')} |")
        if s["verify_errors_first"]:
            lines += ["", "## Verify errors (first ones)", ""]
            lines += [f"- `{json.dumps(e)}`" for e in s["verify_errors_first"]]
        if s["failures_first"]:
            lines += ["", "## Failures (first ones)", ""]
            lines += ["- " + x.replace("\n", " ")[:600] for x in s["failures_first"]]
        for run in s["stress_ng"]["failed_runs"][:5]:
            lines += ["", f"stress-ng {run['opts']} exit {run['exit']} at {run['t']} s:", "```"]
            lines += run["tail"] + ["```"]
        keys = ["state", "policy", "write_policy", "segment_sectors", "segments",
                "segments_valid", "reads", "read_hits", "read_hits_waited", "read_misses",
                "read_bypassed", "read_bypassed_held", "read_resent", "fill_ios",
                "fill_joined", "fill_along", "fill_errors", "fill_stale", "prefetches",
                "prefetch_hits",
                "writes", "invalidations", "updates", "write_allocs", "write_cached",
                "write_through", "write_waits", "writeback_ios", "writeback_errors",
                "flushes", "evictions", "switches", "segments_bare", "given_back", "regrown"]
        lines += ["", "## Final redcap stats", "",
                  "soak-a's are its last cache's (a new geometry or a re-creation starts "
                  "a new one); *all caches* sums them over every cache it had (read just "
                  "before each was replaced).", "",
                  "| | soak-a | soak-a, all caches | soak-b |", "| --- | --- | --- | --- |"]
        st = s["stats"]
        for k in keys:
            lines.append(f"| {k} | {st.get('soak-a', {}).get(k, '-')} | "
                         f"{st.get('soak-a, all caches', {}).get(k, '-')} | "
                         f"{st.get('soak-b', {}).get(k, '-')} |")
        return "\n".join(lines) + "\n"

    def main(self):
        threads_a, threads_b = [], []
        kt = threading.Thread(target=self.kmsg_reader, daemon=True)
        kt.start()
        ok = False
        try:
            self.setup()
            self.log("-", f"setup done: A on {self.loop_a}, B on {self.loop_b} at {self.mnt}")
            threads_a = [threading.Thread(target=self.reader, args=(i,), daemon=True)
                         for i in range(NREADERS)]
            threads_a += [threading.Thread(target=self.writer, args=(i,), daemon=True)
                          for i in range(NWRITERS)]
            chaos_a = threading.Thread(target=self.chaos, daemon=True,
                                       args=("A", A_KINDS, (1, 3), self.stop_a, self.chaos_a))
            threads_b = [threading.Thread(target=f, daemon=True)
                         for f in (self.stress_loop, self.trimmer, self.dropper)]
            chaos_b = threading.Thread(target=self.chaos, daemon=True,
                                       args=("B", B_KINDS, (2, 5), self.stop_b, self.chaos_b))
            self.progress_t = now()
            for t in threads_a + [chaos_a] + threads_b + [chaos_b]:
                t.start()
            next_line = now() + 60
            stalled = False
            while now() < self.deadline:
                time.sleep(min(1, max(0, self.deadline - now())))
                if now() >= next_line:
                    print(self.progress_line(), flush=True)
                    next_line += 60
                if not stalled and now() - self.progress_t > STALL_SECONDS:
                    stalled = True
                    self.fail(f"no I/O completed on soak-a for {STALL_SECONDS} s")
                    for name in ("soak-a", "soak-fl"):
                        _, info = self.dmsetup("info", name, check=False)
                        self.log("A", f"stall: {name}: {info!r} {self.stats_of(name)}")
            print(self.progress_line(), flush=True)
            self.log("-", "time is up: stopping")
            # Chaos first (it finishes its action: flakey off, devices resumed).
            self.stop_a.set()
            self.stop_b.set()
            for t in [chaos_a, chaos_b] + threads_a:
                t.join(CMD_TIMEOUT)
                if t.is_alive():
                    self.fail(f"thread {t.name} still running {CMD_TIMEOUT} s after stop")
            if not any(t.is_alive() for t in threads_a + [chaos_a]):
                self.finish_a()
            for t in threads_b:
                t.join(1800)
                if t.is_alive():
                    self.fail(f"stack B thread {t.name} still running after stop")
            if not any(t.is_alive() for t in threads_b + [chaos_b]):
                self.finish_b()
            self.check_identities()
        except BaseException:  # noqa: B902
            self.fail(f"soak: {traceback.format_exc()}")
        finally:
            self.stop_a.set()
            self.stop_b.set()
            self.gate.resume()
            self.summary(teardown_done=False)
            if all(not t.is_alive() for t in threads_a + threads_b):
                self.teardown()
            else:
                self.fail("teardown skipped: threads still blocked in I/O")
            time.sleep(1)
            self.stop_kmsg.set()
            kt.join(10)
            self.scan_kmsg()
            ok = self.summary(teardown_done=True)
            self.actlog.close()
            self.kmsg_file.close()
        print(f"soak: {'PASS' if ok else 'FAIL'}: {self.nverify} verify errors, "
              f"{len(self.failures)} failures; {os.path.join(self.out, 'summary.md')}", flush=True)
        return 0 if ok else 1


class Gate:
    """Lets the chaos thread pause every worker on soak-a (and have them
    close the device) for its removal and re-creation."""

    def __init__(self):
        self.cv = threading.Condition()
        self.paused = False
        self.active = 0

    def pausing(self):
        return self.paused

    def inside(self):
        """with gate.inside() as running: ... (running is False while paused)."""
        gate = self

        class Ctx:
            entered = False

            def __enter__(self):
                with gate.cv:
                    if gate.paused:
                        gate.cv.wait(0.5)
                        return False
                    gate.active += 1
                    self.entered = True
                    return True

            def __exit__(self, *exc):
                if self.entered:
                    with gate.cv:
                        gate.active -= 1
                        gate.cv.notify_all()
        return Ctx()

    def pause(self, timeout):
        deadline = now() + timeout
        with self.cv:
            self.paused = True
            while self.active:
                left = deadline - now()
                if left <= 0:
                    return False
                self.cv.wait(left)
        return True

    def resume(self):
        with self.cv:
            self.paused = False
            self.cv.notify_all()


def main():
    ap = argparse.ArgumentParser(
        prog="soak.py", description=__doc__.split("\n\n")[0],
        epilog="Runs in the guest as root: tests/soak/run MINUTES, or "
               "tests/vm/run -- python3 tests/soak/soak.py --minutes 3 --out $PWD/build/soak-dev")
    ap.add_argument("--minutes", type=float, required=True, help="how long to hammer")
    ap.add_argument("--out", required=True, help="directory for summary.{json,md}, actions.log")
    ap.add_argument("--seed", type=int, default=None, help="random seed (default: the time)")
    ap.add_argument("--self-test", action="store_true",
                    help="prove the checker: ~20 s in, corrupt one block on stack A's loop "
                         "device behind redcap's back, drop the cache and read it through "
                         "soak-a; the soak must report a verify error (and exit 1)")
    args = ap.parse_args()
    if os.geteuid() != 0 or not os.path.exists("/dev/mapper/control"):
        ap.error("runs inside the guest as root (tests/soak/run)")
    if args.seed is None:
        args.seed = int(time.time()) % 1000000
    args.out = os.path.abspath(args.out)
    os.makedirs(args.out, exist_ok=True)
    for name in ("summary.json", "summary.md"):
        try:
            os.unlink(os.path.join(args.out, name))
        except FileNotFoundError:
            pass
    print(f"soak: {args.minutes} min, seed {args.seed}, kernel {platform.release()}, "
          f"into {args.out}", flush=True)
    return Soak(args).main()


if __name__ == "__main__":
    sys.exit(main())
