#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""The write cache's table from apps-set records (issue 48): each program
that writes, on the recommended stack with write-through (its default
write policy) against the same stack with write_policy back and
selective.  The time compared is the time to durable: the programs'
application time plus the sync of their filesystem after them (suite.py's
sync_s).  Prints markdown.

    tests/bench/wcache-apps.py RECORDS.json...
"""
import json
import statistics
import sys

THROUGH = "redcap-recommended"
MODES = [("back", "redcap-recommended-writeback"), ("selective", "redcap-recommended-selective")]
# the programs' own figure where the time is fixed (dbench runs 20 s)
RATE = {"dbench": "dbench_mb_s"}


def load(paths):
    recs = []
    for p in paths:
        with open(p) as f:
            recs += json.load(f)
    return recs


def cells(recs):
    """(workload, procs) -> config -> [records]"""
    by = {}
    for r in recs:
        by.setdefault((r["workload"], r["procs"]), {}).setdefault(r["config"], []).append(r)
    return by


def total(r):
    return r["app_time_s"] + r.get("sync_s", 0.0)


def figure(w, rs):
    """The cell's median figure: seconds to durable, or the program's rate."""
    if w in RATE:
        return statistics.median(r["app_results"][RATE[w]] for r in rs)
    return statistics.median(total(r) for r in rs)


def change(w, base, x):
    """% change, negative is better: less time, or (rates) more per second."""
    return 100.0 * (x / base - 1.0) if w not in RATE else -100.0 * (x / base - 1.0)


def main():
    by = cells(load(sys.argv[1:]))
    head = ["workload", "procs", "write-through"] + [m for m, _ in MODES]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    detail = []
    for (w, p), cf in sorted(by.items()):
        if THROUGH not in cf:
            continue
        base = figure(w, cf[THROUGH])
        unit = " MB/s" if w in RATE else " s"
        row = [w, str(p), f"{base:.2f}{unit}"]
        for m, c in MODES:
            if c in cf:
                x = figure(w, cf[c])
                row.append(f"{x:.2f}{unit} ({change(w, base, x):+.1f} %)")
            else:
                row.append("–")
        print("| " + " | ".join(row) + " |")
        for c in [THROUGH] + [c for _, c in MODES]:
            for r in cf.get(c, []):
                st, d = r.get("redcap_stats", {}), r["disk_stats"]
                detail.append([w, c.replace("redcap-recommended", "rec"), f"{r['app_time_s']:.2f}",
                               f"{r.get('sync_s', 0.0):.2f}", f"{d['busy_us'] / 1e6:.2f}",
                               str(d["write_samples"]), str(st.get("write_cached", 0)),
                               str(st.get("write_through", 0)), str(st.get("writeback_ios", 0)),
                               str(st.get("flushes", 0))])
    print()
    head = ["workload", "stack", "app s", "sync s", "disk busy s", "writes to the disk",
            "writes cached", "through", "write-backs", "flushes"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for row in detail:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
