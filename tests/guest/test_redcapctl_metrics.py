# SPDX-License-Identifier: GPL-2.0
"""redcapctl stats --format prometheus on real stacks: every value is the
stats message's number in the unit redcapctl(8)'s METRICS gives it, and the
one of status --json and stats --json; a linear stack, a stack that cannot
be read, a missing one; and the command of redcap-metrics.service writing a
textfile that Debian's real node_exporter, started here on the loopback,
serves back unchanged, as promtool checks it."""
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import time
from decimal import Decimal

import pytest

import dmtest
from dmtest import sh

TOP = os.environ.get("REDCAP_TOP", os.path.realpath(os.path.join(os.path.dirname(__file__),
                                                                  "..", "..")))
RCTL = os.path.join(TOP, "build", "userspace", "redcapctl")
PAGE = os.path.join(TOP, "docs", "man", "redcapctl.8.rst")
SERVICE = os.path.join(TOP, "udev", "redcap-metrics.service")
NODE_EXPORTER = "/usr/bin/prometheus-node-exporter"
TEXTFILE_DIR = "/var/lib/prometheus/node-exporter"
FIXED = {"redcap_cache_present", "redcap_scrape_error", "redcap_info", "redcap_active"}
CLASSES = ["cache_read", "direct_cache_read", "source_read", "cache_write",
           "direct_cache_write", "source_write"]


def rctl(*args):
    return subprocess.run([RCTL, *args], capture_output=True, text=True)


def ok(*args):
    r = rctl(*args)
    assert r.returncode == 0, f"redcapctl {' '.join(args)}: exit {r.returncode}: {r.stderr}"
    return r


def raw_stats(name):
    """The cache's answer to 'stats', {key: value}, in its order."""
    return dict(line.split("=", 1) for line in
                sh("dmsetup", "message", name, "0", "stats").stdout.split())


def parse(text):
    """An exposition text: ({(metric, labels): value text}, {metric: type},
    {metric: help})."""
    samples, types, helps = {}, {}, {}
    for line in text.splitlines():
        m = re.fullmatch(r"# (HELP|TYPE) (\S+) (.*)", line)
        if m:
            (helps if m.group(1) == "HELP" else types)[m.group(2)] = m.group(3)
            continue
        m = re.fullmatch(r"(\w+)\{(.*)\} (\S+)", line) or re.fullmatch(r"(\w+)()\s(\S+)", line)
        assert m, line
        labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2)))
        assert (m.group(1), labels) not in samples, line
        samples[(m.group(1), labels)] = m.group(3)
    return samples, types, helps


def page_keys():
    """{stats key: (metric, type)} of METRICS in redcapctl(8), written out."""
    rst = open(PAGE).read()
    body = re.search(r"^METRICS\n=+\n(.*?)^EXIT STATUS\n", rst, re.S | re.M).group(1)
    table = {}
    for kind, block in zip(("counter", "gauge"), re.findall(r"::\n\n((?:    .*\n)+)", body)):
        for line in block.splitlines():
            key, metric = line.split()
            if "CLASS" in key:
                for c in CLASSES:
                    table[key.replace("CLASS", c)] = (metric.replace("CLASS", c), kind)
            elif key.endswith("N"):
                for n in range(1, 7):
                    table[key[:-1] + str(n)] = (metric.replace("N_", f"{n}_"), kind)
            else:
                table[key] = (metric, kind)
    return table


def in_unit(key, metric, value):
    """The stats message's integer @value of @key in @metric's base unit, exactly."""
    v = Decimal(value)
    if key.endswith("_sectors"):
        assert "_bytes" in metric
        return v * 512
    if key.endswith("_us"):
        assert "_seconds" in metric
        return v / Decimal(10 ** 6)
    if key.endswith("_ms"):
        assert "_seconds" in metric
        return v / Decimal(10 ** 3)
    if metric.endswith("_ratio"):
        return v / 100
    return v


