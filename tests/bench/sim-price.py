#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""The virtual disk as referee, in the simulator: make bench-sim's
workloads (tests/bench/sim-scale.py's traces, 1, 4 and 16 processes) on one
emulated drive, bare and through redcapctl's default stack (512 x 128 KiB
and 64 x 128 KiB), under one or more builds of redcapctl.  For each cell:
the change against the bare disk, the price of the reads redcap received
against the bare run's busy time (the counterfactual), and the model's price
of the bare run's own stream against its busy time (the paper's check).

usage: sim-price.py NAME=REDCAPCTL... [--disk nbd] [--capacity SECTORS]
                    [--procs 1,4,16] [--file-mib N] [--only WORKLOAD,...]
e.g.   tests/bench/sim-price.py new=build/userspace/redcapctl --disk nbd
"""
import argparse
import importlib.util
import json
import math
import os
import subprocess
import sys
import tempfile

TOP = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
CONFIGS = ["512x128k:adaptive+caware,estimator=vdisk", "64x128k:adaptive+caware,estimator=vdisk"]


def load_bench(name):
    """tests/bench/NAME.py as a module (its name has a hyphen)."""
    spec = importlib.util.spec_from_file_location(
        name.replace("-", "_"), os.path.join(TOP, "tests", "bench", name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def pct(a, b):
    return 100.0 * (a / b - 1) if b else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("builds", nargs="+", help="NAME=path of a redcapctl")
    ap.add_argument("--disk", default="nbd")
    ap.add_argument("--capacity", type=int, default=1953125000, help="the drive's sectors")
    ap.add_argument("--procs", default="1,4,16")
    ap.add_argument("--file-mib", type=int, default=1024)
    ap.add_argument("--only", help="these workloads alone")
    args = ap.parse_args()
    builds = [b.split("=", 1) for b in args.builds]
    ss = load_bench("sim-compare").load_sim_scale(args.file_mib)
    ss.DISKS = {args.disk: args.capacity}
    layout_csv = os.path.join(TOP, "build", "bench-sim", "lkr-layout.csv")
    if not os.path.exists(layout_csv):
        subprocess.run([sys.executable, os.path.join(TOP, "tests", "bench", "lkr-layout.py"),
                        "--out", layout_csv], check=True)
    layout = ss.load_layout(layout_csv)
    changes = {(n, c): [] for n, _ in builds for c in CONFIGS}
    print("| workload | procs | build | " + " | ".join(
        f"{c.split(':')[0]}: change (price vs bare)" for c in CONFIGS) + " | bare stream priced |")
    print("|---|---|---|" + "---|" * (len(CONFIGS) + 1))
    with tempfile.TemporaryDirectory(prefix="sim-price-") as tmp:
        ss.REDCAPCTL = builds[0][1]
        model = ss.train_model(args.disk, tmp)
        for w in [w for w in ss.WORKLOADS if not args.only or w in args.only.split(",")]:
            for procs in [int(p) for p in args.procs.split(",")]:
                trace, _ = ss.workload_trace(w, procs, layout, tmp)
                for name, path in builds:
                    cmd = [path, "simulate", "--trace", trace, "--format", "csv",
                           "--disk", args.disk, "--capacity", str(args.capacity),
                           "--model", model, "--config", "bare", "--json"]
                    for c in CONFIGS:
                        cmd += ["--config", c]
                    res = json.loads(subprocess.run(cmd, capture_output=True, text=True,
                                                    check=True).stdout)["results"]
                    bare = res[0]
                    cells = []
                    for c, r in zip(CONFIGS, res[1:]):
                        ch = pct(r["app_time_s"], bare["app_time_s"])
                        changes[name, c].append(ch)
                        cells.append(f"{ch:+.1f} ({pct(r['vdisk_time_s'], bare['disk_busy_s']):+.0f})")
                    print(f"| {w} | {procs} | {name} | " + " | ".join(cells) +
                          f" | {pct(bare['vdisk_time_s'], bare['disk_busy_s']):+.1f} |", flush=True)
                os.unlink(trace)
    for (name, c), xs in changes.items():
        g = math.exp(sum(math.log(1 + x / 100) for x in xs) / len(xs)) - 1
        print(f"{name} {c.split(':')[0]}: geometric mean {g * 100:+.1f} %, worst {max(xs):+.1f} %")


if __name__ == "__main__":
    main()
