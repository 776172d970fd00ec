#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Real programs as workloads of the benchmark suite (issue 46, "Real
programs that nobody here wrote"): PostgreSQL with pgbench, git, cp -a,
rsync, postmark, dbench, and a "server day" of several at once, read and
written cold from ext4 as their users run them.

The data: image(cache_dir) is the path of a pristine ext4 image (4 KiB
blocks) holding every program's data, built once on the host (it needs
neither a loop device nor device-mapper: mke2fs -d populates it) and kept
under cache_dir as apps-v<VERSION>.img; a change of the recipe changes
VERSION, and so the file's name (3,840 MiB, 2,481 used; built in about
4 minutes on this 2-core host).  The suite copies it onto its data device
once and gives every run of a WRITES workload a pristine copy (a
snapshot: snapshot_table()).  Its top:

  /pg      a PostgreSQL 15 cluster, "pgbench -i -s PG_SCALE" in the postgres
           database (about 1.2 GiB: several times the page cache's bound),
           owned by the postgres user, trust authentication on its socket
  /git/linux  a git repository of Debian's linux-source-6.1 (without
           drivers/gpu/drm/amd, 410 MiB of generated register headers):
           branch main = tag v6.1, one commit of 76,000 files; branch
           OTHER_BRANCH = v6.1 plus, in three commits, include/, arch/ (its
           headers, Makefiles and Kconfigs) and the top Makefile of Debian's
           linux-headers-6.12 common package: 4,026 files changed or added,
           a real change set.  main is checked out, the repository is
           packed (git gc: 218 MiB) as a clone would be.
  /dbench, /postmark  empty directories the small-file servers write in
  the rest is free room: cp -a's and rsync's copies, postmark's and dbench's
  files, what git checkout writes.

The programs: install() copies every program with its libraries (ldd) and
data files into a tmpfs (ROOT), once per guest; the workloads run chrooted
there, with the data filesystem bound at /data inside it by setup(), so no
timed program loads anything from the guest's host-backed root (under
icount that moves the guest's time at random: BENCH-NOTES.md).

A run of workload W with P processes, on the cold data filesystem mounted
at MNT (read-write if W is in WRITES; restored before the run):

    apps.setup(W, MNT, cgroup)      # untimed: bind MNT, start the server
    t = run_procs(apps.commands(W, P))   # application time
    res = apps.results(W)           # the programs' own figures (tps, MB/s)
    apps.teardown(W, MNT)           # untimed: stop the server, unbind

setup() starts PostgreSQL for the pgbench workloads and server-day and
returns once it accepts connections: it reads a little of the disk to get
there, so let the disk settle (and reset its counters) after setup().  The
server is put in @cgroup (a cgroup v2 directory) with the workload, so its
page cache is bounded with the workload's.

Run as a program on the host: "apps.py image" builds the image (if it is
not built yet) and prints its path.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

CACHE = os.environ.get("REDCAP_CACHE", os.path.expanduser("~/.cache/redcap"))

# The image's recipe; change VERSION whenever the recipe changes.
VERSION = 1
PG_SCALE = 80
PG_VERSION = "15"
GIT_EXCLUDE = ["drivers/gpu/drm/amd"]
OTHER_BRANCH = "v6.12-headers"
BASE_TAG = "v6.1"
# free room left in the image beyond its contents (the most one run writes:
# postmark's pool, cp -a's copy and dbench's clients in the server day)
FREE_MIB = 1024
# fixed so that two builds lay out directories the same way
FS_UUID = "6d1c0a55-0e5b-4f7e-9c1d-7265646361a9"
FS_HASH_SEED = "0b4c9e1e-3f6a-4d2b-8a5e-617070730a01"
GIT_DATE = "1670803200 +0000"	# 2022-12-12, 6.1's release day

# The chroot the programs run in (a tmpfs) and where the data is bound in it.
ROOT = "/run/redcap-apps"
DATA = "/data"
OUT = "/out"		# the programs' own output, inside ROOT
PGSOCK = "/tmp"		# the server's socket directory, inside ROOT
PGBIN = f"/usr/lib/postgresql/{PG_VERSION}/bin"
BUSYBOX = f"{ROOT}/bin/busybox"

