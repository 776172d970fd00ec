#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""FOR (file-oriented fills, issue 47) in redcapctl simulate at make
bench-sim's scale: how much disk time a fill that stops at a file's end
saves on small-file reads, and whether it costs LKR anything.  Runs on the
host: no guest, no device, no root.

Each workload is replayed on both emulated disks through the bare disk and
through redcapctl's default stack (512x128k:adaptive+caware, 64 MiB of
128 KiB segments, with sim-scale.py's trained model), once without and
once with --layout, the files' runs as redcapctl layout would send them
(units of 4 KiB, one run per file).  FOR changes only the misses the
speculation budget's bar refuses: instead of bypassing to the disk they
fill their file's run within the segment.  For reference, the same cache
with policy always (the paper's blind read-ahead: every miss fills its
whole segment; no budget, so FOR never acts on it) is replayed too.  Each
process is a closed loop without think time, so the disk is seldom idle:
application time and disk busy time are nearly the same.  The workloads:

  * small files: 104860 files of 4, 8, 12 and 16 KiB (a quarter of each,
    sizes shuffled: the 4-16 KiB group of the issue's goal), 1 GiB laid
    out contiguously one after the other from 64 MiB, as ext4 lays out a
    directory's small files; 128 closed-loop readers, each reading 1000
    whole files drawn from a Zipf popularity (alpha 0.4, the paper's
    synthetic, and 0.8) over a random permutation of the files, each file
    in one request of its size (the page cache reads a small file in one
    request; the trace is what reaches the block layer, no page cache
    filters it).  Three seeds (sizes, permutation, draws): the report gives
    the median and the spread;
  * LKR from sim-scale.py (1 and 4 processes): its layout is the extents
    of every file and directory of lkr-layout.csv, at each copy's base, as
    lkr_requests() maps them (redcapctl layout walks regular files only:
    here directories have their ends too).

The traces, the model and the replay are sim-scale.py's (imported, not
copied); what the simulator does is in redcapctl(8) (simulate, LAYOUT).

