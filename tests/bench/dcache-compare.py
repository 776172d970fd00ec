#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Two server-set runs of bare and redcap-recommended side by side: the
model without the drive's cache priced (OFF.json) and with it learnt and
priced (ON.json, suite.py --drive-cache).  Per cell: the price of the
reads the stack received against the bare run's busy time (report.py's
prices()), and the application time against bare.  Prints a markdown
table and the totals.

usage: dcache-compare.py OFF.json ON.json
"""
import importlib.util
import json
import math
import os
import sys

TOP = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
_spec = importlib.util.spec_from_file_location("report",
                                               os.path.join(TOP, "tests", "bench", "report.py"))
report = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(report)


def app_change(records):
    """(workload, procs, io) -> redcap-recommended's application time
    against bare's, in %."""
    t = {}
    for r in records:
        t.setdefault((r["workload"], r["procs"], r["io"]), {})[r["config"]] = r["app_time_s"]
    return {k: 100 * (v[report.RECOMMENDED] / v["bare"] - 1) for k, v in t.items()
            if "bare" in v and report.RECOMMENDED in v}


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[-1])
    runs = {}
    for name, path in (("off", sys.argv[1]), ("on", sys.argv[2])):
        with open(path) as f:
            runs[name] = json.load(f)
    price = {n: report.prices(r) for n, r in runs.items()}
    app = {n: app_change(r) for n, r in runs.items()}
    keys = sorted(set(price["off"]) & set(price["on"]) & set(app["off"]) & set(app["on"]))
    print("| cell | price, no drive cache | price, drive cache learnt | app vs bare, "
          "no drive cache | app vs bare, drive cache learnt |")
    print("|---|---|---|---|---|")
    for k in keys:
        print(f"| {k[0]} ×{k[1]} | {price['off'][k]:+.1f} % | {price['on'][k]:+.1f} % | "
              f"{app['off'][k]:+.1f} % | {app['on'][k]:+.1f} % |")
    print()
    for n, what in (("off", "no drive cache"), ("on", "drive cache learnt")):
        within = sum(abs(price[n][k]) <= 10 for k in keys)
        geo = math.exp(sum(math.log(1 + app[n][k] / 100) for k in keys) / len(keys))
        print(f"* {what}: price within 10 % in {within} of {len(keys)} cells; application "
              f"time geometric mean {100 * (geo - 1):+.1f} %, worst "
              f"{max(app[n][k] for k in keys):+.1f} %")
    shapes = {json.dumps({k: v for k, v in r["model"].items() if k.startswith("dcache_")})
              for r in runs["on"] if r["config"] == report.RECOMMENDED}
    print(f"* the drive cache priced: {', '.join(sorted(shapes))}")


if __name__ == "__main__":
    main()
