#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""make bench-sim: the REDCAP paper's workloads at the paper's scale (1 GiB
per process, 1 to 32 processes, an 8 MiB cache in four geometries), and
the curve of application time against cache size and segment size, through
redcapctl simulate on both emulated disks.  Runs on the host: no guest, no
device, no root.

The traces are made here, not captured: each workload's reads, per process,
as the page cache turns them into block requests (buffered I/O):

  * a simplified Linux on-demand read-ahead (mm/readahead.c, 6.1) with
    read_ahead_kb = 128: a read that misses at the start of a file or right
    after the previous one starts a window (4 x, 2 x the read, or 128 KiB),
    a read of the window's marked page reads the next window ahead, growing
    to 128 KiB; a miss anywhere else reads what was asked, unless the pages
    just before it are cached (context read-ahead).  Backward reads get no
    read-ahead.  Every request is serial in its process (a closed loop: the
    read-ahead of the next window is waited for at once, as a process that
    does nothing but read does);
  * files of 1 GiB, one per process, laid out contiguously one after the
    other with 64 MiB between them (ext4 gives a large file long extents
    in a group of its own);
  * LKR: a real ext4 made by mkfs.ext4 -d from Debian's linux-source-6.1
    tree and mapped block by block with debugfs (tests/bench/lkr-layout.py),
    one copy per process side by side, read in find order: each directory's
    blocks, each file's inode-table block (ext4 reads 32 of them ahead:
    inode_readahead_blks) and the file through the read-ahead above, with
    a request split where the file's extents break.

What the simulator replays and how is in redcapctl(8) (simulate).  The
vdisk estimator starts from a model trained on the same emulated disk
(random and sequential reads of 4 KiB to 256 KiB, --save-model), as a
model layer trained with redcapctl model train would.

