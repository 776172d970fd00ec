# SPDX-License-Identifier: GPL-2.0
"""redcapctl's --help as the docs tests read it: the text, and its usage
lines each joined with its continuation lines."""
import os
import subprocess

TOP = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
REDCAPCTL = os.path.join(TOP, "build", "userspace", "redcapctl")
# redcapctl's sources: main and its command table, a file per command family,
# and what it shares with vdiskctl.
SOURCES = ["redcapctl.c", "stacks.c", "show.c", "show-text.c", "show-json.c", "tune.c", "tab.c",
           "model.c", "hot-cmd.c", "vdisk-tables.c", "dmctl.c"]


def help_text():
    r = subprocess.run([REDCAPCTL, "--help"], capture_output=True, text=True)
    assert (r.returncode, r.stderr) == (0, "")
    return r.stdout


def usage_lines():
    """The usage lines of --help, each joined with its continuation lines."""
    lines = []
    for line in help_text().splitlines():
        if not line.startswith(("usage: ", " ")):
            break
        line = line.replace("usage: ", "", 1).strip()
        if line.startswith("redcapctl "):
            lines.append(line)
        else:
            lines[-1] += " " + line
    return lines
