#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Miniature simulations of the cache's own engine as geometry advice (issue 49).

The shadows are plain LRUs: another segment size's shadow misses the cache
with it by 14-17 points (shadow-check.py), because redcap's prefetch and
C-Aware's bypass decide what a geometry gains.  This asks whether the
engine itself, run on a spatial sample of the reads ("miniature
simulations", Waldspurger et al., ATC 2017), predicts it instead:

  * the live cache (64 MiB of 128 KiB segments, redcap's default policy)
    replays make bench-sim's trace on the emulated disk (sim-scale.py); its
    requests' issue times are kept (redcapctl simulate --issue-times);
  * the miniature: the reads that start in one region in --rate (regions of
    --region-mib, chosen by hash) at those times, each at its time whatever the miniature's disk
    does (simulate --open-loop, as the kernel would feed a miniature the
    reads it samples), through a cache of
    1/--rate of the RAM in each segment size;
  * the same geometries at full scale on the whole trace (closed loop).

The miniature's disk is the emulated drive (--disk: the method's best case)
or the model the bench trains (--model: what the kernel could price with).
Per cell: the geometry the miniature ranks first, the best fixed one, and
the chosen one's loss in points of the bare disk's time (the goal: within 3).

usage: geometry-check.py --out DIR [--date D] [--quick] [--rate N]
                         [--region-mib M] [--price drive|model]
"""
import argparse
import importlib.util
import json
import os
import subprocess
import tempfile
import time

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
_spec = importlib.util.spec_from_file_location(
    "sim_scale", os.path.join(TOP, "tests", "bench", "sim-scale.py"))
ss = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ss)

LIVE_MIB, LIVE_KIB = 64, 128
SIZES_KIB = [32, 64, 128, 256, 512, 1024]
POLICY = "adaptive+caware"
GOAL_POINTS = 3.0


def cfg(mib, kib):
    return f"{max(1, int(mib * 1024 // kib))}x{kib}k:{POLICY}"


def run(args):
    r = subprocess.run([ss.REDCAPCTL, "simulate"] + args, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"simulate {' '.join(args)}: {r.stderr.strip()}")
    return {x["config"]: x for x in json.loads(r.stdout)["results"]}


def sampled(region, rate, seed):
    h = ((region + seed) * 0x9E3779B97F4A7C15) & ((1 << 64) - 1)
    return (h >> 40) % rate == 0


def miniature_trace(timed, out, rate, region_sectors, seed, window_ns=0):
    """The reads of @timed (a csv trace with issue times) that start in a
    sampled region; how many, of how many."""
    n = i = 0
    with open(timed) as src, open(out, "w") as dst:
        dst.write(next(src))
        for i, line in enumerate(src):
            t, _, op, sector, sectors = line.rstrip("\n").split(",")
            key = int(t) // window_ns if window_ns else int(sector) // region_sectors
            if sampled(key, rate, seed):
                dst.write(line)
                n += 1
    return n, i + 1


def cell(workload, procs, disk, trace, model, tmp, a):
    timed = os.path.join(tmp, "timed.csv")
    base = ["--format", "csv", "--disk", disk, "--capacity", str(ss.DISKS[disk]),
            "--model", model, "--json"]
    full = run(["--trace", trace, "--issue-times", timed] + base +
               ["--config", cfg(LIVE_MIB, LIVE_KIB), "--config", "bare"] +
               sum((["--config", cfg(LIVE_MIB, k)] for k in SIZES_KIB if k != LIVE_KIB), []))
    mini_tr = os.path.join(tmp, "mini.csv")
    n, full_requests = miniature_trace(timed, mini_tr, a.rate, a.region_mib * 2048, a.seed,
                                       int(a.window_s * 1e9))
    ram = LIVE_MIB if a.window_s else LIVE_MIB / a.rate
    mini = {}
    if n:
        margs = ([] if a.closed else ["--open-loop"]) + ["--format", "csv", "--capacity", str(ss.DISKS[disk]), "--model", model,
                 "--json"]
        if a.price == "drive":
            margs += ["--disk", disk]
        mini = run(["--trace", mini_tr] + margs + ["--config", "bare"] +
                   sum((["--config", cfg(ram, k)] for k in SIZES_KIB), []))
    bare = full["bare"]["app_time_s"]
    rec = {"workload": workload, "procs": procs, "disk": disk, "rate": a.rate,
           "region_mib": a.region_mib, "seed": a.seed, "price": a.price,
           "sampled_requests": n, "requests": full_requests,
           "bare_app_s": bare, "full": {}, "mini": {}}
    for k in SIZES_KIB:
        rec["full"][k] = {"app_of_bare": round(full[cfg(LIVE_MIB, k)]["app_time_s"] / bare, 4),
                          "busy_of_bare": round(full[cfg(LIVE_MIB, k)]["disk_busy_s"] /
                                                full["bare"]["disk_busy_s"], 4)}
        if mini:
            m = mini[cfg(ram, k)]
            rec["mini"][k] = round(m["disk_busy_s"] / mini["bare"]["disk_busy_s"], 4)
    best = min(SIZES_KIB, key=lambda k: rec["full"][k]["app_of_bare"])
    chosen = min(SIZES_KIB, key=lambda k: rec["mini"][k]) if mini else LIVE_KIB
    rec["best_kib"], rec["chosen_kib"] = best, chosen
    rec["loss_pts"] = round(100 * (rec["full"][chosen]["app_of_bare"] -
                                   rec["full"][best]["app_of_bare"]), 2)
    rec["live_loss_pts"] = round(100 * (rec["full"][LIVE_KIB]["app_of_bare"] -
                                        rec["full"][best]["app_of_bare"]), 2)
    return rec


def report(records, path, command, seconds):
    within = sum(r["loss_pts"] <= GOAL_POINTS for r in records)
    live = sum(r["live_loss_pts"] <= GOAL_POINTS for r in records)
    lines = [f"# Miniature simulations as geometry advice", "",
             f"Made by `{command}` in {seconds / 60:.0f} min.  Application time of "
             "each fixed geometry (64 MiB, redcap's default policy) as a share of the "
             "bare disk's, the miniature's ranking (disk busy of its own bare), the "
             "geometry it would choose and what that costs against the best fixed one, "
             "in points of the bare time.", "",
             f"* the miniature's choice within {GOAL_POINTS:g} points of the best fixed "
             f"geometry in **{within} of {len(records)}** cells; "
             f"128 KiB always: {live} of {len(records)}.", "",
             "| disk | workload | procs | sampled | " +
             " | ".join(f"{k}K full / mini" for k in SIZES_KIB) +
             " | best | chosen | loss | 128K's loss |",
             "|---|---|---|---|" + "---|" * len(SIZES_KIB) + "---|---|---|---|"]
    for r in records:
        cells = " | ".join(
            f"{100 * r['full'][k]['app_of_bare']:.1f} / "
            f"{100 * r['mini'][k]:.1f}" if r["mini"] else
            f"{100 * r['full'][k]['app_of_bare']:.1f} / -" for k in SIZES_KIB)
        lines.append(f"| {r['disk']} | {r['workload']} | {r['procs']} | "
                     f"{r['sampled_requests']} of {r['requests']} | {cells} | "
                     f"{r['best_kib']}K | {r['chosen_kib']}K | {r['loss_pts']:+.1f} | "
                     f"{r['live_loss_pts']:+.1f} |")
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="directory of the results")
    ap.add_argument("--date", default=time.strftime("%Y-%m-%d"))
    ap.add_argument("--quick", action="store_true", help="hdd7200, 1 and 16 processes")
    ap.add_argument("--rate", type=int, default=8, help="one region in RATE")
    ap.add_argument("--region-mib", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--window-s", type=float, default=0,
                    help="sample windows of time of this length, not regions")
    ap.add_argument("--closed", action="store_true",
                    help="replay the sample closed-loop (each process's next read after its "
                    "last), not at the live cache's times")
    ap.add_argument("--price", choices=["drive", "model"], default="drive")
    ap.add_argument("--workloads", nargs="*", default=ss.WORKLOADS)
    ap.add_argument("--lkr-layout", default=os.path.join(TOP, "build", "bench-sim",
                                                         "lkr-layout.csv"))
    a = ap.parse_args()
    layout = ss.lkr_layout(a.lkr_layout)
    disks = ["hdd7200"] if a.quick else list(ss.DISKS)
    procs_all = [1, 16] if a.quick else [1, 4, 16]
    records = []
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="geometry-check-") as tmp:
        for workload, procs, disk, trace, model in ss.cells(a.workloads, procs_all, disks,
                                                             layout, tmp):
            r = cell(workload, procs, disk, trace, model, tmp, a)
            records.append(r)
            ss.log(f"{disk} {workload} x{procs}: best {r['best_kib']}K, "
                   f"chosen {r['chosen_kib']}K, loss {r['loss_pts']:+.1f}")
    os.makedirs(a.out, exist_ok=True)
    name = os.path.join(a.out, f"{a.date}-geometry-check")
    with open(name + ".json", "w") as fh:
        fh.write("[\n" + ",\n".join(json.dumps(r, sort_keys=True) for r in records) + "\n]\n")
    command = "tests/bench/geometry-check.py" + (" --quick" if a.quick else "") + \
        f" --rate {a.rate} --price {a.price}" + \
        (f" --window-s {a.window_s:g}" if a.window_s else f" --region-mib {a.region_mib}") + \
        (" --closed" if a.closed else "")
    report(records, name + ".md", command, time.monotonic() - t0)


if __name__ == "__main__":
    main()
