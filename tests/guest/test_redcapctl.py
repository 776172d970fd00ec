# SPDX-License-Identifier: GPL-2.0
"""redcapctl on real stacks: every command, every refusal with its exact
message and exit status, nothing left behind after a failure, the JSON
against its schema, and stats --watch in a real terminal (tmux)."""
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time

import jsonschema
import pytest

import dmtest
from dmtest import BLOCK, sh

TOP = os.environ.get("REDCAP_TOP", os.path.realpath(os.path.join(os.path.dirname(__file__),
                                                                  "..", "..")))
RCTL = os.path.join(TOP, "build", "userspace", "redcapctl")
TRY = "Try 'redcapctl --help' for more information.\n"
with open(os.path.join(TOP, "docs", "redcapctl.schema.json")) as _f:
    SCHEMA = json.load(_f)


def rctl(*args):
    return subprocess.run([RCTL, *args], capture_output=True, text=True)


def ok(*args):
    r = rctl(*args)
    assert r.returncode == 0, f"redcapctl {' '.join(args)}: exit {r.returncode}: {r.stderr}"
    return r


def valid(doc):
    jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)
    return doc


def dm_devices():
    out = sh("dmsetup", "info", "-c", "--noheadings", "-o", "name", check=False).stdout
    return set(out.split()) - {"No", "devices", "found"}


def table(name):
    return sh("dmsetup", "table", name).stdout.strip()


def read_ahead_kb(dev):
    """The kernel's read-ahead of @dev, from sysfs."""
    with open(f"/sys/block/{os.path.basename(os.path.realpath(dev))}/queue/read_ahead_kb") as f:
        return int(f.read())


def cache_stats(name):
    """The cache's stats message, as text."""
    return dict(line.split("=", 1) for line in
                sh("dmsetup", "message", name, "0", "stats").stdout.split())


def uuid(name):
    return sh("dmsetup", "info", "-c", "--noheadings", "-o", "uuid", name).stdout.strip()


def human_size(nbytes):
    """redcapctl's fmt_size()."""
    v, units = float(nbytes), ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB"]
    u = 0
    while v >= 1024 and u + 1 < len(units):
        v /= 1024
        u += 1
    return f"{v:.0f} {units[u]}" if u == 0 or v == int(v) else f"{v:.1f} {units[u]}"


@pytest.fixture
def cleanup():
    """Device names to take away after the test, whatever happened."""
    names = []
    yield names
    for n in names:
        for dev in (n, n + "-vd"):
            if dev in dm_devices():
                sh("dmsetup", "remove", "--retry", dev, check=False)


@pytest.fixture(scope="module")
def udev_rule():
    """The /dev/redcap/NAME rule of udev/, installed for this module."""
    dst = "/run/udev/rules.d/56-dm-redcap.rules"
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    shutil.copy(os.path.join(TOP, "udev", "56-dm-redcap.rules"), dst)
    sh("udevadm", "control", "--reload")
    yield
    os.unlink(dst)
    sh("udevadm", "control", "--reload")


@contextlib.contextmanager
def udev_rule_for_test(name, text):
    """udev rule @text in /run/udev/rules.d/@name for the with block."""
    rule = f"/run/udev/rules.d/{name}"
    os.makedirs(os.path.dirname(rule), exist_ok=True)
    with open(rule, "w") as f:
        f.write(text)
    sh("udevadm", "control", "--reload")
    try:
        yield
    finally:
        os.unlink(rule)
        sh("udevadm", "control", "--reload")


def read_stamped(dev, blocks, seed):
    dmtest.read_pattern(dev, blocks, seed)


# --- create, status, list, remove -------------------------------------------

