#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""The memory an inactive redcap cache gives back, in the guest (issue 49).

A 64 MiB cache (512 x 128 KiB, redcapctl create's default) over a loop
device: the machine's free memory before it is made, once made, once
inactive (policy off) after the kernel reclaimed (vm.drop_caches 2, which
calls every shrinker), once active again and regrown, and once removed.
Free memory is MemFree plus the pages on the CPUs' free lists, which
MemFree leaves out; MemAvailable is printed too (it follows MemFree late).

usage: tests/vm/run --kernel 6.1 -- /usr/bin/python3 tests/bench/memory-probe.py
"""
import json
import subprocess
import time


def sh(*args, **kw):
    return subprocess.run(args, check=True, capture_output=True, text=True, **kw).stdout


def free_kib():
    with open("/proc/meminfo") as f:
        m = {line.split(":")[0]: int(line.split()[1]) for line in f}
    with open("/proc/zoneinfo") as f:
        pcp = sum(int(line.split()[1]) for line in f if line.strip().startswith("count:"))
    return {"free_kib": m["MemFree"] + pcp * 4, "available_kib": m["MemAvailable"]}


def reclaim():
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("2\n")


def stats():
    answer = sh("dmsetup", "message", "probe", "0", "stats").split()
    kv = dict(line.split("=", 1) for line in answer)
    return {k: int(kv[k]) for k in ("segments_bare", "given_back", "regrown")}


def main():
    sh("truncate", "-s", "256M", "/tmp/probe.img")
    loop = sh("losetup", "-f", "--show", "/tmp/probe.img").strip()
    n = sh("blockdev", "--getsz", loop).strip()
    out = []
    reclaim()
    out.append(("before", free_kib(), None))
    sh("dmsetup", "create", "probe", input=f"0 {n} redcap {loop} 256 512 2 policy always\n")
    reclaim()
    out.append(("made, active", free_kib(), stats()))
    sh("dmsetup", "message", "probe", "0", "policy", "off")
    reclaim()
    out.append(("inactive, reclaimed", free_kib(), stats()))
    sh("dmsetup", "message", "probe", "0", "policy", "always")
    for _ in range(600):
        if stats()["segments_bare"] == 0:
            break
        time.sleep(0.1)
    reclaim()
    out.append(("active, regrown", free_kib(), stats()))
    sh("dmsetup", "remove", "probe")
    sh("losetup", "-d", loop)
    reclaim()
    out.append(("removed", free_kib(), None))
    for step, mem, st in out:
        print(json.dumps({"step": step, **mem, "stats": st}))


if __name__ == "__main__":
    main()