def idle_reading(name, *args):
    """redcapctl @args, between two answers to 'stats' that agree: (the
    answer, redcapctl's run).  The stack is idle; a second may tick meanwhile."""
    for _ in range(10):
        before = raw_stats(name)
        r = ok(*args)
        if raw_stats(name) == before:
            return before, r
    raise AssertionError(f"{name}: its stats kept changing while idle")


def labels(name, **kw):
    return frozenset({("stack", name), *kw.items()})


@pytest.fixture
def cleanup():
    """Device names to take away after the test, whatever happened."""
    names = []
    yield names
    for n in names:
        for dev in (n, n + "-vd"):
            if sh("dmsetup", "info", dev, check=False).returncode == 0:
                sh("dmsetup", "remove", "--retry", dev, check=False)


def busy_stack(name, origin):
    """A stack over @origin whose counters have moved: writes, reads, hits, fills."""
    ok("create", name, origin, "--ram", "4M", "--policy", "always")
    mapper = f"/dev/mapper/{name}"
    dmtest.write_stamped(mapper, 0, 64, 7)
    for _ in range(2):
        dmtest.read_pattern(mapper, range(64), 7)
    return mapper


# --- the values -----------------------------------------------------------------

def test_every_value_is_the_stats_messages_in_the_pages_unit(dmname, loop64, cleanup):
    name = dmname()
    cleanup.append(name)
    busy_stack(name, loop64)
    raw, r = idle_reading(name, "stats", name, "--format", "prometheus")
    assert r.stderr == ""
    samples, types, helps = parse(r.stdout)
    assert int(raw["reads"]) > 0 and int(raw["read_hits"]) > 0 and int(raw["fill_ios"]) > 0

    # Every key with a number is a metric of the page, with its value.
    table = page_keys()
    numeric = [k for k, v in raw.items() if re.fullmatch(r"-?\d+", v)]
    assert sorted(k for k in numeric if k not in table) == [], "keys the page lacks"
    for key in numeric:
        metric, kind = table[key]
        assert types[metric] == kind, metric
        assert key in helps[metric], metric
        assert Decimal(samples[(metric, labels(name))]) == in_unit(key, metric, raw[key]), key
    assert {m for m, _ in samples} == \
        {table[k][0] for k in numeric} | (FIXED - {"redcap_scrape_error"})

    # The texts.
    assert samples[("redcap_cache_present", labels(name))] == "1"
    assert samples[("redcap_active", labels(name))] == ("1" if raw["state"] == "active" else "0")
    info = labels(name, policy=raw["policy"], estimator=raw["estimator"],
                  write_policy=raw["write_policy"])
    assert samples[("redcap_info", info)] == "1"
    assert (raw["policy"], raw["estimator"], raw["state"]) == ("always", "vdisk", "active")


def test_the_values_are_those_of_status_json_and_stats_json(dmname, loop64, cleanup):
    name = dmname()
    cleanup.append(name)
    busy_stack(name, loop64)
    _, r = idle_reading(name, "stats", name, "--format", "prometheus")
    samples = {m: v for (m, _), v in parse(r.stdout)[0].items()}
    raw, st = idle_reading(name, "status", name, "--json")
    status = json.loads(st.stdout)
    assert raw == idle_reading(name, "stats", name, "--format", "prometheus")[0]

    def n(metric):
        return Decimal(samples[metric])

    for key in ("reads", "read_hits", "read_hits_waited", "read_misses", "read_bypassed",
                "read_resent", "fill_ios", "fill_errors", "writes", "invalidations",
                "switches", "windows"):
        assert n(f"redcap_{key}_total") == status[key], key
    assert n("redcap_fill_bytes_total") == status["fill_bytes"]
    assert n("redcap_segment_bytes") == status["segment_bytes"]
    for key in ("segments", "segments_valid", "segments_filling"):
        assert n(f"redcap_{key}") == status[key], key
    assert n("redcap_last_cache_time_seconds") * 10 ** 6 == status["last_cache_time_us"]
    assert n("redcap_last_est_disk_time_seconds") * 10 ** 6 == status["last_est_disk_time_us"]
    assert n("redcap_active") == (status["state"] == "active")
    info = [lb for (m, lb) in parse(r.stdout)[0] if m == "redcap_info"]
    assert dict(info[0]) == {"stack": name, "policy": status["policy"],
                             "estimator": status["estimator"],
                             "write_policy": status["write_policy"]}

    # stats --json: the counter it has, and the texts; --format json is it too.
    for args in (["--json"], ["--format", "json"]):
        doc = json.loads(idle_reading(name, "stats", name, *args)[1].stdout)
        assert (n("redcap_reads_total"), doc["state"], doc["policy"]) == \
            (doc["reads"], status["state"], status["policy"])
    ok("remove", name)