def test_create_status_list_and_remove_one_stack(dmname, loop64, cleanup, udev_rule):
    name = dmname()
    cleanup.append(name)
    mapper = f"/dev/mapper/{name}"
    r = ok("create", name, loop64, "--ram", "8M", "--segment", "64K", "--policy", "always",
           "--write-policy", "update", "--readahead", "256K")
    assert r.stdout == (f"{name}: {mapper} over {loop64} (model layer measuring it), "
                        f"cache 8 MiB (128 x 64 KiB), policy always, read-ahead 256 KiB\n")
    assert read_ahead_kb(mapper) == 256
    assert r.stderr == ""
    sh("udevadm", "settle")

    # The tables, the DM UUIDs, the model layer hidden from udev's other rules.
    vd = dmtest.dm_major_minor(f"/dev/mapper/{name}-vd")
    assert table(f"{name}-vd") == f"0 131072 vdisk {dmtest.dm_major_minor(loop64)}"
    # What the admin chose, and nothing else: the estimator vdisk over the
    # model layer is the target's own choice.
    assert table(name) == f"0 131072 redcap {vd} 128 128 4 policy always write_policy update"
    assert uuid(name) == f"REDCAP-{name}" and uuid(f"{name}-vd") == f"REDCAP-{name}-vd"
    props = sh("udevadm", "info", "--query=property", f"/dev/mapper/{name}-vd").stdout.split()
    for flag in ("SUBSYSTEM", "DISK", "OTHER"):
        assert f"DM_UDEV_DISABLE_{flag}_RULES_FLAG=1" in props
    assert os.path.realpath(f"/dev/redcap/{name}") == os.path.realpath(mapper)
    assert not os.path.exists(f"/dev/redcap/{name}-vd")

    # LBA-stamped data through the stack; then exact counters on a cold cache.
    dmtest.write_stamped(mapper, 0, 64, seed=7)
    ok("drop-cache", name)
    ok("reset-stats", name)
    # one 64 KiB segment: 1 miss, 15 hits, and no fill ahead of the stream
    # to count (it would go on after the last read)
    ok("set", name, "prefetch=0")
    read_stamped(mapper, range(16), 7)
    st = valid(json.loads(ok("status", name, "--json").stdout))
    assert {k: st[k] for k in ("name", "device", "origin", "size_bytes", "read_ahead_bytes",
                               "segment_bytes",
                               "segments", "ram_bytes", "segments_valid", "ram_used_bytes",
                               "policy", "write_policy", "estimator", "state", "reads",
                               "read_hits", "read_hits_waited", "read_misses", "read_bypassed",
                               "fill_ios", "fill_bytes", "fill_errors", "hit_ratio")} == {
        "name": name, "device": mapper, "origin": loop64, "size_bytes": 64 << 20,
        "read_ahead_bytes": 256 << 10, "segment_bytes": 65536, "segments": 128,
        "ram_bytes": 8 << 20, "segments_valid": 1,
        "ram_used_bytes": 65536, "policy": "always", "write_policy": "update",
        "estimator": "vdisk", "state": "active", "reads": 16, "read_hits": 15,
        "read_hits_waited": 0, "read_misses": 1, "read_bypassed": 0, "fill_ios": 1,
        "fill_bytes": 65536, "fill_errors": 0, "hit_ratio": 15 / 16}
    assert st["state_reason"] == "policy always: every read miss fills the cache"
    assert st["model"]["device"] == f"{name}-vd" and st["model"]["mode"] == "measure"
    # the shadows of 8 MiB: 32 to 128 KiB (sampled one region in 32,
    # so larger segments would not fill half the RAM), 1 MiB region 0
    # sampled, the 16 reads after drop-cache shadowed at each
    assert [(z["segment_bytes"], z["sampled_1_in"], z["reads"])
            for z in st["shadows"]["sizes"]] == [(32768 << i, 32, 16) for i in range(3)]

    human = ok("status", name).stdout.splitlines()
    assert human[0] == f"{name}: {mapper}"
    assert human[1] == f"  origin:     {loop64}"
    assert human[2] == "  read-ahead: 256 KiB"
    assert human[3] == ("  cache:      8 MiB = 128 x 64 KiB; 1 segments hold data (64 KiB), "
                        "0 filling")
    assert human[5] == "  state:      active: policy always: every read miss fills the cache"
    assert human[6] == ("  reads:      16: 15 hits, 0 hits after a wait, 1 misses, 0 bypassed, "
                        "0 resent")
    assert human[8] == "  hit ratio:  93.8 %"
    # the eviction history: one request to the disk, nothing evicted
    assert st["more_ram"] == {"read_requests": 1, "x2": {"fills_saved": 0, "change": 0},
                              "x4": {"fills_saved": 0, "change": 0}}
    advice = [x for x in human if x.startswith("  advice:     ")]
    assert len(advice) == 1 and re.fullmatch(
        r"  advice:     the reads' disk time with twice the RAM \+0\.0 %, four times \+0\.0 % "
        r"\(the fills they would not make\); with half the RAM [+-]\d+\.\d % \(an LRU's\)",
        advice[0]), human
    assert st["ram_held_bytes"] == 8 << 20
    assert not [x for x in human if x.startswith("  memory:")], human

    # inactive, its memory goes back when the kernel asks (redcap(4) Memory)
    ok("set", name, "policy=off")
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("2\n")
    assert valid(json.loads(ok("status", name, "--json").stdout))["ram_held_bytes"] == 0
    human = ok("status", name).stdout.splitlines()
    assert human[4] == "  memory:     0 bytes held, 8 MiB given back to the kernel while inactive"
    ok("set", name, "policy=always")

    lst = valid(json.loads(ok("list", "--json").stdout))
    assert [s["name"] for s in lst["stacks"]] == [name]
    lines = ok("list").stdout.splitlines()
    assert lines[0].split() == ["NAME", "ORIGIN", "CACHE", "SEGMENT", "POLICY", "STATE", "HITS"]
    assert lines[1].split() == [name, loop64, "8", "MiB", "64", "KiB", "always", "active",
                                "93.8%"]

    r = ok("remove", name)
    assert r.stdout == f"{name}: removed\n"
    sh("udevadm", "settle")
    assert not {name, f"{name}-vd"} & dm_devices()
    assert not os.path.exists(f"/dev/redcap/{name}")
    assert ok("list").stdout == ""
    assert valid(json.loads(ok("list", "--json").stdout)) == {"schema": 2, "stacks": []}


def test_create_defaults_and_no_model(dmname, loop64, cleanup):
    name = dmname()
    cleanup.append(name)
    r = ok("create", name, loop64, "--no-model")
    assert r.stdout == (f"{name}: /dev/mapper/{name} over {loop64}, cache 64 MiB "
                        f"(512 x 128 KiB), policy adaptive+caware, read-ahead 1 MiB\n")
    # auto: 1 MiB over an origin reading ahead less (the loop device: 128 KiB) ...
    assert (read_ahead_kb(loop64), read_ahead_kb(f"/dev/mapper/{name}")) == (128, 1024)
    # and the table says nothing but the geometry: redcapctl's defaults are
    # the target's (policy adaptive+caware, estimator spk without a model,
    # streams read ahead up to 8 segments)
    assert table(name) == f"0 131072 redcap {dmtest.dm_major_minor(loop64)} 256 512"
    st = cache_stats(name)
    assert (st["policy"], st["estimator"], st["prefetch"]) == ("adaptive+caware", "spk", "8")
    assert f"{name}-vd" not in dm_devices()
    st = valid(json.loads(ok("status", name, "--json").stdout))
    assert st["model"] is None and st["estimator"] == "spk" and "shadows" not in st
    # no model: no shadows, and the advice for more RAM all the same (udev's
    # probe read what it reads, evicting nothing)
    assert ok("status", name).stdout.splitlines()[-2:] == [
        "  model:      none (created with --no-model)",
        "  advice:     the reads' disk time with twice the RAM +0.0 %, four times +0.0 % "
        "(the fills they would not make)"]
    r = rctl("set", name, "estimator=vdisk")
    assert (r.returncode, r.stderr) == (1, f"redcapctl: {name}: estimator=vdisk needs the model "
                                           "layer, which this stack has not (created with "
                                           "--no-model)\n")
    r = rctl("model", "save", name, "/tmp/redcapctl-none.vdisk")
    assert (r.returncode, r.stderr) == (1, f"redcapctl: {name}: no model layer (created with "
                                           "--no-model)\n")
    assert ok("remove", name).stdout == f"{name}: removed\n"
    assert name not in dm_devices()
    # ... and the origin's own when that is larger.
    sh("blockdev", "--setra", "4096", loop64)
    try:
        ok("create", name, loop64, "--no-model", "--ram", "4M")
        assert read_ahead_kb(f"/dev/mapper/{name}") == 2048
    finally:
        sh("blockdev", "--setra", "256", loop64)
    assert ok("remove", name).stdout == f"{name}: removed\n"


def meminfo_total():
    with open("/proc/meminfo") as f:
        return int(f.readline().split()[1]) * 1024


