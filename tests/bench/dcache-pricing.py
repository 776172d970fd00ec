#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Would a virtual disk that knows the drive's cache price the bench better?
For each sim-validate directory (records and bare-run traces of one drive
profile), the model is trained off-line in the simulator on vdiskctl
train's pattern (one read at a time, 4..128 KiB, half of them where the
last ended, the others uniform over the device), once with the kernel's
rule (distance from the nearest of the last 4 request ends) and once with
redcapctl simulate --drive-cache (the drive's segments and read-ahead);
then every bare trace is priced, learning as the bench's model layer does:

* bare: the model learns from the requests it prices (the bare run's);
* recommended: redcap-recommended's virtual disk prices the reads the cache
  received while the model learns from what the cache sent down, the
  kernel's case, and the one issue 17's goal measures.

Each against the simulated bare run's drive busy time; and the application
time of redcap-recommended against bare under each rule (the decisions
follow the prices).

usage: dcache-pricing.py --out REPORT.md DIR...   (DIR: tests/bench/sim-validate --dir)
"""
import argparse
import glob
import json
import os
import random
import subprocess
import sys
import tempfile
from importlib import import_module

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
pricing = import_module("vdisk-pricing")   # its paths, tolerance and modules
suite, validate = pricing.suite, pricing.validate
TOP, REDCAPCTL, TOL = pricing.TOP, pricing.REDCAPCTL, pricing.TOL
TRAIN_READS = 6000		# about vdiskctl train's 20 s on either drive
TRAIN_DEVICE = 1 << 20		# sectors: the bench's RAM disk, about
RULES = {"ends": [], "drive cache": ["--drive-cache"]}


def train_trace(path):
    """vdiskctl train's reads (userspace/vdisk-tables.c) as a blkparse
    trace: one process, each read issued 20 us after the last completed."""
    rnd = random.Random(1)
    blocks, nxt, t = TRAIN_DEVICE // 8, TRAIN_DEVICE // 8, 0.0
    with open(path, "w") as f:
        for i in range(TRAIN_READS):
            n = 1 + rnd.randrange(32)
            off = rnd.randrange(blocks - n + 1)
            if rnd.random() < 0.5 and nxt + n <= blocks:
                off = nxt
            nxt = off + n
            f.write(f"254,0 0 {2 * i + 1} {t:.9f} 1000000 Q R {off * 8} + {n * 8} [train]\n")
            t += 0.001
            f.write(f"254,0 0 {2 * i + 2} {t:.9f} 0 C R {off * 8} + {n * 8} [0]\n")
            t += 0.00002


def simulate(*args):
    out = subprocess.run([REDCAPCTL, "simulate", *args, "--json"], capture_output=True,
                         text=True, check=True).stdout
    return json.loads(out)["results"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("dirs", nargs="+")
    args = ap.parse_args()
    spec = validate.sim_spec(suite.RECOMMENDED)
    tmp = tempfile.mkdtemp(prefix="dcache-pricing.")
    train = os.path.join(tmp, "train.blkparse")
    train_trace(train)
    rows = []
    for d in args.dirs:
        records = json.load(open(glob.glob(os.path.join(d, "records-*.json"))[0]))
        profile = {r["disk_profile"] for r in records}.pop()
        cap = str(suite.PROFILES[profile]["capacity"])
        base = ["--disk", profile, "--capacity", cap]
        models = {}
        for rule, opt in RULES.items():
            models[rule] = os.path.join(tmp, f"{profile}-{len(opt)}.tables")
            simulate("--trace", train, *base, *opt, "--config", "bare",
                     "--save-model", models[rule])
        for trace in sorted(glob.glob(os.path.join(d, "traces", "*.lanes.blkparse"))):
            case = os.path.basename(trace)[:-len(".lanes.blkparse")]
            row = {"profile": profile, "case": case}
            for rule, opt in RULES.items():
                bare, rec = simulate("--trace", trace, *base, *opt, "--model", models[rule],
                                     "--config", "bare", "--config", spec)
                row[rule] = {"busy_s": bare["disk_busy_s"], "bare_vdisk_s": bare["vdisk_time_s"],
                             "rec_vdisk_s": rec["vdisk_time_s"],
                             "app": pricing.pct(rec["app_time_s"], bare["app_time_s"])}
            rows.append(row)
            print(case, profile, file=sys.stderr)

    def within(rule, key):
        return sum(abs(pricing.pct(r[rule][key], r[rule]["busy_s"])) <= TOL for r in rows)

    L = ["# A virtual disk that knows the drive's cache, in the simulator", "",
         f"Made by `tests/bench/dcache-pricing.py --out {os.path.relpath(args.out, TOP)} "
         + " ".join(os.path.relpath(d, TOP) for d in args.dirs) + "` (the bare-run traces "
         "of `tests/bench/sim-validate --profile P --dir DIR`).  The model is trained in "
         f"the simulator on vdiskctl train's pattern ({TRAIN_READS} reads) under each "
         "rule, then learns as it prices.  *ends*: the kernel's rule (a request's distance "
         "from the nearest of the last 4 request ends); *drive cache*: `simulate "
         "--drive-cache` (the emulated drive's 16 segments and read-ahead, in the virtual "
         "disk's time).  Prices against the simulated bare run's drive busy time; *app*: "
         "redcap-recommended's application time against bare under that rule.", "",
         f"* bare trace priced, model learning from it: ends {within('ends', 'bare_vdisk_s')}, "
         f"drive cache {within('drive cache', 'bare_vdisk_s')} of {len(rows)} within 10 %;",
         "* what redcap-recommended received, model learning from what it sent down (the "
         f"goal's case): ends {within('ends', 'rec_vdisk_s')}, drive cache "
         f"{within('drive cache', 'rec_vdisk_s')} of {len(rows)}.", "",
         "| drive | case | busy s | ends: bare | ends: recommended | ends: app | "
         "drive cache: bare | drive cache: recommended | drive cache: app |",
         "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        cells = []
        for rule in RULES:
            x = r[rule]
            cells += [f"{100 * pricing.pct(x['bare_vdisk_s'], x['busy_s']):+.0f} %",
                      f"{100 * pricing.pct(x['rec_vdisk_s'], x['busy_s']):+.0f} %",
                      f"{100 * x['app']:+.1f} %"]
        L.append(f"| {r['profile']} | {r['case']} | {r['ends']['busy_s']:.3f} | "
                 + " | ".join(cells) + " |")
    with open(args.out, "w") as f:
        f.write("\n".join(L) + "\n")
    with open(os.path.splitext(args.out)[0] + ".json", "w") as f:
        json.dump(rows, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
