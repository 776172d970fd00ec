# SPDX-License-Identifier: GPL-2.0
"""The slow targets build what their guest runs need, in a tree where no
other target ran first (issue 51: make check-debug alone failed
test_generator_kmsg.py with FileNotFoundError: build/udev/redcap-generator,
built only by make check's build phase).

Each script runs in a fresh copy of the work tree (no build/), with a
"make" on PATH that does the module builds' part as nothing (they need the
guest kernels' headers) and the rest for real or only writes it down, and
a tests/vm/run that boots nothing: it writes down which of the guest
suite's programs are there when the guest would start."""
import os
import re
import shutil
import subprocess

import pytest

TOP = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))

# What the guest runs from build/ besides the modules: the paths the guest
# tests name (os.path.join(TOP, "build", <dir>, <file>)), and the bench's reader.
GUEST_PATH = re.compile(r'os\.path\.join\(\s*TOP,\s*"build",\s*"([\w.-]+)",\s*"([\w.-]+)"\s*\)')


def guest_programs():
    found = {"build/bench/rdpat"}
    guest = os.path.join(TOP, "tests", "guest")
    for name in sorted(os.listdir(guest)):
        if name.endswith(".py"):
            with open(os.path.join(guest, name), encoding="utf-8") as f:
                found.update(f"build/{d}/{p}" for d, p in GUEST_PATH.findall(f.read()))
    return sorted(found)


def test_the_guest_programs_are_found():
    """The list the other tests check is the suite's own: the generator
    that check-debug lacked is on it."""
    progs = guest_programs()
    assert "build/udev/redcap-generator" in progs, progs
    assert "build/userspace/redcapctl" in progs, progs
    assert len(progs) >= 5, progs


def fresh_tree(dst):
    """The work tree as it is (tracked and new files, not build/ or the
    results' data), without anything built."""
    r = subprocess.run(["git", "-C", TOP, "ls-files", "-z", "--cached", "--others",
                        "--exclude-standard"], capture_output=True, check=True)
    for rel in sorted(set(r.stdout.decode().split("\0"))):
        if not rel or rel.startswith(("build/", "docs/results/")):
            continue
        src = os.path.join(TOP, rel)
        if not os.path.isfile(src) or os.path.islink(src):
            continue
        os.makedirs(os.path.join(dst, os.path.dirname(rel)), exist_ok=True)
        shutil.copy2(src, os.path.join(dst, rel))
    assert not os.path.exists(os.path.join(dst, "build"))


STUB_MAKE = """#!/bin/bash
echo "$*" >>"$STUB_DIR/make.log"
for a; do
	case $a in modules | rapiddisk) exit 0 ;; esac
done
[ -z "$STUB_REAL_MAKE" ] || exec "$STUB_REAL_MAKE" "$@"
"""

STUB_VM_RUN = """#!/bin/bash
cd "$(dirname "$0")/../.."
for p in $STUB_PROGRAMS; do
	if [ -x "$p" ]; then echo "present $p"; else echo "missing $p"; fi
done >"$STUB_DIR/vm-run.log"
"""


def run_script(tmp_path, argv, real_make):
    """@argv (a script of the tree and its arguments) in a fresh copy: the
    make command lines it ran, and what its guest would have found."""
    tree = tmp_path / "tree"
    stub = tmp_path / "stub"
    stub.mkdir()
    fresh_tree(tree)
    (stub / "make").write_text(STUB_MAKE)
    (stub / "make").chmod(0o755)
    for rel, text in (("tests/vm/run", STUB_VM_RUN), ("tests/vm/kreports", "#!/bin/sh\n")):
        (tree / rel).write_text(text)
        (tree / rel).chmod(0o755)
    env = dict(os.environ, PATH=f"{stub}:{os.environ['PATH']}", STUB_DIR=str(stub),
               STUB_REAL_MAKE=shutil.which("make") if real_make else "",
               STUB_PROGRAMS=" ".join(guest_programs()), MAKEFLAGS="-j2")
    env.pop("MAKELEVEL", None)
    r = subprocess.run([str(tree / argv[0]), *argv[1:]], cwd=tree, env=env,
                       capture_output=True, text=True, timeout=300)
    out = f"exit {r.returncode}\n{r.stdout[-3000:]}{r.stderr[-3000:]}"
    assert (stub / "vm-run.log").exists(), f"{argv[0]} never started its guest:\n{out}"
    makes = (stub / "make.log").read_text().splitlines()
    found = dict(reversed(line.split(" ", 1))
                 for line in (stub / "vm-run.log").read_text().splitlines())
    return makes, found, out


def make_goals(makes):
    """The goals of the make command lines (not the options or variables)."""
    goals = set()
    for line in makes:
        words = line.split()
        skip = False
        for w in words:
            if skip:
                skip = False
            elif w in ("-C", "-f"):
                skip = True
            elif not w.startswith("-") and "=" not in w:
                goals.add(w)
    return goals


def test_check_debug_alone_builds_what_the_guest_suite_runs(tmp_path):
    """tests/check-debug in a tree where make check never ran: when its
    guest would start, every program the guest tests run is built."""
    makes, found, out = run_script(tmp_path, ["tests/check-debug"], real_make=True)
    assert any("modules" in m.split() and "KVER=debug" in m.split() for m in makes), makes
    missing = sorted(p for p, state in found.items() if state != "present")
    assert not missing, f"tests/check-debug starts its guest without {missing}\n{out}"
    assert found


# The goals whose programs the other slow targets' guests run.
TEST_TOOLS = {"userspace", "boot-tools", "bench-tools"}


def expand(goals):
    return goals | TEST_TOOLS if "test-tools" in goals else goals


@pytest.mark.parametrize("argv, needs", [
    (["tests/soak/run", "1"], TEST_TOOLS),
    (["tests/bench/run", "--tiny", "--out", "bench.json"], {"userspace", "bench-tools"}),
])
def test_the_other_slow_targets_build_their_tools_first(tmp_path, argv, needs):
    """The soak and the bench build their tools before their guest (the
    make commands written down, not run: the check-debug test above builds
    the same goals for real)."""
    makes, found, out = run_script(tmp_path, argv, real_make=False)
    assert needs <= expand(make_goals(makes)), f"{argv[0]} builds only {makes}\n{out}"