def test_create_refuses_bad_input_and_leaves_nothing(dmname, loop64, cleanup, tmp_path):
    name = dmname()
    cleanup.append(name)
    p = f"redcapctl: {name}: "
    plain = tmp_path / "plain"
    plain.write_text("x")
    cases = [
        # exit 1: well-formed, refused
        (["--ram", "100K"], 1, p + "cache size 100K is not a multiple of the segment size "
                                   "(128 KiB)\n"),
        (["--ram", "64G"], 1, p + "cache size 64G is more than half of this machine's RAM "
                                  f"({human_size(meminfo_total())})\n"),
        (["--segment", "3K"], 1, p + "segment size 3072 bytes: the target takes a power of two "
                                     "from 4K to 1M\n"),
        (["--segment", "2M", "--ram", "8M"], 1, p + "segment size 2097152 bytes: the target "
                                                    "takes a power of two from 4K to 1M\n"),
        (["--segment", "4K", "--ram", "128G"], 1,
         p + "cache size 128G is more than 16777216 segments of 4 KiB\n"),
        # exit 2: not even well-formed
        (["--ram", "12Q"], 2, "redcapctl: create: --ram '12Q' is not a size (64M, 1G)\n" + TRY),
        (["--policy", "fast"], 2, "redcapctl: create: --policy 'fast': one of always, off, "
                                  "adaptive, caware, adaptive+caware\n" + TRY),
        (["--write-policy", "later"], 2, "redcapctl: create: --write-policy 'later': one of "
                                         "invalidate, update, back, selective\n" + TRY),
        (["--no-model", "--estimator", "vdisk"], 2, "redcapctl: create: --estimator vdisk "
                                                    "needs the model that --no-model leaves "
                                                    "out\n" + TRY),
        (["--frob"], 2, "redcapctl: create: unknown option '--frob'\n" + TRY),
    ]
    for opts, status, err in cases:
        r = rctl("create", name, loop64, *opts)
        assert (r.returncode, r.stderr, r.stdout) == (status, err, ""), opts
        assert not {name, f"{name}-vd"} & dm_devices(), opts

    origins = [
        ("/dev/redcap-no-such-disk", 1, p + "origin /dev/redcap-no-such-disk: not found\n"),
        ("PARTUUID=0badc0de-0000-4000-8000-000000000001", 1,
         p + "origin PARTUUID=0badc0de-0000-4000-8000-000000000001: not found\n"),
        ("PARTLABEL=redcap-no-such-label", 1, p + "origin PARTLABEL=redcap-no-such-label: "
                                                  "not found\n"),
        (str(plain), 1, p + f"origin {plain}: not a block device\n"),
        ("UUID=1234", 2, "redcapctl: create: origin 'UUID=1234' names a filesystem, which the "
                         "redcap device shows too: use a /dev path, PARTUUID= or PARTLABEL=\n"
         + TRY),
    ]
    for origin, status, err in origins:
        r = rctl("create", name, origin)
        assert (r.returncode, r.stderr) == (status, err), origin
        assert not {name, f"{name}-vd"} & dm_devices(), origin

    for bad, why in [("bad/name", "name 'bad/name': use letters, digits and + _ . - "
                                  "(not first: - or .)"),
                     ("disk-vd", "name 'disk-vd': names ending in -vd are the model layers'"),
                     (".hidden", "name '.hidden': use letters, digits and + _ . - "
                                 "(not first: - or .)")]:
        r = rctl("create", bad, loop64)
        assert (r.returncode, r.stderr) == (2, f"redcapctl: create: {why}\n" + TRY), bad

    # The origin in use: mounted, or held by another device-mapper device.
    sh("mkfs.ext4", "-q", loop64)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    sh("mount", loop64, str(mnt))
    try:
        r = rctl("create", name, loop64)
        assert (r.returncode, r.stderr) == (1, p + f"origin {loop64}: in use: mounted on "
                                                   f"{mnt}\n")
    finally:
        sh("umount", str(mnt))
    holder = dmname()
    with dmtest.Dm(holder, f"0 {dmtest.dev_sectors(loop64)} linear {loop64} 0"):
        r = rctl("create", name, loop64)
        assert (r.returncode, r.stderr) == (1, p + f"origin {loop64}: in use: held by "
                                                   f"device-mapper device '{holder}'\n")
        # A name taken by a device that is not ours: refused, and left alone.
        r = rctl("create", holder, "/dev/redcap-no-such-disk")
        assert (r.returncode, r.stderr) == (1, f"redcapctl: {holder}: name taken: "
                                               f"/dev/mapper/{holder} exists\n")
        for cmd in (["status", holder], ["remove", holder], ["drop-cache", holder]):
            r = rctl(*cmd)
            assert (r.returncode, r.stderr) == (
                1, f"redcapctl: {holder}: /dev/mapper/{holder} is not a redcap stack (its DM "
                   f"UUID is '', not 'REDCAP-{holder}')\n"), cmd
        assert table(holder).split()[2] == "linear"
    assert not {name, f"{name}-vd"} & dm_devices()

    for cmd in (["status", name], ["remove", name], ["stats", name], ["set", name, "window=9"],
                ["reset-stats", name]):
        r = rctl(*cmd)
        assert (r.returncode, r.stderr) == (1, p + "no such redcap stack\n"), cmd


def test_failed_create_removes_the_model_layer_it_made(dmname, loop64, cleanup):
    """Another tool takes NAME while the model layer is being made (a udev
    rule here, deterministic): the cache cannot be created, and the model
    layer goes too."""
    name = dmname()
    cleanup.append(name)
    with udev_rule_for_test(
            "90-redcap-test-squat.rules",
            f'ACTION=="change", SUBSYSTEM=="block", ENV{{DM_NAME}}=="{name}-vd", '
            f'RUN+="/sbin/dmsetup create {name} --noudevsync --table \'0 8 zero\'"\n'):
        r = rctl("create", name, loop64)
    assert (r.returncode, r.stderr) == (1, f"redcapctl: {name}: cannot create the cache: "
                                           f"device-mapper: create ioctl on {name} "
                                           f"REDCAP-{name} failed: Device or resource busy\n")
    assert f"{name}-vd" not in dm_devices()
    assert table(name) == "0 8 zero"            # the other tool's device, untouched


# --- remove --keep-device, set, drop-cache, reset-stats --------------------

def test_remove_keep_device_leaves_a_mounted_filesystem_mounted(dmname, loop64, cleanup,
                                                                 tmp_path):
    name = dmname()
    cleanup.append(name)
    mapper = f"/dev/mapper/{name}"
    ok("create", name, loop64, "--ram", "4M", "--policy", "always", "--readahead", "512K")
    sh("mkfs.ext4", "-q", mapper)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    sh("mount", mapper, str(mnt))
    try:
        data = os.urandom(1 << 20)
        (mnt / "f").write_bytes(data)
        os.sync()
        r = rctl("remove", name)
        assert (r.returncode, r.stderr) == (1, f"redcapctl: {name}: in use: mounted on {mnt}\n")
        assert table(name).split()[2] == "redcap"
        r = ok("remove", name, "--keep-device")
        assert r.stdout == (f"{name}: {mapper} is now a linear device over {loop64}, "
                            "without cache\n")
        assert table(name) == f"0 131072 linear {dmtest.dm_major_minor(loop64)} 0"
        assert read_ahead_kb(mapper) == 512        # the new table keeps it
        assert f"{name}-vd" not in dm_devices()
        dmtest.drop_caches()
        assert (mnt / "f").read_bytes() == data
        (mnt / "g").write_bytes(data[::-1])
        os.sync()

        st = valid(json.loads(ok("status", name, "--json").stdout))
        assert (st["state"], st["origin"]) == ("linear", loop64)
        assert ok("list").stdout.splitlines()[1].split() == [name, loop64, "-", "-", "-",
                                                             "linear", "-"]
        for cmd in (["set", name, "policy=off"], ["drop-cache", name], ["reset-stats", name]):
            r = rctl(*cmd)
            assert (r.returncode, r.stderr) == (
                1, f"redcapctl: {name}: a linear device without cache (once the redcap module "
                   "loads, redcapctl upgrade swaps the cache in)\n"), cmd
    finally:
        sh("umount", str(mnt))
    assert ok("remove", name).stdout == f"{name}: removed\n"
    assert name not in dm_devices()
    sh("mount", "-o", "ro", loop64, str(mnt))
    try:
        assert (mnt / "g").read_bytes() == data[::-1]
    finally:
        sh("umount", str(mnt))


