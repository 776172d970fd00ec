# SPDX-License-Identifier: GPL-2.0
"""docs/admin-guide.rst against what it describes: it builds with docutils
without a message; every redcapctl command line it shows (in a literal block
or inline) names a command of 'redcapctl --help' and only that command's
options (and set's keys); the redcaptab lines it shows are good lines for the
real parser; the redcapctl output it shows is printed by the code; and every
results file it cites is in docs/results."""
import os
import re
import shlex
import subprocess

import pytest

from redcapctl_help import REDCAPCTL, SOURCES, help_text, usage_lines

TOP = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
GUIDE = os.path.join(TOP, "docs", "admin-guide.rst")
RESULTS = os.path.join(TOP, "docs", "results")


@pytest.fixture(scope="module", autouse=True)
def built():
    subprocess.run(["make", "-s", "-C", os.path.join(TOP, "userspace")], check=True)


def read(path):
    with open(path) as f:
        return f.read()


def find(node, kind):
    """findall() since docutils 0.18, traverse() before."""
    return list((node.findall if hasattr(node, "findall") else node.traverse)(kind))


def doctree():
    from docutils.core import publish_doctree
    return publish_doctree(read(GUIDE), settings_overrides={"report_level": 5})


def literal_blocks():
    from docutils import nodes
    return [block.astext().splitlines() for block in find(doctree(), nodes.literal_block)]


def inline_literals():
    from docutils import nodes
    return [node.astext() for node in find(doctree(), nodes.literal)]


def usage():
    """{command: [usage line, ...]}, model's keyed by its verbs too ("model save")."""
    cmds = {}
    for line in usage_lines():
        words = line.split()
        cmds.setdefault(words[1], []).append(line)
        if words[1] == "model":
            for verb in words[2].split("|"):
                cmds.setdefault("model " + verb, []).append(line)
    return cmds


def set_keys():
    """The keys the help's "set" line lists, over its continuation lines."""
    m = re.search(r"^  set +(.+(?:\n {15}.+)*)$", help_text(), re.M)
    assert m
    return m.group(1).replace(" ", "").replace("\n", "").split(",")


def shown_commands():
    """Every redcapctl command line of the guide, as words: the lines of the literal
    blocks after the root prompt, and the inline literals, up to a pipe."""
    cmds = []
    for block in literal_blocks():
        cmds += [line[2:] for line in block if line.startswith("# redcapctl ")]
    cmds += [text for text in inline_literals() if text.startswith("redcapctl ")]
    return [shlex.split(cmd.split(" | ")[0]) for cmd in cmds]


def test_the_guide_builds_without_a_docutils_message(tmp_path):
    r = subprocess.run(["python3", "-m", "docutils", "--halt=warning", "--report=info",
                        GUIDE, str(tmp_path / "admin-guide.html")], capture_output=True, text=True)
    assert (r.returncode, r.stderr) == (0, "")
    assert "redcap administration" in read(tmp_path / "admin-guide.html")


def test_every_command_shown_is_in_the_help():
    cmds = usage()
    shown = shown_commands()
    assert len(shown) >= 25
    seen = set()
    for words in shown:
        assert words[0] == "redcapctl", words
        cmd = words[1]
        if cmd.startswith("-"):
            assert words[1:] in (["-h"], ["--help"]) and "-h|--help" in cmds, words
            continue
        if cmd == "model":
            cmd = "model " + words[2]
        assert cmd in cmds, words
        seen.add(words[1])
        lines = " ".join(cmds[cmd])
        for word in words[2:]:
            if word.startswith("-"):
                option = word.split("=", 1)[0]
                assert re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(option), lines), \
                    (option, words)
            elif cmd == "set" and "=" in word:
                assert word.split("=", 1)[0] in set_keys(), words
    assert {"create", "remove", "status", "stats", "set", "model", "start", "stop",
            "check"} <= seen


def test_every_set_key_shown_is_one_the_code_takes():
    r = subprocess.run([REDCAPCTL, "set", "x", "nokey=1"], capture_output=True, text=True)
    m = re.match(r"redcapctl: set: unknown key 'nokey' \((.*)\)\n", r.stderr)
    assert r.returncode == 2 and m, r.stderr
    keys = m.group(1).replace(" ", "").split(",")
    assert keys == set_keys()
    assert keys[-1] == "dirty"     # the whole list, over the help's lines