usage: sim-scale.py --out DIR [--date D] [--quick] [--lkr-layout CSV]
"""
import argparse
import csv
import json
import os
import random
import subprocess
import sys
import tempfile
import time

TOP = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
REDCAPCTL = os.path.join(TOP, "build", "userspace", "redcapctl")
CACHE = os.environ.get("REDCAP_CACHE", os.path.expanduser("~/.cache/redcap"))

PAGE = 4096
SECTOR = 512
GiB = 1 << 30
MiB = 1 << 20
RA_PAGES = 32			# read_ahead_kb = 128
# per process (the paper's); smaller for the host test's quick run
FILE_BYTES = int(os.environ.get("SIM_SCALE_FILE_MIB", "1024")) * MiB
FILE_GAP = 64 * MiB
RANDOM_READS = 8192		# 4 KiB random reads per process (32 MiB of its 1 GiB)
INODE_RA_BLOCKS = 32		# ext4's inode_readahead_blks

# The emulated drives: capacity in sectors as dm-vdisk's profiles give it.
DISKS = {"hdd7200": 1953125000, "hdd15k": 71687369}
# hdd15k is a 36 GB drive: 32 files of 1 GiB (or 32 kernel trees) do not fit.
MAX_PROCS = {"hdd7200": 32, "hdd15k": 16}
PROCS = [1, 2, 4, 8, 16, 32]
WORKLOADS = ["lkr", "ior-r", "tac", "4k-sr", "8k-sr", "512k-sr", "random"]

# The paper's four geometries of 8 MiB with its policy (activation-
# deactivation, spk), always, and what redcapctl create builds.
PAPER_GEOMETRIES = ["256x32k", "128x64k", "64x128k", "32x256k"]
CONFIGS = (["bare"] + [f"{g}:adaptive,estimator=spk" for g in PAPER_GEOMETRIES] +
           [f"{g}:always" for g in PAPER_GEOMETRIES] +
           ["64x128k:adaptive+caware", "512x128k:adaptive+caware"])
# The curve: cache sizes x segment sizes, policy always and adaptive+caware.
CURVE_PROCS = 16
CURVE_MIB = [8, 16, 32, 64, 128, 256, 512, 1024]
CURVE_SEG_KIB = [32, 64, 128, 256]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# The page cache's read-ahead


class File:
    """One file being read through the page cache: where its pages are on
    the disk, which are cached, and its read-ahead state."""

    def __init__(self, runs, size):
        self.runs = runs		# [(first page, disk sector, pages)], file order
        self.pages = (size + PAGE - 1) // PAGE
        self.cached = bytearray(self.pages)
        self.marker = bytearray(self.pages)
        self.ra_start = self.ra_size = self.ra_async = 0
        self.prev = -1			# last page read

    def sector(self, page):
        for first, sector, n in self.runs:
            if first <= page < first + n:
                return sector + (page - first) * (PAGE // SECTOR)
        raise ValueError(page)

    def read_pages(self, start, n, out):
        """Pages [start, start + n) not yet cached, as block requests cut
        where the file's extents break, appended to @out."""
        end = min(start + n, self.pages)
        p = start
        while p < end:
            if self.cached[p]:
                p += 1
                continue
            q = p
            sec = self.sector(p)
            while q < end and not self.cached[q] and \
                    self.sector(q) == sec + (q - p) * (PAGE // SECTOR):
                self.cached[q] = 1
                q += 1
            out.append((sec, (q - p) * (PAGE // SECTOR)))
            p = q

    def window(self, start, size, async_size, out):
        self.ra_start, self.ra_size, self.ra_async = start, size, async_size
        mark = start + size - async_size
        if async_size and mark < self.pages:
            self.marker[mark] = 1
        self.read_pages(start, size, out)


def init_size(req):
    size = 1 << (req - 1).bit_length()
    if size <= RA_PAGES // 32:
        return size * 4
    if size <= RA_PAGES // 4:
        return size * 2
    return RA_PAGES


def next_size(cur):
    if cur < RA_PAGES // 16:
        return 4 * cur
    if cur <= RA_PAGES // 2:
        return 2 * cur
    return RA_PAGES


def read(f, offset, length, out):
    """A read(2) of @length bytes at @offset: the block requests it makes."""
    index = offset // PAGE
    last = min((offset + length - 1) // PAGE, f.pages - 1)
    req = last - index + 1
    p = index
    while p <= last:
        if f.cached[p]:
            if f.marker[p]:			# async read-ahead: the next window
                f.marker[p] = 0
                if p == f.ra_start + f.ra_size - f.ra_async:
                    f.window(f.ra_start + f.ra_size, next_size(f.ra_size),
                             next_size(f.ra_size), out)
            p += 1
            continue
        left = last - p + 1
        if p == 0 or p - f.prev == 1 or p == f.ra_start + f.ra_size:
            if p == f.ra_start + f.ra_size and p:
                size = next_size(f.ra_size)	# the stream goes on
                f.window(p, size, size, out)
            else:
                size = init_size(left)
                f.window(p, size, size - left if size > left else size, out)
        else:
            hist = 0				# context read-ahead
            while hist < RA_PAGES and p - hist - 1 >= 0 and f.cached[p - hist - 1]:
                hist += 1
            if hist > left:
                f.window(p, min(hist + left, RA_PAGES), 1, out)
            else:
                f.read_pages(p, left, out)
        p += 1
    f.prev = last


# --------------------------------------------------------------------------
# Workloads


def data_file(proc):
    sector = (FILE_GAP + proc * (FILE_BYTES + FILE_GAP)) // SECTOR
    return File([(0, sector, FILE_BYTES // PAGE)], FILE_BYTES)


def pattern_requests(workload, proc):
    f, out = data_file(proc), []
    if workload == "ior-r":
        for off in range(0, FILE_BYTES, 64 * 1024):
            read(f, off, 64 * 1024, out)
    elif workload == "tac":
        for off in range(FILE_BYTES - 64 * 1024, -1, -64 * 1024):
            read(f, off, 64 * 1024, out)
    elif workload in ("4k-sr", "8k-sr"):
        step = 8192 if workload == "4k-sr" else 12288
        for off in range(0, FILE_BYTES, step):
            read(f, off, 4096, out)
    elif workload == "512k-sr":
        for series in range(4):
            for off in range(series * 4096, FILE_BYTES, 4096 + 512 * 1024):
                read(f, off, 4096, out)
    elif workload == "random":
        rng = random.Random(1000 + proc)
        for _ in range(RANDOM_READS):
            read(f, rng.randrange(FILE_BYTES // 4096) * 4096, 4096, out)
    return out


def load_layout(path):
    """lkr-layout.py's CSV: the image's size and the reads of one copy in the
    order find makes them on the mounted filesystem.  The CSV lists each
    directory's entries in block order; ext4 returns a directory of one
    block (most of the tree) in hash order (half_md4 with the filesystem's
    random seed), for which a hash of the name with a fixed seed stands
    in here; larger directories, linear as mkfs.ext4 -d writes them, keep
    block order."""
    import hashlib
    image, objs = None, []
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            runs = []
            for r in row["blocks"].split(";"):
                if r:
                    start, n = r.split("+")
                    runs.append((int(start), int(n)))
            if row["kind"] == "image":
                image = int(row["size"])
                continue
            if row["kind"] == "inode":
                objs.append((row["path"], []))
            objs[-1][1].append((row["kind"], int(row["size"]), runs))
    kids, size = {}, {}
    for i, (p, evs) in enumerate(objs):
        if p:
            kids.setdefault(os.path.dirname(p), []).append(i)
        size[p] = evs[-1][1] if evs[-1][0] == "dir" else None
    events, stack = [], [0]
    while stack:
        i = stack.pop()
        p, evs = objs[i]
        events += evs
        children = kids.get(p, [])
        if size[p] == PAGE:
            children = sorted(children, key=lambda c: hashlib.md5(
                b"redcap" + os.path.basename(objs[c][0]).encode()).digest())
        stack.extend(reversed(children))
    assert len(events) == sum(len(e) for _, e in objs), "a path is out of its tree"
    return image, events


def lkr_layout(path):
    """The LKR tree's layout in @path, made by lkr-layout.py if it is not there."""
    if not os.path.exists(path):
        subprocess.run([sys.executable, os.path.join(TOP, "tests", "bench", "lkr-layout.py"),
                        "--out", path], check=True)
    return load_layout(path)


def lkr_requests(layout, proc):
    image, events = layout
    base = FILE_GAP // SECTOR + proc * ((image + FILE_GAP) // SECTOR)
    spb = PAGE // SECTOR
    out, cached = [], set()
    for kind, size, runs in events:
        if kind in ("dir", "extent"):
            for start, n in runs:
                for b in range(start, start + n):
                    if b not in cached:
                        cached.add(b)
                        out.append((base + b * spb, spb))
        elif kind == "inode":
            b = runs[0][0]
            if b not in cached:
                first = b - b % INODE_RA_BLOCKS
                cached.update(range(first, first + INODE_RA_BLOCKS))
                out.append((base + first * spb, INODE_RA_BLOCKS * spb))
        elif size:
            page, fruns = 0, []
            for start, n in runs:
                fruns.append((page, base + start * spb, n))
                page += n
            f = File(fruns, min(size, page * PAGE))
            for off in range(0, f.pages * PAGE, 128 * 1024):
                read(f, off, 128 * 1024, out)
    return out


def write_trace(path, per_proc):
    """One closed loop per process, from time 0 (csv: no think time)."""
    with open(path, "w") as fh:
        fh.write("time_ns,pid,op,sector,sectors\n")
        for pid, reqs in enumerate(per_proc, 1):
            for sector, n in reqs:
                fh.write(f"0,{pid},R,{sector},{n}\n")
    return sum(len(r) for r in per_proc)


# --------------------------------------------------------------------------
# Runs


def simulate(trace, disk, model, configs):
    args = [REDCAPCTL, "simulate", "--trace", trace, "--format", "csv", "--disk", disk,
            "--capacity", str(DISKS[disk]), "--json"]
    if model:
        args += ["--model", model]
    for c in configs:
        args += ["--config", c]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"{' '.join(args)}: {r.stderr.strip()}")
    return json.loads(r.stdout)["results"]


def train_requests(capacity, seed=7):
    """Reads of 4 KiB to 256 KiB over a disk of @capacity sectors, as vdiskctl
    train sends them (half where the last ended, a quarter 4 KiB << k before
    or after it, the rest at random): (sector, sectors) pairs."""
    rng = random.Random(seed)
    reqs = []
    for i in range(6000):
        n = 8 << rng.randrange(7)
        sector = rng.randrange((capacity - 4096) // 8) * 8
        end = reqs[-1][0] + reqs[-1][1] if reqs else 0
        if i % 4 in (1, 2) and reqs:
            sector = end
        elif i % 4 == 3 and reqs:
            skip = 8 << rng.randrange(12)
            if rng.randrange(2):
                sector = end + skip
            elif end >= skip + n:
                sector = end - skip - n
        reqs.append((sector, n))
    return reqs


def train_model(disk, tmp):
    """train_requests() replayed bare; the model the model layer learnt is kept."""
    trace = os.path.join(tmp, f"train-{disk}.csv")
    write_trace(trace, [train_requests(DISKS[disk])])
    model = os.path.join(tmp, f"model-{disk}.tables")
    r = subprocess.run([REDCAPCTL, "simulate", "--trace", trace, "--format", "csv",
                        "--disk", disk, "--capacity", str(DISKS[disk]), "--config", "bare",
                        "--save-model", model], capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(r.stderr.strip())
    return model


def workload_trace(workload, procs, layout, tmp):
    t0 = time.monotonic()
    if workload == "lkr":
        per = [lkr_requests(layout, p) for p in range(procs)]
    else:
        per = [pattern_requests(workload, p) for p in range(procs)]
    path = os.path.join(tmp, f"{workload}-{procs}.csv")
    n = write_trace(path, per)
    sectors = sum(s for reqs in per for _, s in reqs)
    return path, {"requests": n, "read_mib": round(sectors * SECTOR / MiB, 1),
                  "made_s": round(time.monotonic() - t0, 1)}


def cells(workloads, procs_all, disks, layout, tmp):
    """Each (workload, procs, disk, trace, model) of a run over the traces
    made here, with a model trained per disk (train_model()); a trace is
    deleted once every disk that can take its processes has had it."""
    models = {disk: train_model(disk, tmp) for disk in disks}
    for workload in workloads:
        for procs in procs_all:
            trace, _ = workload_trace(workload, procs, layout, tmp)
            for disk in [d for d in disks if procs <= MAX_PROCS[d]]:
                yield workload, procs, disk, trace, models[disk]
            os.unlink(trace)


def curve_configs():
    out = []
    for mib in CURVE_MIB:
        for kib in CURVE_SEG_KIB:
            segs = mib * 1024 // kib
            out += [f"{segs}x{kib}k:always", f"{segs}x{kib}k:adaptive+caware"]
    return out


def record(workload, procs, disk, res, info, kind):
    out = []
    bare = next(r for r in res if r["config"] == "bare")
    for r in res:
        rec = {"kind": kind, "workload": workload, "procs": procs, "disk": disk,
               "config": r["config"], "app_time_s": round(r["app_time_s"], 4),
               "disk_busy_s": round(r["disk_busy_s"], 4),
               "vs_bare_pct": round(100 * (r["app_time_s"] / bare["app_time_s"] - 1), 1),
               **info}
        st = r.get("stats")
        if st:
            rec.update({k: st[k] for k in ("read_hits", "read_misses", "fill_ios",
                                           "read_bypassed", "switches", "state")})
        out.append(rec)
    return out


# --------------------------------------------------------------------------
# The report


SHORT = {f"{g}:adaptive,estimator=spk": f"{g} spk" for g in PAPER_GEOMETRIES}
SHORT.update({f"{g}:always": f"{g} always" for g in PAPER_GEOMETRIES})
SHORT.update({"64x128k:adaptive+caware": "64x128k a+c", "512x128k:adaptive+caware":
              "512x128k a+c"})


def table_md(records, disk):
    rows = [r for r in records if r["kind"] == "table" and r["disk"] == disk]
    cols = [c for c in CONFIGS if c != "bare"]
    out = ["| workload | procs | requests | read MiB | bare s | " +
           " | ".join(SHORT[c] for c in cols) + " |",
           "|---|---|---|---|---|" + "---|" * len(cols)]
    for w in WORKLOADS:
        for p in PROCS:
            cell = {r["config"]: r for r in rows if r["workload"] == w and r["procs"] == p}
            if "bare" not in cell:
                continue
            b = cell["bare"]
            vals = []
            for c in cols:
                r = cell[c]
                flag = "" if r.get("state", "active") == "active" else " (off)"
                vals.append(f"{r['vs_bare_pct']:+.0f}{flag}")
            out.append(f"| {w} | {p} | {b['requests']} | {b['read_mib']:.0f} | "
                       f"{b['app_time_s']:.1f} | " + " | ".join(vals) + " |")
    return out


def curve_md(records, disk, policy):
    rows = [r for r in records if r["kind"] == "curve" and r["disk"] == disk]
    out = ["| workload | segment | " + " | ".join(f"{m} MiB" for m in CURVE_MIB) + " |",
           "|---|---|" + "---|" * len(CURVE_MIB)]
    for w in WORKLOADS:
        for kib in CURVE_SEG_KIB:
            vals = []
            for mib in CURVE_MIB:
                spec = f"{mib * 1024 // kib}x{kib}k:{policy}"
                r = [x for x in rows if x["workload"] == w and x["config"] == spec]
                vals.append(f"{r[0]['vs_bare_pct']:+.0f}" if r else "-")
            out.append(f"| {w} | {kib} KiB | " + " | ".join(vals) + " |")
    return out


def plots(records, out_dir, date):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    made = []
    for disk in DISKS:
        fig, axes = plt.subplots(2, 4, figsize=(16, 7.5))
        for ax, w in zip(axes.flat, WORKLOADS):
            rows = [r for r in records if r["kind"] == "table" and r["disk"] == disk and
                    r["workload"] == w]
            for c in CONFIGS[1:5] + CONFIGS[-2:]:
                pts = sorted((r["procs"], r["vs_bare_pct"]) for r in rows if r["config"] == c)
                if pts:
                    ax.plot([p for p, _ in pts], [v for _, v in pts], marker="o",
                            label=SHORT[c], linestyle="--" if "a+c" in SHORT[c] else "-")
            ax.axhline(0, color="black", linewidth=0.8)
            ax.set_xscale("log", base=2)
            ax.set_title(w)
            ax.set_xlabel("processes")
            ax.set_ylabel("app time vs bare (%)")
        axes.flat[-1].axis("off")
        axes.flat[0].legend(fontsize=7)
        fig.suptitle(f"redcapctl simulate, {disk}: the paper's workloads, 1 GiB per process")
        fig.tight_layout()
        name = f"{date}-bench-sim-{disk}-procs.png"
        fig.savefig(os.path.join(out_dir, name), dpi=80)
        plt.close(fig)
        made.append(name)

        fig, axes = plt.subplots(2, 4, figsize=(16, 7.5))
        for ax, w in zip(axes.flat, WORKLOADS):
            rows = [r for r in records if r["kind"] == "curve" and r["disk"] == disk and
                    r["workload"] == w]
            for kib in CURVE_SEG_KIB:
                for policy, style in (("always", "-"), ("adaptive+caware", ":")):
                    pts = []
                    for mib in CURVE_MIB:
                        spec = f"{mib * 1024 // kib}x{kib}k:{policy}"
                        pts += [(mib, r["vs_bare_pct"]) for r in rows if r["config"] == spec]
                    if pts:
                        ax.plot([m for m, _ in pts], [v for _, v in pts], linestyle=style,
                                marker="o", markersize=3,
                                label=f"{kib} KiB {'always' if policy == 'always' else 'a+c'}")
            ax.axhline(0, color="black", linewidth=0.8)
            ax.set_xscale("log", base=2)
            ax.set_title(f"{w}, {CURVE_PROCS} processes")
            ax.set_xlabel("cache (MiB)")
            ax.set_ylabel("app time vs bare (%)")
        axes.flat[-1].axis("off")
        axes.flat[0].legend(fontsize=6)
        fig.suptitle(f"redcapctl simulate, {disk}: application time against cache and "
                     "segment size")
        fig.tight_layout()
        name = f"{date}-bench-sim-{disk}-cache.png"
        fig.savefig(os.path.join(out_dir, name), dpi=80)
        plt.close(fig)
        made.append(name)
    return made


def report(records, out_dir, date, command, seconds):
    pngs = plots(records, out_dir, date)
    md = [f"# redcapctl simulate at the paper's scale ({date})", "",
          f"Produced by `{command}` in {seconds:.0f} s on the host (records: "
          f"`{date}-bench-sim.json`; plots: " + ", ".join(f"`{p}`" for p in pngs) + ").", "",
          "What is simulated and what is approximated: the docstring of "
          "`tests/bench/sim-scale.py` (the page cache's read-ahead, the files' layout, LKR "
          "from a real ext4 of linux-source-6.1) and redcapctl(8) (the replay).  Cells: "
          "change of the application time against the bare disk, %; negative is faster; "
          "(off) = the cache ended inactive.  spk = `policy adaptive estimator spk` (the "
          "paper's algorithm), always = `policy always`, a+c = `policy adaptive+caware "
          "estimator vdisk` with a trained model (what redcapctl create builds).", ""]
    for disk in DISKS:
        md += [f"## {disk}: the paper's workloads, 1 GiB per process", ""]
        md += table_md(records, disk) + [""]
        for policy in ("always", "adaptive+caware"):
            md += [f"## {disk}: cache size x segment size, policy {policy}, "
                   f"{CURVE_PROCS} processes", ""]
            md += curve_md(records, disk, policy) + [""]
    with open(os.path.join(out_dir, f"{date}-bench-sim.md"), "w") as fh:
        fh.write("\n".join(md))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="directory of the results")
    ap.add_argument("--date", default=time.strftime("%Y-%m-%d"))
    ap.add_argument("--quick", action="store_true",
                    help="1 and 4 processes, no curve (a check that it all runs)")
    ap.add_argument("--lkr-layout", default=os.path.join(TOP, "build", "bench-sim",
                                                         "lkr-layout.csv"))
    args = ap.parse_args()
    layout = lkr_layout(args.lkr_layout)
    procs_all = [1, 4] if args.quick else PROCS
    records = []
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-sim-") as tmp:
        models = {disk: train_model(disk, tmp) for disk in DISKS}
        for workload in WORKLOADS:
            for procs in procs_all:
                trace, info = workload_trace(workload, procs, layout, tmp)
                for disk in [d for d in DISKS if procs <= MAX_PROCS[d]]:
                    t1 = time.monotonic()
                    res = simulate(trace, disk, models[disk], CONFIGS)
                    info["simulated_s"] = round(time.monotonic() - t1, 1)
                    records += record(workload, procs, disk, res, info, "table")
                    log(f"{disk} {workload} x{procs}: {info['requests']} requests, "
                        f"made in {info['made_s']} s, simulated in {info['simulated_s']} s")
                    if procs == CURVE_PROCS and not args.quick:
                        t1 = time.monotonic()
                        res = simulate(trace, disk, models[disk], ["bare"] + curve_configs())
                        cinfo = dict(info, simulated_s=round(time.monotonic() - t1, 1))
                        records += record(workload, procs, disk, res, cinfo, "curve")
                        log(f"{disk} {workload} x{procs}: the curve in "
                            f"{cinfo['simulated_s']} s")
                os.unlink(trace)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, f"{args.date}-bench-sim.json")
    with open(path, "w") as fh:
        fh.write("[\n" + ",\n".join(json.dumps(r, sort_keys=True) for r in records) + "\n]\n")
    report(records, args.out, args.date, "make bench-sim" if not args.quick else
           "tests/bench/sim-scale.py --quick", time.monotonic() - t0)
    log(f"{len(records)} records in {path}, {time.monotonic() - t0:.0f} s")


if __name__ == "__main__":
    main()
