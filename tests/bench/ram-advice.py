#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""The shadows' RAM advice against the guest bench (issue 49).

tests/bench/shadow-check.py checks the shadow caches' advice in the
simulator; this checks it on the real target.  The suite (suite.py) runs
the recommended stack (redcap-recommended) and the same stack with twice
its segments (redcap-recommended-2x) on each cell, and after each run of
a redcap stack keeps the target's "shadows" answer in its record
(suite.shadows_of()).  Per cell (workload x processes x I/O mode):

  * predicted: the 1x run's shadows, the disk's time at twice the RAM over
    its time at once the RAM, minus 1 (what redcapctl status prints as
    "twice the RAM -6.6 %");
  * measured: the 2x run's disk busy time (the emulated drive's busy_us)
    over the 1x run's, minus 1; and the same of the application time.

The goal: predicted within GOAL_POINTS points of the measured busy time.
Beside them, the shares of the bare disk's price of the reads (the
shadows' bare_us): the shadow's at 1x and 2x, the drive's busy time of
each run (a plain LRU against the cache with its prefetch and bypass);
and how many reads the 1x run's shadow of the live size sampled (its
regions 1 in "sampled").

With --sim DIR, the bare runs' block traces a suite run kept there
(suite.py --traces DIR; tests/bench/sim-validate.py replays them the same
way) go through redcapctl simulate at once and twice the RAM: the
simulator's own prediction (its shadows) and its own change of the disk's
busy time, beside the guest's.  Where the simulator's change matches the
guest's, the simulator is an instrument for the advice at this scale.

