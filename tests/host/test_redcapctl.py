# SPDX-License-Identifier: GPL-2.0
"""redcapctl without a device: its command line (every usage error is
refused before anything is asked of device-mapper) and the JSON schema of
its output.  The device side is tests/guest/test_redcapctl.py."""
import copy
import json
import os
import subprocess

import jsonschema
import pytest

TOP = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
RCTL = os.path.join(TOP, "build", "userspace", "redcapctl")
TRY = "Try 'redcapctl --help' for more information.\n"
with open(os.path.join(TOP, "docs", "redcapctl.schema.json")) as _f:
    SCHEMA = json.load(_f)
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


@pytest.fixture(scope="module", autouse=True)
def built():
    subprocess.run(["make", "-s", "-C", os.path.join(TOP, "userspace")], check=True)


def rctl(*args):
    return subprocess.run([RCTL, *args], capture_output=True, text=True)


# --- command line ----------------------------------------------------------

def test_help_and_no_arguments():
    r = rctl("--help")
    assert r.returncode == 0 and r.stdout.startswith("usage: redcapctl create NAME ORIGIN")
    assert "Exit status: 0 success, 1 error, 2 usage error." in r.stdout
    r = rctl()
    assert r.returncode == 2 and r.stdout == "" and r.stderr.startswith("usage: redcapctl")
    r = rctl("status", "-h")
    assert (r.returncode, r.stdout, r.stderr) == (
        0, "usage: redcapctl status NAME [--json]\n\n"
           "  status       geometry, policy, state and why, counters, model\n", "")


COMMANDS = ["create", "remove", "list", "status", "stats", "set", "drop-cache", "reset-stats",
            "model", "hot", "start", "stop", "upgrade", "check", "simulate"]


def usage_of(cmd):
    """The lines of 'redcapctl --help' that are @cmd's usage, each with its continuations,
    the first as a usage of its own."""
    lines, mine = [], False
    for line in rctl("--help").stdout.splitlines():
        if not line.startswith(("usage: ", " ")):
            break
        words = line.split()
        if "redcapctl" in words[:2]:
            mine = words[words.index("redcapctl") + 1] == cmd
        if mine:
            lines.append(line)
    if lines:
        lines[0] = "usage: " + lines[0].replace("usage: ", "", 1).lstrip()
    return lines


def help_paragraph(cmd):
    """@cmd's lines in the help of all commands (start and stop share theirs)."""
    text = rctl("--help").stdout
    body = text.split("\n\n")[1].splitlines()
    for i, line in enumerate(body):
        if cmd in [w.strip(";:,") for w in line[:15].split()] or f";  {cmd}: " in line:
            end = i + 1
            while end < len(body) and body[end].startswith(" " * 15):
                end += 1
            return body[i:end]
    raise AssertionError(cmd)


def test_the_commands_are_those_of_the_usage():
    assert [u for u in COMMANDS if usage_of(u)] == COMMANDS


@pytest.mark.parametrize("cmd", COMMANDS)
@pytest.mark.parametrize("opt", ["-h", "--help"])
def test_help_of_a_command_is_its_usage_and_its_help_alone(cmd, opt):
    """Its usage lines as 'redcapctl --help' has them, the first after "usage: ", then
    its help under its own name; no other command's."""
    r = rctl(cmd, opt)
    assert (r.returncode, r.stderr) == (0, "")
    usage = usage_of(cmd)
    lines = r.stdout.splitlines()
    assert lines[:len(usage)] == usage
    assert lines[len(usage)] == ""
    text = lines[len(usage) + 1:]
    assert text[0].startswith(f"  {cmd:<12} ") and len(text[0]) > 15
    assert all(line.startswith(" " * 15) for line in text[1:])
    assert " ".join(" ".join(text).split()[1:]) in " ".join(" ".join(help_paragraph(cmd)).split())
    assert not [line for line in lines if "redcapctl " in line and f"redcapctl {cmd} " not in line]


@pytest.mark.parametrize("args", [["model", "save", "--help"], ["model", "train", "-h"],
                                  ["model", "load", "x", "--help"], ["hot", "load", "-h"],
                                  ["create", "x", "/dev/x", "--help"], ["stats", "--all", "-h"],
                                  ["start", "--initramfs", "--help"]])
def test_help_anywhere_in_a_command_line_is_that_commands(args):
    r = rctl(*args)
    assert (r.returncode, r.stdout, r.stderr) == (0, rctl(args[0], "--help").stdout, "")


