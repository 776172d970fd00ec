#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""8K-SR with 16 processes on the hdd7200 (or --disk nbd) in the simulator,
over a grid of think times and start staggers: the adaptive policy's
switches, the application time against the bare disk and the virtual
disk's price of the bare disk's reads at each point.

The bench's 8K-SR x16 (80 MiB a process, as tests/bench/sim-scale.py makes
it), replayed as a blkparse trace in which each process waits a think time
after each read and starts a stagger after the one before: without a think
time the simulated bare drive never reaches the state the guest's does
(its own cache serving the 16 streams).  The model is trained in the
simulator as make bench-sim's is.  docs/results/2026-12-05-adapt-spell.md.

    tests/bench/flip-sim.py [--redcapctl PATH] [--disk hdd7200|nbd] [--no-overlap]
                            [--think US ...] [--stagger US ...]

--no-overlap prices with the trained model's overlap set to 0
(docs/results/2026-12-05-overlap-sim-nbd.md).
"""
import argparse
import csv
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
os.environ.setdefault("SIM_SCALE_FILE_MIB", "80")
_spec = importlib.util.spec_from_file_location("sim_scale", os.path.join(HERE, "sim-scale.py"))
ss = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ss)

PROCS = 16
CAPACITY = {"hdd7200": 1953125000, "nbd": 2147483648}   # sectors (tests/bench/suite.py)


def blkparse(src, think_us, stagger_us, out):
    """@src's requests, each process's one after another: a read takes 1 ms
    in the trace's own timing, then the process thinks @think_us."""
    per = {}
    with open(src) as f:
        r = csv.reader(f)
        next(r)
        for _, pid, _, sec, n in r:
            per.setdefault(int(pid), []).append((int(sec), int(n)))
    ev = []
    for pid, reqs in per.items():
        t = (pid - 1) * stagger_us * 1000
        for sec, n in reqs:
            ev.append((t, pid, "Q", sec, n))
            ev.append((t + 1000, pid, "C", sec, n))
            t += 1000 + think_us * 1000
    ev.sort()
    with open(out, "w") as f:
        for i, (t, pid, a, sec, n) in enumerate(ev):
            t = int(t)
            f.write(f"  8,0    0 {i + 1:8d} {t // 10**9:5d}.{t % 10**9:09d} {pid:5d}  {a}   "
                    f"R {sec} + {n} [{'rdpat' if a == 'Q' else 0}]\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--redcapctl", default=ss.REDCAPCTL)
    ap.add_argument("--disk", choices=sorted(CAPACITY), default="hdd7200")
    ap.add_argument("--no-overlap", action="store_true")
    ap.add_argument("--think", type=int, nargs="+",
                    default=[50, 100, 150, 200, 250, 300, 350, 400, 450, 500, 600, 700, 800, 1000])
    ap.add_argument("--stagger", type=int, nargs="+", default=[1000, 5000, 10000, 20000, 50000])
    args = ap.parse_args()
    ss.REDCAPCTL = args.redcapctl
    with tempfile.TemporaryDirectory(prefix="flip-sim.") as tmp:
        src = os.path.join(tmp, "8ksr.csv")
        ss.write_trace(src, [ss.pattern_requests("8k-sr", p) for p in range(PROCS)])
        ss.DISKS.setdefault(args.disk, CAPACITY[args.disk])
        model = ss.train_model(args.disk, tmp)
        if args.no_overlap:
            with open(model) as f:
                text = f.read()
            with open(model, "w") as f:
                f.write(re.sub(r"overlap_us=\d+", "overlap_us=0", text, count=1))
        print("think_us stagger_us bare_s redcap_s change_% switches bare_busy_s priced_s")
        for th in args.think:
            for st in args.stagger:
                bp = os.path.join(tmp, f"{th}-{st}.bp")
                blkparse(src, th, st, bp)
                r = subprocess.run([args.redcapctl, "simulate", "--trace", bp, "--disk", args.disk,
                                    "--capacity", str(CAPACITY[args.disk]), "--model", model,
                                    "--config", "bare", "--config", "512x128k:adaptive+caware",
                                    "--json"], capture_output=True, text=True, check=True)
                res = json.loads(r.stdout)["results"]
                bare, rc = res[0]["app_time_s"], res[1]
                print(f"{th} {st} {bare:.1f} {rc['app_time_s']:.1f} "
                      f"{100 * (rc['app_time_s'] / bare - 1):+.1f} {rc['stats']['switches']} "
                      f"{res[0]['disk_busy_s']:.1f} {rc['stats']['vdisk_time_us'] / 1e6:.1f}",
                      flush=True)


if __name__ == "__main__":
    sys.exit(main())