def tab_lines():
    """The redcaptab lines the guide shows: blocks that are the file, and the
    lines it appends to /etc/redcaptab."""
    lines = []
    for block in literal_blocks():
        if block[0].startswith("# /etc/redcaptab"):
            lines += block
        for line in block:
            m = re.fullmatch(r"# echo '(.*)' >> /etc/redcaptab", line)
            if m:
                lines.append(m.group(1))
    return lines


def test_the_redcaptab_lines_shown_are_good(tmp_path):
    lines = tab_lines()
    entries = [line for line in lines if not line.startswith("#")]
    assert len(entries) >= 3
    tab = tmp_path / "redcaptab"
    tab.write_text("\n".join(lines) + "\n")
    r = subprocess.run([REDCAPCTL, "check", "--tab", str(tab), "--fstab", "/dev/null"],
                       capture_output=True, text=True)
    assert [line for line in r.stderr.splitlines()
            if line.startswith(f"redcapctl: {tab}: line ")] == []
    assert f"ok       {tab}: {len(entries)} entries, every line good" in r.stdout.splitlines()


def printf_formats():
    """The string literals of redcapctl's sources with some text of their own, as
    regular expressions: each conversion matches any text."""
    src = "".join(read(os.path.join(TOP, "userspace", p)) for p in SOURCES)
    src = re.sub(r'"\s*PRI[a-z0-9]+\s*"', "u", src)
    src = re.sub(r'"\s*\n\s*"', "", src)
    src = re.sub(r'"\s*(MODEL_DIR|DEFAULT_TAB|SET_KEYS|VD_SUFFIX)\s*"', "%s", src)
    conversion = r"%[-+ #0-9.]*(?:l|ll|z|j)?[sdufgxc]|%%"
    formats = []
    for lit in re.findall(r'"((?:[^"\\\n]|\\.)*)"', src):
        lit = lit.replace("\\n", "").replace('\\"', '"')
        if len(re.sub(conversion + r"|[\s:%]", "", lit)) >= 5:
            formats.append(re.compile(".+?".join(re.escape(p) for p in re.split(conversion, lit))))
    return formats


def test_the_redcapctl_output_shown_is_printed_by_the_code():
    """In the blocks of commands that run redcapctl, every line that is not a command
    (after the root prompt) is one of the code's formats; an error line is
    'redcapctl: ' and a format."""
    formats = printf_formats()
    checked = 0
    for block in literal_blocks():
        if not any(line.startswith("# redcapctl ") for line in block) and \
                not block[0].startswith("redcapctl: "):
            continue
        for line in block:
            if line.startswith("# "):
                continue
            body = line[len("redcapctl: "):] if line.startswith("redcapctl: ") else line
            assert any(f.fullmatch(body) for f in formats), line
            checked += 1
    assert checked >= 15


def test_every_results_file_cited_exists():
    text = read(GUIDE)
    cited = set(re.findall(r"docs/results/([\w.+-]+)", text))
    cited |= set(re.findall(r"\b(\d{4}-\d\d-\d\d-[\w.+-]+\.(?:md|json|png))\b", text))
    assert len(cited) >= 6
    missing = sorted(name for name in cited if not os.path.isfile(os.path.join(RESULTS, name)))
    assert missing == []


def test_every_docs_file_named_exists():
    named = set(re.findall(r"``(docs/[\w./-]+|dm-[\w./-]+\.[ch])", read(GUIDE)))
    assert "docs/redcap.rst" in named
    assert [n for n in sorted(named) if not os.path.exists(os.path.join(TOP, n))] == []


def test_the_boot_section_names_only_units_and_rules_that_exist():
    """Every unit, rule or drop-in the guide names is one udev/ holds, one the
    generator makes (redcap@NAME.service), or systemd's own."""
    text = read(GUIDE)
    assert "Placeholder" not in text
    named = set(re.findall(r"[\w@.-]+\.(?:service|target|timer|rules|conf)\b", text))
    generated = {n for n in named if re.fullmatch(r"redcap(-model)?@[\w.+-]+\.service", n)}
    ours = set(os.listdir(os.path.join(TOP, "udev")))
    assert "redcap@srv.service" in generated
    assert named - generated <= ours, named - generated - ours
