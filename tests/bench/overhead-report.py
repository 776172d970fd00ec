# SPDX-License-Identifier: GPL-2.0
"""Turn tests/bench/overhead.sh output (stdin) into a markdown table:
median IOPS per configuration, min-max, and the ratio to dm-linear."""
import statistics
import sys

rows = [line.split() for line in sys.stdin if line.strip() and not line.startswith("config")]
by = {}
for cfg, _, iops in (r for r in rows if len(r) == 3 and r[2].isdigit()):
    by.setdefault(cfg, []).append(int(iops))
base = statistics.median(by["linear"])
print("| config | median IOPS | min-max | reps | vs dm-linear |")
print("|---|---|---|---|---|")
for cfg, v in by.items():
    m = statistics.median(v)
    print(f"| {cfg} | {m:.0f} | {min(v)}-{max(v)} | {len(v)} | {m / base:.3f} |")