usage: for-sim.py --out DIR [--date D] [--reads N] [--lkr-layout CSV]
(reproduce: tests/bench/for-sim.py --out docs/results)
"""
import argparse
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
_spec = importlib.util.spec_from_file_location("sim_scale", os.path.join(HERE, "sim-scale.py"))
ss = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ss)

UNIT = ss.PAGE // ss.SECTOR		# the layout's unit: 4 KiB, in sectors
DEFAULT = "512x128k:adaptive+caware"	# redcapctl create's stack
assert DEFAULT in ss.CONFIGS
# For reference, the paper's baseline: a cache that fills every miss's
# whole segment (no budget, so FOR never acts on it).
BLIND = "512x128k:always"
CONFIGS = ["bare", DEFAULT, BLIND]
SIZES_KIB = [4, 8, 12, 16]
NR_FILES = 4 * -(-ss.GiB // (sum(SIZES_KIB) * 1024))	# >= 1 GiB in all
FILES_START = ss.FILE_GAP		# sectors: from 64 MiB
READERS = 128
READS = 1000				# files each reader reads: 1.2 GiB in all
ALPHAS = [0.4, 0.8]
SEEDS = [1, 2, 3]
LKR_PROCS = [1, 4]
GOAL_PCT = -25.0			# disk busy, FOR against whole-segment fills
MSG_MAX = 16384				# characters of a layout_runs message
COUNTERS = ["for_fills", "for_saved_sectors", "read_extended", "read_bypassed_part",
            "reads", "read_hits", "read_misses", "read_bypassed", "read_bypassed_budget",
            "read_bypassed_inactive", "sim_hits", "sim_misses", "switches", "fill_ios",
            "fill_sectors", "evictions", "layout_ends"]

log = ss.log


# --------------------------------------------------------------------------
# Layouts: the messages redcapctl layout --out writes


def write_layout(path, runs):
    """@runs: (first unit, units), any order; a run covers its file's run of
    consecutive blocks.  Sorted, duplicates once, as redcapctl layout."""
    with open(path, "w") as fh:
        fh.write(f"layout_clear {UNIT}\n")
        line, end = "", None
        for start, n in sorted(set(runs)):
            word = f"{start:x}:{n:x}" if end is None or start < end else \
                f"+{start - end:x}:{n:x}"
            if len(line) + 1 + len(word) > MSG_MAX:
                fh.write(line + "\n")
                line, word = "", f"{start:x}:{n:x}"
            line = (line + " " + word) if line else "layout_runs " + word
            end = start + n
        if line:
            fh.write(line + "\n")
    return len(set(runs))


def merged(runs):
    """A file's (block, n) runs in file order, joined where one follows the
    other on the disk too."""
    out = []
    for start, n in runs:
        if out and out[-1][0] + out[-1][1] == start:
            out[-1] = (out[-1][0], out[-1][1] + n)
        elif n:
            out.append((start, n))
    return out


def lkr_layout_runs(layout, procs):
    image, events = layout
    runs = []
    for proc in range(procs):
        base = (ss.FILE_GAP // ss.SECTOR + proc * ((image + ss.FILE_GAP) // ss.SECTOR)) // UNIT
        for kind, _, blocks in events:
            if kind in ("file", "dir"):
                runs += [(base + s, n) for s, n in merged(blocks)]
    return runs


# --------------------------------------------------------------------------
# The small-file workload


def small_files(alpha, seed, reads, tmp):
    """The trace and the layout of one seed: files, popularity, draws."""
    rng = random.Random(seed)
    sizes = [SIZES_KIB[i % len(SIZES_KIB)] * 1024 // ss.SECTOR for i in range(NR_FILES)]
    rng.shuffle(sizes)
    where, sector = [], FILES_START // ss.SECTOR
    for n in sizes:
        where.append(sector)
        sector += n
    perm = list(range(NR_FILES))
    rng.shuffle(perm)			# rank -> file
    cum = list(itertools.accumulate(1 / (k + 1) ** alpha for k in range(NR_FILES)))
    per = []
    for _ in range(READERS):
        ranks = rng.choices(range(NR_FILES), cum_weights=cum, k=reads)
        per.append([(where[perm[r]], sizes[perm[r]]) for r in ranks])
    trace = os.path.join(tmp, f"small-{alpha}-{seed}.csv")
    n = ss.write_trace(trace, per)
    lay = os.path.join(tmp, f"small-{seed}.layout")
    write_layout(lay, [(w // UNIT, s // UNIT) for w, s in zip(where, sizes)])
    distinct = len({s for reqs in per for s, _ in reqs})
    return trace, lay, {"requests": n, "files_read": distinct,
                        "read_mib": round(sum(s for reqs in per for _, s in reqs) *
                                          ss.SECTOR / ss.MiB, 1)}


# --------------------------------------------------------------------------
# Runs


def simulate(trace, disk, model, layout, configs=CONFIGS):
    """redcapctl simulate's results, one per config of @configs."""
    args = [ss.REDCAPCTL, "simulate", "--trace", trace, "--format", "csv", "--disk", disk,
            "--capacity", str(ss.DISKS[disk]), "--model", model, "--json"]
    if layout:
        args += ["--layout", layout]
    for c in configs:
        args += ["--config", c]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"{' '.join(args)}: {r.stderr.strip()}")
    return json.loads(r.stdout)["results"]


def run_cell(workload, seed, trace, lay, disk, model, info):
    """Both configs without and with the layout: one record per config."""
    t0 = time.monotonic()
    whole = {r["config"]: r for r in simulate(trace, disk, model, None)}
    fors = {r["config"]: r for r in simulate(trace, disk, model, lay)}
    bare = whole["bare"]
    if fors["bare"]["app_time_s"] != bare["app_time_s"]:
        raise RuntimeError(f"{workload} {disk}: bare changed with a layout")
    out = []
    for c in CONFIGS:
        rec = {"workload": workload, "seed": seed, "disk": disk, "config": c, **info,
               "simulated_s": round(time.monotonic() - t0, 1),
               "bare_busy_s": round(bare["disk_busy_s"], 4)}
        for tag, r in (("whole", whole[c]), ("for", fors[c])):
            rec[f"{tag}_app_s"] = round(r["app_time_s"], 4)
            rec[f"{tag}_busy_s"] = round(r["disk_busy_s"], 4)
            rec[f"{tag}_vs_bare_pct"] = round(100 * (r["app_time_s"] /
                                                     bare["app_time_s"] - 1), 2)
            st = r.get("stats")
            if st:
                rec[f"{tag}_state"] = st["state"]
                rec.update({f"{tag}_{k}": st[k] for k in COUNTERS})
        rec["busy_for_vs_whole_pct"] = round(100 * (rec["for_busy_s"] /
                                                    rec["whole_busy_s"] - 1), 2)
        rec["app_for_vs_whole_pct"] = round(100 * (rec["for_app_s"] /
                                                   rec["whole_app_s"] - 1), 2)
        out.append(rec)
    return out


