# SPDX-License-Identifier: GPL-2.0
"""The two modules: dm-redcap loads, runs and unloads without dm-vdisk, and
holds dm-vdisk only while it holds a model.  A file of its own: it unloads
both modules, which no other file's devices (module-scoped fixtures) may
be holding then; it loads them back whatever happens."""
import os
import re

from dmtest import Dm, dev_sectors, dm_major_minor, kmsg, read_pattern, sh, write_stamped

REDCAP_TABLE_ERR = re.compile(r"^device-mapper: table: \d+:\d+: redcap: (.*)$")


def errors(regex, lines):
    return [m.group(1) for m in map(regex.match, lines) if m]


def module_loaded(name):
    return os.path.isdir(f"/sys/module/{name}")


def test_redcap_loads_and_runs_without_dm_vdisk(loop64, dmname):
    """dm-redcap takes dm-vdisk's model API with symbol_get() when it looks
    for a model: it loads without dm-vdisk, serves reads without a model,
    refuses a model it cannot have with the usual error, and holds dm-vdisk
    loaded only while one of its tables holds a model."""
    ko = {m: os.path.join(os.environ["REDCAP_TOP"], "build", os.environ["REDCAP_KREL"], d,
                          f"{m}.ko")
          for m, d in (("dm-redcap", "dm-redcap"), ("dm-vdisk", "dm-vdisk-model"))}
    n = dev_sectors(loop64)
    write_stamped(loop64, 0, 2 * 32, seed=41)
    sh("rmmod", "dm_redcap")
    sh("rmmod", "dm_vdisk")
    try:
        sh("insmod", ko["dm-redcap"])
        assert not module_loaded("dm_vdisk")
        with Dm(dmname(), f"0 {n} redcap {loop64} 256 16 2 policy always") as rc:
            rc.cold()
            read_pattern(rc.path, range(0, 2 * 32), 41)
            st = rc.stats()
            # the second segment is filled ahead of the stream, read once the first
            # is: its first read hits or, the fill still in flight (a slow guest:
            # make check-debug's), waits on it
            assert (st["model"], st["read_misses"],
                    st["read_hits"] + st["read_hits_waited"]) == ("none", 1, 63), st
            assert st["prefetches"] >= 1, st
        line = f"0 {n} redcap {loop64} 256 16 2 model {loop64}"
        with kmsg() as k:
            r = sh("dmsetup", "create", dmname(), input=line + "\n", check=False)
            lines = k.lines()
        assert r.returncode != 0
        assert errors(REDCAP_TABLE_ERR, lines) == ["Model device is not a vdisk device (-EINVAL)"]
        assert not module_loaded("dm_vdisk")

        sh("insmod", ko["dm-vdisk"])
        vd = Dm(dmname(), f"0 {n} vdisk {loop64}")
        with vd, Dm(dmname(), f"0 {n} redcap {loop64} 256 16 2 model {vd.path}") as rc:
            model = dm_major_minor(vd.path)
            vd.remove()                     # no vdisk device left; redcap holds the model
            assert rc.stats()["model"] == model
            r = sh("rmmod", "dm_vdisk", check=False)
            assert r.returncode != 0 and "in use" in r.stderr, r.stderr
            read_pattern(rc.path, range(0, 2 * 32), 41)
        sh("rmmod", "dm_vdisk")             # the last model given back
    finally:
        for m, name in (("dm-vdisk", "dm_vdisk"), ("dm-redcap", "dm_redcap")):
            if not module_loaded(name):
                sh("insmod", ko[m])