# What the workloads read and write, inside the chroot.
REPO = f"{DATA}/git/linux"
# git as its users run it, in the repository (which the image's builder owns:
# root in the guest is told it is safe)
GIT = f"/usr/bin/git -c safe.directory={REPO} -C {REPO}"
# cp -a's and rsync's source: top-level directories of the repository's
# work tree, 496 MiB (drivers/ alone is 530 MiB: left out to keep a run
# about a minute on the bare hdd7200)
COPY_DIRS = ["arch", "fs", "net", "kernel", "mm", "include", "sound", "lib", "block",
             "crypto", "security", "Documentation", "tools", "scripts"]
COPY_DIRS_SMOKE = ["block", "ipc"]
# git grep's pattern: a fixed string found in many files
GREP_PATTERN = "spin_lock_irqsave"
DBENCH_LOADFILE = "/usr/share/dbench/client.txt"

# Sizes, by count and not by time where the program lets us (dbench runs
# for a time: its throughput is in results()).  Each run of a cold disk
# lasts at least 10 s of guest time on the bare hdd7200 (measured by
# tests/bench/apps-check; see the workloads' docstrings).
SIZES = {
    "pgbench-ro": {"transactions": 3000},
    "pgbench-rw": {"transactions": 1500},
    # 20,000 files and 40,000 transactions: 579 s (71 transactions/s)
    "postmark": {"files": 10000, "transactions": 4000, "min": 512, "max": 65536,
                 "dirs": 20},
    "dbench": {"seconds": 20},
}
SMOKE_SIZES = {
    "pgbench-ro": {"transactions": 50},
    "pgbench-rw": {"transactions": 50},
    "postmark": {"files": 200, "transactions": 500, "min": 512, "max": 16384, "dirs": 4},
    "dbench": {"seconds": 3},
}

WORKLOADS = ["pgbench-ro", "pgbench-rw", "git-log", "git-grep", "git-checkout", "cp-a",
             "rsync", "postmark", "dbench", "server-day"]
# The workloads whose runs write to the data filesystem: mount it
# read-write and restore it from the image before each run.  The pgbench
# ones write even when they only select (the server's pid file, its
# shutdown checkpoint, hint bits), so both are here; the git readers are not.
WRITES = ["pgbench-ro", "pgbench-rw", "git-checkout", "cp-a", "rsync", "postmark", "dbench",
          "server-day"]
# Processes a workload takes at most (git checkout: one index per repository;
# the server day is its own mix).
MAX_PROCS = {"git-checkout": 1, "server-day": 1}
# The workloads that need the PostgreSQL server started by setup().
SERVER = ["pgbench-ro", "pgbench-rw", "server-day"]
# server-day's parts, started at once, each a part of its workload's size:
# all four at full size took 686 s cold on the bare hdd7200 (190 s one
# after the other: each one's seeks come between the others')
SERVER_DAY = ["pgbench-rw", "git-grep", "cp-a", "dbench"]
SERVER_DAY_SIZES = {"pgbench-rw": {"transactions": 300, "clients": 4},
                    "git-grep": ["fs", "net", "kernel", "mm"],
                    "cp-a": ["fs", "kernel"],
                    "dbench": {"seconds": 20, "clients": 2}}


# --------------------------------------------------------------------------
# The workloads' commands


def _chroot(argv):
    """A command line that runs @argv (one shell string) in the chroot."""
    return f"{BUSYBOX} chroot {ROOT} /bin/sh -c '{argv}'"


def _share(items, procs, i):
    """Process @i's share of @items among @procs processes."""
    return items[i::procs]