def test_help_of_a_command_runs_nothing_and_needs_no_operand():
    """Help wins over a usage error of the same line: the user asked what to type."""
    r = rctl("set", "--help", "x", "nokey")
    assert (r.returncode, r.stderr) == (0, "")
    assert r.stdout.startswith("usage: redcapctl set NAME KEY=VALUE...\n")


@pytest.mark.parametrize("args, err", [
    (["frob"], "unknown command 'frob'"),
    (["layout", "x"], "unknown command 'layout'"),
    (["simulate", "--layout", "f"], "simulate: unknown option '--layout'"),
    (["--frob"], "unknown option '--frob'"),
    (["create"], "create: missing operand"),
    (["create", "x"], "create: missing operand"),
    (["create", "x", "/dev/x", "y"], "create: unexpected operand 'y'"),
    (["create", "x", "/dev/x", "--ram"], "create: option '--ram' needs a value"),
    (["create", "x", "/dev/x", "-q"], "create: unknown option '-q'"),
    (["create", "x", "/dev/x", "--ram", "0"], "create: --ram '0' is not a size (64M, 1G)"),
    (["create", "x", "/dev/x", "--segment", "1X"],
     "create: --segment '1X' is not a size (64M, 1G)"),
    (["create", "x", "/dev/x", "--estimator", "exact"],
     "create: --estimator 'exact': spk or vdisk"),
    (["create", "x", "/dev/x", "--readahead", "lots"],
     "create: --readahead 'lots': auto or a size (1M, 512K, 0)"),
    (["create", "x", "/dev/x", "--readahead", "1000"],
     "create: --readahead '1000': a multiple of 4K from 0 to 64M, or auto"),
    (["create", "x", "LABEL=data"], "create: origin 'LABEL=data' names a filesystem, which the "
                                    "redcap device shows too: use a /dev path, PARTUUID= or "
                                    "PARTLABEL="),
    (["create", "a" * 125, "/dev/x"], f"create: name '{'a' * 20}...' is longer than 124 "
                                      "characters"),
    (["create", "x y", "/dev/x"], "create: name 'x y': use letters, digits and + _ . - "
                                  "(not first: - or .)"),
    (["remove"], "remove: missing operand"),
    (["list", "x"], "list: unexpected operand 'x'"),
    (["status", "a", "b"], "status: unexpected operand 'b'"),
    (["stats", "x", "--watch=4000"], "stats: --watch=4000: seconds from 0.1 to 3600"),
    (["stats", "x", "--watch=abc"], "stats: --watch=abc: seconds from 0.1 to 3600"),
    (["stats", "x", "--format", "xml"], "stats: --format: 'xml' is not text, json or prometheus"),
    (["stats", "x", "--format", "Prometheus"],
     "stats: --format: 'Prometheus' is not text, json or prometheus"),
    (["stats", "x", "--format"], "stats: option '--format' needs a value"),
    (["stats", "x", "--json", "--format", "prometheus"],
     "stats: --json and --format prometheus: one format only"),
    (["stats", "x", "--format", "text", "--json"],
     "stats: --json and --format text: one format only"),
    (["stats", "--all"], "stats: --all needs --format prometheus"),
    (["stats", "--all", "--format", "json"], "stats: --all needs --format prometheus"),
    (["stats", "x", "--out", "f"], "stats: --out needs --format prometheus"),
    (["stats", "x", "--format", "prometheus", "--out", ""], "stats: --out: an empty file name"),
    (["stats", "x", "--format", "prometheus", "--watch"],
     "stats: --watch does not go with --format prometheus"),
    (["stats", "--format", "prometheus"], "stats: missing operand"),
    (["stats", "x", "y", "--format", "prometheus"], "stats: unexpected operand 'y'"),
    (["stats", "--all", "x", "--format", "prometheus"], "stats: unexpected operand 'x'"),
    (["stats", "--all=1", "--format", "prometheus"], "stats: unknown option '--all=1'"),
    (["set", "x"], "set: missing operand"),
    (["set", "x", "window"], "set: 'window' is not KEY=VALUE"),
    (["set", "x", "=3"], "set: '=3' is not KEY=VALUE"),
    (["set", "x", "margin=100"], "set: margin=100: margin must be 0..99"),
    (["set", "x", "prefetch=9"], "set: prefetch=9: prefetch must be 0..8"),
    (["set", "x", "dwell=2"], "set: unknown key 'dwell' (policy, write_policy, estimator, "
                              "window, margin, decay_ms, budget_share, budget_cap_ms, prefetch, "
                              "hdc, hot_period, dirty)"),
    (["set", "x", "write_policy=later"], "set: write_policy=later: unknown write policy 'later'"),
    (["set", "x", "estimator=guess"], "set: estimator=guess: unknown estimator 'guess'"),
    (["drop-cache"], "drop-cache: missing operand"),
    (["reset-stats", "a", "b"], "reset-stats: unexpected operand 'b'"),
    (["model"], "model: missing verb (save, load, train)"),
    (["model", "save"], "model: missing operand"),
    (["model", "load", "x", "f", "g"], "model: unexpected operand 'g'"),
    (["model", "train", "x", "f"], "model: unexpected operand 'f'"),
    # vdiskctl train's options and words: one parser for both.
    (["model", "train", "x", "--time", "0"],
     "train: --time: '0' is not a number of seconds (1 or more)"),
    (["model", "train", "x", "--max-kib", "6"],
     "train: --max-kib: '6' is not a multiple of 4 from 4 to 65536"),
    (["list", "--json=1"], "list: unknown option '--json=1'"),
    (["start"], "start: missing operand"),
    (["start", "--all", "x"], "start: unexpected operand 'x'"),
    (["start", "--initramfs", "x"], "start: unexpected operand 'x'"),
    (["start", "--all", "--initramfs"], "start: --initramfs or --all, not both"),
    (["stop", "--initramfs"], "stop: unknown option '--initramfs'"),
    (["upgrade", "--initramfs"], "upgrade: unknown option '--initramfs'"),
    (["stop", "x", "--tab"], "stop: option '--tab' needs a value"),
    (["stop", "bad/name"], "stop: name 'bad/name': use letters, digits and + _ . - "
                           "(not first: - or .)"),
    (["check", "x"], "check: unexpected operand 'x'"),
])
def test_usage_errors_exit_2_before_touching_anything(args, err):
    r = rctl(*args)
    assert (r.returncode, r.stdout, r.stderr) == (2, "", f"redcapctl: {err}\n" + TRY)


