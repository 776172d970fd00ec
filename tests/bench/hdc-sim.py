#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""HDC (host-guided device caching, issue 47) in redcapctl simulate: how
much disk time pinning the segments that missed most saves on Zipf reads
whose hot set is larger than the page cache and smaller than the cache,
and whether it costs LKR anything.  Runs on the host:
no guest, no device, no root.

The workload: a file server's.  Files of 4 KiB to 256 KiB (log-uniform,
whole pages), 1 GiB laid out back to back from 64 MiB; READERS closed-loop
readers, each reading READS whole files drawn from a Zipf popularity
(alpha 0.4 and 0.8) over a random permutation of the files.  A page cache
of PAGE_CACHE_MIB (LRU over whole files, shared, in the order the readers'
requests interleave round-robin) filters them: a file it holds is not
read, one it does not is read in requests of at most 128 KiB (the page
cache's read-ahead window).  The trace is what reaches the block layer.
Three seeds (sizes, permutation, draws); the report gives the median and
the spread.

Each trace is replayed on both emulated disks through the bare disk and
through CACHE (256 MiB of 128 KiB segments, four times the page cache)
with redcapctl's default policy and with policy always, each without and
with HDC (hdc=50: 128 MiB pinned, and the default policy with hdc=25 too;
hot_period=PERIOD_S simulated seconds, so that a run sees several periods;
the target's default is an hour).  LKR from sim-scale.py checks that HDC
costs nothing where it has nothing to pin.

The model, the traces' format and the replay are sim-scale.py's (imported,
not copied).

usage: hdc-sim.py --out DIR [--date D] [--reads N]
(reproduce: tests/bench/hdc-sim.py --out docs/results)
"""
import argparse
import collections
import importlib.util
import itertools
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.realpath(__file__))


def _load(name, file):
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, file))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


ss = _load("sim_scale", "sim-scale.py")

NR_SEGS = 2048
CACHE = f"{NR_SEGS}x128k"
PERIOD_S = 60
HDC = f"hdc=50,hot_period={PERIOD_S}"
HDC25 = f"hdc=25,hot_period={PERIOD_S}"
DEFAULT = f"{CACHE}:adaptive+caware"
ALWAYS = f"{CACHE}:always"
CONFIGS = {"bare": "bare", "default": DEFAULT, "default+hdc": f"{DEFAULT},{HDC}",
           "default+hdc25": f"{DEFAULT},{HDC25}",
           "always": ALWAYS, "always+hdc": f"{ALWAYS},{HDC}"}
DATA_BYTES = 1 * ss.GiB
FILE_KIB = (4, 256)
PAGE_CACHE_MIB = 64
MAX_REQ = 128 * 1024 // ss.SECTOR	# sectors: the page cache's read-ahead window
READERS = 32
READS = 8000
ALPHAS = [0.4, 0.8]
SEEDS = [1, 2, 3]
LKR_PROCS = [1, 4]
GOAL_PCT = -20.0			# disk busy, HDC against the same cache without
COUNTERS = ["reads", "read_hits", "read_misses", "read_bypassed", "read_bypassed_inactive",
            "hdc_fills", "hdc_hits", "hdc_dropped", "fill_ios", "evictions"]

log = ss.log


def files(rng):
    """Sizes in sectors (log-uniform pages) and places, back to back from 64 MiB."""
    lo, hi = FILE_KIB[0] // 4, FILE_KIB[1] // 4
    sizes, total = [], 0
    while total < DATA_BYTES:
        pages = int(round(lo * (hi / lo) ** rng.random()))
        sizes.append(pages * ss.PAGE // ss.SECTOR)
        total += pages * ss.PAGE
    where, sector = [], ss.FILE_GAP // ss.SECTOR
    for n in sizes:
        where.append(sector)
        sector += n
    return sizes, where


def zipf_files(alpha, seed, reads, tmp):
    """The trace: what a page cache lets through."""
    rng = random.Random(seed)
    sizes, where = files(rng)
    nr = len(sizes)
    perm = list(range(nr))
    rng.shuffle(perm)
    cum = list(itertools.accumulate(1 / (k + 1) ** alpha for k in range(nr)))
    draws = [rng.choices(range(nr), cum_weights=cum, k=reads) for _ in range(READERS)]
    page_cache, held, cap = collections.OrderedDict(), 0, PAGE_CACHE_MIB * ss.MiB // ss.SECTOR
    per = [[] for _ in range(READERS)]
    hits = 0
    for k in range(reads):
        for p in range(READERS):
            f = perm[draws[p][k]]
            if f in page_cache:
                page_cache.move_to_end(f)
                hits += 1
                continue
            for off in range(0, sizes[f], MAX_REQ):
                per[p].append((where[f] + off, min(MAX_REQ, sizes[f] - off)))
            page_cache[f] = sizes[f]
            held += sizes[f]
            while held > cap:
                held -= page_cache.popitem(last=False)[1]
    trace = os.path.join(tmp, f"zipf-{alpha}-{seed}.csv")
    n = ss.write_trace(trace, per)
    # the oracle: the share of read pieces (one a segment) the K segments
    # read most in the whole trace would serve, pinned from the start
    pieces = collections.Counter(s // 256 for r in per for sector, n_ in r
                                 for s in range(sector - sector % 256, sector + n_, 256))
    top = sorted(pieces.values(), reverse=True)
    total = sum(top)
    return trace, {"files": nr, "requests": n,
                        "oracle_pinned_pct": round(100 * sum(top[:NR_SEGS // 2]) / total, 1),
                        "oracle_cache_pct": round(100 * sum(top[:NR_SEGS]) / total, 1),
                        "page_cache_hit_pct": round(100 * hits / (reads * READERS), 1),
                        "read_mib": round(sum(s for r in per for _, s in r) *
                                          ss.SECTOR / ss.MiB, 1)}


def simulate(trace, disk, model, configs):
    """redcapctl simulate's results, by @configs' names."""
    args = [ss.REDCAPCTL, "simulate", "--trace", trace, "--format", "csv", "--disk", disk,
            "--capacity", str(ss.DISKS[disk]), "--model", model, "--json"]
    for c in configs.values():
        args += ["--config", c]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"{' '.join(args)}: {r.stderr.strip()}")
    return dict(zip(configs, json.loads(r.stdout)["results"]))


def run_cell(workload, seed, trace, disk, model, info):
    t0 = time.monotonic()
    res = simulate(trace, disk, model, CONFIGS)
    bare = res["bare"]
    rec = {"workload": workload, "seed": seed, "disk": disk, **info,
           "bare_app_s": round(bare["app_time_s"], 3), "bare_busy_s": round(bare["disk_busy_s"], 3)}
    for name, r in res.items():
        rec[f"{name}_app_s"] = round(r["app_time_s"], 3)
        rec[f"{name}_busy_s"] = round(r["disk_busy_s"], 3)
        rec[f"{name}_vs_bare_pct"] = round(100 * (r["app_time_s"] / bare["app_time_s"] - 1), 2)
        st = r.get("stats")
        if st:
            rec[f"{name}_state"] = st["state"]
            rec.update({f"{name}_{k}": st[k] for k in COUNTERS})
            rec[f"{name}_hit_pct"] = round(100 * st["read_hits"] / max(st["reads"], 1), 1)
    for a, b in (("default+hdc", "default"), ("default+hdc25", "default"),
                 ("always+hdc", "always")):
        if a in res and b in res:
            rec[f"busy_{a}_vs_{b}_pct"] = round(100 * (rec[f"{a}_busy_s"] /
                                                       rec[f"{b}_busy_s"] - 1), 2)
            rec[f"app_{a}_vs_{b}_pct"] = round(100 * (rec[f"{a}_app_s"] /
                                                      rec[f"{b}_app_s"] - 1), 2)
    rec["simulated_s"] = round(time.monotonic() - t0, 1)
    return rec


def med(rows, key):
    v = [r[key] for r in rows]
    return statistics.median(v), min(v), max(v)


def signed(v):
    return f"{v + 0.0:+.1f}".replace("-0.0", "+0.0")


def pct(rows, key):
    m, lo, hi = med(rows, key)
    return signed(m) + (f" ({signed(lo)}…{signed(hi)})" if hi - lo >= 0.05 else "")


def sec(rows, key):
    m, lo, hi = med(rows, key)
    return f"{m:.0f}" + (f" ({lo:.0f}…{hi:.0f})" if f"{lo:.0f}" != f"{hi:.0f}" else "")


def tree():
    """The sources the simulator was built from, as git describes them."""
    r = subprocess.run(["git", "-C", ss.TOP, "describe", "--always", "--dirty"],
                       capture_output=True, text=True)
    return r.stdout.strip() or "unknown"


def pct_cells(records):
    """HDC at 25 % against none, disk busy, median per Zipf cell."""
    return "disk busy vs none " + ", ".join(
        pct(rows, "busy_default+hdc25_vs_default_pct")
        for (w, _), rows in cells(records).items() if w.startswith("zipf")) + " %"


def cells(records):
    out = collections.OrderedDict()
    for r in records:
        out.setdefault((r["workload"], r["disk"]), []).append(r)
    return out


def report(records, out_dir, date, command, seconds):
    md = [f"# HDC (pinned hot segments) in redcapctl simulate ({date})", "",
          "| workload | disk | page cache hits % | bare busy s | disk busy s: default, +HDC "
          "| **HDC vs without %: busy** (default) | always, +HDC | HDC vs without % (always) "
          "| hit % of pieces: default, +HDC "
          "| oracle %: pinned, cache | hdc_hits | hdc_fills |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    goal, lkr = [], []
    for (w, d), rows in cells(records).items():
        zipf = w.startswith("zipf")
        md.append(
            f"| {w} | {d} | {med(rows, 'page_cache_hit_pct')[0] if zipf else '–'} | "
            f"{sec(rows, 'bare_busy_s')} | {sec(rows, 'default_busy_s')}, "
            f"{sec(rows, 'default+hdc_busy_s')} | "
            f"**{pct(rows, 'busy_default+hdc_vs_default_pct')}** | "
            f"{sec(rows, 'always_busy_s')}, {sec(rows, 'always+hdc_busy_s')} | "
            f"{pct(rows, 'busy_always+hdc_vs_always_pct')} | "
            f"{med(rows, 'default_hit_pct')[0]:.1f}, {med(rows, 'default+hdc_hit_pct')[0]:.1f} | " +
            (f"{med(rows, 'oracle_pinned_pct')[0]:.1f}, {med(rows, 'oracle_cache_pct')[0]:.1f} | "
             if zipf else "– | ") +
            f"{med(rows, 'default+hdc_hdc_hits')[0]:.0f} | "
            f"{med(rows, 'default+hdc_hdc_fills')[0]:.0f} |")
        if zipf:
            goal.append(med(rows, "busy_default+hdc_vs_default_pct")[0])
        else:
            lkr.append(f"{w} {d} " + signed(rows[0]["default+hdc_vs_bare_pct"] -
                                               rows[0]["default_vs_bare_pct"]))
    short = [v - GOAL_PCT for v in goal]
    md += ["", f"Cache `{CACHE}` (256 MiB), HDC `{HDC}` (128 MiB pinned; +HDC25: "
           f"`{HDC25}`, 64 MiB, {pct_cells(records)}); default = "
           "`adaptive+caware` (redcapctl's), vdisk estimator with make bench-sim's trained "
           f"model. Zipf: files of {FILE_KIB[0]}–{FILE_KIB[1]} KiB ({DATA_BYTES // ss.GiB} GiB), {READERS} "
           f"closed-loop readers of {READS} whole files each, through a {PAGE_CACHE_MIB} MiB "
           "LRU page cache; median of seeds " + ", ".join(map(str, SEEDS)) +
           " (min…max where they differ). LKR: make bench-sim's, one run.  Hit %: "
           "read pieces (one a segment) served from RAM; oracle: the share of them that "
           "the segments read most in the whole trace, as many as HDC pins or as the "
           "cache holds, would serve if pinned from the start.", "",
           f"Reproduce: `{command}` ({seconds:.0f} s; records `{date}-hdc-sim.json`; what "
           f"is simulated: the docstring of `tests/bench/hdc-sim.py`; code: {tree()}).", "",
           "**Issue 47's goal**, disk busy ≥ 20 % lower with HDC than without on the Zipf "
           "workload (default stack): " +
           ("met" if max(short) <= 0 else
            f"missed, by {min(short):.1f} to {max(short):.1f} points") +
           ".  LKR, HDC against none in points of app time vs bare (goal ≤ +1): " +
           "; ".join(lkr) + ".", ""]
    with open(os.path.join(out_dir, f"{date}-hdc-sim.md"), "w") as fh:
        fh.write("\n".join(md))
    return md


def cli():
    """The arguments, LKR's layout made."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="directory of the results")
    ap.add_argument("--date", default=time.strftime("%Y-%m-%d"))
    ap.add_argument("--reads", type=int, default=READS,
                    help=f"files each reader reads (default {READS})")
    ap.add_argument("--lkr-layout", default=os.path.join(ss.TOP, "build", "bench-sim",
                                                         "lkr-layout.csv"))
    args = ap.parse_args()
    if not os.path.exists(args.lkr_layout):
        subprocess.run([sys.executable, os.path.join(HERE, "lkr-layout.py"),
                        "--out", args.lkr_layout], check=True)
    return args


def write_records(args, name, records):
    """The records as <date>-<name>.json in --out, one a line; its path."""
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, f"{args.date}-{name}.json")
    with open(path, "w") as fh:
        fh.write("[\n" + ",\n".join(json.dumps(r, sort_keys=True, ensure_ascii=False)
                                    for r in records) + "\n]\n")
    return path


def main():
    args = cli()
    records = []
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="hdc-sim-") as tmp:
        models = {disk: ss.train_model(disk, tmp) for disk in ss.DISKS}
        for alpha in ALPHAS:
            for seed in SEEDS:
                trace, info = zipf_files(alpha, seed, args.reads, tmp)
                for disk in ss.DISKS:
                    records.append(run_cell(f"zipf α{alpha}", seed, trace, disk,
                                            models[disk], info))
                    log(f"{disk} zipf α{alpha} seed {seed}: {info['requests']} requests, "
                        f"{records[-1]['simulated_s']} s")
                os.unlink(trace)
        layout = ss.load_layout(args.lkr_layout)
        for procs in LKR_PROCS:
            trace, info = ss.workload_trace("lkr", procs, layout, tmp)
            for disk in [d for d in ss.DISKS if procs <= ss.MAX_PROCS[d]]:
                records.append(run_cell(f"lkr ×{procs}", None, trace, disk,
                                        models[disk], info))
            os.unlink(trace)
    path = write_records(args, "hdc-sim", records)
    cmd = "tests/bench/hdc-sim.py --out docs/results" + \
        (f" --reads {args.reads}" if args.reads != READS else "")
    print("\n".join(report(records, args.out, args.date, cmd, time.monotonic() - t0)))
    log(f"{len(records)} records in {path}, {time.monotonic() - t0:.0f} s")


if __name__ == "__main__":
    main()
