#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Issue 49's counterfactual in the simulator for the bench's single-process
cells (2026-12-06-counterfactual-sim.md): sim-scale's traces of LKR, IOR-R,
TAC, 4K/8K/512K-SR and random (one process, 1 GiB), and row and mix made
of them as the suite makes them (each part a quarter of its data; row one
process doing the parts in turn, mix one process per part; 8k-sr16 sixteen
8K-SR readers of a quarter each, 2 GiB apart), replayed bare
and through redcap on models trained with several seeds of sim-scale's
training pattern.  Per cell and seed: the price of the reads redcap
received against the bare run's busy time, in %, on the virtual disk that
prices each read as it comes (vd_vdisk_submit()) / on the one that serves
them in the bare disk's order (vd-lag.h).

usage: sim-counterfactual.py [--bin REDCAPCTL] [--disk hdd7200|hdd15k]
           [--seeds 7,1,2] [--only tac,mix,8k-sr16] [--drive-cache] [--no-train]
"""
import argparse, importlib.util, json, os, subprocess, sys, tempfile
import concurrent.futures as cf
TOP = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
spec = importlib.util.spec_from_file_location("sim_compare", os.path.join(TOP, "tests", "bench", "sim-compare.py"))
_sc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(_sc)
ss = _sc.load_sim_scale(1024)
ap = argparse.ArgumentParser()
ap.add_argument('--bin', default=os.path.join(TOP, 'build', 'userspace', 'redcapctl'))
ap.add_argument('--disk', default='hdd7200')
ap.add_argument('--seeds', default='7')
ap.add_argument('--only')
ap.add_argument('--drive-cache', action='store_true')
ap.add_argument('--no-train', action='store_true')
ap.add_argument('--config', default='512x128k:adaptive+caware,estimator=vdisk')
ap.add_argument('--keep', default=os.path.join(TOP, 'build', 'bench-sim', 'counterfactual'))
a = ap.parse_args()
CAP = {'hdd7200': 1953125000, 'hdd15k': 71687369}[a.disk]
ss.DISKS = {a.disk: CAP}
ss.REDCAPCTL = a.bin
layout = ss.lkr_layout(os.path.join(TOP, 'build', 'bench-sim', 'lkr-layout.csv'))
PARTS = ["lkr", "ior-r", "tac", "4k-sr", "8k-sr", "512k-sr", "random"]
MiB = 1 << 20

def part_reqs(w, k, full):
    """part @w placed in slot k; full: 1 GiB files, else a quarter."""
    fb = ss.FILE_BYTES
    if not full:
        ss.FILE_BYTES = 256 * MiB
    try:
        if w == 'lkr':
            r = ss.lkr_requests(layout, 0)
        else:
            save = ss.RANDOM_READS
            if not full:
                ss.RANDOM_READS = 2048
            r = ss.pattern_requests(w, 0)
            ss.RANDOM_READS = save
    finally:
        ss.FILE_BYTES = fb
    off = k * (2 * 1024 * MiB) // 512
    return [(s + off, n) for s, n in r]

def trace(w, d):
    path = os.path.join(d, f'{w}.csv')
    if os.path.exists(path):
        return path
    if w == 'mix':
        per = [part_reqs(p, k, False) for k, p in enumerate(PARTS)]
    elif w == '8k-sr16':
        per = [part_reqs('8k-sr', k, False) for k in range(16)]
    elif w == 'row':
        per = [[x for k, p in enumerate(PARTS) for x in part_reqs(p, k, False)]]
    else:
        per = [part_reqs(w, 0, True)]
    ss.write_trace(path + '.tmp', per)
    os.rename(path + '.tmp', path)
    return path

def train(seed, tmp):
    reqs = ss.train_requests(CAP, seed)
    t = os.path.join(tmp, f'train-{seed}.csv')
    ss.write_trace(t, [reqs])
    m = os.path.join(tmp, f'model-{a.disk}-{seed}{"-dc" if a.drive_cache else ""}.tables')
    cmd = [a.bin, 'simulate', '--trace', t, '--format', 'csv', '--disk', a.disk,
           '--capacity', str(CAP), '--config', 'bare', '--save-model', m]
    if a.drive_cache:
        cmd.append('--drive-cache')
    subprocess.run(cmd, check=True, capture_output=True)
    return m

def run(w, model, d):
    cmd = [a.bin, 'simulate', '--trace', trace(w, d), '--format', 'csv', '--disk', a.disk,
           '--capacity', str(CAP), '--model', model, '--config', 'bare', '--config', a.config, '--json']
    if a.drive_cache:
        cmd.append('--drive-cache')
    if a.no_train:
        cmd.append('--no-train')
    res = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)['results']
    b, r = res
    return (100 * (r['vdisk_time_s'] / b['disk_busy_s'] - 1), 100 * (b['vdisk_time_s'] / b['disk_busy_s'] - 1),
            100 * (r['app_time_s'] / b['app_time_s'] - 1),
            100 * (r['vdisk_ordered_time_s'] / b['disk_busy_s'] - 1), r['vdisk_ordered_forced'])

os.makedirs(os.path.join(a.keep, a.disk), exist_ok=True)
d = os.path.join(a.keep, a.disk)
W = a.only.split(',') if a.only else PARTS + ['row', 'mix']
for w in W:
    trace(w, d)
tmp = tempfile.mkdtemp(prefix='cf-')
seeds = [int(s) for s in a.seeds.split(',')]
with cf.ThreadPoolExecutor(8) as ex:
    models = dict(zip(seeds, ex.map(lambda s: train(s, tmp), seeds)))
    jobs = {(w, s): ex.submit(run, w, models[s], d) for w in W for s in seeds}
    print(f"| {a.disk}{' dc' if a.drive_cache else ''} | " + ' | '.join(f'seed {s}' for s in seeds) + ' | bare stream (seed 1st) | change (1st) |')
    print('|---|' + '---|' * (len(seeds) + 2))
    for w in W:
        r = [jobs[w, s].result() for s in seeds]
        print(f'| {w} ×1 | ' + ' | '.join(f'{x[0]:+.1f} / {x[3]:+.1f}' + (' (full)' if x[4] else '')
                                          for x in r) +
              f' | {r[0][1]:+.1f} | {r[0][2]:+.1f} |', flush=True)
