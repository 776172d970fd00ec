# SPDX-License-Identifier: GPL-2.0
"""redcapctl stats --format prometheus without a device: the text that
userspace/metrics.c makes of stats answers (tests/host/metrics_test.c) passes
promtool's checks and lint, redcapctl(8)'s METRICS lists every metric with
the key it comes from, and the timer and service that write node_exporter's
textfile pass systemd-analyze verify and say what the page says.  The real
stack and the real node_exporter are tests/guest/test_redcapctl_metrics.py."""
import os
import re
import shutil
import subprocess

import pytest

TOP = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
METRICS_TEST = os.path.join(TOP, "build", "host", "metrics_test")
PAGE = os.path.join(TOP, "docs", "man", "redcapctl.8.rst")
UDEV = os.path.join(TOP, "udev")
SYSTEM_UNITS = "/lib/systemd/system"
TEXTFILE_DIR = "/var/lib/prometheus/node-exporter"


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """{test name: the text it made} of every test of metrics_test that makes one."""
    subprocess.run(["make", "-s", "-C", os.path.join(TOP, "tests", "host")], check=True)
    out = tmp_path_factory.mktemp("prom")
    tests = subprocess.run([METRICS_TEST, "--list"], check=True, capture_output=True,
                           text=True).stdout.split()
    for t in tests:
        subprocess.run([METRICS_TEST, t], check=True, env=dict(os.environ,
                                                                 METRICS_TEST_OUT=str(out)))
    return {p.stem: p.read_text() for p in out.iterdir()}


def read(path):
    with open(path) as f:
        return f.read()


def promtool():
    path = shutil.which("promtool")
    assert path, "promtool not found: install prometheus (make deps)"
    return path


def test_every_text_passes_promtool_check_metrics(outputs):
    """Format and lint: names, _total on counters alone, base units, HELP."""
    assert len(outputs) >= 10
    for test, text in outputs.items():
        r = subprocess.run([promtool(), "check", "metrics"], input=text, capture_output=True,
                           text=True)
        assert (r.returncode, r.stdout, r.stderr) == (0, "", ""), test


def test_promtool_does_refuse_a_broken_text(outputs):
    """The check above can fail: the same text with a family's TYPE twice."""
    text = outputs["metrics_of_a_stack_exactly"]
    broken = text + "# TYPE redcap_reads_total counter\nredcap_reads_total{stack=\"x\"} 1\n"
    r = subprocess.run([promtool(), "check", "metrics"], input=broken, capture_output=True,
                       text=True)
    assert r.returncode != 0


def families(text):
    """[(name, type, the stats key its HELP names)] of an exposition text."""
    found = []
    for name, help_, kind in re.findall(r"^# HELP (\S+) (.*)\n# TYPE \1 (\S+)$", text, re.M):
        key = re.search(r"(?:stats keys?|Counter|Tunable) (\w+)", help_)
        found.append((name, kind, key.group(1) if key else None))
    return found


def page_tables():
    """{metric: key} of the literal blocks of METRICS, with C-Aware's classes and
    rules written out, and which block (counter or gauge) each is in."""
    rst = read(PAGE)
    body = re.search(r"^METRICS\n=+\n(.*?)^EXIT STATUS\n", rst, re.S | re.M).group(1)
    classes = re.findall(r'"(\w+)"', re.search(r"rc_class_name.*?names\[RC_CL_NR\] = \{(.*?)\};",
                                               read(os.path.join(TOP, "dm-redcap",
                                                                 "rc-policy.c")),
                                               re.S).group(1))
    blocks = re.findall(r"::\n\n((?:    .*\n)+)", body)
    table = {}
    for kind, block in zip(("counter", "gauge"), blocks):
        for line in block.splitlines():
            key, metric = line.split()
            if "CLASS" in key:
                pairs = [(key.replace("CLASS", c), metric.replace("CLASS", c)) for c in classes]
            elif key.endswith("N"):
                pairs = [(key[:-1] + str(n), metric.replace("N_", f"{n}_")) for n in range(1, 7)]
            else:
                pairs = [(key, metric)]
            for k, m in pairs:
                assert m not in table, m
                table[m] = (k, kind)
    return table


def test_the_page_lists_every_metric_of_the_whole_answer_with_its_key(outputs):
    got = families(outputs["metrics_of_the_whole_answer_have_every_number_once"])
    fixed = {"redcap_cache_present", "redcap_info", "redcap_active"}
    assert {n for n, _, _ in got} >= fixed
    assert {m: (k, t) for m, t, k in got if m not in fixed} == page_tables()


def test_the_page_names_the_fixed_families_and_their_keys():
    body = " ".join(read(PAGE).split("\nMETRICS\n=", 1)[1].split("\nEXIT STATUS\n")[0].split())
    for text in ("**redcap_cache_present** is 1 for a stack with its cache, and 0",
                 "**redcap_active** is 1 while the cache is active (the key **state** is",
                 "**redcap_info** is 1, with the labels **policy**, **estimator** and "
                 "**write_policy**", "**redcap_scrape_error** is 1 for a stack **--all** could "
                 "not read"):
        assert text in body, text


# --- the timer and the service ------------------------------------------------

def unit(name):
    return read(os.path.join(UDEV, name))


def test_the_service_writes_node_exporters_textfile_with_one_command():
    service = unit("redcap-metrics.service")
    assert f"ConditionPathIsDirectory={TEXTFILE_DIR}\n" in service
    assert "Type=oneshot\n" in service
    assert re.findall(r"^ExecStart=(.*)$", service, re.M) == [
        f"/usr/sbin/redcapctl stats --all --format prometheus --out {TEXTFILE_DIR}/redcap.prom"]


def test_the_timer_runs_it_every_30_seconds_from_boot_and_is_not_enabled_by_the_package():
    timer = unit("redcap-metrics.timer")
    timer_section = timer.split("[Timer]\n", 1)[1].split("\n[", 1)[0]
    assert sorted(timer_section.split()) == ["AccuracySec=1s", "OnBootSec=30s",
                                             "OnUnitActiveSec=30s"]
    assert timer.endswith("[Install]\nWantedBy=timers.target\n")
    # Installed, never linked into timers.target.wants by make install or the package.
    makefile = read(os.path.join(TOP, "Makefile"))
    assert "redcap-metrics.timer" in makefile and "timers.target.wants" not in makefile
    scripts = "".join(read(os.path.join(TOP, "debian", f)) for f in os.listdir(
        os.path.join(TOP, "debian")) if f.startswith("redcap-tools."))
    code = [line for line in scripts.splitlines() if not line.lstrip().startswith("#")]
    assert [line for line in code if "enable" in line] == []
    page = " ".join(read(PAGE).split())
    assert "# systemctl enable --now redcap-metrics.timer" in read(PAGE)
    assert "The package installs both units and enables neither" in page


def test_systemd_analyze_verify_passes_without_warnings(tmp_path):
    """As systemd would load them, redcapctl (which verify wants to find) /bin/true."""
    true = shutil.which("true")
    for name in ("redcap-metrics.service", "redcap-metrics.timer"):
        (tmp_path / name).write_text(unit(name).replace("/usr/sbin/redcapctl", true))
    env = dict(os.environ, SYSTEMD_UNIT_PATH=f"{tmp_path}:{SYSTEM_UNITS}",
               SYSTEMD_LOG_LEVEL="info")
    r = subprocess.run(["systemd-analyze", "verify", "--man=no", "redcap-metrics.timer",
                        "redcap-metrics.service"], capture_output=True, text=True, env=env,
                       cwd=tmp_path)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
