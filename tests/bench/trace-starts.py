#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Re-time a block trace so that its processes start STAGGER ms apart.

usage: trace-starts.py TRACE.blkparse STAGGER_MS OUT.blkparse

Every event of a process (a lane of sim-validate.py's .lanes.blkparse, or a
pid) moves by the same amount, so its own think times and order stay; only
where it begins against the others changes: the first process's first
request at its time, the next STAGGER_MS after it, and so on, in the order
they began.  A completion goes with the process that queued its sector
last, whichever pid blkparse names for it.  For redcapctl simulate:
whether a drive's time depends on how its readers started
(docs/results/2026-12-07-bistable-bare-disk.md).
"""
import sys


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__.strip().splitlines()[2])
    src, stagger, dst = sys.argv[1], float(sys.argv[2]) / 1000, sys.argv[3]
    events, first, owner = [], {}, {}
    with open(src) as f:
        for line in f:
            w = line.split()
            if len(w) < 8 or not w[5].isalpha():
                continue
            t, pid, action, sector = float(w[3]), w[4], w[5], w[7]
            if action in ("A", "Q"):
                owner[sector] = pid
                if action == "Q":
                    first.setdefault(pid, t)
            elif action == "C":
                pid = owner.get(sector, pid)
            events.append((t, pid, w))
    order = sorted(first, key=first.get)
    start = first[order[0]] if order else 0.0
    shift = {pid: first[pid] - (start + i * stagger) for i, pid in enumerate(order)}
    out = []
    for t, pid, w in events:
        w[3] = "%.9f" % max(0.0, t - shift.get(pid, 0.0))
        out.append((float(w[3]), " ".join(w)))
    out.sort(key=lambda e: e[0])
    with open(dst, "w") as f:
        f.writelines(line + "\n" for _, line in out)


if __name__ == "__main__":
    main()
