#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""redcapctl simulate against the benchmark suite's measurements (issue 16).

For every (workload, processes, I/O mode) case of a suite run made with
--traces DIR, the bare run's block trace (DIR/<workload>-<procs>-<io>.blkparse)
is replayed by `redcapctl simulate` on the suite's disk profile and capacity,
starting from the model the suite's "vd" layer was loaded with
(DIR/model-<profile>.tables), through the bare disk and every redcap
configuration the suite measured, its processes first joined into one per
workload process (lanes(): DIR/<case>.forks) and also as traced, after
the mount's requests (DIR/<case>.mount.blkparse, simulate --warm) where the
suite kept them.  Each
(case, configuration) is a cell:
predicted application time and disk busy time against the measured ones
(median of the repetitions), and redcap's counters against the target's.

usage: sim-validate.py RECORDS.json --traces DIR --out REPORT.md [--drive-cache]
                       [--json OUT.json] [--command "how RECORDS was made"]
The JSON (default: REPORT.md's name with .json) holds every cell, raw.
A section of REPORT.md from the line "## Analysis of the misses" on is
written by hand: it is kept when the report is written again.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
from collections import defaultdict

HERE = os.path.dirname(os.path.realpath(__file__))
TOP = os.path.realpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import suite  # noqa: E402  (PROFILES, GEOMETRIES, POLICIES: what the suite built)

TOL = 0.10
ANALYSIS = "## Analysis of the misses"
COUNTERS = ["reads", "read_hits", "read_hits_waited", "read_misses", "fill_ios",
            "read_bypassed", "windows", "switches"]


def sim_spec(config):
    """The simulate --config for a suite configuration, or None (not redcap
    nor bare).  The options are those of the suite's table; what the table
    leaves out, the target's own choice over the suite's model layer:
    adaptive+caware, estimator vdisk."""
    if config == "bare":
        return "bare"
    parts = suite.redcap_parts(config)
    if not parts:
        return None
    geometry, policy = parts
    words = suite.POLICIES[policy].split()[1:]
    feats = dict(zip(words[::2], words[1::2]))
    feats.update(suite.TUNABLES.get(policy, []))
    spec = f"{geometry}:{feats.pop('policy', 'adaptive+caware')}"
    feats.setdefault("estimator", "vdisk")
    return spec + "".join(f",{k}={v}" for k, v in sorted(feats.items()))


def trace_facts(path):
    """What the trace itself shows: Q reads, processes, its span (first Q to
    last C), the disk time it waited on (union of in-flight intervals) and
    the think time (span minus that)."""
    qs, cs, pids = 0, 0, set()
    first_q, last_c = None, None
    inflight = {}			# (sector, n) -> [queue times]
    intervals = []
    with open(path) as f:
        for line in f:
            w = line.split()
            if len(w) < 10 or "," not in w[0] or w[5] not in ("Q", "C") or w[8] != "+":
                continue
            t, act, sec, n = float(w[3]), w[5], int(w[7]), int(w[9])
            if act == "Q":
                qs += 1
                pids.add(int(w[4]))
                first_q = t if first_q is None else min(first_q, t)
                inflight.setdefault((sec, n), []).append(t)
            else:
                cs += 1
                last_c = t if last_c is None else max(last_c, t)
                if inflight.get((sec, n)):
                    intervals.append((inflight[(sec, n)].pop(0), t))
    busy, end = 0.0, None
    for a, b in sorted(intervals):
        if end is None or a > end:
            busy += b - a
            end = b
        elif b > end:
            busy += b - end
            end = b
    span = (last_c - first_q) if first_q is not None and last_c is not None else None
    return {"q": qs, "c": cs, "pids": len(pids), "span_s": span, "io_wait_s": busy,
            "think_s": span - busy if span is not None else None}


def workload_processes(forks):
    """pid -> the workload process (a child of the suite's) it descends
    from, from a .forks file of the suite (forks_stop())."""
    parent, root = {}, None
    with open(forks) as f:
        for line in f:
            w = line.split()
            if line.startswith("# root "):
                root = int(w[2])
            elif len(w) == 2:
                parent[int(w[1])] = int(w[0])
    top = {}
    for pid in parent:
        p, seen = pid, set()
        while p in parent and parent[p] != root and p not in seen:
            seen.add(p)
            p = parent[p]
        if parent.get(p) == root:
            top[pid] = p
    return top


def lanes(path, out, forks=None):
    """@path with its processes joined into lanes, written to @out: the
    number of lanes, of processes, and how the lanes were found.

    simulate replays each process as a closed loop whose first request goes
    at its trace time.  LKR forks a cat per file (find -exec): a process of
    one or two requests, each pinned to the traced timeline, so a faster
    disk could not bring any of them forward.  Here a process whose first
    request is queued while a lane is idle (all its requests completed) and
    whose requests never overlap that lane's joins it (the lane idle the
    latest first: the process that most likely started it): one find and
    its cats become one closed loop.  Processes that run side by side stay
    apart.  With the suite's @forks file, a lane is exactly each workload
    process and what it started (its descendants), and that heuristic is
    not needed."""
    ev = []				# (pid, q time, c time)
    inflight = {}
    with open(path) as f:
        for line in f:
            w = line.split()
            if len(w) < 10 or "," not in w[0] or w[5] not in ("Q", "C") or w[8] != "+":
                continue
            t, key = float(w[3]), (int(w[7]), int(w[9]))
            if w[5] == "Q":
                ev.append([int(w[4]), t, None])
                inflight.setdefault(key, []).append(len(ev) - 1)
            elif inflight.get(key):
                ev[inflight[key].pop(0)][2] = t
    per_pid = defaultdict(list)
    for pid, q, c in ev:
        per_pid[pid].append((q, c if c is not None else q))
    lane_of, lane_iv = {}, []		# pid -> lane; lane -> [(q, c)]
    if forks and os.path.exists(forks):
        top, how = workload_processes(forks), "forks"
        roots = sorted({top.get(pid, pid) for pid in per_pid})
        lane_of = {pid: roots.index(top.get(pid, pid)) for pid in per_pid}
        lane_iv = roots
    else:
        how = "heuristic"
    for pid in sorted(per_pid, key=lambda p: per_pid[p][0][0]) if how == "heuristic" else []:
        iv = per_pid[pid]
        start = iv[0][0]
        best = None
        for i, liv in enumerate(lane_iv):
            if any(q < c2 and q2 < c for q, c in iv for q2, c2 in liv):
                continue		# the lane is busy while this process is
            end = max((c for _, c in liv if c <= start), default=None)
            if end is None:
                continue
            if best is None or end > best[0]:
                best = (end, i)
        if best is None:
            lane_iv.append([])
            best = (None, len(lane_iv) - 1)
        lane_of[pid] = best[1]
        lane_iv[best[1]].extend(iv)
    pid_re = re.compile(r"^(\s*\S+\s+\S+\s+\S+\s+\S+\s+)(\d+)(\s)")
    with open(path) as f, open(out, "w") as o:
        for line in f:
            m = pid_re.match(line)
            if m and int(m.group(2)) in lane_of:
                line = (m.group(1) + str(1000000 + lane_of[int(m.group(2))]) + m.group(3) +
                        line[m.end():])
            o.write(line)
    return len(lane_iv), len(per_pid), how


def median_of(recs, get):
    vals = [v for v in (get(r) for r in recs) if v is not None]
    return statistics.median(vals) if vals else None


def busy_s(r):
    """The emulated drive's busy time of record @r, in seconds."""
    return r["disk_stats"]["emu_busy_us"] / 1e6


def est_s(r):
    """redcap's bare price of the reads record @r received, in seconds, or
    None (an estimator without a virtual disk)."""
    us = r["redcap_stats"].get("est_disk_time_us")
    return None if us is None else us / 1e6


def err(pred, meas):
    if pred is None or meas is None or not meas:
        return None
    return (pred - meas) / meas


def pct(e):
    return "–" if e is None else f"{100 * e:+.1f}"


def f3(v):
    return "–" if v is None else f"{v:.3f}"


def rel(x):
    return os.path.relpath(x, TOP) if isinstance(x, str) and x.startswith(TOP + "/") else x


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("records")
    ap.add_argument("--traces", required=True)
    ap.add_argument("--out", required=True, help="the markdown report")
    ap.add_argument("--json", help="the raw comparison (default: beside --out)")
    ap.add_argument("--redcapctl", default=os.path.join(TOP, "build", "userspace", "redcapctl"))
    ap.add_argument("--drive-cache", action="store_true",
                    help="also price the reads received with the emulated drive's cache "
                         "(simulate --drive-cache), in the bare disk's order")
    ap.add_argument("--command", action="append", default=[],
                    help="a command line that made the records (repeatable)")
    args = ap.parse_args()
    out_json = args.json or os.path.splitext(args.out)[0] + ".json"

    with open(args.records) as f:
        records = json.load(f)
    # The geometries the records' set ran at (a set's budget_mib).
    budgets = {r["budget_bytes"] >> 20 for r in records if "budget_bytes" in r}
    if len(budgets) == 1:
        suite.set_budget(budgets.pop())
    by_cell = defaultdict(list)
    for r in records:
        by_cell[(r["workload"], r["procs"], r["io"], r["config"])].append(r)
    cases = sorted({k[:3] for k in by_cell},
                   key=lambda c: (suite.WORKLOADS.index(c[0]), c[1], c[2]))
    profiles = {r["disk_profile"] for r in records}
    if len(profiles) != 1:
        sys.exit(f"sim-validate: records of {len(profiles)} disk profiles, expected one")
    profile = profiles.pop()
    capacity = suite.PROFILES[profile]["capacity"]
    model_file = os.path.join(args.traces, f"model-{profile}.tables")
    model = model_file
    reps = sorted({r["rep"] for r in records if r["config"] != "bound"})

    cells, sims, skipped = [], {}, set()
    for case in cases:
        w, p, io = case
        trace = os.path.join(args.traces, f"{w}-{p}-{io}.blkparse")
        configs = [c for c in suite.CONFIGS if (w, p, io, c) in by_cell]
        specs = {c: sim_spec(c) for c in configs}
        skipped |= {c for c, s in specs.items() if s is None and c != "bound"}
        specs = {c: s for c, s in specs.items() if s}
        if not os.path.exists(trace) or not specs:
            print(f"sim-validate: {w} x{p} {io}: no trace or nothing to simulate", file=sys.stderr)
            continue
        joined = trace[:-len(".blkparse")] + ".lanes.blkparse"
        nlanes, npids, how = lanes(trace, joined, trace[:-len(".blkparse")] + ".forks")

        mount = trace[:-len(".blkparse")] + ".mount.blkparse"
        warm = ["--warm", mount] if os.path.exists(mount) else []

        def simulate(t, *extra):
            cmd = [args.redcapctl, "simulate", "--trace", t, "--format", "blkparse",
                   "--disk", profile, "--model", model, "--capacity", str(capacity), *warm,
                   *extra]
            for s in specs.values():
                cmd += ["--config", s]
            cmd.append("--json")
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode:
                sys.exit(f"sim-validate: {' '.join(cmd)}: exit {r.returncode}: "
                         f"{r.stderr.strip()}")
            return cmd, json.loads(r.stdout)

        cmd, sim = simulate(joined)
        cmd_raw, sim_raw = simulate(trace) if nlanes != npids else (cmd, sim)
        pred_dc = ({x["config"]: x for x in simulate(joined, "--drive-cache")[1]["results"]}
                   if args.drive_cache else {})
        sims[case] = {"command": [rel(x) for x in cmd],
                      "command_as_traced": [rel(x) for x in cmd_raw],
                      "requests": sim["requests"], "lanes": nlanes, "processes": npids,
                      "lanes_from": how,
                      "trace": trace_facts(trace)}
        pred = {x["config"]: x for x in sim["results"]}
        pred_raw = {x["config"]: x for x in sim_raw["results"]}
        for c, s in specs.items():
            recs = by_cell[(w, p, io, c)]
            x, xr = pred[s], pred_raw[s]
            meas_app = median_of(recs, lambda r: r["app_time_s"])
            meas_busy = median_of(recs, busy_s)
            cell = {"workload": w, "procs": p, "io": io, "config": c, "spec": s,
                    "reps": len(recs),
                    "measured": {"app_time_s": meas_app, "disk_busy_s": meas_busy,
                                 "disk_requests": median_of(
                                     recs, lambda r: r["disk_stats"]["emu_requests"])},
                    "predicted": {"app_time_s": x["app_time_s"],
                                  "disk_busy_s": x["disk_busy_s"],
                                  "disk_requests": x["disk_requests"]},
                    "predicted_as_traced": {"app_time_s": xr["app_time_s"],
                                            "disk_busy_s": xr["disk_busy_s"]}}
            cell["app_err"] = err(x["app_time_s"], meas_app)
            cell["busy_err"] = err(x["disk_busy_s"], meas_busy)
            cell["app_err_as_traced"] = err(xr["app_time_s"], meas_app)
            cell["busy_err_as_traced"] = err(xr["disk_busy_s"], meas_busy)
            if "stats" in x:
                # The virtual disk's price of the reads received (issue 49's
                # counterfactual), measured and simulated, against the bare
                # run's measured busy time.
                bare_busy = median_of(by_cell[(w, p, io, "bare")], busy_s)
                cell["price"] = {
                    "bare_busy_s": bare_busy,
                    "measured_s": median_of(recs, est_s),
                    "predicted_s": x["vdisk_time_s"]}
                cell["price"]["measured_err"] = err(cell["price"]["measured_s"], bare_busy)
                cell["price"]["predicted_err"] = err(x["vdisk_time_s"], bare_busy)
                # the same reads in the bare disk's order (vd-lag.h), and
                # with the drive's cache too
                cell["price"]["ordered_err"] = err(x["vdisk_ordered_time_s"], bare_busy)
                if pred_dc:
                    cell["price"]["ordered_dc_err"] = err(pred_dc[s]["vdisk_ordered_time_s"],
                                                          bare_busy)
                cell["measured"]["redcap"] = {
                    k: median_of(recs, lambda r, k=k: r["redcap_stats"].get(k))
                    for k in COUNTERS}
                cell["measured"]["redcap"]["state"] = "/".join(
                    sorted({r["redcap_stats"]["state"] for r in recs}))
                cell["predicted"]["redcap"] = {k: x["stats"][k] for k in COUNTERS}
                cell["predicted"]["redcap"]["state"] = x["stats"]["state"]
            cells.append(cell)

    def share(key):
        es = [c[key] for c in cells if c[key] is not None]
        return sum(abs(e) <= TOL for e in es), len(es)

    app_ok, app_n = share("app_err")
    busy_ok, busy_n = share("busy_err")
    summary = {"cells": len(cells), "tolerance": TOL,
               "app_within": app_ok, "app_cells": app_n,
               "busy_within": busy_ok, "busy_cells": busy_n,
               "app_within_as_traced": share("app_err_as_traced")[0],
               "busy_within_as_traced": share("busy_err_as_traced")[0],
               "goal": 0.9, "reps": reps, "profile": profile, "capacity": capacity,
               "model": rel(model_file), "records": rel(args.records),
               "skipped_configs": sorted(skipped)}
    with open(out_json, "w") as f:
        json.dump({"summary": summary, "cases": {f"{w}-{p}-{io}": v
                                                 for (w, p, io), v in sims.items()},
                   "cells": cells}, f, indent=1, sort_keys=True)
        f.write("\n")

    kept = ""
    if os.path.exists(args.out):
        with open(args.out) as f:
            old = f.read()
        if ANALYSIS in old:
            kept = old[old.index(ANALYSIS):]
    write_md(args, cells, sims, summary, kept, records)


def write_md(args, cells, sims, summary, kept, records):
    kernel = sorted({r["kernel"] for r in records})
    L = []
    L.append(f"# redcapctl simulate against the measured targets ({summary['profile']}, "
             f"{', '.join(kernel)})")
    L.append("")
    L.append(f"Generated by `tests/bench/sim-validate.py` (issue 16). Each cell is a "
             f"(workload, processes, I/O mode) case and a configuration: the bare run's "
             f"block trace, captured by the suite for the prefetch bound, replayed by "
             f"`redcapctl simulate` on the `{summary['profile']}` emulated drive "
             f"(capacity {summary['capacity']} sectors) from the model the suite's `vd` "
             f"layer was loaded with, against what the suite measured on the real "
             f"targets: application time (`app_time_s`) and the emulated drive's busy "
             f"time (`disk_stats.emu_busy_us`). Repetitions: {len(summary['reps'])} "
             f"(measured values are their median).")
    L.append("")
    L.append("## Headline")
    L.append("")
    a = summary["app_within"], summary["app_cells"]
    b = summary["busy_within"], summary["busy_cells"]
    L.append(f"| | cells within ±{100 * TOL:.0f} % | share | goal |")
    L.append("|---|---|---|---|")
    L.append(f"| application time | {a[0]} of {a[1]} | {100 * a[0] / max(a[1], 1):.0f} % | ≥ 90 % |")
    L.append(f"| disk busy time | {b[0]} of {b[1]} | {100 * b[0] / max(b[1], 1):.0f} % | ≥ 90 % |")
    ar, br = summary["app_within_as_traced"], summary["busy_within_as_traced"]
    L.append(f"| application time, processes as traced | {ar} of {a[1]} | "
             f"{100 * ar / max(a[1], 1):.0f} % | |")
    L.append(f"| disk busy time, processes as traced | {br} of {b[1]} | "
             f"{100 * br / max(b[1], 1):.0f} % | |")
    L.append("")
    L.append("simulate replays each process id of a trace as a closed loop whose first "
             "request goes at its trace time. The replayed traces have their processes "
             "joined into lanes (below, *The traces*): each workload process with every "
             "process it started (the suite's `.forks` file: `sched_process_fork` events "
             "of the traced run), so that LKR's find and the cat it forks per file are one "
             "closed loop. \"As traced\" replays the captured process ids unchanged.")
    L.append("")
    by_cfg = defaultdict(list)
    for c in cells:
        by_cfg[c["config"]].append(c)
    L.append("Per configuration (cells within ±10 %; median |error|):")
    L.append("")
    L.append("| config | simulate spec | app | median \\|app err\\| | busy | median \\|busy err\\| |")
    L.append("|---|---|---|---|---|---|")
    for cfg in suite.CONFIGS:
        cs = by_cfg.get(cfg)
        if not cs:
            continue
        ae = [abs(c["app_err"]) for c in cs if c["app_err"] is not None]
        be = [abs(c["busy_err"]) for c in cs if c["busy_err"] is not None]
        L.append(f"| {cfg} | `{cs[0]['spec']}` | {sum(e <= TOL for e in ae)}/{len(ae)} | "
                 f"{100 * statistics.median(ae):.1f} % | {sum(e <= TOL for e in be)}/{len(be)} | "
                 f"{100 * statistics.median(be):.1f} % |")
    L.append("")
    L.append("## Reproduce")
    L.append("")
    L.append("```sh")
    for c in args.command:
        L.append(c)
    L.append(f"tests/bench/sim-validate.py {os.path.relpath(args.records, TOP)} "
             f"--traces {os.path.relpath(args.traces, TOP)} "
             f"--out {os.path.relpath(args.out, TOP)}")
    L.append("```")
    L.append("")
    L.append("Each case is one `redcapctl simulate` call, e.g.:")
    L.append("")
    if sims:
        cmd = next(iter(sims.values()))["command"]
        L.append("```sh")
        L.append(" ".join(cmd))
        L.append("```")
    L.append("")
    if summary["skipped_configs"]:
        L.append(f"Not simulated (not redcap): {', '.join(summary['skipped_configs'])}.")
        L.append("")
    L.append("## The traces")
    L.append("")
    L.append("What the traced bare run shows (its span: first queue to last completion; "
             "I/O wait: time with a request in flight; think: the rest), against the "
             "measured bare run and the simulated bare replay.")
    L.append("")
    L.append("| case | Q | processes | lanes | trace span s | I/O wait s | think s | "
             "measured bare app s | predicted bare app s |")
    L.append("|---|---|---|---|---|---|---|---|---|")
    for (w, p, io), s in sims.items():
        t = s["trace"]
        bare = [c for c in cells if (c["workload"], c["procs"], c["io"], c["config"]) ==
                (w, p, io, "bare")]
        mb = bare[0]["measured"]["app_time_s"] if bare else None
        pb = bare[0]["predicted"]["app_time_s"] if bare else None
        L.append(f"| {w} ×{p} {io} | {t['q']} | {t['pids']} | {s['lanes']} ({s['lanes_from']}) | "
                 f"{f3(t['span_s'])} | "
                 f"{f3(t['io_wait_s'])} | {f3(t['think_s'])} | {f3(mb)} | {f3(pb)} |")
    L.append("")
    L.append("## Per cell")
    L.append("")
    L.append("Errors are (predicted − measured) / measured; **bold** beyond ±10 %.")
    L.append("")
    L.append("| case | config | measured app s | predicted app s | err % | measured busy s | "
             "predicted busy s | err % | app err % as traced |")
    L.append("|---|---|---|---|---|---|---|---|---|")

    def mark(e):
        s = pct(e)
        return f"**{s}**" if e is not None and abs(e) > TOL else s

    for c in cells:
        m, p = c["measured"], c["predicted"]
        L.append(f"| {c['workload']} ×{c['procs']} {c['io']} | {c['config']} | "
                 f"{f3(m['app_time_s'])} | {f3(p['app_time_s'])} | {mark(c['app_err'])} | "
                 f"{f3(m['disk_busy_s'])} | {f3(p['disk_busy_s'])} | {mark(c['busy_err'])} | "
                 f"{mark(c['app_err_as_traced'])} |")
    L.append("")
    priced = [c for c in cells if "price" in c]
    if priced:
        L.append("## The virtual disk's price of the reads received")
        L.append("")
        L.append("What redcap's bare virtual disk priced the reads it received at "
                 "(`est_disk_time_us`, measured in the guest; `vdisk_time_s`, simulated) "
                 "against the bare run's measured busy time (issue 49's counterfactual); "
                 "**bold** beyond ±10 %.")
        L.append("")
        L.append("The last columns are the simulator's errors in the bare disk's order "
                 "(`vdisk_ordered_time_s`), and with the drive's cache too (`--drive-cache`).")
        L.append("")
        L.append("| case | config | bare busy s | measured price s | err % | "
                 "simulated price s | err % | ordered err % | ordered, drive cache err % |")
        L.append("|---|---|---|---|---|---|---|---|---|")
        for c in priced:
            q = c["price"]
            L.append(f"| {c['workload']} ×{c['procs']} {c['io']} | {c['config']} | "
                     f"{f3(q['bare_busy_s'])} | {f3(q['measured_s'])} | "
                     f"{mark(q['measured_err'])} | {f3(q['predicted_s'])} | "
                     f"{mark(q['predicted_err'])} | {mark(q.get('ordered_err'))} | "
                     f"{mark(q.get('ordered_dc_err'))} |")
        L.append("")
    L.append("## redcap's counters, measured / predicted")
    L.append("")
    L.append("| case | config | " + " | ".join(COUNTERS) + " | state | disk requests |")
    L.append("|---|---|" + "---|" * (len(COUNTERS) + 2))
    for c in cells:
        if "redcap" not in c["measured"]:
            continue
        m, p = c["measured"]["redcap"], c["predicted"]["redcap"]

        def mp(k):
            a, b = m[k], p[k]
            a = "–" if a is None else a if isinstance(a, str) else f"{a:g}"
            return f"{a} / {b}"
        L.append(f"| {c['workload']} ×{c['procs']} {c['io']} | {c['config']} | " +
                 " | ".join(mp(k) for k in COUNTERS + ["state"]) +
                 f" | {c['measured']['disk_requests']:g} / {c['predicted']['disk_requests']} |")
    L.append("")
    worst = sorted(cells, key=lambda c: -max(abs(c["app_err"] or 0), abs(c["busy_err"] or 0)))
    L.append("## The largest errors")
    L.append("")
    L.append("| case | config | app err % | busy err % |")
    L.append("|---|---|---|---|")
    for c in worst[:10]:
        L.append(f"| {c['workload']} ×{c['procs']} {c['io']} | {c['config']} | "
                 f"{pct(c['app_err'])} | {pct(c['busy_err'])} |")
    L.append("")
    text = "\n".join(L) + "\n"
    if kept:
        text += "\n" + kept
    else:
        text += f"\n{ANALYSIS}\n\n(to be written)\n"
    with open(args.out, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