def test_set_drop_cache_and_reset_stats(dmname, loop64, cleanup):
    name = dmname()
    cleanup.append(name)
    mapper = f"/dev/mapper/{name}"
    dev = dmtest.Dm.__new__(dmtest.Dm)
    dev.name, dev.path = name, mapper
    ok("create", name, loop64, "--ram", "4M", "--policy", "always")
    r = ok("set", name, "policy=off", "write_policy=update", "window=256", "margin=5",
           "prefetch=3", "decay_ms=500", "estimator=vdisk")
    assert (r.stdout, r.stderr) == ("", "")
    assert table(name).endswith("4 policy off write_policy update")
    st = dev.stats()
    assert (st["window"], st["margin"], st["prefetch"], st["decay_ms"]) == (256, 5, 3, 500)

    # Every pair is checked before any is sent: nothing changes.
    for args, err in [
        (["policy=always", "window=0"], "set: window=0: window must be 1..1000000"),
        (["policy=always", "colour=red"], "set: unknown key 'colour' (policy, write_policy, "
                                          "estimator, window, margin, decay_ms, "
                                          "budget_share, budget_cap_ms, prefetch, hdc, "
                                          "hot_period, dirty)"),
        (["policy=always", "policy=fast"], "set: policy=fast: unknown policy 'fast'"),
        (["policy=always", "margin"], "set: 'margin' is not KEY=VALUE"),
        (["policy=always", "margin="], "set: 'margin=' is not KEY=VALUE"),
    ]:
        r = rctl("set", name, *args)
        assert (r.returncode, r.stderr) == (2, f"redcapctl: {err}\n" + TRY), args
    assert table(name).endswith("4 policy off write_policy update")
    r = rctl("set", name)
    assert (r.returncode, r.stderr) == (2, "redcapctl: set: missing operand\n" + TRY)

    ok("set", name, "policy=always", "estimator=spk")
    dmtest.write_stamped(mapper, 0, 256, seed=3)
    sh("udevadm", "settle")
    ok("drop-cache", name)
    read_stamped(mapper, range(0, 256, 32), 3)  # 8 segments of 128 KiB
    assert dev.stats()["segments_valid"] == 8
    assert ok("drop-cache", name).stdout == ""
    assert dev.stats()["segments_valid"] == 0
    read_stamped(mapper, range(0, 256, 32), 3)
    assert ok("reset-stats", name).stdout == ""
    st = dev.stats()
    assert (st["reads"], st["read_misses"], st["fill_ios"], st["segments_valid"]) == (0, 0, 0, 8)
    ok("remove", name)


# --- stats ----------------------------------------------------------------

class Reader:
    """Reads the device over and over (O_DIRECT) until stopped."""

    def __init__(self, dev, blocks):
        self.dev, self.blocks, self.stop = dev, blocks, threading.Event()
        self.thread = threading.Thread(target=self.run)

    def run(self):
        fd = os.open(self.dev, os.O_RDONLY | os.O_DIRECT)
        buf = dmtest.aligned(BLOCK)
        try:
            while not self.stop.is_set():
                for b in range(self.blocks):
                    os.preadv(fd, [buf], b * BLOCK)
        finally:
            os.close(fd)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


def test_stats_rates_and_json_lines(dmname, loop64, cleanup):
    name = dmname()
    cleanup.append(name)
    ok("create", name, loop64, "--ram", "4M", "--policy", "always")
    with Reader(f"/dev/mapper/{name}", 64):
        one = valid(json.loads(ok("stats", name, "--json").stdout))
        assert one["name"] == name and one["state"] == "active" and one["policy"] == "always"
        assert one["reads_per_s"] > 0 and one["hits_per_s"] > 0
        lines = ok("stats", name).stdout.splitlines()
        assert re.fullmatch(rf"{name} at \d\d:\d\d:\d\d: active, policy always, \d+ of 32 "
                            "segments hold data", lines[0])
        assert [ln.split()[0] for ln in lines[1:]] == ["reads/s", "hits/s", "misses/s",
                                                       "bypassed/s", "fill"]
        assert float(lines[1].split()[1]) > 0

        # --watch --json into a pipe: one object per line, until SIGINT.
        p = subprocess.Popen([RCTL, "stats", name, "--json", "--watch=0.2"],
                             stdout=subprocess.PIPE, text=True)
        docs = [valid(json.loads(p.stdout.readline())) for _ in range(3)]
        p.send_signal(signal.SIGINT)
        p.stdout.read()
        assert p.wait(timeout=30) == 0
    assert docs[2]["reads"] > docs[0]["reads"]
    r = rctl("stats", name, "--watch=0")
    assert (r.returncode, r.stderr) == (2, "redcapctl: stats: --watch=0: seconds from 0.1 to "
                                           "3600\n" + TRY)
    ok("remove", name)


def test_set_write_policy_back_reloads_the_table(dmname, loop64, cleanup):
    """The write cache comes and goes with a table: set reloads it, and
    taking it away writes the cache back first."""
    name = dmname()
    cleanup.append(name)
    mapper = f"/dev/mapper/{name}"
    dmtest.write_stamped(loop64, 0, 64, seed=1)
    ok("create", name, loop64, "--ram", "4M", "--policy", "always")
    r = ok("set", name, "write_policy=back", "dirty=50")
    assert (r.stdout, r.stderr) == (f"{name}: write_policy back: table reloaded\n", "")
    assert table(name).endswith(" write_policy back")
    assert cache_stats(name)["write_cache"] == "on"
    assert cache_stats(name)["dirty"] == "50"            # the cache, kept across the load
    dmtest.write_stamped(mapper, 8, 8, seed=2, direct=True)
    assert int(cache_stats(name)["write_cached"]) >= 1
    doc = valid(json.loads(ok("status", name, "--json").stdout))
    assert doc["write_policy"] == "back" and doc["write_cache"]["state"] == "on"
    assert doc["write_cache"]["writes_cached"] >= 1 and doc["write_cache"]["flushes"] >= 1
    assert "  write cache: on; " in ok("status", name).stdout
    r = ok("set", name, "write_policy=selective")         # within the write cache: a message
    assert (r.stdout, r.stderr) == ("", "")
    assert table(name).endswith(" write_policy selective")
    r = ok("set", name, "write_policy=invalidate")
    assert r.stdout == (f"{name}: write_policy invalidate: table reloaded "
                        "(the cache was written back first)\n")
    assert cache_stats(name)["write_cache"] == "none"
    assert cache_stats(name)["dirty_segments"] == "0"
    read_stamped(loop64, range(8, 16), seed=2)
    ok("remove", name)


