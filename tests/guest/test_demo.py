# SPDX-License-Identifier: GPL-2.0
"""make demo runs end to end on a machine that can load our modules (the
guest is one: tests/demo-run takes its native path), and its report adds
up.  Nothing here depends on timing."""
import os
import re
import subprocess
import tarfile

TOP = os.environ["REDCAP_TOP"]
LKR = os.path.join(os.environ.get("REDCAP_CACHE", os.path.expanduser("~/.cache/redcap")),
                   "lkr.tar")


def quarter_of(tar, out):
    """A tar of @tar's first members, about a quarter of its bytes: reading
    them is most of the demo's CPU, and a TCG guest's CPU is make check's
    time."""
    with tarfile.open(tar) as src, tarfile.open(out, "w") as dst:
        total = sum(m.size for m in src.getmembers())
        kept = 0
        for m in src.getmembers():
            if kept > total // 4:
                break
            dst.addfile(m, src.extractfile(m) if m.isfile() else None)
            kept += m.size
    return out


def test_demo_runs_natively_and_its_counters_add_up(tmp_path):
    # One copy read instead of four, of a quarter of the files: every step
    # of make demo, a sixteenth of the reading.
    lkr = quarter_of(LKR, tmp_path / "lkr-quarter.tar")
    r = subprocess.run(["sh", os.path.join(TOP, "tests", "demo-run"), "native", str(lkr)],
                       capture_output=True, text=True, timeout=900,
                       env=dict(os.environ, REDCAP_DEMO_PROCS="1"))
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert out.startswith(f"demo: natively, on Linux {os.uname().release}\n"), out
    bare = re.search(r"^demo: bare disk: +[\d.]+ s, (\d+) disk requests", out, re.M)
    cached = re.search(r"^demo: redcap: +[\d.]+ s, (\d+) disk requests", out, re.M)
    assert bare and cached, out
    assert re.search(r"^demo: improvement: -?[\d.]+ % less time", out, re.M), out
    st = dict(re.findall(r"^  (\w+)=(\S+)$", out, re.M))
    assert st["policy"] == "adaptive+caware"
    # the drive's counters count redcap's run alone: its fills and bypasses
    # (a bypassed read's pieces joined in one request, and a run of fills)
    assert int(cached.group(1)) == int(st["fill_ios"]) - int(st["fill_joined"]) + \
        int(st["read_bypassed"]) - int(st["read_joined"])
    assert int(st["read_hits"]) > 0 and int(bare.group(1)) > 0
    # and it left nothing behind: no demo device, no brd, our targets still there
    assert not [d for d in os.listdir("/dev/mapper") if d.startswith("demo-")]
    assert not os.path.exists("/sys/module/brd")
    assert os.path.exists("/sys/module/dm_redcap")


def test_demo_refuses_a_brd_it_did_not_load():
    subprocess.run(["modprobe", "brd", "rd_nr=1", "rd_size=1024"], check=True)
    try:
        r = subprocess.run(["sh", os.path.join(TOP, "tests", "demo.sh"), LKR],
                           capture_output=True, text=True, timeout=60)
    finally:
        subprocess.run(["udevadm", "settle"], check=True)	# its probe of ram0
        subprocess.run(["modprobe", "-r", "brd"], check=True)
    assert r.returncode == 1
    assert r.stderr == ("demo: the brd module is loaded already (/dev/ram0 may be in use): "
                        "unload it first\n")
    assert r.stdout == ""