def test_start_initramfs_without_an_initramfs_entry_asks_nothing_of_device_mapper(tmp_path):
    # No device-mapper here: anything that asked it would fail.
    tab = tmp_path / "redcaptab"
    tab.write_text("data /dev/disk/by-id/ata-A 64M on-fail=linear\n"
                   "bad line here\n")
    env = dict(os.environ, SYSTEMD_PROC_CMDLINE="quiet")
    r = subprocess.run([RCTL, "start", "--initramfs", "--tab", str(tab)], env=env,
                       capture_output=True, text=True)
    assert (r.returncode, r.stdout, r.stderr) == (
        1, "", f"redcapctl: {tab}: line 2: origin 'line' is not a /dev path, PARTUUID= or "
               "PARTLABEL=\n")
    r = subprocess.run([RCTL, "start", "--initramfs", "--tab", str(tmp_path / "none")],
                       env=env, capture_output=True, text=True)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    # redcap=0 on the kernel command line: the initramfs starts nothing.
    tab.write_text("root /dev/disk/by-id/ata-A 64M initramfs\n")
    env["SYSTEMD_PROC_CMDLINE"] = "root=/dev/mapper/root redcap=0 redcap=maybe"
    r = subprocess.run([RCTL, "start", "--initramfs", "--tab", str(tab)], env=env,
                       capture_output=True, text=True)
    assert (r.returncode, r.stdout, r.stderr) == (
        0, "redcap=0 on the kernel command line: no stack started\n",
        "redcapctl: warning: kernel command line: 'redcap=maybe' is not a boolean; ignored\n")


def test_check_says_when_the_initramfs_is_older_than_the_table(tmp_path):
    tab, img = tmp_path / "redcaptab", tmp_path / "initrd.img"
    tab.write_text("data /dev/disk/by-id/ata-A 64M\n")
    img.write_text("")

    def lines():
        r = subprocess.run([RCTL, "check", "--tab", str(tab), "--fstab", "/dev/null"],
                           env=dict(os.environ, REDCAP_INITRD=str(img)),
                           capture_output=True, text=True)
        return [line for line in r.stdout.splitlines() if str(img) in line]

    assert lines() == []            # no initramfs entry: no word of it
    tab.write_text("root /dev/disk/by-id/ata-A-part2 64M initramfs\n")
    os.utime(img, (1e9, 1e9))
    assert lines() == [f"warning  {img}: older than {tab}, whose initramfs entries it builds "
                       "from its own copy: update-initramfs -u"]
    os.utime(img, None)
    os.utime(tab, (1e9, 1e9))
    assert lines() == [f"ok       {img}: newer than {tab}, for its initramfs entries"]
    img.unlink()
    assert lines() == [f"problem  {img}: No such file or directory, with an initramfs entry "
                       "(root): update-initramfs -u"]