def test_remove_refuses_to_lose_what_the_origin_refused(dmname, loop64, cleanup, fault):
    """A write cache whose origin refuses the write-back: remove, remove
    --keep-device and stop leave the stack up, its data in RAM; once the
    origin takes writes, remove writes it back and goes."""
    name, flk = dmname(), dmname()
    cleanup.extend([name, flk])
    mapper = f"/dev/mapper/{name}"
    n = dmtest.dev_sectors(loop64)
    dmtest.write_stamped(loop64, 0, 1024, seed=1)
    fault("fi_wb_hold", 1)                                  # no write-back before the test's
    with dmtest.Dm(flk, f"0 {n} flakey {loop64} 0 3600 0") as mid:
        ok("create", name, mid.path, "--ram", "4M", "--policy", "always",
           "--write-policy", "back", "--no-model")
        fd = os.open(mapper, os.O_WRONLY | os.O_DIRECT)    # no fsync: they stay dirty
        try:
            for first in (8, 512):
                buf = dmtest.aligned(8 * BLOCK)
                for i in range(8):
                    buf[i * BLOCK:(i + 1) * BLOCK] = dmtest.stamp(first + i, 2)
                os.pwritev(fd, [buf], first * BLOCK)
        finally:
            os.close(fd)
        assert cache_stats(name)["dirty_segments"] == "2"
        mid.reload(f"0 {n} flakey {loop64} 0 0 1 1 error_writes")
        mid.suspend()
        mid.resume()
        why = (f"redcapctl: {name}: the origin refused to take 2 dirty segments back "
               "(write-back error -5): the stack stays, its data in RAM; "
               "dmsetup remove would lose them\n")
        for args in (["remove", name], ["remove", name, "--keep-device"]):
            r = rctl(*args)
            assert (r.returncode, r.stdout, r.stderr) == (1, "", why), args
            assert table(name).endswith(" write_policy back")
            assert cache_stats(name)["dirty_segments"] == "2"
            read_stamped(mapper, range(8, 16), seed=2)      # resumed, the data served
        read_stamped(loop64, range(8, 16), seed=1)          # and not on the disk
        sh("dmsetup", "suspend", name)                      # the admin's suspend stays
        r = rctl("remove", name)
        assert (r.returncode, r.stdout, r.stderr) == (1, "", why)
        assert "State:             SUSPENDED" in sh("dmsetup", "info", name).stdout
        sh("dmsetup", "resume", name)
        mid.reload(f"0 {n} flakey {loop64} 0 3600 0")
        mid.suspend()
        mid.resume()
        assert ok("remove", name).stdout == f"{name}: removed\n"
        read_stamped(loop64, range(8, 16), seed=2)
        read_stamped(loop64, range(512, 520), seed=2)


def tmux(*args):
    return sh("tmux", "-L", "redcap-test", *args)


def test_stats_watch_redraws_in_a_terminal(dmname, loop64, cleanup, tmp_path):
    name = dmname()
    cleanup.append(name)
    ok("create", name, loop64, "--ram", "4M", "--policy", "always")

    def screen():
        return tmux("capture-pane", "-p", "-t", "w").stdout

    def total(text):
        m = re.search(r"\((\d+) reads in all\)", text)
        return int(m.group(1)) if m else None

    status = tmp_path / "status"
    with Reader(f"/dev/mapper/{name}", 64):
        # The shell catches SIGINT (so it outlives ^C and records the status);
        # redcapctl, which the shell starts with SIGINT at its default, sets
        # its own handler.
        tmux("new-session", "-d", "-s", "w", "-x", "150", "-y", "20",
             f"trap : INT; {RCTL} stats {name} --watch=0.3; echo $? > {status}; sleep 60")
        try:
            seen = []
            deadline = time.monotonic() + 60
            while len(set(seen)) < 2 and time.monotonic() < deadline:
                t = total(screen())
                if t is not None:
                    seen.append(t)
                time.sleep(0.5)
            assert len(set(seen)) >= 2, f"the numbers did not move: {seen}"
            # a whole view: redcapctl writes each in one write, which tmux
            # may still show in two steps (a make check of df27905 read a
            # view cut after its header)
            first = screen()
            while not re.search(r"^ +\(the last \d+(\.\d+)? s\)$", first, re.M) and \
                    time.monotonic() < deadline + 30:
                time.sleep(0.1)
                first = screen()
            # Redrawn in place: one view on the screen, at the top.
            assert first.count("reads/s") == 1
            assert first.splitlines()[0].startswith(f"{name} at ")
            assert "(every 0.3 s; Ctrl-C stops)" in first
            # the history: a sparkline a sample (eighth blocks, or ASCII
            # without UTF-8), as many as the samples taken, at most 60
            spark = next(x for x in first.splitlines() if x.startswith("  hit ratio   "))
            marks = [c for c in spark[14:74] if c in "\u2581\u2582\u2583\u2584\u2585"
                     "\u2586\u2587\u2588_.-~=+*#"]
            assert len(marks) >= 2 and re.search(r"  \d+\.\d to \d+\.\d %$", spark), spark
            assert re.search(r"^  disk saved  .*  -?\d+\.\d\d s in all, at most -?\d+\.\d\d s a "
                             r"second$", first, re.M), first
            assert re.search(r"^ +\(the last \d+(\.\d+)? s\)$", first, re.M), first
            tmux("send-keys", "-t", "w", "C-c")
            deadline = time.monotonic() + 30
            while not (status.exists() and status.read_text()) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert status.read_text() == "0\n"
        finally:
            tmux("kill-server")
    ok("remove", name)


# --- start, stop: the table file ------------------------------------------