def pgbench(select_only, procs, smoke=False, transactions=None):
    """PostgreSQL's pgbench, @procs clients in one pgbench (one thread
    each), the same total number of transactions whatever @procs."""
    size = (SMOKE_SIZES if smoke else SIZES)["pgbench-ro" if select_only else "pgbench-rw"]
    t = max(1, (transactions or size["transactions"]) // procs)
    name = "pgbench-ro" if select_only else "pgbench-rw"
    mode = "-S " if select_only else ""
    return (f"{PGBIN}/pgbench -n {mode}-c {procs} -j {procs} -t {t} -h {PGSOCK} "
            f"-U postgres postgres >{OUT}/{name}.txt 2>&1")


# git log -p's paths: the subtrees the other branch changes, with their
# whole history (v6.1's root commit adds them: 21,000 files); split among
# processes by their subdirectories
LOG_PATHS = ["arch", "include"]
LOG_SUBTREES = (
    [f"arch/{a}" for a in ("Kconfig", "alpha", "arc", "arm", "arm64", "csky", "hexagon",
                           "ia64", "loongarch", "m68k", "microblaze", "mips", "nios2",
                           "openrisc", "parisc", "powerpc", "riscv", "s390", "sh", "sparc",
                           "um", "x86", "xtensa")] +
    [f"include/{d}" for d in ("acpi", "asm-generic", "clocksource", "crypto", "drm",
                              "dt-bindings", "keys", "kunit", "kvm", "linux", "math-emu",
                              "media", "memory", "misc", "net", "pcmcia", "ras", "rdma", "rv",
                              "scsi", "soc", "sound", "target", "trace", "uapi", "ufs", "vdso",
                              "video", "xen")])


def git_log(procs, smoke=False):
    """git log -p of the other branch (its three commits and v6.1's) on
    LOG_PATHS: the pack read where those blobs lie, every diff printed.
    (Its three commits alone, v6.1..: 6.8 s on the bare hdd7200.)"""
    if smoke:
        return [f"{GIT} log -p {OTHER_BRANCH}~1..{OTHER_BRANCH} -- {' '.join(d)} >/dev/null"
                for d in _pathspecs(procs, smoke)]
    shares = [LOG_PATHS] if procs == 1 else [_share(LOG_SUBTREES, procs, i)
                                             for i in range(procs)]
    return [f"{GIT} log -p {OTHER_BRANCH} -- {' '.join(d)} >/dev/null" for d in shares]


def _pathspecs(procs, smoke):
    """The repository's top-level paths split among @procs processes (all
    of them, ".", for one)."""
    if smoke:
        # the other branch's last commit changed the Makefile; block/
        # holds the pattern
        return [["Makefile", "block"], ["ipc"]][:procs]
    if procs == 1:
        return [["."]]
    tops = ["drivers", "arch", "include", "fs", "net", "sound", "tools", "Documentation",
            "kernel", "lib", "scripts", "mm", "security", "crypto", "block", "samples",
            "rust", "virt", "usr", "io_uring", "init", "ipc", "certs", "LICENSES"]
    return [_share(tops, procs, i) for i in range(procs)]


def git_grep(procs, smoke=False, paths=None):
    """git grep exits 1 when it finds nothing (a share of the tree may
    not hold the pattern): only an error (2) fails the run."""
    shares = [paths] if paths and not smoke else _pathspecs(procs, smoke)
    return [f"{GIT} grep -n -F {GREP_PATTERN} -- {' '.join(d)} >/dev/null || [ $? -eq 1 ]"
            for d in shares]


def git_checkout(smoke=False):
    return f"{GIT} checkout -q {OTHER_BRANCH}"


def copy(tool, procs, smoke=False, dirs=None):
    """cp -a or rsync -a of COPY_DIRS (or @dirs) to a new directory on the
    same filesystem, the directories split among @procs processes."""
    dirs = COPY_DIRS_SMOKE if smoke else dirs or COPY_DIRS
    out = []
    for i in range(procs):
        src = " ".join(f"{REPO}/{d}" for d in _share(dirs, procs, i))
        dst = f"{DATA}/{tool}-{i}"
        if tool == "cp-a":
            out.append(f"/usr/bin/mkdir {dst} && /usr/bin/cp -a {src} {dst}/")
        else:
            out.append(f"/usr/bin/rsync -a {src} {dst}/")
    return out


def postmark(procs, smoke=False):
    """postmark, one per process in its own directory, each with its share
    of the files and transactions; its commands on its standard input."""
    s = (SMOKE_SIZES if smoke else SIZES)["postmark"]
    out = []
    for i in range(procs):
        cfg = (f"set location {DATA}/postmark/{i}\\n"
               f"set number {max(1, s['files'] // procs)}\\n"
               f"set transactions {max(1, s['transactions'] // procs)}\\n"
               f"set size {s['min']} {s['max']}\\n"
               f"set subdirectories {s['dirs']}\\n"
               f"set seed {42 + i}\\n"
               "run\\nquit\\n")
        out.append(f"/usr/bin/mkdir -p {DATA}/postmark/{i} && "
                   f"printf \"{cfg}\" | /usr/bin/postmark >{OUT}/postmark-{i}.txt 2>&1")
    return out


def dbench(procs, smoke=False):
    """dbench, @procs clients of its NetBench loadfile; it runs for a time
    (dbench 4.0 has no pass count), its throughput is in results()."""
    s = (SMOKE_SIZES if smoke else SIZES)["dbench"]
    return (f"/usr/bin/dbench -c {DBENCH_LOADFILE} -D {DATA}/dbench -t {s['seconds']} "
            f"{procs} >{OUT}/dbench.txt 2>&1")


def commands(name, procs=1, mnt=None, smoke=False):
    """The shell command lines (for sh -c, started at once; application
    time = first start to last end) of a run of workload @name with
    @procs processes.  @mnt is where the data is mounted outside the
    chroot (setup() binds it at DATA inside; unused here).  @smoke: a
    tiny run, for tests/bench/apps-check.

    Guest time of one process, cold on the bare emulated hdd7200 with the
    page cache bounded to 256 MiB (tests/bench/apps-check, 2026-12-02, 6.1
    guest under icount), in brackets:

    pgbench-ro   pgbench -S (select-only): one random row of 8 M by its
                 primary key per transaction; cold, an index and a heap
                 page read per transaction, at random over 1.2 GiB.
                 [35.0 s, 86.5 tps]
    pgbench-rw   pgbench's TPC-B-like default: update an account, a teller,
                 a branch, insert a history row, commit (WAL fsync).
                 [38.9 s, 39.0 tps]
    git-log      git log -p of the other branch on arch/ and include/: the
                 pack read, thousands of files diffed, 21,000 added.
                 [22.1 s; v6.1..v6.12-headers alone: 6.8 s]
    git-grep     git grep -F over the whole work tree (76,000 files).
                 [62.3 s]
    git-checkout git checkout of the other branch: thousands of files
                 rewritten, the index read and written.  [34.8 s]
    cp-a, rsync  a copy of COPY_DIRS (46,500 files, 496 MiB) to a new
                 directory of the same filesystem.  [cp -a 64.9 s,
                 rsync 68.1 s: what they leave dirty is written after]
    postmark     postmark's small-file transactions (create, delete, read,
                 append) over a pool of files of 0.5-64 KiB.
                 [34.6 s, 148 transactions/s]
    dbench       dbench's NetBench file-server load (client.txt) for 20 s:
                 its MB/s is the figure (results()).  [24.2 s, 26.9 MB/s]
    server-day   SERVER_DAY's workloads at once, each with one process
                 (pgbench with 4 clients, dbench with 2), each a part of
                 its size alone (SERVER_DAY_SIZES).  [27.5 s: pgbench
                 18.5 tps, dbench 9.2 MB/s]"""
    if name not in WORKLOADS:
        raise ValueError(f"{name}: not one of {', '.join(WORKLOADS)}")
    if procs < 1 or procs > MAX_PROCS.get(name, procs):
        raise ValueError(f"{name}: {procs} processes")
    if name == "pgbench-ro":
        cmds = [pgbench(True, procs, smoke)]
    elif name == "pgbench-rw":
        cmds = [pgbench(False, procs, smoke)]
    elif name == "git-log":
        cmds = git_log(procs, smoke)
    elif name == "git-grep":
        cmds = git_grep(procs, smoke)
    elif name == "git-checkout":
        cmds = [git_checkout(smoke)]
    elif name in ("cp-a", "rsync"):
        cmds = copy(name, procs, smoke)
    elif name == "postmark":
        cmds = postmark(procs, smoke)
    elif name == "dbench":
        cmds = [dbench(procs, smoke)]
    else:
        day = SERVER_DAY_SIZES
        cmds = [pgbench(False, day["pgbench-rw"]["clients"], smoke,
                        None if smoke else day["pgbench-rw"]["transactions"]),
                *git_grep(1, smoke, day["git-grep"]), *copy("cp-a", 1, smoke, day["cp-a"]),
                dbench(day["dbench"]["clients"], smoke)]
    return [_chroot(c) for c in cmds]


# --------------------------------------------------------------------------
# The programs' own figures


def parse_results(name, texts):
    """The figures the programs print, from @texts (output file name ->
    its text, as written under OUT): pgbench's tps, dbench's MB/s,
    postmark's transactions per second."""
    res = {}
    for fname, text in sorted(texts.items()):
        key = fname[:-len(".txt")]
        if key.startswith("pgbench"):
            m = re.search(r"tps = ([\d.]+) \(without initial connection time\)", text)
            n = re.search(r"number of transactions actually processed: (\d+)", text)
            if m:
                res[f"{key}_tps"] = float(m.group(1))
            if n:
                res[f"{key}_transactions"] = int(n.group(1))
        elif key == "dbench":
            m = re.search(r"Throughput ([\d.]+) MB/sec", text)
            if m:
                res["dbench_mb_s"] = float(m.group(1))
        elif key.startswith("postmark"):
            m = re.search(r"seconds of transactions \((\d+) per second\)", text)
            if m:
                res[f"{key}_tps"] = int(m.group(1))
    return res


def results(name):
    """parse_results() of what the last run of @name left under OUT."""
    d = ROOT + OUT
    texts = {}
    for f in os.listdir(d) if os.path.isdir(d) else []:
        with open(os.path.join(d, f), errors="replace") as fh:
            texts[f] = fh.read()
    return parse_results(name, texts)


# --------------------------------------------------------------------------
# In the guest: the programs' chroot, the server


def _sh(*args, check=True, **kw):
    r = subprocess.run(args, capture_output=True, text=True, **kw)
    if check and r.returncode:
        raise RuntimeError(f"{' '.join(args)}: exit {r.returncode}: {r.stderr.strip()}")
    return r


def programs():
    """The programs the workloads run (host paths, copied to the same
    paths in the chroot)."""
    pg = [f"{PGBIN}/{p}" for p in ("postgres", "pgbench", "pg_isready", "pg_ctl", "psql")]
    return pg + ["/usr/bin/git", "/usr/bin/cp", "/usr/bin/mkdir", "/usr/bin/rsync",
                 "/usr/bin/postmark", "/usr/bin/dbench"]


def data_files():
    """Directories and files the programs read besides their libraries."""
    return [f"/usr/lib/postgresql/{PG_VERSION}", f"/usr/share/postgresql/{PG_VERSION}",
            "/usr/share/zoneinfo", "/usr/lib/git-core", DBENCH_LOADFILE,
            "/etc/passwd", "/etc/group"]


def _libs(prog):
    """The shared libraries @prog loads (ldd), its loader among them."""
    libs = []
    for line in _sh("ldd", prog, check=False).stdout.splitlines():
        m = re.match(r"\s*(?:\S+ => )?(/\S+) \(", line)
        if m:
            libs.append(m.group(1))
    return libs


def _copy_in(path):
    """@path (and what it points to, if a symlink) into the chroot at the
    same path."""
    dst = ROOT + path
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    if os.path.isdir(path) and not os.path.islink(path):
        _sh("cp", "-a", path, os.path.dirname(dst) + "/")
        return
    if os.path.lexists(dst):
        return
    if os.path.islink(path):
        target = os.readlink(path)
        os.symlink(target, dst)
        _copy_in(os.path.normpath(os.path.join(os.path.dirname(path), target)))
    else:
        _sh("cp", "-a", path, dst)


def install(size_mib=512):
    """Every program, its libraries and data files into a tmpfs at ROOT,
    once per guest (again: nothing is done); /dev and /proc in it."""
    if os.path.ismount(ROOT) and os.path.exists(f"{ROOT}/.installed"):
        return
    os.makedirs(ROOT, exist_ok=True)
    if not os.path.ismount(ROOT):
        _sh("mount", "-t", "tmpfs", "-o", f"size={size_mib}m,mode=0755", "redcap-apps", ROOT)
    # merged /usr: /bin, /lib ... are links into /usr on the host, the same here
    for top in ("bin", "sbin", "lib", "lib64"):
        if os.path.islink(f"/{top}"):
            target = os.readlink(f"/{top}")
            if not os.path.lexists(f"{ROOT}/{top}"):
                os.symlink(target, f"{ROOT}/{top}")
            os.makedirs(os.path.join(ROOT, target.lstrip("/")), exist_ok=True)
        else:
            os.makedirs(f"{ROOT}/{top}", exist_ok=True)
    os.makedirs(f"{ROOT}/usr/bin", exist_ok=True)
    shutil.copy("/bin/busybox", f"{ROOT}/usr/bin/busybox")
    if not os.path.lexists(f"{ROOT}/usr/bin/sh"):
        os.symlink("busybox", f"{ROOT}/usr/bin/sh")
    for p in programs() + data_files():
        _copy_in(p)
    elfs = set(programs())
    for d in ("/usr/lib/git-core",):
        for f in os.listdir(d):
            fp = os.path.join(d, f)
            if os.path.isfile(fp) and not os.path.islink(fp):
                with open(fp, "rb") as fh:
                    if fh.read(4) == b"\x7fELF":
                        elfs.add(fp)
    for lib in sorted({lib for p in sorted(elfs) for lib in _libs(p)}):
        _copy_in(lib)
    for d, mode in ((DATA, 0o755), (OUT, 0o755), ("/tmp", 0o1777), ("/dev", 0o755),
                    ("/proc", 0o555)):
        os.makedirs(ROOT + d, exist_ok=True)
        os.chmod(ROOT + d, mode)
    if not os.path.ismount(f"{ROOT}/dev"):
        _sh("mount", "--bind", "/dev", f"{ROOT}/dev")
    if not os.path.ismount(f"{ROOT}/proc"):
        _sh("mount", "-t", "proc", "proc", f"{ROOT}/proc")
    # every program once (their first start costs more: not in a timed run)
    for c in (f"{PGBIN}/pgbench --version", f"{PGBIN}/postgres --version",
              "/usr/bin/git --version", "/usr/bin/rsync --version", "/usr/bin/cp --version",
              "/usr/bin/dbench --help", "printf 'quit\\n' | /usr/bin/postmark"):
        _sh(BUSYBOX, "chroot", ROOT, "/bin/sh", "-c", c + " >/dev/null 2>&1", check=False)
    for c in (f"{PGBIN}/pgbench --version", "/usr/bin/git --version"):
        _sh(BUSYBOX, "chroot", ROOT, "/bin/sh", "-c", c)
    open(f"{ROOT}/.installed", "w").close()


def uninstall():
    for m in (f"{ROOT}{DATA}", f"{ROOT}/dev", f"{ROOT}/proc", ROOT):
        if os.path.ismount(m):
            _sh("umount", m, check=False)


_server = None


def _start_server(cgroup=None, timeout=120):
    """postgres on the cluster at DATA/pg, as the user that owns it, in
    the chroot (and in @cgroup); returns once it accepts connections."""
    global _server
    st = os.stat(f"{ROOT}{DATA}/pg")
    log = open(f"{ROOT}{OUT}/postgres.log", "w")

    def child():
        if cgroup:
            with open(os.path.join(cgroup, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
        os.chroot(ROOT)
        os.chdir("/")
        os.setgroups([])
        os.setgid(st.st_gid)
        os.setuid(st.st_uid)

    _server = subprocess.Popen([f"{PGBIN}/postgres", "-D", f"{DATA}/pg"], stdout=log,
                               stderr=subprocess.STDOUT, preexec_fn=child,
                               env={"PATH": "/usr/bin", "LANG": "C", "PGTZ": "UTC"})
    log.close()
    t0 = time.monotonic()
    while True:
        r = _sh(BUSYBOX, "chroot", ROOT, f"{PGBIN}/pg_isready", "-q", "-h", PGSOCK,
                "-U", "postgres", check=False)
        if r.returncode == 0:
            return
        if _server.poll() is not None or time.monotonic() - t0 > timeout:
            with open(f"{ROOT}{OUT}/postgres.log") as f:
                raise RuntimeError(f"postgres did not start: {f.read()[-2000:]}")
        time.sleep(0.2)


def _stop_server(timeout=300):
    """A fast shutdown (SIGINT: clients cut off, a checkpoint written)."""
    global _server
    if _server is None:
        return
    if _server.poll() is None:
        _server.send_signal(signal.SIGINT)
        try:
            _server.wait(timeout)
        except subprocess.TimeoutExpired:
            _server.kill()
            _server.wait()
    _server = None


def setup(name, mnt, cgroup=None):
    """Before the timed part of a run of @name, on the cold data filesystem
    mounted at @mnt: bind it at DATA in the chroot, clear OUT, start the
    PostgreSQL server if @name needs it (in @cgroup) and wait until it
    accepts connections."""
    if name not in WORKLOADS:
        raise ValueError(name)
    install()
    for f in os.listdir(ROOT + OUT):
        os.unlink(os.path.join(ROOT + OUT, f))
    if not os.path.ismount(ROOT + DATA):
        _sh("mount", "--bind", mnt, ROOT + DATA)
    if name in SERVER:
        _start_server(cgroup)


def teardown(name, mnt=None):
    """After the run: stop the server cleanly, unbind the data."""
    _stop_server()
    if os.path.ismount(ROOT + DATA):
        _sh("umount", ROOT + DATA)


# --------------------------------------------------------------------------
# The image (built on the host)


def snapshot_table(origin, cow, sectors):
    """The dm table of a non-persistent snapshot of @origin (the pristine
    image, e.g. on a RAM disk) whose changes go to @cow (e.g. a second RAM
    disk): a WRITES run on a fresh one of these starts from the pristine
    image, and dropping it (dmsetup remove) restores the image at no cost,
    where writing the 3.8 GiB image again from the host-backed cache takes
    minutes.  Below the emulated disk it adds no disk time (the vdisk over
    it times every request); chunks of 4 KiB, ext4's block."""
    return f"0 {sectors} snapshot {origin} {cow} N 8"


def image_name():
    return f"apps-v{VERSION}.img"


def kernel_source():
    """Debian's linux-source-6.1 tarball (the package, in tests/vm/setup's
    PACKAGES)."""
    src = "/usr/src/linux-source-6.1.tar.xz"
    if not os.path.exists(src):
        raise RuntimeError(f"no {src} (make deps, or apt-get install linux-source-6.1)")
    return src


def headers_612():
    """Debian's linux-headers-6.12 common tree (the guest kernel's headers)."""
    cands = sorted(d for d in os.listdir("/usr/src")
                   if re.fullmatch(r"linux-headers-6\.12\.[\d.]+\+deb\d+-common", d))
    if not cands:
        raise RuntimeError("no /usr/src/linux-headers-6.12.*-common (tests/vm/setup kernel 6.12)")
    return os.path.join("/usr/src", cands[-1])


def _log(msg):
    print(f"apps: {msg}", file=sys.stderr, flush=True)


def _git(repo, *args):
    env = dict(os.environ, GIT_AUTHOR_NAME="redcap bench", GIT_AUTHOR_EMAIL="bench@redcap",
               GIT_COMMITTER_NAME="redcap bench", GIT_COMMITTER_EMAIL="bench@redcap",
               GIT_AUTHOR_DATE=GIT_DATE, GIT_COMMITTER_DATE=GIT_DATE)
    return _sh("git", "-C", repo, *args, env=env)


def build_git(root):
    repo = os.path.join(root, "git", "linux")
    os.makedirs(repo)
    src = kernel_source()
    excl = [f"--exclude=linux-source-6.1/{e}" for e in GIT_EXCLUDE]
    _sh("tar", "-xJf", src, "-C", repo, "--strip-components=1", *excl)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "gc.auto", "0")
    _git(repo, "add", "-f", "-A", ".")	# Debian's .gitignore ignores all
    _git(repo, "commit", "-q", "-m", "Linux 6.1 (Debian's linux-source-6.1)")
    _git(repo, "tag", BASE_TAG)
    _git(repo, "checkout", "-q", "-b", OTHER_BRANCH)
    hdr = headers_612()
    # one commit per part: include/, arch/ (the headers of every
    # architecture, their Makefiles and Kconfigs), the top Makefile
    # (scripts/ and tools/ are links into linux-kbuild: built programs)
    for part in ("include", "arch", "Makefile"):
        _sh("cp", "-a", "--remove-destination", os.path.join(hdr, part), repo + "/")
        _git(repo, "add", "-f", "-A", part)
        _git(repo, "commit", "-q", "-m", f"{part}: as in Linux 6.12 ({os.path.basename(hdr)})")
    changed = int(_sh("sh", "-c", f"git -C '{repo}' diff --name-only {BASE_TAG} {OTHER_BRANCH}"
                      " | wc -l").stdout)
    _git(repo, "checkout", "-q", "main")
    _git(repo, "gc", "-q")
    files = int(_sh("sh", "-c", f"git -C '{repo}' ls-files | wc -l").stdout)
    return {"git_files": files, "git_changed_files": changed}


def build_pg(root):
    pg = os.path.join(root, "pg")
    sock = os.path.join(root, "..", "sock")
    os.makedirs(sock, exist_ok=True)
    os.chmod(root, 0o755)
    kw = {}
    if os.getuid() == 0:
        import pwd
        u = pwd.getpwnam("postgres")
        os.chown(sock, u.pw_uid, u.pw_gid)
        kw = {"user": u.pw_uid, "group": u.pw_gid, "extra_groups": []}
        os.makedirs(pg, mode=0o700)
        os.chown(pg, u.pw_uid, u.pw_gid)
    env = dict(os.environ, LANG="C", LC_ALL="C", TZ="UTC")
    _sh(f"{PGBIN}/initdb", "-D", pg, "-U", "postgres", "--auth=trust", "--locale=C",
        "-E", "UTF8", env=env, cwd="/", **kw)
    srv = subprocess.Popen([f"{PGBIN}/postgres", "-D", pg, "-k", sock, "-c", "listen_addresses=",
                            "-c", "fsync=off", "-c", "wal_level=minimal",
                            "-c", "max_wal_senders=0", "-c", "shared_buffers=256MB",
                            "-c", "dynamic_shared_memory_type=posix"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                           cwd="/", **kw)
    for _ in range(600):
        if _sh(f"{PGBIN}/pg_isready", "-q", "-h", sock, check=False).returncode == 0:
            break
        time.sleep(0.1)
    _sh(f"{PGBIN}/pgbench", "-i", "-q", "-s", str(PG_SCALE), "-h", sock, "-U", "postgres",
        "postgres", env=env)
    _sh(f"{PGBIN}/psql", "-q", "-h", sock, "-U", "postgres", "-c", "CHECKPOINT", "postgres")
    srv.send_signal(signal.SIGINT)
    srv.wait()
    with open(os.path.join(pg, "postgresql.conf"), "a") as f:
        f.write("\n# redcap bench (tests/bench/apps.py): the server in the guest's chroot,\n"
                "# its own cache small so that the page cache (bounded) matters\n"
                "shared_buffers = 16MB\n"
                "listen_addresses = ''\n"
                f"unix_socket_directories = '{PGSOCK}'\n"
                "dynamic_shared_memory_type = sysv\n"
                "huge_pages = off\n"
                "timezone = 'UTC'\n"
                "log_timezone = 'UTC'\n")
    return {"pg_scale": PG_SCALE}


def _du_mib(path):
    return int(_sh("du", "-sm", path).stdout.split()[0])


def build_image(cache_dir):
    """Build image_name() in @cache_dir; returns its path."""
    t0 = time.monotonic()
    path = os.path.join(cache_dir, image_name())
    os.makedirs(cache_dir, exist_ok=True)
    # the tree is built outside the cache: the server runs as postgres,
    # who may not enter the cache's directory (root's home)
    work = tempfile.mkdtemp(prefix="redcap-apps-", dir=os.environ.get("TMPDIR", "/var/tmp"))
    os.chmod(work, 0o755)
    root = os.path.join(work, "root")
    os.makedirs(root)
    info = {"version": VERSION}
    _log(f"building {path}: git repository of linux-source-6.1")
    info.update(build_git(root))
    _log(f"PostgreSQL cluster, pgbench scale {PG_SCALE}")
    info.update(build_pg(root))
    for d in ("dbench", "postmark"):
        os.makedirs(os.path.join(root, d), mode=0o777)
    info["pg_mib"] = _du_mib(os.path.join(root, "pg"))
    info["git_mib"] = _du_mib(os.path.join(root, "git"))
    info["git_pack_mib"] = _du_mib(os.path.join(root, "git", "linux", ".git"))
    used = _du_mib(root)
    size = (used * 105 // 100 + FREE_MIB + 255) // 256 * 256
    info["used_mib"], info["size_mib"] = used, size
    _log(f"ext4 image of {size} MiB ({used} MiB used)")
    tmp = path + ".tmp"
    if os.path.exists(tmp):
        os.unlink(tmp)
    _sh("mke2fs", "-q", "-t", "ext4", "-b", "4096", "-L", "redcap-apps", "-U", FS_UUID,
        "-E", f"hash_seed={FS_HASH_SEED},lazy_itable_init=0,lazy_journal_init=0",
        "-d", root, tmp, f"{size}M", env=dict(os.environ, E2FSPROGS_FAKE_TIME="1670803200"))
    _sh("e2fsck", "-fn", tmp)
    info["build_s"] = round(time.monotonic() - t0)
    with open(path + ".json", "w") as f:
        json.dump(info, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)
    shutil.rmtree(work)
    _log(f"{path}: built in {info['build_s']} s: {info}")
    return path


def image(cache_dir=CACHE):
    """The pristine image's path, built on first use (on the host: the
    guest sees the cache read-only)."""
    path = os.path.join(cache_dir, image_name())
    if not os.path.exists(path):
        build_image(cache_dir)
    return path


def image_info(cache_dir=CACHE):
    """What build_image() recorded about the image (sizes, counts)."""
    with open(os.path.join(cache_dir, image_name()) + ".json") as f:
        return json.load(f)


if __name__ == "__main__":
    if sys.argv[1:] == ["image"]:
        print(image())
    else:
        sys.exit("usage: apps.py image")
