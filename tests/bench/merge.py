#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Complete a set run again for some configurations with the records of an
earlier set for the others, and show that the two runs measured the same
disk: the configurations named --same (the bare disk, by default), which
the change between the runs cannot touch, must agree.

    tests/bench/merge.py EARLIER.json NEW.json --out MERGED.json

MERGED holds every record of NEW, and those of EARLIER whose configuration
NEW did not run.  Each --same configuration must be in both, and its every
cell's median application time must agree within --tolerance percent, or
the merge is refused (exit 1, nothing written): a set of the same layout
under icount gives the same times run after run (docs/results/2026-12-02-history.md,
"The runs repeat"), so a difference means the two did not measure alike.
"""
import argparse
import json
import statistics
import sys


def cell(r):
    return (r["workload"], r["procs"], r["io"])


def medians(records, config):
    by = {}
    for r in records:
        if r["config"] == config:
            by.setdefault(cell(r), []).append(r["app_time_s"])
    return {k: statistics.median(v) for k, v in by.items()}


def compare(earlier, new, config):
    """(cells compared, the largest difference in %, its cell)."""
    a, b = medians(earlier, config), medians(new, config)
    worst, where = 0.0, None
    for k in sorted(set(a) & set(b)):
        d = abs(b[k] - a[k]) * 100.0 / a[k] if a[k] else 0.0
        if where is None or d > worst:
            worst, where = d, k
    return len(set(a) & set(b)), worst, where


def merge(earlier, new, same, tolerance):
    """The merged records and a report (lines); None for the records if refused."""
    ran = {r["config"] for r in new}
    lines, ok = [], True
    for config in same:
        n, worst, where = compare(earlier, new, config)
        good = n > 0 and worst <= tolerance
        ok = ok and good
        lines.append(f"merge: {config}: {n} cells in both, largest difference {worst:.2f} % "
                     f"({'/'.join(map(str, where)) if where else '-'})"
                     f"{'' if good else f', over {tolerance} %'}")
    if not ok:
        return None, lines
    kept = [r for r in earlier if r["config"] not in ran]
    lines.append(f"merge: {len(new)} new records ({', '.join(sorted(ran))}), "
                 f"{len(kept)} earlier ones of {len({r['config'] for r in kept})} configurations")
    return kept + new, lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("earlier")
    ap.add_argument("new")
    ap.add_argument("--out", required=True)
    ap.add_argument("--same", nargs="+", default=["bare"],
                    help="configurations the two runs must agree on (default: bare)")
    ap.add_argument("--tolerance", type=float, default=1.0,
                    help="percent a shared cell's median may differ by (default 1)")
    args = ap.parse_args()
    with open(args.earlier) as f:
        earlier = json.load(f)
    with open(args.new) as f:
        new = json.load(f)
    merged, lines = merge(earlier, new, args.same, args.tolerance)
    print("\n".join(lines))
    if merged is None:
        sys.exit(1)
    with open(args.out, "w") as f:	# one record a line, as suite.py writes them
        f.write("[\n" + ",\n".join(json.dumps(r, sort_keys=True) for r in merged) + "\n]\n")


if __name__ == "__main__":
    main()
