#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""The shadow caches' advice against what the simulator measures (issue 49).

On make bench-sim's traces (tests/bench/sim-scale.py: the paper's workloads,
1 GiB a process, both emulated disks), one redcapctl simulate run of the live
cache (--ram MiB of 128 KiB segments; the paper's 8 by default) reports its
shadows: the disk time a plain LRU cache of each segment size and RAM would
take, as a share of the bare disk's.  The same simulator then runs those
caches for real, and the two are compared:

  * RAM advice: the predicted change of the disk's time from the live cache
    to 2x (and 1/2x, 4x) its RAM, in per cent of the live cache's, against
    the measured change (the goal: within 5 points);
  * geometry: the same for each segment size at the live RAM.

The shares of the bare disk's time are reported too; theirs is the virtual
disk's price of what the cache received, the counterfactual issue 49's
model work is about.

Both for the "always" policy (what a shadow is) and for redcap's default
(adaptive+caware), whose prefetch and bypass a plain LRU does not model.

usage: shadow-check.py --out DIR [--date D] [--quick] [--ram MIB]
"""
import argparse
import importlib.util
import json
import os
import statistics
import tempfile
import time

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
_spec = importlib.util.spec_from_file_location(
    "sim_scale", os.path.join(TOP, "tests", "bench", "sim-scale.py"))
ss = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ss)

PAPER_MIB = 8
LIVE_MIB, LIVE_KIB = PAPER_MIB, 128
SIZES_KIB = [32, 64, 128, 256, 512, 1024]
RAMS = [0.5, 1, 2, 4]
POLICIES = ["always", "adaptive+caware"]
GOAL_POINTS = 5.0


def cfg(mib, kib, policy):
    return f"{int(mib * 1024 // kib)}x{kib}k:{policy}"


def measured_configs():
    out = []
    for policy in POLICIES:
        for ram in RAMS:
            out.append(cfg(LIVE_MIB * ram, LIVE_KIB, policy))
        for kib in SIZES_KIB:
            if kib != LIVE_KIB:
                out.append(cfg(LIVE_MIB, kib, policy))
    return out


def check(workload, procs, disk, res):
    by = {r["config"]: r for r in res}
    bare = by["bare"]["disk_busy_s"]
    out = []
    for policy in POLICIES:
        live = by[cfg(LIVE_MIB, LIVE_KIB, policy)]
        shadow = {(s["segment_bytes"] >> 10, s["ram_bytes"]): s["disk_time_of_bare"]
                  for s in live["shadows"]}
        ram_bytes = {r: int(LIVE_MIB * r * ss.MiB) for r in RAMS}
        meas = {}
        for ram in RAMS:
            meas[(LIVE_KIB, ram)] = by[cfg(LIVE_MIB * ram, LIVE_KIB, policy)]["disk_busy_s"] / bare
        for kib in SIZES_KIB:
            meas[(kib, 1)] = by[cfg(LIVE_MIB, kib, policy)]["disk_busy_s"] / bare
        pred = {(kib, ram): shadow.get((kib, ram_bytes[ram])) for kib, ram in meas}
        base_p, base_m = pred[(LIVE_KIB, 1)], meas[(LIVE_KIB, 1)]
        for (kib, ram), m in sorted(meas.items()):
            p = pred[(kib, ram)]
            rec = {"workload": workload, "procs": procs, "disk": disk, "policy": policy,
                   "segment_kib": kib, "ram_x": ram, "measured": round(m, 4),
                   "predicted": None if p is None else round(p, 4)}
            if p is not None and base_p and base_m and (kib, ram) != (LIVE_KIB, 1):
                rec["change_measured_pts"] = round(100 * (m / base_m - 1), 2)
                rec["change_predicted_pts"] = round(100 * (p / base_p - 1), 2)
                rec["change_error_pts"] = round(rec["change_predicted_pts"] -
                                                rec["change_measured_pts"], 2)
            out.append(rec)
    return out


def report(records, out_dir, date, command, seconds):
    lines = [f"# The shadows' advice against the simulator ({date})", "",
             f"Made by `{command}` in {seconds / 60:.0f} min (records: "
             f"`{date}-shadow-check.json`).  Live cache {LIVE_MIB} MiB of {LIVE_KIB} KiB "
             "segments; its shadows predict the disk time of other RAM and segment "
             "sizes as a share of the bare disk's (*predicted*; the virtual disk's price "
             "of the reads is the denominator) and the simulator runs them (*measured*: "
             "the disk's busy time, of the bare run's).  *change*: of the disk's time, "
             "from the live cache's, in per cent.", ""]
    for policy in POLICIES:
        recs = [r for r in records if r["policy"] == policy and "change_error_pts" in r]
        ram2 = [r for r in recs if r["segment_kib"] == LIVE_KIB and r["ram_x"] == 2]
        within = sum(abs(r["change_error_pts"]) <= GOAL_POINTS for r in ram2)
        errs = [abs(r["change_error_pts"]) for r in recs]
        lines += [f"## {policy}", "",
                  f"* 2x RAM: predicted change within {GOAL_POINTS:g} points of the "
                  f"measured one in {within} of {len(ram2)} cases;",
                  f"* every shadow compared: median error {statistics.median(errs):.1f} "
                  f"points, worst {max(errs):.1f}." if errs else "* nothing compared.", "",
                  "| disk | workload | procs | segment | RAM | measured | predicted | "
                  "change measured | change predicted | error |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for r in recs:
            lines.append(f"| {r['disk']} | {r['workload']} | {r['procs']} | "
                         f"{r['segment_kib']}K | x{r['ram_x']:g} | "
                         f"{100 * r['measured']:.1f} % | {100 * r['predicted']:.1f} % | "
                         f"{r['change_measured_pts']:+.1f} | "
                         f"{r['change_predicted_pts']:+.1f} | "
                         f"{r['change_error_pts']:+.1f} |")
        lines.append("")
    with open(os.path.join(out_dir, f"{date}-shadow-check.md"), "w") as fh:
        fh.write("\n".join(lines))


def main():
    global LIVE_MIB
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="directory of the results")
    ap.add_argument("--date", default=time.strftime("%Y-%m-%d"))
    ap.add_argument("--quick", action="store_true", help="1 and 4 processes, hdd7200 only")
    ap.add_argument("--ram", type=int, default=PAPER_MIB, help="the live cache's MiB")
    ap.add_argument("--lkr-layout", default=os.path.join(TOP, "build", "bench-sim",
                                                         "lkr-layout.csv"))
    args = ap.parse_args()
    LIVE_MIB = args.ram
    layout = ss.lkr_layout(args.lkr_layout)
    disks = ["hdd7200"] if args.quick else list(ss.DISKS)
    procs_all = [1, 4] if args.quick else [1, 4, 16]
    records = []
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="shadow-check-") as tmp:
        for workload, procs, disk, trace, model in ss.cells(ss.WORKLOADS, procs_all, disks,
                                                             layout, tmp):
            res = ss.simulate(trace, disk, model, ["bare"] + measured_configs())
            records += check(workload, procs, disk, res)
            ss.log(f"{disk} {workload} x{procs}: done")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, f"{args.date}-shadow-check.json"), "w") as fh:
        fh.write("[\n" + ",\n".join(json.dumps(r, sort_keys=True) for r in records) + "\n]\n")
    report(records, args.out, args.date, "tests/bench/shadow-check.py" +
           (" --quick" if args.quick else "") +
           (f" --ram {args.ram}" if args.ram != PAPER_MIB else ""), time.monotonic() - t0)


if __name__ == "__main__":
    main()