# --------------------------------------------------------------------------
# The report


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


def active_pct(r, tag):
    """Reads the cache decided while active, % of its reads."""
    return 100 * (1 - r[f"{tag}_read_bypassed_inactive"] / max(r[f"{tag}_reads"], 1))


def by_cell(records, config):
    """(workload, disk) -> @config's records, one per seed."""
    out = {}
    for r in records:
        if r["config"] == config:
            out.setdefault((r["workload"], r["disk"]), []).append(r)
    return out


def derive(records):
    """What the report shows beyond simulate's numbers, into each record."""
    for r in records:
        if r["config"] == "bare":
            continue
        r["whole_active_pct"] = round(active_pct(r, "whole"), 1)
        r["for_active_pct"] = round(active_pct(r, "for"), 1)
        r["for_saved_mib"] = round(r["for_for_saved_sectors"] * ss.SECTOR / ss.MiB, 1)
        r["whole_hit_pct"] = round(100 * r["whole_read_hits"] / max(r["whole_reads"], 1), 2)
        r["whole_busy_vs_bare_pct"] = round(100 * (r["whole_busy_s"] / r["bare_busy_s"] - 1),
                                            2)
    for r in records:
        if r["config"] != DEFAULT:
            continue
        b = next(x for x in records if x["config"] == BLIND and x["disk"] == r["disk"] and
                 x["workload"] == r["workload"] and x["seed"] == r["seed"])
        for tag in ("whole", "for"):
            r[f"busy_{tag}_vs_blind_pct"] = round(100 * (r[f"{tag}_busy_s"] /
                                                         b["whole_busy_s"] - 1), 2)


def report(records, out_dir, date, command, seconds):
    bare, blind = by_cell(records, "bare"), by_cell(records, BLIND)
    md = [f"# FOR (file-oriented fills) in redcapctl simulate ({date})", "",
          "| workload | disk | bare s | app vs bare %: whole, FOR | disk busy s: whole, FOR "
          "| **FOR vs whole %: busy**, app | reads while active %: whole, FOR | for_fills "
          "| saved MiB | read_extended | read_bypassed_part |",
          "|---|---|---|---|---|---|---|---|---|---|---|"]
    goal, notes, lkr = [], [], []
    segs = DEFAULT.split("x")[0]
    for (w, d), rows in by_cell(records, DEFAULT).items():
        md.append(
            f"| {w} | {d} | {sec(bare[(w, d)], 'whole_app_s')} | "
            f"{pct(rows, 'whole_vs_bare_pct')}, {pct(rows, 'for_vs_bare_pct')} | "
            f"{sec(rows, 'whole_busy_s')}, {sec(rows, 'for_busy_s')} | "
            f"**{pct(rows, 'busy_for_vs_whole_pct')}**, {pct(rows, 'app_for_vs_whole_pct')} | "
            f"{med(rows, 'whole_active_pct')[0]:.0f}, {med(rows, 'for_active_pct')[0]:.0f} | "
            f"{med(rows, 'for_for_fills')[0]:.0f} | {med(rows, 'for_saved_mib')[0]:.0f} | "
            f"{med(rows, 'for_read_extended')[0]:.0f} | "
            f"{med(rows, 'for_read_bypassed_part')[0]:.0f} |")
        if w.startswith("small"):
            goal.append((w, d, med(rows, "busy_for_vs_whole_pct")[0]))
            off = sum(r["for_state"] == "inactive" for r in rows)
            notes.append(
                f"{w} {d}: the cache ended off in {off} of {len(rows)} runs; it decided "
                f"{med(rows, 'for_active_pct')[0]:.0f} % of the reads while on (median), "
                f"FOR filled {med(rows, 'for_for_fills')[0]:.0f} of its "
                f"{med(rows, 'for_read_misses')[0]:.0f} misses.  The blind cache hits "
                f"{med(blind[(w, d)], 'whole_hit_pct')[0]:.1f} % of reads and costs "
                f"{pct(blind[(w, d)], 'whole_busy_vs_bare_pct')} % disk busy against bare; "
                f"against it the default stack's is {pct(rows, 'busy_whole_vs_blind_pct')} % "
                f"whole, {pct(rows, 'busy_for_vs_blind_pct')} % with FOR.")
        else:
            r = rows[0]
            lkr.append(f"{w} {d} {signed(r['for_vs_bare_pct'] - r['whole_vs_bare_pct'])}")
    short = [v - GOAL_PCT for _, _, v in goal]
    md += ["", f"Cache `{DEFAULT}` (redcapctl's default, 64 MiB), vdisk estimator with "
           "make bench-sim's trained model; whole = without `--layout`, FOR = with it (bare "
           "is the same either way). Small files: "
           f"{NR_FILES} files of 4/8/12/16 KiB (1 GiB) back to back, {READERS} closed-loop "
           "readers of whole files, Zipf α over a permutation; median of seeds "
           f"{', '.join(map(str, SEEDS))} (min…max where they differ). LKR: make "
           "bench-sim's, one run. Counters: the runs with FOR, median.", "",
           f"Reproduce: `{command}` ({seconds:.0f} s; records `{date}-for-sim.json`; "
           "what is simulated: the docstring of `tests/bench/for-sim.py`; code: "
           f"{tree()}).", "",
           "**Issue 47's goal**, disk busy ≥ 25 % lower than the same cache with "
           "whole-segment fills for 4–16 KiB files: " +
           ("met" if max(short) <= 0 else
            f"missed, by {min(short):.1f} to {max(short):.1f} points") + ".  "
           "On LKR, FOR against whole in points of app time vs bare (goal ≤ +1): " +
           "; ".join(lkr) + ".", "",
           f"FOR acts only on a miss the speculation budget refuses while the cache is on. "
           "Off, it judges whether to come back by simulating whole-segment fills (the "
           "layout plays no part), so a layout cannot bring it back on.  "
           f"Blind: `{BLIND}`, which fills every miss's segment (the paper's baseline); "
           f"its hits are roughly the most that fills of {segs} segments, however short, "
           "could save.  Small files:"]
    md += [f"* {n}" for n in notes] + [""]
    with open(os.path.join(out_dir, f"{date}-for-sim.md"), "w") as fh:
        fh.write("\n".join(md))
    return md