# --- stacks without metrics ---------------------------------------------------------

CACHE_ABSENT = ("# HELP redcap_cache_present Whether the stack has its cache: 0 for a linear "
                "device over the origin\n# TYPE redcap_cache_present gauge\n")


def test_a_linear_stack_has_cache_present_0_and_nothing_else(dmname, loop64, cleanup):
    name = dmname()
    cleanup.append(name)
    ok("create", name, loop64, "--ram", "4M")
    ok("remove", name, "--keep-device")
    r = ok("stats", name, "--format", "prometheus")
    assert (r.stdout, r.stderr) == (CACHE_ABSENT + f'redcap_cache_present{{stack="{name}"}} 0\n',
                                    "")
    assert f'redcap_cache_present{{stack="{name}"}} 0\n' in \
        ok("stats", "--all", "--format", "prometheus").stdout
    ok("remove", name)


def test_a_stack_that_cannot_be_read_fails_alone_and_is_a_scrape_error_with_all(
        dmname, loop64, cleanup, tmp_path):
    good, bad = dmname(), dmname()
    cleanup += [good, bad]
    busy_stack(good, loop64)
    # Ours by its DM UUID, but with a table redcapctl never makes.
    sh("dmsetup", "create", bad, "--uuid", f"REDCAP-{bad}", "--table", "0 8 zero")
    why = f"{bad}: its table is 'zero', neither redcap nor linear"
    r = rctl("stats", bad, "--format", "prometheus")
    assert (r.returncode, r.stdout, r.stderr) == (1, "", f"redcapctl: {why}\n")
    out = tmp_path / "redcap.prom"
    out.write_text("old\n")
    r = rctl("stats", bad, "--format", "prometheus", "--out", str(out))
    assert (r.returncode, r.stdout, r.stderr) == (1, "", f"redcapctl: {why}\n")
    assert out.read_text() == "old\n" and os.listdir(tmp_path) == ["redcap.prom"]

    r = rctl("stats", "--all", "--format", "prometheus")
    assert r.returncode == 0
    assert r.stderr == f"redcapctl: warning: {why} (redcap_scrape_error 1)\n"
    samples = parse(r.stdout)[0]
    assert samples[("redcap_scrape_error", labels(bad))] == "1"
    assert [m for m, lb in samples if lb == labels(bad)] == ["redcap_scrape_error"]
    assert samples[("redcap_cache_present", labels(good))] == "1"
    assert int(samples[("redcap_reads_total", labels(good))]) > 0
    sh("dmsetup", "remove", bad)
    ok("remove", good)


def test_a_missing_stack_or_directory_is_an_error_and_prints_nothing(dmname, loop64, cleanup):
    r = rctl("stats", "nosuch-stack", "--format", "prometheus")
    assert (r.returncode, r.stdout, r.stderr) == (1, "", "redcapctl: nosuch-stack: no such "
                                                         "redcap stack\n")
    name = dmname()
    cleanup.append(name)
    ok("create", name, loop64, "--ram", "4M")
    r = rctl("stats", name, "--format", "prometheus", "--out", "/nonexistent/redcap.prom")
    assert (r.returncode, r.stdout, r.stderr) == (
        1, "", "redcapctl: stats: /nonexistent/redcap.prom: No such file or directory\n")
    ok("remove", name)