usage: ram-advice.py RESULTS.json [--sim DIR] [--out FILE.md] [--command "what ran it"]
"""
import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys

_spec = importlib.util.spec_from_file_location(
    "suite", os.path.join(os.path.dirname(os.path.realpath(__file__)), "suite.py"))
suite = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(suite)

_spec = importlib.util.spec_from_file_location(
    "sim_validate", os.path.join(os.path.dirname(os.path.realpath(__file__)), "sim-validate.py"))
sim_validate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sim_validate)

ONE, TWO = suite.RECOMMENDED, suite.RECOMMENDED_2X
GOAL_POINTS = 5.0
REDCAPCTL = os.path.join(sim_validate.TOP, "build", "userspace", "redcapctl")


def simulated(cell, traces, profile):
    """The simulator's predicted and measured change for 2x RAM on @cell's
    bare trace in @traces, in per cent: (the shadows' prediction, busy, the
    eviction history's prediction), or None without a trace."""
    base = os.path.join(traces, f"{cell['workload']}-{cell['procs']}-{cell['io']}")
    if not os.path.exists(base + ".blkparse"):
        return None
    joined = base + ".lanes.blkparse"
    sim_validate.lanes(base + ".blkparse", joined, base + ".forks")
    one, two = sim_validate.sim_spec(ONE), sim_validate.sim_spec(TWO)
    cmd = [REDCAPCTL, "simulate", "--trace", joined, "--format", "blkparse", "--disk", profile,
           "--model", os.path.join(traces, f"model-{profile}.tables"),
           "--capacity", str(suite.PROFILES[profile]["capacity"]),
           "--config", one, "--config", two, "--shadows", "--json"]
    mount = base + ".mount.blkparse"
    if os.path.exists(mount) and " Q " in open(mount).read():
        cmd[4:4] = ["--warm", mount]
    res = {r["config"]: r for r in json.loads(
        subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)["results"]}
    live = res[one]
    ram = {s["ram_bytes"]: s["disk_time_of_bare"] for s in live["shadows"]
           if s["segment_bytes"] == live["stats"]["segment_sectors"] * 512}
    ram1 = live["stats"]["segments"] * live["stats"]["segment_sectors"] * 512
    x1, x2 = ram.get(ram1), ram.get(2 * ram1)
    return (100 * (x2 / x1 - 1) if x1 and x2 is not None else None,
            100 * (res[two]["disk_busy_s"] / live["disk_busy_s"] - 1),
            history_advice(live["stats"]))


def history_advice(st):
    """The change for 2x RAM the eviction history predicts from a run's
    stats (redcapctl status' "twice the RAM"), in per cent, or None from a
    module without it: the fills saved of the read requests sent down."""
    if not st or "x2_fills_saved" not in st:
        return None
    req = st["fill_ios"] - st["fill_joined"] + st["read_bypassed"] - st["read_joined"]
    return -100 * st["x2_fills_saved"] / req if req and st["x2_fills_saved"] else 0.0


def cells(records):
    """[{workload, procs, io, predicted, busy, app, ...}] for every cell
    with runs of both ONE (with shadows) and TWO, in the suite's order;
    changes in per cent, the repetitions' medians."""
    by = {}
    for r in records:
        if r["config"] in (ONE, TWO):
            by.setdefault((r["workload"], r["procs"], r["io"]), {}).setdefault(
                r["config"], []).append(r)
    out = []
    for (w, p, io), runs in by.items():
        if ONE not in runs or TWO not in runs:
            continue
        adv = [suite.ram_advice(r.get("shadows")).get("x2") for r in runs[ONE]]
        adv = [a for a in adv if a is not None]

        def med(config, f):
            return statistics.median(f(r) for r in runs[config])
        busy1 = med(ONE, lambda r: r["disk_stats"]["busy_us"])
        busy2 = med(TWO, lambda r: r["disk_stats"]["busy_us"])
        app1, app2 = med(ONE, lambda r: r["app_time_s"]), med(TWO, lambda r: r["app_time_s"])
        sh1 = runs[ONE][0].get("shadows", {})
        bare1 = sh1.get("bare_us")
        bare2 = runs[TWO][0].get("shadows", {}).get("bare_us")
        hist = [history_advice(r.get("redcap_stats")) for r in runs[ONE]]
        hist = [h for h in hist if h is not None]
        c = {"workload": w, "procs": p, "io": io,
             "history": statistics.median(hist) if hist else None,
             "predicted": 100 * statistics.median(adv) if adv else None,
             "busy": 100 * (busy2 / busy1 - 1) if busy1 else None,
             "app": 100 * (app2 / app1 - 1),
             "busy1_s": busy1 / 1e6, "busy2_s": busy2 / 1e6, "app1_s": app1, "app2_s": app2,
             "lru1": sh1.get("x1", 0) / 1e4 if bare1 else None,
             "lru2": sh1.get("x2", 0) / 1e4 if bare1 else None,
             "cache1": 100 * busy1 / bare1 if bare1 else None,
             "cache2": 100 * busy2 / bare2 if bare2 else None,
             "sampled_reads": sh1.get("reads"), "rate": sh1.get("sampled")}
        if c["predicted"] is not None and c["busy"] is not None:
            c["error"] = c["predicted"] - c["busy"]
            c["within"] = abs(c["error"]) <= GOAL_POINTS
        if c["history"] is not None and c["busy"] is not None:
            c["history_within"] = abs(c["history"] - c["busy"]) <= GOAL_POINTS
        out.append(c)
    return out


def pct(v, sign=True):
    return "–" if v is None else (f"{v:+.1f}" if sign else f"{v:.1f}")


def report(rows, command):
    judged = [c for c in rows if "within" in c]
    within = sum(c["within"] for c in judged)
    hist = [c for c in rows if "history_within" in c]
    lines = [f"Predicted change for 2x RAM within {GOAL_POINTS:g} points of the measured "
             f"change of the disk's busy time in **{within} of {len(judged)}** cells "
             "(the shadows)" + (f", **{sum(c['history_within'] for c in hist)} of {len(hist)}** "
                               "(the eviction history)" if hist else "") + ".", "",
             "| workload | procs | predicted % | history % | busy % | app % | error pts | within | "
             "LRU 1x / 2x % of bare | cache 1x / 2x % of bare | sampled reads | busy 1x s | "
             "app 1x s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in rows:
        lines.append(
            f"| {c['workload']}{'' if c['io'] == 'buffered' else ' ' + c['io']} | "
            f"{c['procs']} | {pct(c['predicted'])} | {pct(c['history'])} | {pct(c['busy'])} | "
            f"{pct(c['app'])} | "
            f"{pct(c.get('error'))} | {'yes' if c.get('within') else 'no'} | "
            f"{pct(c['lru1'], False)} / {pct(c['lru2'], False)} | "
            f"{pct(c['cache1'], False)} / {pct(c['cache2'], False)} | "
            f"{c['sampled_reads']} (1/{c['rate']}) | {c['busy1_s']:.2f} | {c['app1_s']:.2f} |")
    simmed = [c for c in rows if c.get("sim")]
    if simmed:
        def near(a, b):
            return a is not None and b is not None and abs(a - b) <= GOAL_POINTS
        lines += ["", "The simulator on the bare runs' traces (`--sim`): its shadows' "
                  "prediction, its own change of the disk's busy time, the guest's.  "
                  f"Its change within {GOAL_POINTS:g} points of the guest's in "
                  f"**{sum(near(c['sim'][1], c['busy']) for c in simmed)} of {len(simmed)}**; "
                  "its shadows within as many points of its own change in "
                  f"**{sum(near(c['sim'][0], c['sim'][1]) for c in simmed)} of {len(simmed)}**, "
                  "its eviction history in "
                  f"**{sum(near(c['sim'][2], c['sim'][1]) for c in simmed)} of {len(simmed)}**.",
                  "", "| workload | procs | sim predicted % | sim history % | sim busy % | "
                  "guest predicted % | guest history % | guest busy % |",
                  "|---|---|---|---|---|---|---|---|"]
        for c in simmed:
            lines.append(f"| {c['workload']}{'' if c['io'] == 'buffered' else ' ' + c['io']} | "
                         f"{c['procs']} | {pct(c['sim'][0])} | {pct(c['sim'][2])} | "
                         f"{pct(c['sim'][1])} | {pct(c['predicted'])} | {pct(c['history'])} | "
                         f"{pct(c['busy'])} |")
    return "\n".join([f"Made by `{command}`.", ""] + lines) + "\n" if command else \
        "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results")
    ap.add_argument("--out", help="markdown file (default: stdout)")
    ap.add_argument("--sim", metavar="DIR", help="the bare runs' traces (suite.py --traces)")
    ap.add_argument("--command", help="the command that made the results")
    args = ap.parse_args()
    with open(args.results) as f:
        records = json.load(f)
    rows = cells(records)
    if args.sim:
        profile = {r["disk_profile"] for r in records}.pop()
        sim_validate.suite.set_budget(
            {r["budget_bytes"] >> 20 for r in records if "budget_bytes" in r}.pop())
        for c in rows:
            c["sim"] = simulated(c, args.sim, profile)
    text = report(rows, args.command)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