def cli(doc, reads, reads_help):
    """The arguments of a simulator bench (this one, hdc-sim.py), LKR's layout made."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="directory of the results")
    ap.add_argument("--date", default=time.strftime("%Y-%m-%d"))
    ap.add_argument("--reads", type=int, default=reads,
                    help=f"{reads_help} (default {reads})")
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
    args = cli(__doc__, READS, "files each small-file reader reads")
    records = []
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="for-sim-") as tmp:
        models = {disk: ss.train_model(disk, tmp) for disk in ss.DISKS}
        for alpha in ALPHAS:
            for seed in SEEDS:
                trace, lay, info = small_files(alpha, seed, args.reads, tmp)
                for disk in ss.DISKS:
                    records += run_cell(f"small α{alpha}", seed, trace, lay, disk,
                                        models[disk], info)
                    log(f"{disk} small α{alpha} seed {seed}: {info['requests']} requests, "
                        f"{records[-1]['simulated_s']} s")
                os.unlink(trace)
        layout = ss.load_layout(args.lkr_layout)
        for procs in LKR_PROCS:
            trace, info = ss.workload_trace("lkr", procs, layout, tmp)
            lay = os.path.join(tmp, f"lkr-{procs}.layout")
            info["layout_runs"] = write_layout(lay, lkr_layout_runs(layout, procs))
            for disk in [d for d in ss.DISKS if procs <= ss.MAX_PROCS[d]]:
                records += run_cell(f"lkr ×{procs}", None, trace, lay, disk, models[disk],
                                    info)
                log(f"{disk} lkr x{procs}: {info['requests']} requests, "
                    f"{records[-1]['simulated_s']} s")
            os.unlink(trace)
    derive(records)
    path = write_records(args, "for-sim", records)
    cmd = "tests/bench/for-sim.py --out docs/results" + \
        (f" --reads {args.reads}" if args.reads != READS else "")
    print("\n".join(report(records, args.out, args.date, cmd, time.monotonic() - t0)))
    log(f"{len(records)} records in {path}, {time.monotonic() - t0:.0f} s")


if __name__ == "__main__":
    main()
