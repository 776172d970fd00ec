# SPDX-License-Identifier: GPL-2.0
"""The benchmark runner works end to end (one tiny case; nothing here
depends on timing): records with every required field, the disk's and
redcap's counters, the prefetch bound from a block trace, the report."""
import json
import os
import subprocess

TOP = os.environ["REDCAP_TOP"]
REQUIRED = ("workload", "procs", "config", "io", "rep", "app_time_s", "disk_read_bytes",
            "kernel", "disk_profile")


def test_tiny_bench_case(tmp_path):
    out = tmp_path / "tiny.json"
    try:
        r = subprocess.run(["/usr/bin/python3", os.path.join(TOP, "tests", "bench", "suite.py"),
                            "--set", "tiny", "--train", "2", "--out", str(out)],
                           capture_output=True, text=True, timeout=900)
    finally:
        # the suite stops udev's exec queue while it runs; if it was
        # killed, the tests after this one still need udev
        subprocess.run(["udevadm", "control", "--start-exec-queue"], check=True)
    # the events the suite held run now, not under the next test's dmsetup;
    # a queue that never drains (dmtest.udev_held) fails here, not there
    s = subprocess.run(["udevadm", "settle", "--timeout=120"], capture_output=True, text=True)
    assert s.returncode == 0, f"udev's queue did not drain after the bench: {s.stderr}"
    assert r.returncode == 0, r.stderr
    recs = json.loads(out.read_text())
    assert [(x["config"], x["workload"], x["procs"], x["io"], x["rep"]) for x in recs] == [
        ("bare", "8k-sr", 1, "buffered", 0),
        ("redcap-recommended", "8k-sr", 1, "buffered", 0),
        ("bare-equal-ram", "8k-sr", 1, "buffered", 0),
        ("bound", "8k-sr", 1, "buffered", 0)]
    for x in recs:
        assert all(k in x for k in REQUIRED), x
        assert x["kernel"] == os.uname().release and x["disk_profile"] == "hdd7200"
        assert x["app_time_s"] > 0
    bare, rc, equal, bound = recs
    # the workloads ran in the cgroup v2 whose memory.max bounds their page
    # cache (256 MiB), raised by the caches' 8 MiB for bare-equal-ram
    assert bare["cgroup"] == "/sys/fs/cgroup/redcap-bench"
    assert bare["memory_max_bytes"] == rc["memory_max_bytes"] == bound["memory_max_bytes"] \
        == 256 << 20
    assert equal["memory_max_bytes"] == (256 + 8) << 20 and equal["budget_bytes"] == 8 << 20
    assert equal["disk_read_bytes"] == bare["disk_read_bytes"]
    # the model layer: every run starts from the trained tables (the cells
    # the bare run added are gone when redcap's run starts) and learns from
    # the run, as an admin's model layer does by default
    for x in (bare, rc):
        assert x["model_learning"] is True
        start, end = x["model_run"]["start"], x["model_run"]["end"]
        assert start["cells_filled"] == x["model"]["cells_filled"]
        assert start["train"] == end["train"] == "on"
        assert end["model_read_samples"] > start["model_read_samples"]
    assert bare["model_run"]["end"]["cells_filled"] > bare["model"]["cells_filled"]
    # 8 KiB skips: buffered reads of a third of the one process's file, in 4 KiB
    # requests readahead does not merge; redcap reads whole 128 KiB segments.
    file_bytes = bare["scale"]["data_mib"] << 20
    assert file_bytes // 3 <= bare["disk_read_bytes"] < file_bytes
    # the drive's counters count the run alone: almost all 4 KiB requests
    assert 0.95 * bare["disk_read_bytes"] / 4096 <= bare["disk_stats"]["emu_requests"] \
        <= bare["disk_read_bytes"] / 4096
    assert "redcap_stats" not in bare
    st = rc["redcap_stats"]
    assert st["policy"] == "adaptive+caware"
    assert st["read_misses"] + st["read_hits"] + st["read_bypassed"] > 0
    assert rc["disk_read_bytes"] > 0
    # ... and the drive saw exactly what redcap sent down during the run
    # (docs/redcap.rst's count of the read bios it sent the origin; the
    # file system is read-only: no fill failed or went stale): nothing of
    # the mount's reads (the suite waits for them to end)
    sent = {k: st[k] for k in ("fill_ios", "fill_joined", "read_bypassed", "read_joined",
                               "read_resent", "fill_errors", "fill_stale")}
    assert (st["fill_errors"], st["fill_stale"]) == (0, 0), sent
    assert rc["disk_stats"]["emu_requests"] == \
        st["fill_ios"] - st["fill_joined"] + st["read_bypassed"] - st["read_joined"] + \
        st["read_resent"], (rc["disk_stats"]["emu_requests"], sent)
    # the bound reads the bare run's blocks once, in merged runs
    assert file_bytes // 3 <= bound["bound_unique_bytes"] <= bound["disk_read_bytes"]
    assert 1 <= bound["bound_runs"] <= 8
    # the tables of the guest's own records (the plots are the host's tests':
    # matplotlib under emulation takes two minutes)
    subprocess.run(["/usr/bin/python3", os.path.join(TOP, "tests", "bench", "report.py"),
                    "--no-plots", str(out)], check=True)
    md = (tmp_path / "tiny.md").read_text()
    assert "| 8k-sr | 1 |" in md and "redcap-recommended" in md
    assert ".png" not in md and not list(tmp_path.glob("*.png"))
