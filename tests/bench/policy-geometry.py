#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""redcap's default policy against policy always at every segment size.

On make bench-sim's traces (tests/bench/sim-scale.py: the paper's workloads,
1 GiB a process, LKR, 1, 4 and 16 processes, both emulated disks), a cache
of 64 MiB (redcapctl create's) in segments of 32 KiB to 1 MiB runs with
adaptive+caware and with always, through redcapctl simulate: application
time as a share of the bare disk's, and the policy's switches.  Where
always is far ahead, the policy's verdict is wrong; where it is behind,
the policy is doing its job (random reads, 512K-SR).

With --before, a JSON this script wrote on other code is set beside: the
cells it moved, and for each side the cells over the bare disk's time by
more than 2 %, the cells more than 5 points behind always, the switches.

usage: policy-geometry.py --out FILE.json [--redcapctl PATH] [--before FILE.json]
                          [--md FILE.md]
"""
import argparse
import importlib.util
import json
import math
import os
import subprocess
import tempfile
import time

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
_spec = importlib.util.spec_from_file_location(
    "sim_scale", os.path.join(TOP, "tests", "bench", "sim-scale.py"))
ss = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ss)

RAM_KIB = 64 * 1024
SIZES_KIB = [32, 64, 128, 256, 512, 1024]
POLICIES = ["adaptive+caware", "always"]


def cfg(kib, policy):
    return f"{RAM_KIB // kib}x{kib}k:{policy}"


def cell(redcapctl, trace, disk, model):
    configs = ["bare"] + [cfg(k, p) for k in SIZES_KIB for p in POLICIES]
    args = [redcapctl, "simulate", "--trace", trace, "--format", "csv", "--disk", disk,
            "--capacity", str(ss.DISKS[disk]), "--model", model, "--json"]
    r = subprocess.run(args + sum((["--config", c] for c in configs), []),
                       capture_output=True, text=True, check=True)
    res = {x["config"]: x for x in json.loads(r.stdout)["results"]}
    bare = res["bare"]["app_time_s"]
    return {str(k): {"policy_pct": round(100 * res[cfg(k, POLICIES[0])]["app_time_s"] / bare, 2),
                     "always_pct": round(100 * res[cfg(k, "always")]["app_time_s"] / bare, 2),
                     "switches": res[cfg(k, POLICIES[0])]["stats"]["switches"]}
            for k in SIZES_KIB}


def summary(recs):
    vals = [r["sizes"][str(k)] for r in recs for k in SIZES_KIB]
    return {"over_bare_2pct": sum(v["policy_pct"] > 102 for v in vals),
            "behind_always_5pts": sum(v["policy_pct"] - v["always_pct"] > 5 for v in vals),
            "switches": sum(v["switches"] for v in vals),
            "geomean_pct": round(math.exp(sum(math.log(v["policy_pct"]) for v in vals) /
                                          len(vals)), 2)}


def report(after, before, path, command):
    key = lambda r: (r["disk"], r["workload"], r["procs"])
    old = {key(r): r for r in before} if before else {}
    lines = ["# The default policy against always at every segment size", "",
             f"Made by `{command}`: application time as a share of the bare disk's, "
             "64 MiB caches, make bench-sim's traces.", ""]
    if before:
        b, a = summary(before), summary(after)
        lines += ["| | before | after |", "|---|---|---|"]
        for k, what in [("over_bare_2pct", "cells over the bare disk + 2 %"),
                        ("behind_always_5pts", "cells > 5 points behind always"),
                        ("switches", "switches"), ("geomean_pct", "geometric mean, % of bare")]:
            lines.append(f"| {what} | {b[k]} | {a[k]} |")
        lines += ["", "Cells that moved by a point or more (adaptive+caware, before -> after; "
                  "always; switches before -> after):", "",
                  "| disk | workload | procs | segment | before | after | always | switches |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in after:
            o = old.get(key(r))
            for k in SIZES_KIB:
                v, w = r["sizes"][str(k)], o["sizes"][str(k)] if o else None
                if w and abs(v["policy_pct"] - w["policy_pct"]) >= 1:
                    lines.append(f"| {r['disk']} | {r['workload']} | {r['procs']} | {k}K | "
                                 f"{w['policy_pct']:.1f} | {v['policy_pct']:.1f} | "
                                 f"{v['always_pct']:.1f} | {w['switches']} -> {v['switches']} |")
    lines += ["", "Every cell: adaptive+caware / always (switches).", "",
              "| disk | workload | procs | " + " | ".join(f"{k}K" for k in SIZES_KIB) + " |",
              "|---|---|---|" + "---|" * len(SIZES_KIB)]
    for r in after:
        lines.append(f"| {r['disk']} | {r['workload']} | {r['procs']} | " + " | ".join(
            f"{r['sizes'][str(k)]['policy_pct']:.1f} / {r['sizes'][str(k)]['always_pct']:.1f} "
            f"({r['sizes'][str(k)]['switches']})" for k in SIZES_KIB) + " |")
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="the records (JSON)")
    ap.add_argument("--redcapctl", default=ss.REDCAPCTL)
    ap.add_argument("--before", help="records of the same run on other code")
    ap.add_argument("--md", help="the report (default: --out with .md)")
    ap.add_argument("--lkr-layout", default=os.path.join(TOP, "build", "bench-sim",
                                                         "lkr-layout.csv"))
    a = ap.parse_args()
    layout = ss.lkr_layout(a.lkr_layout)
    recs = []
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="policy-geometry-") as tmp:
        for workload, procs, disk, trace, model in ss.cells(ss.WORKLOADS, [1, 4, 16],
                                                             list(ss.DISKS), layout, tmp):
            recs.append({"disk": disk, "workload": workload, "procs": procs,
                         "sizes": cell(a.redcapctl, trace, disk, model)})
            ss.log(f"{disk} {workload} x{procs}: done")
    with open(a.out, "w") as fh:
        fh.write("[\n" + ",\n".join(json.dumps(r, sort_keys=True) for r in recs) + "\n]\n")
    before = json.load(open(a.before)) if a.before else None
    command = "tests/bench/policy-geometry.py --out " + os.path.relpath(a.out, TOP) + \
        (" --before " + os.path.relpath(a.before, TOP) if a.before else "")
    report(recs, before, a.md or os.path.splitext(a.out)[0] + ".md", command)
    ss.log(f"{time.monotonic() - t0:.0f} s")


if __name__ == "__main__":
    main()
