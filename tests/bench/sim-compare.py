#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Engine A/B in the simulator: make bench-sim's workloads (1 GiB a
process, 1, 4 and 16 processes, both drives; tests/bench/sim-scale.py makes
the traces) through redcapctl's default stack (512 x 128 KiB, 64 x 128 KiB
at the paper's 8 MiB) under two or more builds of redcapctl, as each
build's change against the bare disk, and which cells moved.

usage: sim-compare.py NAME=REDCAPCTL[+KEY=V,...]... [--procs 1,4,16] [--file-mib N]
                      [--only WORKLOAD,...] [--out F.json]
A build's +KEY=V,... changes the default stack's tunables (one mechanism
off, say) for that build alone.
e.g.   git worktree add /tmp/old HEAD~1 && make -C /tmp/old userspace &&
       make userspace && tests/bench/sim-compare.py \\
           old=/tmp/old/build/userspace/redcapctl new=build/userspace/redcapctl
"""
import argparse
import importlib.util
import json
import math
import os
import sys
import tempfile

TOP = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
# redcapctl create's stack: the target's defaults over the model layer
TUNABLES = ",estimator=vdisk"
CONFIGS = {"512x128k": "512x128k:adaptive+caware" + TUNABLES,
           "64x128k": "64x128k:adaptive+caware" + TUNABLES}


def load_sim_scale(file_mib):
    os.environ["SIM_SCALE_FILE_MIB"] = str(file_mib)
    spec = importlib.util.spec_from_file_location(
        "sim_scale", os.path.join(TOP, "tests", "bench", "sim-scale.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("builds", nargs="+", help="NAME=path of a redcapctl")
    ap.add_argument("--procs", default="1,4,16")
    ap.add_argument("--file-mib", type=int, default=1024)
    ap.add_argument("--only", help="these workloads alone")
    ap.add_argument("--out")
    args = ap.parse_args()
    builds = []
    for b in args.builds:
        name, path = b.split("=", 1)
        path, _, extra = path.partition("+")
        builds.append((name, path, extra))
    ss = load_sim_scale(args.file_mib)
    layout_csv = os.path.join(TOP, "build", "bench-sim", "lkr-layout.csv")
    if not os.path.exists(layout_csv):
        os.system(f"{sys.executable} {TOP}/tests/bench/lkr-layout.py --out {layout_csv}")
    layout = ss.load_layout(layout_csv)
    recs = []
    with tempfile.TemporaryDirectory(prefix="sim-compare-") as tmp:
        models = {d: ss.train_model(d, tmp) for d in ss.DISKS}
        for w in [w for w in ss.WORKLOADS if not args.only or w in args.only.split(",")]:
            for procs in [int(p) for p in args.procs.split(",")]:
                trace, _ = ss.workload_trace(w, procs, layout, tmp)
                for disk in [d for d in ss.DISKS if procs <= ss.MAX_PROCS[d]]:
                    for name, path, extra in builds:
                        ss.REDCAPCTL = path
                        cfgs = {g: c + ("," + extra if extra else "") for g, c in CONFIGS.items()}
                        res = ss.simulate(trace, disk, models[disk],
                                          ["bare"] + list(cfgs.values()))
                        bare = next(r for r in res if r["config"] == "bare")["app_time_s"]
                        for geo, cfg in cfgs.items():
                            t = next(r for r in res if r["config"] == cfg)["app_time_s"]
                            recs.append({"build": name, "workload": w, "procs": procs,
                                         "disk": disk, "cache": geo, "app_time_s": t,
                                         "bare_s": bare, "change": t / bare - 1})
                os.unlink(trace)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(recs, f, indent=1)
    report(recs, [b[0] for b in builds])


def report(recs, names):
    key = lambda r: (r["workload"], r["procs"], r["disk"], r["cache"])
    cells = {}
    for r in recs:
        cells.setdefault(key(r), {})[r["build"]] = r["change"]
    print("| workload | procs | disk | cache | " + " | ".join(names) + " |")
    print("|---|---|---|---|" + "---|" * len(names))
    for k, v in cells.items():
        moved = max(v.values()) - min(v.values()) >= 0.01
        print(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | " +
              " | ".join(f"{v[n] * 100:+.1f} %" for n in names) + (" | moved" if moved else " |"))
    for disk in sorted({k[2] for k in cells}):
        for cache in sorted({k[3] for k in cells}):
            for n in names:
                xs = [1 + v[n] for k, v in cells.items() if k[2] == disk and k[3] == cache]
                g = math.exp(sum(map(math.log, xs)) / len(xs)) - 1
                print(f"{disk} {cache} {n}: geometric mean {g * 100:+.1f} %, "
                      f"worst {(max(xs) - 1) * 100:+.1f} %")


if __name__ == "__main__":
    main()