# --- the JSON schema -------------------------------------------------------

STATUS = {
    "schema": 2, "name": "data", "device": "/dev/mapper/data", "origin": "/dev/sdb",
    "size_bytes": 1 << 40, "read_ahead_bytes": 1 << 20, "segment_bytes": 131072,
    "segments": 512, "ram_bytes": 64 << 20,
    "segments_valid": 100, "segments_filling": 1, "ram_used_bytes": 100 * 131072,
    "policy": "adaptive+caware", "write_policy": "invalidate", "estimator": "spk",
    "state": "active", "state_reason": "last window: ...", "last_cache_time_us": 10,
    "last_est_disk_time_us": 20, "reads": 10, "read_hits": 5, "read_hits_waited": 1,
    "read_misses": 2, "read_bypassed": 2,
    "read_bypassed_by_reason": {"inactive": 0, "busy": 0, "caware": 2, "budget": 0, "held": 0,
                                "nomem": 0, "joined": 0, "write": 0},
    "read_resent": 0, "hit_ratio": 0.6, "fill_ios": 2, "fill_bytes": 262144, "fill_errors": 0,
    "writes": 0, "invalidations": 0, "switches": 0, "windows": 0,
    "model": {"device": "data-vd", "mode": "measure", "learning": True, "cells_filled": 3,
              "read_samples": 5, "write_samples": 0,
              "drive_cache": {"priced": None,
                              "learnt": {"segments": 16, "segment_bytes": 524288,
                                         "readahead_bytes": 262144, "media_mbps": 150}}},
}
LINEAR = {"schema": 2, "name": "data", "device": "/dev/mapper/data", "origin": "/dev/sdb",
          "size_bytes": 1 << 40, "read_ahead_bytes": 1 << 20, "state": "linear",
          "state_reason": "without cache"}
STATS = {
    "schema": 2, "name": "data", "interval_s": 1.0, "state": "inactive", "policy": "adaptive",
    "reads": 1000, "reads_per_s": 12.5, "hits_per_s": 0, "misses_per_s": 0,
    "bypassed_per_s": 12.5,
    "bypassed_per_s_by_reason": {"inactive": 12.5, "busy": 0, "caware": 0, "budget": 0,
                                 "held": 0, "nomem": 0, "joined": 0, "write": 0},
    "fill_mib_per_s": 0, "hit_ratio": 0,
}


def errors(doc):
    return [e.message for e in VALIDATOR.iter_errors(doc)]


def test_the_schema_is_a_valid_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


def test_documents_of_every_kind_validate():
    assert errors(STATUS) == []
    assert errors(dict(STATUS, model=None, state="inactive")) == []
    assert errors(LINEAR) == []
    assert errors({"schema": 2, "stacks": [STATUS, LINEAR]}) == []
    assert errors({"schema": 2, "stacks": []}) == []
    assert errors(STATS) == []
    # a dm-vdisk loaded before it learnt the drive's cache: no drive_cache
    assert errors(dict(STATUS, model={k: v for k, v in STATUS["model"].items()
                                      if k != "drive_cache"})) == []
    bad = dict(STATUS["model"], drive_cache={"priced": {"segments": 17}, "learnt": None})
    assert errors(dict(STATUS, model=bad)) != []
    # Version 1 only grows: a key it does not know yet is allowed.
    assert errors(dict(STATUS, future_counter=3)) == []


def mutated(doc, path, value):
    d = copy.deepcopy(doc)
    node = d
    for k in path[:-1]:
        node = node[k]
    if value is KeyError:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return d