def test_start_and_stop_follow_the_table_file(dmname, loop64, loop128, cleanup, tmp_path):
    a, b, c, d = (dmname() for _ in range(4))
    cleanup.extend([a, b, c, d])
    tab = tmp_path / "redcaptab"
    tab.write_text(f"# name origin size options\n"
                   f"{a} {loop64} 4M segment=64K,policy=always\n"
                   f"{b} /dev/disk/by-id/redcap-no-such-disk 4M nofail\n"
                   f"{c} PARTLABEL=redcap-no-such-label 4M\n"
                   f"{d} {loop128} 8M noauto,write_policy=update,hdc=50,hot_period=60\n"
                   f"bad line here\n")
    bad_line = (f"redcapctl: {tab}: line 6: origin 'line' is not a /dev path, PARTUUID= or "
                "PARTLABEL=\n")
    r = rctl("start", "--all", "--tab", str(tab))
    assert r.returncode == 1
    assert r.stdout == (f"{a}: /dev/mapper/{a} over {loop64} (model layer measuring it), "
                        "cache 4 MiB (64 x 64 KiB), policy always, read-ahead 1 MiB\n")
    assert r.stderr == (bad_line +
                        f"redcapctl: warning: {b}: origin /dev/disk/by-id/redcap-no-such-disk: "
                        "not found; skipped (nofail)\n"
                        f"redcapctl: {c}: origin PARTLABEL=redcap-no-such-label: not found\n")
    assert table(a).endswith(" 128 64 2 policy always")
    assert not {b, c, d} & dm_devices()

    # Started again: a no-op for the running one.
    r = rctl("start", "--all", "--tab", str(tab))
    assert r.returncode == 1 and r.stdout == f"{a}: already running\n"
    # By name (a boot unit), another line's mistake is a warning, not a failure.
    r = rctl("start", a, "--tab", str(tab))
    assert (r.returncode, r.stdout, r.stderr) == (
        0, f"{a}: already running\n", bad_line.replace("redcapctl: ", "redcapctl: warning: ", 1))
    tab.write_text(tab.read_text().replace("bad line here\n", ""))
    r = rctl("start", a, "--tab", str(tab))
    assert (r.returncode, r.stdout, r.stderr) == (0, f"{a}: already running\n", "")
    # noauto: not with --all, but by name; the policy not given is the target's default.
    r = rctl("start", d, "--tab", str(tab))
    assert (r.returncode, r.stderr) == (0, "")
    assert table(d).endswith(" 256 64 2 write_policy update")
    st = cache_stats(d)
    assert (st["policy"], st["hdc"], st["hot_period"], st["prefetch"]) == \
        ("adaptive+caware", "50", "60", "8"), st      # the tunables given, the defaults else
    r = rctl("start", "nobody", "--tab", str(tab))
    assert (r.returncode, r.stderr) == (1, f"redcapctl: nobody: no entry in {tab}\n")
    # No table: nothing to start or stop at boot; by name, the entry is missing.
    for cmd in ("start", "stop"):
        r = rctl(cmd, "--all", "--tab", str(tmp_path / "none"))
        assert (r.returncode, r.stdout, r.stderr) == (0, "", ""), cmd
    r = rctl("start", a, "--tab", str(tmp_path / "none"))
    assert (r.returncode, r.stderr) == (1, f"redcapctl: {tmp_path / 'none'}: No such file or "
                                           "directory\n")

    r = rctl("stop", "--all", "--tab", str(tab))
    assert (r.returncode, r.stdout, r.stderr) == (0, f"{a}: removed\n{d}: removed\n", "")
    assert not {a, d, f"{a}-vd", f"{d}-vd"} & dm_devices()
    r = rctl("stop", a)
    assert (r.returncode, r.stdout) == (0, f"{a}: not running\n")
    r = rctl("start")
    assert (r.returncode, r.stderr) == (2, "redcapctl: start: missing operand\n" + TRY)


# --- model, check, a missing module ---------------------------------------

def test_model_save_load_and_train(dmname, loop64, cleanup, tmp_path):
    name = dmname()
    cleanup.append(name)
    ok("create", name, loop64, "--ram", "4M")
    r = ok("model", "train", name, "--time", "1", "--max-kib", "16")
    model = valid(json.loads(ok("status", name, "--json").stdout))["model"]
    cells = model["cells_filled"]
    assert cells > 0
    # a loop device's file answers every read alike: no drive cache
    assert model["drive_cache"] == {"priced": None, "learnt": None}
    assert "  drive cache: priced: none; learnt: none\n" in ok("status", name).stdout
    f = tmp_path / "m.vdisk"
    assert ok("model", "save", name, str(f)).stdout == f"{name}: model saved to {f}\n"
    assert f.read_text().startswith("vdisk-tables 5 ")
    sh("dmsetup", "message", f"{name}-vd", "0", "reset")
    assert valid(json.loads(ok("status", name, "--json").stdout))["model"]["cells_filled"] == 0
    assert ok("model", "load", name, str(f)).stdout == f"{name}: model loaded from {f}\n"
    assert valid(json.loads(ok("status", name, "--json").stdout))["model"]["cells_filled"] == cells
    r = ok("model", "load", name, str(tmp_path / "none.vdisk"), "--if-present")
    assert r.stdout == (f"{name}: no saved model in {tmp_path / 'none.vdisk'}: the model "
                        "learns from nothing\n")
    r = rctl("model", "load", name, str(tmp_path / "none.vdisk"))
    assert r.returncode == 1 and "No such file or directory" in r.stderr
    r = rctl("model", "frob", name)
    assert (r.returncode, r.stderr) == (2, "redcapctl: model: unknown verb 'frob' (save, load, "
                                           "train)\n" + TRY)
    ok("remove", name)


def hot_answer(name, *words):
    """An answer of the cache's (chosen, prefill) as a dict of its lines."""
    out = sh("dmsetup", "message", name, "0", *words).stdout
    return dict(line.split("=", 1) for line in out.splitlines())