# --- node_exporter ----------------------------------------------------------------

def service_command(textfile_dir):
    """redcap-metrics.service's ExecStart, for this tree's redcapctl and @textfile_dir."""
    with open(SERVICE) as f:
        (cmd,) = re.findall(r"^ExecStart=(.*)$", f.read(), re.M)
    assert cmd.startswith("/usr/sbin/redcapctl ") and TEXTFILE_DIR + "/" in cmd
    return cmd.replace("/usr/sbin/redcapctl", RCTL).replace(TEXTFILE_DIR, str(textfile_dir)) \
        .split()


def curl(url):
    return subprocess.run(["curl", "-sS", "--fail", "--noproxy", "*", "--max-time", "10", url],
                          capture_output=True, text=True)


@pytest.fixture
def node_exporter(tmp_path):
    """Debian's node_exporter on 127.0.0.1 at a free port, its textfile collector
    alone, reading a directory of its own: (the directory, the metrics URL).
    Stopped at the end, whatever happened."""
    assert os.access(NODE_EXPORTER, os.X_OK), "install prometheus-node-exporter (make deps)"
    assert shutil.which("curl"), "install curl"
    textfile = tmp_path / "textfile"
    textfile.mkdir()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = tmp_path / "node_exporter.log"
    with open(log, "w") as f:
        p = subprocess.Popen([NODE_EXPORTER, f"--web.listen-address=127.0.0.1:{port}",
                              "--collector.disable-defaults", "--collector.textfile",
                              f"--collector.textfile.directory={textfile}"],
                             stdout=f, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        deadline = time.monotonic() + 60 * dmtest.SLOW
        while curl(url).returncode:
            assert p.poll() is None, f"node_exporter exited: {log.read_text()}"
            assert time.monotonic() < deadline, f"node_exporter never answered: {log.read_text()}"
            time.sleep(0.2)
        yield textfile, url
    finally:
        p.terminate()
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def test_node_exporter_serves_what_the_service_wrote(dmname, loop64, cleanup, node_exporter):
    textfile, url = node_exporter
    name = dmname()
    cleanup.append(name)
    busy_stack(name, loop64)
    cmd = service_command(textfile)
    prom = textfile / "redcap.prom"
    raw, r = idle_reading(name, *cmd[1:])
    assert (r.stdout, r.stderr) == ("", "")
    assert os.listdir(textfile) == ["redcap.prom"]
    assert stat.S_IMODE(prom.stat().st_mode) == 0o644
    written = prom.read_text()
    assert raw == idle_reading(name, "stats", "--all", "--format", "prometheus")[0]
    assert written == ok("stats", "--all", "--format", "prometheus").stdout

    # Replaced, not rewritten in place: a new inode each time.
    inode = prom.stat().st_ino
    subprocess.run(cmd, check=True)
    assert prom.stat().st_ino != inode and os.listdir(textfile) == ["redcap.prom"]

    r = curl(url)
    assert r.returncode == 0, r.stderr
    scraped, scraped_types, scraped_helps = parse(r.stdout)
    assert scraped[("node_textfile_scrape_error", frozenset())] == "0"
    ours, types, helps = parse(written)
    assert f'redcap_reads_total{{stack="{name}"}} {raw["reads"]}\n' in written
    for (metric, lb), value in ours.items():
        assert float(scraped[(metric, lb)]) == float(Decimal(value)), (metric, lb)
        assert (scraped_types[metric], scraped_helps[metric]) == (types[metric], helps[metric])
    assert {k for k in scraped if k[0].startswith("redcap_")} == set(ours)

    check = subprocess.run(["promtool", "check", "metrics"], input=r.stdout,
                           capture_output=True, text=True)
    assert (check.returncode, check.stdout, check.stderr) == (0, "", "")
    ok("remove", name)
