#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""The benchmark suite's report: from the runner's JSON records, a markdown
file (application time change vs. the bare disk per configuration, median of
the repetitions with min-max, and the share of the gap to the floor each one
closes) and one PNG per I/O mode (change vs. processes, one line per
configuration, one panel per workload: the REDCAP paper's Figure 2).

usage: report.py RESULTS.json [--command "what produced it"]
writes RESULTS.md and RESULTS-<io>.png beside the JSON.
"""
import argparse
import json
import math
import os
import statistics
import sys
from collections import defaultdict

WORKLOAD_ORDER = ["lkr", "ior-r", "tac", "4k-sr", "8k-sr", "512k-sr", "random", "row", "mix"]
FLOOR_CONFIGS = ("bare", "warm", "bound")
# The summary's columns: redcap as recommended and in the two geometries
# that matter, against the best of what a user would pick instead.
RECOMMENDED = "redcap-recommended"
SUMMARY = [("rec", RECOMMENDED), ("64×128", "redcap-64x128k-always"),
           ("32×256", "redcap-32x256k-always")]
ALTERNATIVES = {"readahead": "readahead", "dm-cache-brd": "dm-cache", "bcache-brd": "bcache",
                "bcache-brd-nocutoff": "bcache-nocutoff", "rapiddisk-brd": "rapiddisk",
                "bare-equal-ram": "equal-RAM page cache"}
# The equal-RAM comparison (issue 46): the bare disk, the bare disk whose
# page cache is given the caches' RAM, redcap's default stack.
EQUAL_RAM = ("bare", "bare-equal-ram", RECOMMENDED)


def load(path):
    with open(path) as f:
        return json.load(f)


def group(records):
    """(workload, procs, io) -> config -> [app_time_s by rep]"""
    g = defaultdict(lambda: defaultdict(list))
    for r in records:
        g[(r["workload"], r["procs"], r["io"])][r["config"]].append(r["app_time_s"])
    return g


def order_key(key):
    w, p, io = key
    return (io != "buffered", WORKLOAD_ORDER.index(w) if w in WORKLOAD_ORDER else 99, p)


def configs_of(records):
    seen = []
    for r in records:
        if r["config"] not in seen and r["config"] != "bound":
            seen.append(r["config"])
    return seen


def change(times, base):
    """Median, min and max change in % of @times against the median @base."""
    ch = sorted(100 * (t - base) / base for t in times)
    return statistics.median(ch), ch[0], ch[-1]


def floor_of(cfgs):
    """The lowest time any cache could reach: the CPU-only run (warm) or the
    I/O time of the best possible prefetch (bound), whichever is larger."""
    parts = [statistics.median(cfgs[c]) for c in ("warm", "bound") if cfgs.get(c)]
    return max(parts) if parts else None


def table_changes(g, configs, io):
    cols = [c for c in configs if c != "bare"]
    lines = [f"| workload | procs | bare s | " + " | ".join(cols) + " |",
             "|---|---|---|" + "---|" * len(cols)]
    for key in sorted((k for k in g if k[2] == io), key=order_key):
        cfgs = g[key]
        if not cfgs.get("bare"):
            continue
        base = statistics.median(cfgs["bare"])
        cells = []
        for c in cols:
            if not cfgs.get(c):
                cells.append("–")
                continue
            med, lo, hi = change(cfgs[c], base)
            cells.append(f"{med:+.0f} ({lo:+.0f}…{hi:+.0f})" if len(cfgs[c]) > 1
                         else f"{med:+.0f}")
        lines.append(f"| {key[0]} | {key[1]} | {base:.2f} | " + " | ".join(cells) + " |")
    return lines


# Issue 17's goals for the recommended stack, per disk profile: the
# limits on the change against the bare disk (%) of random reads, TAC and
# 8K-SR (and 8K-SR with one process), and of LKR with 16 processes.
GOALS = {"hdd7200": {"every": 2, "random": 1, "tac": -50, "8k-sr": -50, "8k-sr1": -50,
                     "lkr16": -60},
         "hdd15k": {"every": 2, "random": 2, "tac": -35, "8k-sr": -50, "8k-sr1": -20,
                    "lkr16": -60}}


def price_medians(records, ref="bare"):
    """(workload, procs, io) -> (the drive's busy time in the @ref run,
    the recommended stack's virtual-disk price of the reads it received
    (redcap's vdisk_time_us)), medians of the repetitions in us; cells
    without both are left out."""
    med = defaultdict(lambda: defaultdict(list))
    for r in records:
        key = (r["workload"], r["procs"], r["io"])
        if r["config"] == ref and "emu_busy_us" in r.get("disk_stats", {}):
            med[key]["ref"].append(r["disk_stats"]["emu_busy_us"])
        elif r["config"] == RECOMMENDED and "vdisk_time_us" in r.get("redcap_stats", {}):
            med[key]["priced"].append(r["redcap_stats"]["vdisk_time_us"])
    return {k: (statistics.median(v["ref"]), statistics.median(v["priced"]))
            for k, v in med.items() if v["ref"] and v["priced"] and statistics.median(v["ref"])}


def prices(records, ref="bare"):
    """(workload, procs, io) -> change in % of the recommended stack's
    virtual-disk price of the reads it received (redcap's vdisk_time_us)
    against what the disk took (the emulated drive's busy time) in the
    @ref run: the bare run (issue 17's goal), or "readahead", the bare
    disk at the recommended stack's read-ahead (READAHEAD_KB), which is sent the
    requests the stack receives (the bare run's page cache reads ahead
    less); medians of the repetitions."""
    return {k: 100 * (priced / busy - 1) for k, (busy, priced) in price_medians(records, ref).items()}


def table_prices(records):
    """Every cell's virtual-disk price against both references, or []
    without the recommended stack's prices."""
    bare, ra = price_medians(records), price_medians(records, "readahead")
    if not bare:
        return []
    rows = ["| workload | procs | io | priced ms | bare busy ms | vs bare | "
            "readahead busy ms | vs readahead |", "|---|---|---|---|---|---|---|---|"]
    for key in sorted(bare, key=order_key):
        busy, priced = bare[key]
        cells = ["–", "–"]
        if key in ra:
            cells = [f"{ra[key][0] / 1000:.1f}", f"{100 * (priced / ra[key][0] - 1):+.1f} %"]
        rows.append(f"| {key[0]} | {key[1]} | {key[2]} | {priced / 1000:.1f} | {busy / 1000:.1f} | "
                    f"{100 * (priced / busy - 1):+.1f} % | " + " | ".join(cells) + " |")
    def within(medians):
        return sum(abs(priced / busy - 1) <= 0.10 for busy, priced in medians.values())
    return rows + ["", f"Within 10 %: {within(bare)} of {len(bare)} cells against the bare run, "
                   f"{within(ra)} of {len(ra)} against `readahead`."]


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def changes(g, config):
    """(workload, procs, io) -> @config's median change against the bare
    disk's median in %, over the cells that ran both."""
    return {k: change(cfgs[config], statistics.median(cfgs["bare"]))[0]
            for k, cfgs in g.items() if cfgs.get("bare") and cfgs.get(config)}


def cell_name(key):
    w, p, io = key
    return f"{w} ×{p}{' ' + io if io != 'buffered' else ''}"


def cells_text(cells, most=6):
    """[(key, measured)] as "lkr ×16 -82.9, …", the first @most of them."""
    return ", ".join(f"{cell_name(k)} {v:+.1f}" for k, v in cells[:most]) + \
        (" …" if len(cells) > most else "")


def cells_of(ch, pred):
    """The (key, change) of @ch whose key satisfies @pred, in report order."""
    return sorted(((k, v) for k, v in ch.items() if pred(k)), key=lambda kv: order_key(kv[0]))


def goal(name, target, cells, ok, size=lambda v: v, profile=None):
    """A goals table's row, [] without @cells: @cells, [(key, measured)],
    every one must satisfy @ok; met names the worst, the one of largest
    @size, missed the cells that miss.  @ok None: no target on @profile,
    the row says what the cells reached."""
    if not cells:
        return []
    if ok is None:
        return [f"| {name} | {target} | {profile}: no target; reached {cells_text(cells)} |"]
    bad = [(k, v) for k, v in cells if not ok(k, v)]
    worst = max(cells, key=lambda kv: size(kv[1]))
    verdict = f"missed in {len(bad)} of {len(cells)}: " if bad else "met; worst "
    return [f"| {name} | {target} | {verdict}{cells_text(bad if bad else [worst])} |"]


def ratio(g, key, config):
    """@config's median time in the cell @key over the bare disk's."""
    return statistics.median(g[key][config]) / statistics.median(g[key]["bare"])


def alternative_rows(g, ch, beaten=None):
    """Per alternative in @g: the recommended stack's geometric mean of
    time / bare over the cells both ran (@ch's) against the
    alternative's; with @beaten, a row naming the cells where the
    alternative's change is more than @beaten points below the stack's."""
    rows = []
    for alt, name in ALTERNATIVES.items():
        # the geometric mean of time / bare over the cells both ran
        keys = [k for k in ch if g[k].get(alt)]
        if not keys:
            continue
        rec = geomean([ratio(g, k, RECOMMENDED) for k in keys])
        other = geomean([ratio(g, k, alt) for k in keys])
        rows.append(f"| geometric mean vs {name} | ahead | {'met' if rec < other else 'missed'}: "
                    f"{100 * (rec - 1):+.1f} % against {100 * (other - 1):+.1f} % "
                    f"over {len(keys)} cells |")
        if beaten is None:
            continue
        theirs = changes(g, alt)
        ahead = [(k, d) for k, d in ((k, ch[k] - theirs[k]) for k in sorted(keys, key=order_key))
                 if d > beaten]
        rows.append(f"| cells where {name} is ahead by more than {beaten} points | named | " +
                    (", ".join(f"{cell_name(k)} ({d:+.1f} points)" for k, d in ahead) or "none") +
                    " |")
    return rows


def table_goals(g, profile, priced=None, priced_ra=None):
    """Issue 17's goals, each with what the recommended stack measured and
    whether that meets it; [] without the recommended stack or the
    profile's goals.  Medians of the repetitions, change vs bare in %;
    @priced: prices() of the records, for the virtual disk's goal;
    @priced_ra: prices(records, "readahead"), the same against the bare
    disk sent the requests the stack receives (a row of its own)."""
    lim = GOALS.get(profile)
    if not lim or not any(RECOMMENDED in c for c in g.values()):
        return []
    ch, ra = changes(g, RECOMMENDED), changes(g, "readahead")
    rows = goal("every cell", f"≤ +{lim['every']} %", cells_of(ch, lambda k: True),
                lambda k, v: v <= lim["every"])
    rows += goal("random 4 KiB", f"≤ +{lim['random']} %",
                 cells_of(ch, lambda k: k[0] == "random"), lambda k, v: v <= lim["random"])
    stream = lambda k: k[0] in ("ior-r", "4k-sr") and k[2] == "buffered" and k in ra
    rows += goal("IOR-R, 4K-SR, 1–4 processes", "within 3 points of read_ahead_kb",
                 cells_of(ch, lambda k: stream(k) and k[1] <= 4), lambda k, v: v <= ra[k] + 3)
    rows += goal("IOR-R, 4K-SR, 8–16 processes", "half of read_ahead_kb's gain",
                 cells_of(ch, lambda k: stream(k) and k[1] >= 8),
                 lambda k, v: v <= min(0, ra[k]) / 2)
    rows += goal("8K-SR", f"≤ {lim['8k-sr']} % (×1: ≤ {lim['8k-sr1']} %)",
                 cells_of(ch, lambda k: k[0] == "8k-sr"),
                 lambda k, v: v <= (lim["8k-sr1"] if k[1] == 1 else lim["8k-sr"]))
    rows += goal("TAC", f"≤ {lim['tac']} %", cells_of(ch, lambda k: k[0] == "tac"),
                 lambda k, v: v <= lim["tac"])
    rows += goal("LKR, 16 processes", f"≤ {lim['lkr16']} %",
                 cells_of(ch, lambda k: k[0] == "lkr" and k[1] == 16),
                 lambda k, v: v <= lim["lkr16"])
    rows += goal("virtual disk vs bare run", "within ±10 %",
                 sorted((priced or {}).items(), key=lambda kv: order_key(kv[0])),
                 lambda k, v: abs(v) <= 10, size=abs)
    rows += goal("virtual disk vs bare at the stack's read-ahead", "(within ±10 %)",
                 sorted((priced_ra or {}).items(), key=lambda kv: order_key(kv[0])),
                 lambda k, v: abs(v) <= 10, size=abs)
    return ["| goal | target | recommended stack |", "|---|---|---|"] + rows + \
        alternative_rows(g, ch)


# Issue 46's goals for redcapctl's default stack (the recommended one),
# change against the bare disk in %: every cell; the real programs' (the
# "apps" set's) geometric mean; LKR with 16 processes, TAC and 8K-SR (the
# "server" set's) on GOALS46_PROFILE only (on the others the row says what
# they reach); and how far ahead of the stack an alternative with the same
# RAM may be in a cell before the cell is named.
GOALS46 = {"every": 2, "apps": -40, "lkr16": -60, "tac": -35, "8k-sr": -50, "beaten": 3}
GOALS46_PROFILE = "hdd7200"
GOALS46_SETS = ("server", "apps")


def table_goals46(g, profile, set_name):
    """Issue 46's goals, each with what the recommended stack measured and
    whether that meets it; [] without the recommended stack.  Medians of
    the repetitions, change vs bare in %; @set_name: the records' set,
    "apps" (the real programs) or "server" (the workloads)."""
    ch = changes(g, RECOMMENDED)
    if not ch:
        return []
    lim = GOALS46
    rows = goal("real programs, every cell" if set_name == "apps" else "every cell",
                f"≤ +{lim['every']} %", cells_of(ch, lambda k: True),
                lambda k, v: v <= lim["every"])
    if set_name == "apps":
        mean = 100 * (geomean([ratio(g, k, RECOMMENDED) for k in ch]) - 1)
        rows.append(f"| real programs, geometric mean | ≥ {-lim['apps']} % less time | "
                    f"{'met' if mean <= lim['apps'] else 'missed'}: {mean:+.1f} % "
                    f"over {len(ch)} cells |")
    if set_name == "server":
        own = profile == GOALS46_PROFILE
        for name, pred, target in (
                ("LKR, 16 processes", lambda k: k[0] == "lkr" and k[1] == 16, lim["lkr16"]),
                ("TAC", lambda k: k[0] == "tac", lim["tac"]),
                ("8K-SR", lambda k: k[0] == "8k-sr", lim["8k-sr"])):
            shown = f"≤ {target} %" if own else f"({GOALS46_PROFILE}'s: ≤ {target} %)"
            rows += goal(name, shown, cells_of(ch, pred),
                         (lambda k, v, t=target: v <= t) if own else None, profile=profile) \
                or [f"| {name} | {shown} | not run |"]
    return ["| goal | target | recommended stack |", "|---|---|---|"] + rows + \
        alternative_rows(g, ch, lim["beaten"])


def table_summary(g, io):
    """Median change vs bare of the SUMMARY configurations, the best
    alternative and the floors, one row per workload and processes."""
    lines = ["| workload | procs | bare s | " + " | ".join(n for n, _ in SUMMARY) +
             " | best alternative | warm | bound |", "|---|---|---|" + "---|" * (len(SUMMARY) + 3)]

    def pct(cfgs, c, base):
        return f"{change(cfgs[c], base)[0]:+.0f}" if cfgs.get(c) else "–"

    for key in sorted((k for k in g if k[2] == io), key=order_key):
        cfgs = g[key]
        if not cfgs.get("bare"):
            continue
        base = statistics.median(cfgs["bare"])
        alts = [(statistics.median(cfgs[c]), n) for c, n in ALTERNATIVES.items() if cfgs.get(c)]
        best = "–"
        if alts:
            t, name = min(alts)
            best = f"{name} {100 * (t - base) / base:+.0f}"
        lines.append(f"| {key[0]} | {key[1]} | {base:.2f} | " +
                     " | ".join(pct(cfgs, c, base) for _, c in SUMMARY) +
                     f" | {best} | {pct(cfgs, 'warm', base)} | {pct(cfgs, 'bound', base)} |")
    return lines


def table_gap(g, configs, io):
    cols = [c for c in configs if c not in FLOOR_CONFIGS]
    lines = ["| workload | procs | bare s | warm s | bound s | floor s | " +
             " | ".join(cols) + " |", "|---|---|---|---|---|---|" + "---|" * len(cols)]
    for key in sorted((k for k in g if k[2] == io), key=order_key):
        cfgs = g[key]
        floor = floor_of(cfgs)
        if not cfgs.get("bare") or floor is None:
            continue
        base = statistics.median(cfgs["bare"])
        med = {c: statistics.median(cfgs[c]) for c in ("warm", "bound") if cfgs.get(c)}
        cells = []
        for c in cols:
            if not cfgs.get(c) or base <= floor:
                cells.append("–")
            else:
                cells.append(f"{100 * (base - statistics.median(cfgs[c])) / (base - floor):.0f}")
        lines.append(f"| {key[0]} | {key[1]} | {base:.2f} | "
                     f"{med.get('warm', float('nan')):.2f} | {med.get('bound', float('nan')):.2f} | "
                     f"{floor:.2f} | " + " | ".join(cells) + " |")
    return lines


def table_states(records, io):
    """The adaptive policies' end state and switch count, per repetition."""
    cells = defaultdict(lambda: defaultdict(list))
    for r in records:
        st = r.get("redcap_stats")
        if r["io"] == io and st and ("adaptive" in r["config"] or
                                     r["config"].startswith(RECOMMENDED)):
            cells[(r["workload"], r["procs"], io)][r["config"]].append(
                f"{'on' if st.get('state') == 'active' else 'off'}/{st.get('switches')}")
    cols = sorted({c for v in cells.values() for c in v})
    if not cols:
        return []
    lines = ["| workload | procs | " + " | ".join(cols) + " |", "|---|---|" + "---|" * len(cols)]
    for key in sorted(cells, key=order_key):
        lines.append(f"| {key[0]} | {key[1]} | " +
                     " | ".join(" ".join(cells[key].get(c, ["–"])) for c in cols) + " |")
    return lines


def repeatability(g, far=30):
    """How far a cell's repetitions spread: over the cells with more than
    one, the median and 90th percentile of (max - min) / median in %, and
    the cells whose spread is over @far %.  None without repeated cells."""
    spreads, wild = [], []
    for key, cfgs in g.items():
        for c, times in cfgs.items():
            if len(times) < 2 or c == "bound":
                continue
            med = statistics.median(times)
            spread = 100 * (max(times) - min(times)) / med if med > 0 else 0.0
            spreads.append(spread)
            if spread > far:
                wild.append((key, c))
    if not spreads:
        return None
    spreads.sort()
    return {"cells": len(spreads), "median": statistics.median(spreads),
            "p90": spreads[min(len(spreads) - 1, int(0.9 * len(spreads)))], "far": far,
            "wild": sorted(wild, key=lambda kc: (order_key(kc[0]), kc[1]))}


# A cell's repetitions gave the drive the same work within SAME_BUSY_MS of
# busy time; took different times when more than APART_MS apart.
SAME_BUSY_MS = 0.1
APART_MS = 2.0


def outside_the_drive(records, busy_ms=SAME_BUSY_MS, app_ms=APART_MS):
    """The cells whose repetitions gave the emulated drive the same work
    (busy time within @busy_ms) and yet took different times: under icount
    that is time spent outside the drive, e.g. the guest waiting on the host
    (2026-11-28-bench-9p-stalls.md).  Returns (cells with the same drive
    work, those of them spread over @app_ms, the runs over @app_ms above
    their cell's fastest)."""
    cells = {}
    for r in records:
        busy = r.get("disk_stats", {}).get("busy_us")
        if r["config"] == "bound" or busy is None:
            continue
        key = (r["workload"], r["procs"], r["io"], r["config"])
        cells.setdefault(key, []).append((1000 * r["app_time_s"], busy / 1000))
    same = [v for v in cells.values()
            if len(v) > 1 and max(b for _, b in v) - min(b for _, b in v) <= busy_ms]
    off = [v for v in same if max(a for a, _ in v) - min(a for a, _ in v) > app_ms]
    runs = sum(1 for v in same for a, _ in v if a - min(x for x, _ in v) > app_ms)
    return len(same), len(off), runs


def section_repeatability(g, records=()):
    rep = repeatability(g)
    if not rep:
        return []
    same, off, runs = outside_the_drive(records)
    drive = [f"Of the {same} cells whose repetitions gave the drive the same work "
             f"(busy time within {SAME_BUSY_MS:g} ms), {off} took times more than "
             f"{APART_MS:g} ms apart "
             f"({runs} run(s) over their cell's fastest): time spent outside the drive.",
             ""] if same else []
    out = ["## Repeatability", "",
           f"Over {rep['cells']} cells with repetitions, the spread of a cell "
           f"(max − min) is {rep['median']:.1f} % of its median (median over the cells; "
           f"90th percentile {rep['p90']:.1f} %); {len(rep['wild'])} cell(s) spread more "
           f"than {rep['far']} %" + (":" if rep["wild"] else "."), ""]
    out += [f"* {w} ×{p} {io} {c}" for (w, p, io), c in rep["wild"]]
    return out + ([""] if rep["wild"] else []) + drive


def relative(g, io, configs):
    """{(workload, procs): {config: median application time in % of the
    bare disk's median}} over the cells of @io with a bare run, for the
    @configs each cell has; bare is 100."""
    out = {}
    for (w, p, i), cfgs in g.items():
        if i != io or not cfgs.get("bare"):
            continue
        base = statistics.median(cfgs["bare"])
        out[(w, p)] = {c: 100 * statistics.median(cfgs[c]) / base
                       for c in configs if cfgs.get(c) and base > 0}
    return out


def cell_order(keys):
    return sorted(keys, key=lambda k: (WORKLOAD_ORDER.index(k[0]) if k[0] in WORKLOAD_ORDER
                                       else 99, k[1]))


def equal_ram(g, io):
    """The equal-RAM comparison's rows: [(workload, procs, {config: % of
    bare})] for the cells that ran all of EQUAL_RAM, and the geometric mean
    of each over them (None without such cells)."""
    rel = relative(g, io, EQUAL_RAM)
    rows = [(w, p, rel[(w, p)]) for w, p in cell_order(rel)
            if all(c in rel[(w, p)] for c in EQUAL_RAM)]
    if not rows:
        return [], None
    return rows, {c: 100 * geomean([r[c] / 100 for _, _, r in rows]) for c in EQUAL_RAM}


def table_equal_ram(g, io):
    rows, mean = equal_ram(g, io)
    if not rows:
        return []
    lines = ["| workload | procs | bare s | bare, page cache + the caches' RAM | "
             "redcap-recommended |", "|---|---|---|---|---|"]
    for w, p, r in rows:
        lines.append(f"| {w} | {p} | {statistics.median(g[(w, p, io)]['bare']):.2f} | "
                     f"{r['bare-equal-ram']:.0f} % | {r[RECOMMENDED]:.0f} % |")
    lines.append(f"| geometric mean | | | {mean['bare-equal-ram']:.0f} % | "
                 f"{mean[RECOMMENDED]:.0f} % |")
    return lines


def plot_bars(g, configs, io, path):
    """Application time per configuration, per workload: one panel per
    workload, a group of bars per process count, bare = 100 %."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    shown = [c for c in configs if c not in ("bound",)]
    rel = relative(g, io, shown)
    workloads = [w for w in WORKLOAD_ORDER if any(k[0] == w for k in rel)]
    if not workloads:
        return False
    cols = 3
    rows = (len(workloads) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5.5 * cols, 3.4 * rows), squeeze=False)
    colors = plt.get_cmap("tab10").colors
    width = 0.8 / max(1, len(shown))
    for ax, w in zip(axes.flat, workloads):
        procs = sorted(p for ww, p in rel if ww == w)
        for n, c in enumerate(shown):
            xs = [i + (n - (len(shown) - 1) / 2) * width for i in range(len(procs))]
            ys = [rel[(w, p)].get(c, 0) for p in procs]
            ax.bar(xs, ys, width, label=c, color=colors[n % len(colors)],
                   edgecolor="black" if c == RECOMMENDED else None)
        ax.axhline(100, color="black", linewidth=0.8)
        ax.set_xticks(range(len(procs)), [f"×{p}" for p in procs])
        ax.set_title(f"{w} ({io})")
        ax.set_ylabel("app time, % of bare")
        ax.grid(True, axis="y", alpha=0.3)
    for ax in list(axes.flat)[len(workloads):]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(5, len(shown)), fontsize="small")
    fig.tight_layout(rect=(0, 0.04 + 0.025 * ((len(shown) + 4) // 5), 1, 1))
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def plot_equal_ram(g, io, path):
    """The equal-RAM comparison as one picture: per cell, the bare disk
    (100 %), the bare disk with the caches' RAM in its page cache, and
    redcap's default stack; the geometric means last."""
    rows, mean = equal_ram(g, io)
    if not rows:
        return False
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    labels = [f"{w} ×{p}" for w, p, _ in rows] + ["geo. mean"]
    data = [r for _, _, r in rows] + [mean]
    fig, ax = plt.subplots(figsize=(max(8, 0.75 * len(labels)), 4.5))
    names = {"bare": "bare disk", "bare-equal-ram": "bare, page cache + the caches' RAM",
             RECOMMENDED: "redcap (redcapctl's default stack)"}
    colors = {"bare": "#bbbbbb", "bare-equal-ram": "#4c72b0", RECOMMENDED: "#dd8452"}
    for n, c in enumerate(EQUAL_RAM):
        xs = [i + (n - 1) * 0.27 for i in range(len(labels))]
        bars = ax.bar(xs, [d[c] for d in data], 0.27, label=names[c], color=colors[c])
        if c != "bare":
            ax.bar_label(bars, fmt="%.0f", fontsize=7)
    ax.axhline(100, color="black", linewidth=0.8)
    ax.axvline(len(labels) - 1.5, color="black", linewidth=0.5, linestyle=":")
    ax.set_xticks(range(len(labels)), labels, rotation=45, ha="right")
    ax.set_ylabel("app time, % of bare")
    ax.set_title(f"Equal RAM: in the page cache or below it ({io})", pad=28)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize="small", ncol=3, loc="lower center", bbox_to_anchor=(0.5, 1.0),
              frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def plot(g, configs, io, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    # a line is a change against bare: only the cells with a bare run
    keys = [k for k in g if k[2] == io and g[k].get("bare")]
    workloads = [w for w in WORKLOAD_ORDER if any(k[0] == w for k in keys)]
    if not workloads:
        return False
    cols = 3
    rows = (len(workloads) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.6 * rows), squeeze=False)
    lines = [c for c in configs if c not in FLOOR_CONFIGS]
    colors = plt.get_cmap("tab20").colors
    procs = sorted({k[1] for k in keys})
    for ax, w in zip(axes.flat, workloads):
        for n, c in enumerate(lines):
            xs, ys = [], []
            for p in sorted({k[1] for k in keys if k[0] == w}):
                cfgs = g[(w, p, io)]
                if cfgs.get("bare") and cfgs.get(c):
                    xs.append(p)
                    ys.append(change(cfgs[c], statistics.median(cfgs["bare"]))[0])
            if xs:
                ax.plot(xs, ys, marker="o", label=c, color=colors[n % len(colors)],
                        linestyle="-" if c.startswith("redcap") else "--")
        ax.axhline(0, color="black", linewidth=0.8)
        ax.set_xscale("log", base=2)
        ax.set_xticks(procs, [str(p) for p in procs])
        ax.set_title(f"{w} ({io})")
        ax.set_xlabel("processes")
        ax.set_ylabel("app time vs bare (%)")
        ax.grid(True, alpha=0.3)
    for ax in list(axes.flat)[len(workloads):]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize="small")
    fig.tight_layout(rect=(0, 0.04 + 0.02 * ((len(lines) + 3) // 4), 1, 1))
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("json")
    ap.add_argument("--command", default="", help="the command that produced the results")
    ap.add_argument("--no-plots", dest="plots", action="store_false",
                    help="tables only (the guest suite: matplotlib under emulation takes "
                         "two minutes)")
    args = ap.parse_args()
    records = load(args.json)
    if not records:
        sys.exit(f"report: {args.json}: no records")
    base = os.path.splitext(args.json)[0]
    g = group(records)
    configs = configs_of(records)
    r0 = records[0]
    out = [f"# Benchmark: {r0['disk_profile']} on Linux {r0['kernel']} ({r0['set']} set)", ""]
    if args.command:
        out += [f"Produced by `{args.command}` (records: `{os.path.basename(args.json)}`).", ""]
    reps = max(r["rep"] for r in records) + 1
    out += [f"{len(records)} records; {reps} repetition(s) per cell; guest under icount: "
            f"{r0.get('icount')}; data: `{json.dumps(r0.get('scale'))}`.", "",
            "Cells: application time change against the bare emulated disk in %, median "
            "over the repetitions (min…max); negative is faster.", ""]
    if r0["set"] in GOALS46_SETS:
        goals = table_goals46(g, r0["disk_profile"], r0["set"])
        if goals:
            out += ["## Issue 46's goals", "",
                    "redcapctl's default stack (`redcap-recommended`) against the bare disk and "
                    "against each alternative with the same RAM: the change in application time "
                    "in %, median of each cell's repetitions; a missed goal lists the cells "
                    "that miss it.", ""] + goals + [""]
    else:
        goals = table_goals(g, r0["disk_profile"], prices(records), prices(records, "readahead"))
        if goals:
            out += ["## Issue 17's goals", "",
                    "The recommended stack's median change against the bare disk (%), every "
                    "cell of the set; a missed goal lists the cells that miss it.  The virtual "
                    "disk's rows: the recommended stack's price of the reads it received "
                    "(`vdisk_time_us`) against the bare run's drive busy time (the goal), and "
                    "against the busy time of `readahead`, the bare disk at the stack's "
                    "read-ahead, which is sent the requests the stack receives (not a goal of "
                    "its own: it tells the model's error from the bare run's other requests).",
                    ""] + goals + [""]
    priced = table_prices(records)
    if priced:
        out += ["## The virtual disk's price of the reads the recommended stack received", "",
                "redcap's `vdisk_time_us` against the emulated drive's busy time in the bare "
                "run and in `readahead` (medians of the repetitions).", ""] + priced + [""]
    budget = r0.get("budget_bytes", 8 << 20) >> 20
    bound = r0.get("memory_max_bytes")
    if bound:
        out += [f"The workloads ran in a cgroup whose `memory.max` bounded their page cache to "
                f"{bound >> 20} MiB; `bare-equal-ram`: the bare disk with {budget} MiB more, "
                "the caches' RAM given to the page cache instead.", ""]
    for io in ("buffered", "direct"):
        if not any(k[2] == io for k in g):
            continue
        out += [f"## {io}: application time per configuration", "",
                f"![{io}: application time per configuration, % of bare]"
                f"({os.path.basename(base)}-{io}-bars.png)", ""] \
            if args.plots and plot_bars(g, configs, io, f"{base}-{io}-bars.png") else []
        eq = table_equal_ram(g, io)
        if eq:
            out += [f"## {io}: equal RAM", "",
                    f"Application time in % of the bare disk's (median of the repetitions): "
                    f"the bare disk whose page cache is given the caches' {budget} MiB, and "
                    "redcap's default stack with them below it.", ""]
            if args.plots:
                plot_equal_ram(g, io, f"{base}-{io}-equal-ram.png")
                out += [f"![{io}: equal RAM]({os.path.basename(base)}-{io}-equal-ram.png)", ""]
            out += eq + [""]
        out += [f"## {io}: summary, median change vs bare (%)", "",
                f"rec = redcap-recommended (128 KiB segments in {budget} MiB, adaptive+caware, "
                "read-ahead 1 MiB); 64×128, 32×256 = redcap with "
                "`policy always` (8 MiB sets); best alternative = the fastest of read_ahead_kb, "
                "dm-cache, bcache, RapidDisk and the equal-RAM page cache, with the same RAM; "
                "warm = zero disk latency; bound = best possible prefetch.", ""] + \
            table_summary(g, io)
        out += ["", f"## {io}: application time vs bare (%)", ""] + table_changes(g, configs, io)
        out += ["", f"## {io}: share of the gap to the floor closed (%)", "",
                "floor = max(warm: the zero-latency run, bound: I/O time of the best "
                "possible prefetch of the bare run's block trace); 100 = reached the floor, "
                "negative = slower than bare.", ""] + table_gap(g, configs, io)
        states = table_states(records, io)
        if states:
            out += ["", f"## {io}: adaptive policies, end state/switches per repetition", ""]
            out += states
        png = f"{base}-{io}.png"
        if args.plots and plot(g, configs, io, png):
            out += ["", f"![{io}]({os.path.basename(png)})"]
        out.append("")
    out += section_repeatability(g, records)
    with open(base + ".md", "w") as f:
        f.write("\n".join(out))
    print(f"report: {base}.md", file=sys.stderr)


if __name__ == "__main__":
    main()