@pytest.mark.parametrize("doc, path, value", [
    (STATUS, ["schema"], 1),
    (STATUS, ["reads"], KeyError),
    (STATUS, ["write_policy"], "later"),
    (STATUS, ["write_cache"], {"state": "on"}),
    (STATUS, ["reads"], -1),
    (STATUS, ["reads"], "10"),
    (STATUS, ["hit_ratio"], 1.5),
    (STATUS, ["state"], "on"),
    (STATUS, ["policy"], "fast"),
    (STATUS, ["segment_bytes"], 3000),
    (STATUS, ["segments"], 0),
    (STATUS, ["model"], KeyError),
    (STATUS, ["model", "learning"], "yes"),
    (STATUS, ["model", "device"], "data"),
    (STATUS, ["read_bypassed_by_reason", "busy"], KeyError),
    (STATUS, ["name"], "-x"),
    (LINEAR, ["state"], "active"),          # an active stack has its counters
    (STATS, ["reads_per_s"], -1),
    (STATS, ["interval_s"], 0),
    (STATS, ["bypassed_per_s_by_reason", "write"], KeyError),
    (STATS, ["state"], "linear"),
])
def test_documents_that_break_the_schema_are_refused(doc, path, value):
    assert errors(mutated(doc, path, value)) != []


# --- make install-tools / uninstall-tools ----------------------------------

def test_install_tools_puts_everything_in_place_and_uninstall_takes_it_away(tmp_path):
    dirs = ["DESTDIR=" + str(tmp_path), "PREFIX=/usr", "UDEVDIR=/lib/udev",
            "BASH_COMPLETION_DIR=/usr/share/bash-completion/completions",
            "SYSTEMDUNITDIR=/lib/systemd/system",
            "SYSTEMDGENERATORDIR=/lib/systemd/system-generators"]
    subprocess.run(["make", "-s", "-C", TOP, "install-tools", *dirs], check=True,
                   capture_output=True)
    files = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")
                   if p.is_file() or p.is_symlink())
    assert files == [
        "lib/systemd/system-generators/redcap-generator",
        "lib/systemd/system/redcap-metrics.service",
        "lib/systemd/system/redcap-metrics.timer",
        "lib/systemd/system/redcap-model-save@.service",
        "lib/systemd/system/redcap-model-save@.timer",
        "lib/systemd/system/redcap.target",
        "lib/systemd/system/sysinit.target.wants/redcap.target",
        "lib/udev/redcap-udev",
        "lib/udev/rules.d/56-dm-redcap.rules",
        "lib/udev/rules.d/59-redcap-member.rules",
        "lib/udev/rules.d/63-redcap-member.rules",
        "usr/sbin/redcapctl",
        "usr/sbin/vdiskctl",
        "usr/share/bash-completion/completions/redcapctl",
        "usr/share/doc/redcap/admin-guide.rst",
        "usr/share/doc/redcap/boot.rst",
        "usr/share/doc/redcap/redcap.rst",
        "usr/share/doc/redcap/redcapctl.schema.json",
        "usr/share/doc/redcap/vdisk.rst",
        "usr/share/initramfs-tools/hooks/redcap",
        "usr/share/initramfs-tools/scripts/local-top/redcap",
        "usr/share/man/man5/redcaptab.5",
        "usr/share/man/man8/redcap-generator.8",
        "usr/share/man/man8/redcapctl.8",
        "usr/share/man/man8/vdiskctl.8",
    ]
    assert os.readlink(tmp_path / "lib/systemd/system/sysinit.target.wants/redcap.target") == \
        "../redcap.target"
    # The units call redcapctl where it was installed.
    assert "ExecStart=/usr/sbin/redcapctl model save --if-present %I" in \
        (tmp_path / "lib/systemd/system/redcap-model-save@.service").read_text()
    assert "ExecStart=/usr/sbin/redcapctl stats --all --format prometheus --out " in \
        (tmp_path / "lib/systemd/system/redcap-metrics.service").read_text()
    # The initramfs hook copies them from where they were installed.
    hook = (tmp_path / "usr/share/initramfs-tools/hooks/redcap").read_text()
    assert "\nREDCAPCTL=/usr/sbin/redcapctl\nUDEVDIR=/lib/udev\n" in hook
    for f in ("hooks/redcap", "scripts/local-top/redcap"):
        assert os.access(tmp_path / "usr/share/initramfs-tools" / f, os.X_OK), f
    assert (tmp_path / "var/lib/redcap").is_dir()
    r = subprocess.run([str(tmp_path / "usr/sbin/redcapctl"), "--help"], capture_output=True,
                       text=True)
    assert r.returncode == 0 and r.stdout.startswith("usage: redcapctl")
    subprocess.run(["make", "-s", "-C", TOP, "uninstall-tools", *dirs], check=True,
                   capture_output=True)
    assert [p for p in tmp_path.rglob("*") if p.is_file() or p.is_symlink()] == []