def test_hot_set_survives_a_restart(dmname, loop64, cleanup, tmp_path):
    """hot save writes HDC's chosen set with the disk's identity; after the
    stack is removed and created again, hot load adds it to the chosen set
    and the cache fills it while the disk is idle: the restarted stack
    serves those segments from RAM at once.  Another disk's file is
    refused; another segment size is converted; hdc 0 loads nothing."""
    name = dmname()
    cleanup.append(name)
    seed = 4750
    dmtest.write_stamped(loop64, 0, (64 << 20) // BLOCK, seed)
    dev = f"/dev/mapper/{name}"
    f = tmp_path / "h.hot"
    ok("create", name, loop64, "--ram", "4M")       # 32 segments: hdc 25 pins 8
    assert hot_answer(name, "chosen") == {"chosen": "0", "gen": "0", "from": "0", "segments": ""}
    assert hot_answer(name, "prefill", "300", "100", "200", "100") == {"chosen": "3",
                                                                       "added": "3"}
    assert ok("hot", "save", name, str(f)).stdout == \
        f"{name}: hot set of 3 segments saved to {f}\n"
    head, *segs = f.read_text().splitlines()
    assert re.fullmatch(r"redcap-hot 1 segment=256 capacity=131072 id=loop:\S+", head), head
    assert segs == ["100", "200", "300"]
    ok("remove", name)

    ok("create", name, loop64, "--ram", "4M")
    sh("dmsetup", "message", name, "0", "reset_stats")
    assert ok("hot", "load", name, str(f)).stdout == (
        f"{name}: hot set loaded from {f}: 3 of its 3 segments chosen, 3 in all (the pinned "
        "share holds 8); filled while the disk is idle\n")
    assert hot_answer(name, "chosen") == {"chosen": "3", "gen": "1", "from": "0",
                                          "segments": "100 200 300"}
    end = time.monotonic() + 30 * dmtest.SLOW
    while (cache_stats(name)["hdc_pinned"], cache_stats(name)["segments_filling"]) != ("3", "0"):
        assert time.monotonic() < end, cache_stats(name)
        time.sleep(0.1)
    dmtest.read_pattern(dev, [s * 32 for s in (100, 200, 300)], seed, bs=128 << 10)
    st = cache_stats(name)
    assert (st["hdc_fills"], st["hdc_hits"], st["read_misses"]) == ("3", "3", "0"), st
    # the same file again: nothing new
    assert ok("hot", "load", name, str(f)).stdout.startswith(
        f"{name}: hot set loaded from {f}: 0 of its 3 segments chosen, 3 in all")

    # another segment size: 64 KiB segment 401 is in 128 KiB segment 200, 803 in 401
    g = tmp_path / "g.hot"
    g.write_text(head.replace("segment=256", "segment=128") + "\n401\n803\n")
    assert ok("hot", "load", name, str(g)).stdout.startswith(
        f"{name}: hot set loaded from {g}: 1 of its 2 segments chosen, 4 in all")
    assert hot_answer(name, "chosen")["segments"] == "100 200 300 401"
    # another disk's, a bad line
    g.write_text(head.replace("id=", "id=x") + "\n5\n")
    r = rctl("hot", "load", name, str(g))
    assert (r.returncode, r.stderr) == (1, f"redcapctl: hot load: {g}: made for disk "
                                           f"'x{head.split('id=')[1]}' (capacity 131072 sectors),"
                                           f" not for '{head.split('id=')[1]}' (capacity 131072 "
                                           "sectors)\n")
    g.write_text(f"{head}\n7\n7\n")
    r = rctl("hot", "load", name, str(g))
    assert (r.returncode, r.stderr) == (1, f"redcapctl: hot load: {g}: line 3: '7' is not a "
                                           "segment after 7 and within 131072 sectors\n")
    assert hot_answer(name, "chosen")["chosen"] == "4"
    r = ok("hot", "load", name, str(tmp_path / "none.hot"), "--if-present")
    assert r.stdout == (f"{name}: no saved hot set in {tmp_path / 'none.hot'}: the cache "
                        "warms from nothing\n")
    ok("set", name, "hdc=0")
    assert ok("hot", "load", name, str(f)).stdout == \
        f"{name}: hdc is 0: the hot set of {f} is not loaded\n"
    r = rctl("hot", "frob", name)
    assert (r.returncode, r.stderr) == (2, "redcapctl: hot: unknown verb 'frob' (save, load)\n"
                                        + TRY)
    ok("remove", name)


def test_check_names_what_stands_in_the_way(dmname, loop64, loop128, tmp_path):
    a, b, c = dmname(), dmname(), dmname()
    sh("mkfs.ext4", "-q", loop128)
    fsuuid = sh("blkid", "-o", "value", "-s", "UUID", loop128).stdout.strip()
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    tab = tmp_path / "redcaptab"
    tab.write_text(f"{a} {loop64} 4M\n{b} {loop128} 4M\n"
                   f"{c} PARTUUID=0badc0de-0000-4000-8000-000000000002 4M nofail\n")
    fstab = tmp_path / "fstab"
    fstab.write_text(f"{loop64} /srv ext4 defaults 0 2\nUUID={fsuuid} /data ext4 defaults 0 2\n"
                     "tmpfs /tmp tmpfs defaults 0 0\n")
    sh("mount", loop128, str(mnt))
    try:
        r = rctl("check", "--tab", str(tab), "--fstab", str(fstab))
    finally:
        sh("umount", str(mnt))
    out = r.stdout.splitlines()
    assert r.returncode == 1
    assert out[0] == "ok       device-mapper: available"
    assert re.fullmatch(r"ok       dm-redcap: loaded \(target redcap \d+\.\d+\.\d+\)", out[1])
    assert re.fullmatch(r"ok       dm-vdisk: loaded \(target vdisk \d+\.\d+\.\d+\)", out[2])
    assert out[3:] == [
        f"ok       {tab}: 3 entries, every line good",
        f"ok       {a}: origin {loop64} is free",
        f"problem  {b}: origin {loop128} ({loop128}): in use: mounted on {mnt}",
        f"warning  {c}: origin PARTUUID=0badc0de-0000-4000-8000-000000000002: not found "
        "(nofail: boot goes on without it)",
        f"problem  {fstab}: '{loop64} /srv' mounts the origin of {a} ({loop64}) directly: "
        f"mount /dev/mapper/{a} instead",
        f"problem  {fstab}: 'UUID={fsuuid} /data' mounts the origin of {b} ({loop128}) "
        f"directly: mount /dev/mapper/{b} instead",
    ]
    assert r.stderr == "redcapctl: check: 3 problems\n"
    tab.write_text(f"{a} {loop64} 4M\n")
    fstab.write_text("tmpfs /tmp tmpfs defaults 0 0\n")
    r = rctl("check", "--tab", str(tab), "--fstab", str(fstab))
    assert (r.returncode, r.stderr) == (0, "")
    assert r.stdout.splitlines()[-1] == f"ok       {fstab}: no line mounts an origin directly"


@pytest.fixture
def modules_unloaded():
    """dm-redcap and dm-vdisk out of the kernel for the test, back after."""
    assert not [n for n in dm_devices()], "devices left by another test"
    top, krel = os.environ["REDCAP_TOP"], os.environ["REDCAP_KREL"]
    sh("rmmod", "dm_redcap")
    sh("rmmod", "dm_vdisk")
    def load():
        for mod, ko in (("dm_vdisk", "dm-vdisk-model/dm-vdisk.ko"),
                        ("dm_redcap", "dm-redcap/dm-redcap.ko")):
            if not os.path.exists(f"/sys/module/{mod}"):
                sh("insmod", f"{top}/build/{krel}/{ko}")
    try:
        yield load
    finally:
        load()


def test_a_missing_module_is_named_on_fail_linear_degrades_and_upgrade_swaps_back(dmname, loop64, cleanup,
                                                               tmp_path, modules_unloaded):
    name, lin = dmname(), dmname()
    cleanup.extend([name, lin])
    rel = os.uname().release
    why = (f"not built for kernel {rel} (no dm-redcap module in /lib/modules/{rel}; install "
           "redcap for this kernel)")
    r = rctl("create", name, loop64)
    assert (r.returncode, r.stderr) == (1, f"redcapctl: {name}: dm-redcap: {why}\n")
    assert not dm_devices()

    tab = tmp_path / "redcaptab"
    tab.write_text(f"{lin} {loop64} 4M on-fail=linear,readahead=2M\n")
    r = rctl("start", lin, "--tab", str(tab))
    assert (r.returncode, r.stdout, r.stderr) == (
        0, f"{lin}: /dev/mapper/{lin} over {loop64}, linear (no cache), read-ahead 2 MiB\n",
        f"redcapctl: warning: {lin}: dm-redcap: {why}: starting it as a linear device, without "
        "cache (on-fail=linear)\n")
    assert table(lin) == f"0 131072 linear {dmtest.dm_major_minor(loop64)} 0"
    assert read_ahead_kb(f"/dev/mapper/{lin}") == 2048
    assert uuid(lin) == f"REDCAP-{lin}"
    assert valid(json.loads(ok("status", lin, "--json").stdout))["state"] == "linear"
    # The boot units' model load and save: nothing to do on a linear stack.
    for verb in ("load", "save"):
        assert ok("model", verb, lin, "--if-present").stdout == \
            f"{lin}: a linear device without cache: no model to {verb}\n"
    r = rctl("model", "save", lin)
    assert (r.returncode, r.stderr) == (1, f"redcapctl: {lin}: no model layer (a linear "
                                           "device without cache)\n")
    r = rctl("check", "--tab", str(tab), "--fstab", "/dev/null")
    assert f"problem  dm-redcap: not built for kernel {rel} (no module in /lib/modules/{rel}): " \
           "install redcap for this kernel" in r.stdout.splitlines()
    assert f"ok       {lin}: running over {loop64}" in r.stdout.splitlines()

    # The module back: upgrade swaps the cache in under the linear device, live.
    mapper = f"/dev/mapper/{lin}"
    dmtest.write_stamped(mapper, 0, 64, seed=5)
    fd = os.open(mapper, os.O_RDONLY)          # held open across the swap
    try:
        modules_unloaded()
        r = ok("upgrade", lin, "--tab", str(tab))
        assert r.stdout == (f"{lin}: /dev/mapper/{lin} over {loop64} (model layer measuring "
                            "it), cache 4 MiB (32 x 128 KiB), policy adaptive+caware, "
                            "read-ahead 2 MiB\n")
        assert read_ahead_kb(mapper) == 2048       # the new table keeps it
        assert table(lin) == f"0 131072 redcap {dmtest.dm_major_minor(mapper + '-vd')} 256 32"
        st = cache_stats(lin)
        assert (st["policy"], st["estimator"], st["prefetch"]) == ("adaptive+caware", "vdisk", "8")
        read_stamped(mapper, range(64), 5)
        st = valid(json.loads(ok("status", lin, "--json").stdout))
        assert st["state"] == "active" and st["reads"] >= 64
    finally:
        os.close(fd)
    assert ok("upgrade", lin, "--tab", str(tab)).stdout == f"{lin}: has its cache already\n"
    assert ok("stop", lin).stdout == f"{lin}: removed\n"
    assert not dm_devices()
    r = rctl("upgrade", lin, "--tab", str(tab))
    assert (r.returncode, r.stderr) == (1, f"redcapctl: {lin}: not running (redcapctl start "
                                           "builds it)\n")


def test_start_initramfs_waits_for_its_origins_only(dmname, loop64, loop128, cleanup, tmp_path):
    """What the initramfs runs: the initramfs entries only, each origin
    waited for up to its device timeout (the disk may come late there)."""
    a, b, c = dmname(), dmname(), dmname()
    cleanup.extend([a, b, c])
    late = f"/dev/redcap-test-late-{a}"
    tab = tmp_path / "redcaptab"
    # 0: for ever, as systemd reads it (the late disk comes, or the boot waits)
    tab.write_text(f"{a} {late} 4M initramfs,x-systemd.device-timeout=0\n"
                   f"{b} {loop128} 4M\n"
                   f"{c} /dev/disk/by-id/redcap-no-such-disk 4M initramfs,"
                   "x-systemd.device-timeout=1s\n")
    p = subprocess.Popen([RCTL, "start", "--initramfs", "--tab", str(tab)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = p.stdout.readline()          # it says so once, then waits
        assert first == f"{a}: waiting for origin {late}\n"
        os.symlink(loop64, late)
        out, err = p.communicate(timeout=300)
    finally:
        p.kill()
        if os.path.lexists(late):
            os.unlink(late)
    assert p.returncode == 1
    assert out == (f"{a}: /dev/mapper/{a} over {late} (model layer measuring it), cache 4 MiB "
                   "(32 x 128 KiB), policy adaptive+caware, read-ahead 1 MiB\n"
                   f"{c}: waiting up to 1 s for origin /dev/disk/by-id/redcap-no-such-disk\n")
    assert err == f"redcapctl: {c}: origin /dev/disk/by-id/redcap-no-such-disk: not found\n"
    assert table(a).startswith(f"0 131072 redcap {dmtest.dm_major_minor(f'/dev/mapper/{a}-vd')} ")
    assert not {b, c} & dm_devices()
    # Run again (a second initramfs script, say): a no-op for the running one.
    tab.write_text(f"{a} {loop64} 4M initramfs\n")
    r = rctl("start", "--initramfs", "--tab", str(tab))
    assert (r.returncode, r.stdout, r.stderr) == (0, f"{a}: already running\n", "")
    ok("stop", a)


def test_an_initramfs_entry_without_its_module_starts_linear(dmname, loop64, cleanup, tmp_path,
                                                              modules_unloaded):
    """initramfs implies on-fail=linear: the root mounts without the module."""
    name = dmname()
    cleanup.append(name)
    rel = os.uname().release
    tab = tmp_path / "redcaptab"
    tab.write_text(f"{name} {loop64} 4M initramfs\n")
    r = rctl("start", "--initramfs", "--tab", str(tab))
    assert (r.returncode, r.stdout, r.stderr) == (
        0, f"{name}: /dev/mapper/{name} over {loop64}, linear (no cache), read-ahead 1 MiB\n",
        f"redcapctl: warning: {name}: dm-redcap: not built for kernel {rel} (no dm-redcap module "
        f"in /lib/modules/{rel}; install redcap for this kernel): starting it as a linear "
        "device, without cache (on-fail=linear)\n")
    assert table(name) == f"0 131072 linear {dmtest.dm_major_minor(loop64)} 0"
    modules_unloaded()
    # What its unit runs once the root is mounted: the cache swapped in.
    assert ok("upgrade", name, "--tab", str(tab)).stdout.startswith(
        f"{name}: /dev/mapper/{name} over {loop64} (model layer measuring it)")
    ok("stop", name)
