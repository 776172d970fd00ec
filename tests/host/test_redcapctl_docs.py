# SPDX-License-Identifier: GPL-2.0
"""redcapctl's man pages and bash completion, against the code they describe:
the pages build with rst2man and render with groff without a warning, and
each is built, installed and packaged; every command and option of
'redcapctl --help' is in redcapctl(8) and in the completion; every option of
redcaptab.c is in redcaptab(5), whose examples the parser reads as the page
says; redcap-generator(8) names what the generator writes; and the
completion, sourced in a bash with bash-completion loaded, offers what it
should."""
import glob
import os
import re
import shutil
import subprocess

import pytest

from redcapctl_help import REDCAPCTL, SOURCES, help_text, usage_lines

TOP = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
MAN_DIR = os.path.join(TOP, "docs", "man")
PAGES = {"redcapctl.8": os.path.join(MAN_DIR, "redcapctl.8.rst"),
         "redcaptab.5": os.path.join(MAN_DIR, "redcaptab.5.rst"),
         "redcap-generator.8": os.path.join(MAN_DIR, "redcap-generator.8.rst")}
GENERATOR = os.path.join(TOP, "build", "udev", "redcap-generator")
COMPLETION = os.path.join(TOP, "udev", "redcapctl.bash-completion")
BASH_COMPLETION = "/usr/share/bash-completion/bash_completion"


@pytest.fixture(scope="module", autouse=True)
def built():
    subprocess.run(["make", "-s", "-C", os.path.join(TOP, "userspace")], check=True)


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """The pages, made by docs/man/Makefile into a directory of their own."""
    out = tmp_path_factory.mktemp("man")
    r = subprocess.run(["make", "-s", "-C", MAN_DIR, f"OUT={out}"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return {name: str(out / name) for name in PAGES}


def read(path):
    with open(path) as f:
        return f.read()


def need(tool, package):
    assert shutil.which(tool), f"{tool} not found: install {package}"


def commands():
    """Each command of the usage, in order, once."""
    seen = []
    for line in usage_lines():
        word = line.split()[1]
        if not word.startswith("-") and word not in seen:
            seen.append(word)
    return seen


def long_options(text):
    return set(re.findall(r"--[a-z][a-z-]*", text))


def section(rst, title):
    """The text of the section @title of a page's reStructuredText."""
    m = re.search(r"^%s\n=+\n(.*?)(?=^\S[^\n]*\n=+\n|\Z)" % re.escape(title), rst, re.S | re.M)
    assert m, f"no section {title}"
    return m.group(1)


def plain(rst):
    """Inline markup and escapes removed: the words as the reader sees them."""
    rst = rst.replace("\\ ", "").replace("**", "").replace("*", "")
    return re.sub(r"\\(.)", r"\1", rst)


def render(page):
    """The page as plain text, 80 columns wide, and groff's warnings."""
    r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-rLL=80n", "-P-cbou", page],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout, r.stderr


# --- the pages build and render cleanly -------------------------------------

@pytest.mark.parametrize("name", PAGES)
def test_page_builds_without_a_docutils_message(tmp_path, name):
    need("rst2man", "python3-docutils")
    out = tmp_path / name
    r = subprocess.run(["rst2man", "--halt=warning", "--report=info", PAGES[name], str(out)],
                       capture_output=True, text=True)
    assert (r.returncode, r.stderr) == (0, "")
    assert read(out).count(".TH ") == 1


def test_make_builds_every_page(pages):
    assert read(pages["redcapctl.8"]).splitlines()[29:31] == [
        '.TH "REDCAPCTL" 8 "2025" "redcap" "System Administration"', ".SH NAME"]
    assert '.TH "REDCAPTAB" 5 "2025" "redcap" "File Formats"' in read(pages["redcaptab.5"])
    assert '.TH "REDCAP-GENERATOR" 8 "2025" "redcap" "System Administration"' in \
        read(pages["redcap-generator.8"])


def test_every_page_is_tested_built_installed_and_packaged():
    """A page of docs/man is in PAGES (so the tests above cover it), in
    docs/man/Makefile's PAGES, installed and uninstalled by the top Makefile,
    and in redcap-tools."""
    assert sorted(f[:-len(".rst")] for f in os.listdir(MAN_DIR) if f.endswith(".rst")) == \
        sorted(PAGES)
    makefile = read(os.path.join(MAN_DIR, "Makefile"))
    top = read(os.path.join(TOP, "Makefile"))
    packaged = read(os.path.join(TOP, "debian", "redcap-tools.install")).splitlines()
    for name in PAGES:
        man = "man" + name.rsplit(".", 1)[1]
        assert re.search(r"^PAGES :=.* \$\(OUT\)/%s( |$)" % re.escape(name), makefile, re.M), name
        assert re.search(r"install -D -m 644 build/man/%s \\?\s*\$\(DESTDIR\)\$\(PREFIX\)"
                         r"/share/man/%s/%s\n" % (re.escape(name), man, re.escape(name)), top), name
        # installed by install-tools, removed by uninstall-tools
        assert top.count(f"$(DESTDIR)$(PREFIX)/share/man/{man}/{name}") == 2, name
        assert f"usr/share/man/{man}/{name}" in packaged, name


def test_make_without_rst2man_fails_clearly(tmp_path):
    r = subprocess.run(["make", "-s", "-C", MAN_DIR, f"OUT={tmp_path}",
                        "RST2MAN=/nonexistent/rst2man"], capture_output=True, text=True)
    assert r.returncode != 0
    assert r.stderr.splitlines()[0] == ("docs/man: /nonexistent/rst2man not found: install "
                                        "python3-docutils (make deps), or set RST2MAN")
    assert os.listdir(tmp_path) == []


def test_make_fails_on_a_docutils_warning_and_leaves_no_page(tmp_path):
    """A copy of docs/man whose page has broken markup."""
    man = tmp_path / "docs" / "man"
    man.mkdir(parents=True)
    shutil.copy(os.path.join(MAN_DIR, "Makefile"), man)
    for name, src in PAGES.items():
        text = read(src)
        if name == "redcapctl.8":
            text = text.replace("Options may come before", "Options may come `before", 1)
        (man / os.path.basename(src)).write_text(text)
    out = tmp_path / "out"
    r = subprocess.run(["make", "-s", "-C", str(man), f"OUT={out}", f"{out}/redcapctl.8"],
                       capture_output=True, text=True)
    assert r.returncode != 0
    assert ("(WARNING/2) Inline interpreted text or phrase reference start-string without "
            "end-string.") in r.stderr
    assert not os.path.exists(out / "redcapctl.8")
    assert not os.path.exists(out / "redcapctl.8.tmp")


@pytest.mark.parametrize("name", PAGES)
def test_page_renders_without_a_groff_warning(pages, name):
    need("groff", "groff-base")
    text, warnings = render(pages[name])
    assert warnings == ""
    title, section_nr = name.split(".")
    assert text.splitlines()[0].startswith(f"{title.upper()}({section_nr})")


@pytest.mark.parametrize("name", PAGES)
def test_man_shows_the_page_without_a_warning(pages, name):
    need("man", "man-db")
    r = subprocess.run(["man", "--warnings", "-E", "UTF-8", "-l", pages[name]], capture_output=True,
                       text=True, env=dict(os.environ, MANWIDTH="80", MAN_KEEP_FORMATTING="",
                                           MANPAGER="cat", PAGER="cat"))
    assert (r.returncode, r.stderr) == (0, "")
    assert "\nNAME\n" in r.stdout and "\nSEE ALSO\n" in r.stdout


@pytest.mark.parametrize("name,sections", [
    ("redcapctl.8", ["NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "OUTPUT",
                     "METRICS", "EXIT STATUS", "ERRORS", "EXAMPLES", "FILES", "SEE ALSO"]),
    ("redcaptab.5", ["NAME", "SYNOPSIS", "DESCRIPTION", "FIELDS", "OPTIONS", "SIZES",
                     "EXAMPLES", "FILES", "SEE ALSO"]),
    ("redcap-generator.8", ["NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS",
                            "KERNEL COMMAND LINE", "DIAGNOSTICS", "EXIT STATUS", "ENVIRONMENT",
                            "FILES", "SEE ALSO"]),
])
def test_page_has_its_sections_in_order(pages, name, sections):
    need("groff", "groff-base")
    text, _ = render(pages[name])
    assert [line for line in text.splitlines() if re.fullmatch(r"[A-Z][A-Z ]+", line)] == sections


def test_no_identifier_is_hyphenated(pages):
    need("groff", "groff-base")
    for page in pages.values():
        text, _ = render(page)
        assert "\u2010\n" not in text and not re.search(r"\w-\n", text)


# --- redcapctl(8) against redcapctl --help ----------------------------------

def test_synopsis_is_the_usage():
    rst = read(PAGES["redcapctl.8"])
    synopsis = []
    for line in section(rst, "SYNOPSIS").splitlines():
        if line.startswith("| "):
            synopsis.append(line[2:])
        elif line.strip():
            synopsis[-1] += " " + line.strip()
    assert [" ".join(plain(s).split()) for s in synopsis] == \
        [" ".join(u.split()) for u in usage_lines()]


def command_terms():
    """The first words of the definition terms of COMMANDS."""
    return [plain(line).split()[0] for line in definition_terms(
        section(read(PAGES["redcapctl.8"]), "COMMANDS"))]


def definition_terms(rst):
    """The unindented terms of the definition lists of @rst: a line after a blank
    one, whose definition follows it indented."""
    lines = rst.splitlines()
    return [line for i, line in enumerate(lines[1:-1], 1)
            if line and not line[0].isspace() and not lines[i - 1].strip()
            and lines[i + 1].startswith("    ")]


def test_every_command_has_its_entry():
    terms = command_terms()
    assert commands() == ["create", "remove", "list", "status", "stats", "set", "drop-cache",
                          "reset-stats", "model", "hot", "start", "stop", "upgrade", "check",
                          "simulate"]
    for cmd in commands():
        assert cmd in terms, cmd
    assert [t for t in terms if t not in commands()] == []


def test_every_option_of_the_help_is_in_commands():
    body = section(read(PAGES["redcapctl.8"]), "COMMANDS")
    for opt in long_options(help_text()) - {"--help"}:
        assert f"**{opt}**" in body, opt


def test_the_defaults_of_the_help_are_the_pages():
    text = " ".join(help_text().split())
    rst = plain(read(PAGES["redcapctl.8"]))
    assert ("cache 64M of 128K segments, policy adaptive+caware, estimator vdisk (spk with "
            "--no-model) by default") in text
    for default in ("(default 64M)", "(default 128K)", "(default adaptive+caware)",
                    "(vdisk, the default; refused with --no-model)",
                    "(default /var/lib/redcap/NAME.vdisk;", "(default /etc/redcaptab,"):
        assert default in " ".join(rst.split()), default
    assert "/var/lib/redcap/NAME.vdisk" in text and "/etc/redcaptab" in text


def c_sources():
    """The C text of the tool, its adjacent string literals joined as the compiler joins
    them, and the macros in its messages written as the conversions they stand for."""
    paths = sorted(glob.glob(os.path.join(TOP, "userspace", "*.c")))
    src = "".join(read(p) for p in paths + [os.path.join(TOP, "dm-redcap", "rc-args.c")])
    src = re.sub(r'"\s*\n\s*"', "", src)
    return re.sub(r'"\s*(MODEL_DIR|DEFAULT_TAB|SET_KEYS|VD_SUFFIX|PRI[a-z0-9]+)\s*"', "%s", src)


def test_every_message_of_errors_is_in_the_code():
    """Each fixed part of an ERRORS entry (bold, between placeholders), piece by piece
    between the ': ' that join the parts of a message, is text of the code; the values
    the code fills in through %s are the module and the UUID prefix."""
    src = c_sources()
    terms = [line for line in section(read(PAGES["redcapctl.8"]), "ERRORS").splitlines()
             if line.startswith("**redcapctl")]
    assert len(terms) >= 18
    for term in terms:
        for bold in re.findall(r"\*\*(.+?)\*\*", term):
            for piece in re.split(r":\s", bold.replace("redcapctl:", "")):
                piece = piece.strip(" :")
                filled = re.sub(r"dm-redcap|dm-vdisk|REDCAP-", "%s", piece)
                assert len(piece) < 4 or piece in src or filled in src, (piece, term)


def test_the_udev_rule_named_is_the_one_in_udev():
    named = set(re.findall(r"\d\d-[a-z-]+\.rules", read(PAGES["redcapctl.8"])))
    assert named and named <= set(os.listdir(os.path.join(TOP, "udev")))


def test_exit_statuses_are_those_of_the_code():
    rst = section(read(PAGES["redcapctl.8"]), "EXIT STATUS")
    assert re.findall(r"^\*\*(\d+)\*\*$", rst, re.M) == ["0", "1", "2", "130"]
    assert "Exit status: 0 success, 1 error, 2 usage error." in help_text()


def literal_lines(path, titles):
    """The lines of the literal blocks of sections @titles, as docutils reads them."""
    from docutils import nodes
    from docutils.core import publish_doctree

    def find(node, kind):   # findall() since docutils 0.18, traverse() before
        return (node.findall if hasattr(node, "findall") else node.traverse)(kind)

    tree = publish_doctree(read(path), settings_overrides={"report_level": 5})
    lines = []
    for sec in find(tree, nodes.section):
        if sec[0].astext() in titles:
            for block in find(sec, nodes.literal_block):
                lines.append(block.astext().splitlines())
    return lines


def sources():
    """The text of redcapctl's sources, one after the other."""
    return "".join(read(os.path.join(TOP, "userspace", p)) for p in SOURCES)


def printf_formats():
    """The string literals of redcapctl's sources with some text of their own, as
    regular expressions: each conversion matches any text."""
    src = sources()
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


def test_the_outputs_shown_are_printed_by_the_code():
    """Every line of output in the literal blocks of COMMANDS, OUTPUT and EXAMPLES is one
    of the code's formats; list's lines are in its columns."""
    formats = printf_formats()
    src = sources()
    columns = re.search(r'printf\("(%-16s[^"]*)\\n", "NAME"', src).group(1)
    widths = [int(w) for w in re.findall(r"%-(\d+)s", columns)]
    not_output = ("#", "...", "UUID=", "/dev/mapper/srv  /srv", "0 131072 redcap ")
    checked = 0
    for block in literal_lines(PAGES["redcapctl.8"], ("COMMANDS", "OUTPUT", "EXAMPLES")):
        if block[0].startswith("NAME "):
            for line in block:
                fields, at = [], 0
                for w in widths:
                    fields.append(line[at:at + w].strip())
                    at += w + 1
                fields.append(line[at:])
                assert (columns % tuple(fields)).rstrip() == line, line
                checked += 1
            continue
        continued = False
        for line in block:
            # a command (a "$ " one too), and its lines continued with "\\"
            command = continued or line.startswith(("$ ",) + not_output)
            continued = command and line.endswith("\\")
            if command:
                continue
            body = re.sub(r"^(ok|problem) +", "", line)
            assert any(f.fullmatch(body) for f in formats), line
            checked += 1
    assert checked >= 30


# --- redcaptab(5) against redcaptab.c ---------------------------------------

def option_table():
    """The option names of parse_option() in redcaptab.c."""
    src = read(os.path.join(TOP, "userspace", "redcaptab.c"))
    m = re.search(r"names\[O_NR\] = \{(.*?)\};", src, re.S)
    assert m
    return re.findall(r'"([^"]+)"', m.group(1))


def test_every_option_of_the_parser_is_in_redcaptab_5():
    body = section(read(PAGES["redcaptab.5"]), "OPTIONS")
    terms = [plain(line).split("=")[0] for line in definition_terms(body)]
    table = option_table()
    assert table == ["segment", "policy", "write_policy", "estimator", "nomodel", "nofail",
                     "noauto", "initramfs", "on-fail", "readahead", "x-systemd.device-timeout"]
    assert terms == table[:-1] + ["key", "x-systemd.device-timeout", "x-anything"]
    # key=N: every tunable of the target, by name
    tunables = re.findall(r'\[RC_TUN_\w+\] = \{ "(\w+)"',
                          read(os.path.join(TOP, "dm-redcap", "rc-args.c")))
    assert "hdc" in tunables and len(tunables) == 9
    entry = body[body.index("*key*"):body.index("**x-systemd.device-timeout=**")]
    assert [t for t in tunables if f"**{t}**" not in entry] == []


def check_tab(tmp_path, lines):
    """redcapctl check's verdict on a table file: its ok line, and each bad line's why."""
    tab = tmp_path / "redcaptab"
    tab.write_text("\n".join(lines) + "\n")
    r = subprocess.run([REDCAPCTL, "check", "--tab", str(tab), "--fstab", "/dev/null"],
                       capture_output=True, text=True)
    ok = [line for line in r.stdout.splitlines() if line.startswith(f"ok       {tab}: ")]
    bad = [line.split(f"redcapctl: {tab}: ", 1)[1] for line in r.stderr.splitlines()
           if line.startswith(f"redcapctl: {tab}: line ")]
    return ok, bad


def literal_after(rst, text=None):
    """The literal block that follows @text (or the first one), unindented."""
    block = (rst.split(text, 1)[1] if text else rst).split("::\n\n", 1)[1]
    lines = []
    for line in block.splitlines():
        if line and not line.startswith("    "):
            break
        lines.append(line[4:])
    return "\n".join(lines).strip("\n").splitlines()


def test_the_example_file_of_redcaptab_5_is_good(tmp_path):
    rst = read(PAGES["redcaptab.5"])
    example = literal_after(section(rst, "EXAMPLES"))
    assert example[0].startswith("# /etc/redcaptab")
    ok, bad = check_tab(tmp_path, example)
    assert (ok, bad) == ([f"ok       {tmp_path / 'redcaptab'}: 6 entries, every line good"], [])


def test_the_bad_lines_of_redcaptab_5_say_what_the_parser_says(tmp_path):
    rst = read(PAGES["redcaptab.5"])
    block = literal_after(rst, "the line left out:")
    lines, whys = block[0::2], [w.strip() for w in block[1::2]]
    assert len(lines) == len(whys) >= 7
    _, bad = check_tab(tmp_path, lines)
    assert bad == [f"line {i}: {why}" for i, why in enumerate(whys, 1)]


def test_the_name_rules_of_the_pages_are_the_parsers(tmp_path):
    ok, bad = check_tab(tmp_path, ["a" * 124 + " /dev/x 64M", "b" * 125 + " /dev/x 64M",
                                   "-a /dev/x 64M", ".a /dev/x 64M", "a-vd /dev/x 64M",
                                   "A+_.-z9 /dev/x 64M", "a:b /dev/x 64M"])
    assert [b.split(":")[0] for b in bad] == ["line 2", "line 3", "line 4", "line 5", "line 7"]
    assert "At most 124 characters" in read(PAGES["redcaptab.5"])


def test_the_sizes_of_the_pages_are_the_parsers(tmp_path):
    ok, bad = check_tab(tmp_path, ["a /dev/x 64M", "b /dev/x 64m", "c /dev/x 64MiB",
                                   "d /dev/x 64mib", "e /dev/x 67108864", "f /dev/x 64MB",
                                   "g /dev/x 1.5G", "h /dev/x 1T segment=1M"])
    assert [b.split(":")[0] for b in bad] == ["line 6", "line 7"]
    text = " ".join(plain(read(PAGES["redcaptab.5"])).split())
    assert "64M, 64m, 64MiB and 67108864 are the same size" in text
    assert "64MB is not a size" in text


# --- redcap-generator(8) against redcap-generator.c -------------------------

def generator_src():
    return read(os.path.join(TOP, "udev", "redcap-generator.c"))


def run_generator(tmp_path, tab):
    """The generator on a table, its messages on stderr; (run, {path: link target or ''})."""
    subprocess.run(["make", "-s", "-C", os.path.join(TOP, "udev"), GENERATOR], check=True,
                   env={k: v for k, v in os.environ.items() if k != "REDCAPCTL"})
    (tmp_path / "redcaptab").write_text(tab)
    out = tmp_path / "normal"
    out.mkdir()
    env = dict(os.environ, REDCAPTAB=str(tmp_path / "redcaptab"), SYSTEMD_PROC_CMDLINE="",
               SYSTEMD_IN_INITRD="0", SYSTEMD_LOG_TARGET="console")
    r = subprocess.run([GENERATOR, str(out)], capture_output=True, text=True, env=env)
    made = {str(p.relative_to(out)): os.readlink(p) if p.is_symlink() else ""
            for p in out.rglob("*") if p.is_file() or p.is_symlink()}
    return r, made


def test_redcap_generator_8_names_what_the_generator_writes(tmp_path):
    """The terms of DESCRIPTION, for an entry NAME over /dev/md/x (device unit
    dev-md-x.device) with a device timeout, and the two .wants links the text
    describes, are all that the generator writes."""
    r, made = run_generator(tmp_path, "NAME /dev/md/x 64M x-systemd.device-timeout=5s\n")
    assert (r.returncode, r.stderr) == (0, "")
    rst = read(PAGES["redcap-generator.8"])
    terms = [plain(line).split()[0].rstrip(",").replace("origin.", "dev-md-x.")
             for line in definition_terms(section(rst, "DESCRIPTION"))]
    links = ["redcap@NAME.service.wants/redcap-model@NAME.service",
             "redcap-model@NAME.service.wants/redcap-model-save@NAME.timer"]
    assert sorted(made) == sorted(terms + links)
    text = " ".join(plain(section(rst, "DESCRIPTION")).split())
    assert "a link in its .wants/" in text and "timer redcap-model-save@NAME.timer" in text


def test_the_options_of_redcap_generator_8_are_those_the_generator_reads():
    fields = set(re.findall(r"\be->(\w+)", generator_src()))
    fields -= {"name", "origin", "origin_kind", "line", "device_timeout_us"}
    read_options = {f.replace("device_timeout", "x-systemd.device-timeout") for f in fields}
    body = section(read(PAGES["redcap-generator.8"]), "OPTIONS")
    assert sorted(plain(t).split("=")[0] for t in definition_terms(body)) == sorted(read_options)


def test_the_kernel_switch_of_redcap_generator_8_is_the_codes():
    # rctab_parse_boolean(), which the generator and the udev helper share
    m = re.search(r"no\[\] = \{(.*?)\};",
                  read(os.path.join(TOP, "userspace", "redcaptab.c")))
    assert m
    words = set(re.findall(r"\w+", plain(section(read(PAGES["redcap-generator.8"]),
                                                  "KERNEL COMMAND LINE"))))
    assert set(re.findall(r'"(\w+)"', m.group(1))) <= words


def test_the_message_of_redcap_generator_8_is_the_generators(tmp_path):
    r, made = run_generator(tmp_path, "a /dev/md/a 64M\nb /dev/md/b 64M\n"
                                      "c /dev/md/c 64M nofial\n")
    example = literal_after(section(read(PAGES["redcap-generator.8"]), "DIAGNOSTICS"))
    assert len(example) == 1
    tab = str(tmp_path / "redcaptab")
    assert r.returncode == 0
    assert r.stderr == re.sub(r"\[\d+\]", "", example[0]).replace("/etc/redcaptab", tab) + "\n"
    assert "redcap@b.service" in made and "redcap@c.service" not in made


def test_the_boot_design_is_where_redcap_generator_8_says():
    """make install puts docs/boot.rst in PREFIX/share/doc/redcap/; the package
    moves that directory to redcap-tools', and dh_compress gzips a document
    of more than 4 KiB that debian/rules does not exclude."""
    see_also = plain(section(read(PAGES["redcap-generator.8"]), "SEE ALSO"))
    assert "PREFIX/share/doc/redcap/boot.rst from make install" in " ".join(see_also.split())
    assert "install -D -m 644 docs/boot.rst $(DESTDIR)$(PREFIX)/share/doc/redcap/boot.rst" in \
        read(os.path.join(TOP, "Makefile"))
    assert "usr/share/doc/redcap/* usr/share/doc/redcap-tools/" in \
        read(os.path.join(TOP, "debian", "redcap-tools.install")).splitlines()
    assert os.path.getsize(os.path.join(TOP, "docs", "boot.rst")) > 4096
    assert "dh_compress -X.json\n" in read(os.path.join(TOP, "debian", "rules"))
    assert "/usr/share/doc/redcap-tools/boot.rst.gz" in see_also


# --- the bash completion ----------------------------------------------------

DRIVER = r'''
source "$BASH_COMPLETION" || exit 9
source "$COMPLETION" || exit 9
_redcapctl_dm_driver=$DM_DRIVER
_redcapctl_sys_block=$SYS_BLOCK
compopt() { _compopts+=("$*"); }
fn=$(complete -p redcapctl) || exit 9
fn=${fn#*-F }
fn=${fn%% *}
COMP_LINE=$1
COMP_POINT=${#COMP_LINE}
COMP_TYPE=9
shift
COMP_WORDS=("$@")
COMP_CWORD=$(($# - 1))
"$fn" redcapctl "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
printf '%s\n' "${COMPREPLY[@]}" "--compopt--" "${_compopts[@]}"
'''


def comp_words(line):
    """COMP_WORDS as bash makes them: words split at blanks, and every run of the
    other COMP_WORDBREAKS characters that matter here ('=', ':') a word of its own."""
    words = re.findall(r"[=:]+|[^\s=:]+", line)
    if not line or line[-1].isspace():
        words.append("")
    return words


def complete(line, cwd=None, path=None, dm_driver="/nonexistent", sys_block="/nonexistent"):
    """The candidates the completion offers at the end of @line, and its compopt calls.
    Unless told otherwise, the completion sees no device-mapper: it never runs this
    host's dmsetup, which as root would create /dev/mapper/control."""
    assert os.path.exists(BASH_COMPLETION), "install bash-completion"
    env = dict(os.environ, BASH_COMPLETION=BASH_COMPLETION, COMPLETION=COMPLETION,
               DM_DRIVER=dm_driver, SYS_BLOCK=sys_block)
    if path is not None:
        env["PATH"] = path
    r = subprocess.run(["bash", "--norc", "--noprofile", "-c", DRIVER, "driver", line,
                        *comp_words(line)], capture_output=True, text=True, env=env, cwd=cwd)
    assert (r.returncode, r.stderr) == (0, ""), line
    out = r.stdout.split("\n")
    sep = out.index("--compopt--")
    return out[:sep], [o for o in out[sep + 1:] if o]


def candidates(line, **kw):
    return sorted(complete(line, **kw)[0])


def test_the_script_is_bash():
    r = subprocess.run(["bash", "-n", COMPLETION], capture_output=True, text=True)
    assert (r.returncode, r.stderr) == (0, "")


def test_the_script_registers_its_function():
    r = subprocess.run(["bash", "--norc", "--noprofile", "-c",
                        f"source {BASH_COMPLETION}; source {COMPLETION}; complete -p redcapctl"],
                       capture_output=True, text=True)
    assert (r.returncode, r.stdout, r.stderr) == (0, "complete -F _redcapctl redcapctl\n", "")


def test_the_commands_are_those_of_the_help():
    assert candidates("redcapctl ") == sorted(commands())
    assert candidates("redcapctl -") == ["--help", "-h"]


@pytest.mark.parametrize("line,expected", [
    ("redcapctl cr", ["create"]),
    ("redcapctl st", ["start", "stats", "status", "stop"]),
    ("redcapctl create x /dev/null --po", ["--policy"]),
    ("redcapctl create x y --policy a", ["adaptive", "adaptive+caware", "always"]),
    ("redcapctl create x y --policy=a", ["adaptive", "adaptive+caware", "always"]),
    ("redcapctl create x y --write-policy ", ["back", "invalidate", "selective", "update"]),
    ("redcapctl create x y --estimator ", ["spk", "vdisk"]),
    ("redcapctl create x y --segment 1", ["128K", "16K", "1M"]),
    ("redcapctl create x y --ram ", []),
    ("redcapctl create ", []),
    ("redcapctl create x y ", []),
    ("redcapctl set x pol", ["policy="]),
    ("redcapctl set x policy=a", ["adaptive", "adaptive+caware", "always"]),
    ("redcapctl set x write_policy=", ["back", "invalidate", "selective", "update"]),
    ("redcapctl set x estimator=v", ["vdisk"]),
    ("redcapctl set x window=", []),
    ("redcapctl set x policy=off ", ["budget_cap_ms=", "budget_share=", "decay_ms=",
                                     "dirty=", "estimator=", "hdc=", "hot_period=", "margin=",
                                     "prefetch=", "window=", "write_policy="]),
    ("redcapctl model ", ["load", "save", "train"]),
    ("redcapctl model train x --", ["--drive-cache", "--help", "--max-kib", "--seed", "--time",
                                    "--write"]),
    ("redcapctl model save x --", ["--help", "--if-present"]),
    ("redcapctl model train x ", []),
    ("redcapctl stats x --w", ["--watch", "--watch="]),
    ("redcapctl stats x --watch=", []),
    ("redcapctl stats x --format ", ["text", "json", "prometheus"]),
    ("redcapctl stats --format=p", ["prometheus"]),
    ("redcapctl stats --all --format prometheus ", []),
    ("redcapctl simulate --format ", ["blkparse", "csv"]),
    ("redcapctl stats x --out -", ["-"]),
    ("redcapctl layout ", []),
    ("redcapctl start --all ", []),
    ("redcapctl list ", []),
])
def test_completion_offers(line, expected):
    assert candidates(line) == sorted(expected)


def test_a_key_is_offered_without_a_space_after_it():
    assert complete("redcapctl set x pol") == (["policy="], ["-o nospace"])
    assert complete("redcapctl stats x --watch")[1] == []


def set_keys_of_the_code():
    """The keys redcapctl set takes, as its error about an unknown key lists them."""
    r = subprocess.run([REDCAPCTL, "set", "x", "nokey=1"], capture_output=True, text=True)
    m = re.fullmatch(r"redcapctl: set: unknown key 'nokey' \((.*)\)\n", r.stderr.splitlines(True)[0])
    assert r.returncode == 2 and m, r.stderr
    return m.group(1).split(", ")


def test_the_set_keys_and_values_are_the_codes():
    src = sources()
    keys = set_keys_of_the_code()
    policies = re.search(r'#define POLICIES\s+"one of ([^"]+)"', src).group(1).split(", ")
    # the tunables named in the usage text are the target's, in its order
    args = read(os.path.join(TOP, "dm-redcap", "rc-args.c"))
    table = args[args.index("} rc_tunables[RC_TUN_NR] = {"):]
    tunables = re.findall(r'\] = \{ "(\w+)"', table[:table.index("};")])
    assert keys == ["policy", "write_policy", "estimator"] + tunables
    assert candidates("redcapctl set x ") == sorted(k + "=" for k in keys)
    assert candidates("redcapctl set x policy=") == sorted(policies)
    assert candidates("redcapctl create x y --policy ") == sorted(policies)


def usage_options(line):
    return long_options(line) | {"--help"}


@pytest.mark.parametrize("usage", usage_lines()[:-1], ids=lambda u: " ".join(u.split()[1:3]))
def test_each_command_offers_the_options_of_its_usage(usage):
    words = usage.split()
    cmd = words[1]
    line = f"redcapctl {cmd} "
    if cmd == "model":
        line += f"{words[2].split('|')[0]} x "
    offered = set(candidates(line + "--")) - {"--watch="}
    assert offered == usage_options(usage), usage


FAKE_DMSETUP = """#!/bin/sh
echo "$*" >> "$0.args"
cat <<'EOF'
data REDCAP-data
data-vd REDCAP-data-vd
lvroot LVM-Wq2x1
other-vd
srv REDCAP-srv
impostor REDCAP-someone
EOF
"""


def fake_dmsetup(tmp_path, script):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "dmsetup").write_text(script)
    (bindir / "dmsetup").chmod(0o755)
    return f"{bindir}:/usr/bin:/bin", bindir / "dmsetup.args"


@pytest.mark.parametrize("line", ["redcapctl status ", "redcapctl remove ", "redcapctl stats ",
                                  "redcapctl set ", "redcapctl drop-cache ",
                                  "redcapctl reset-stats ", "redcapctl stats --out m.prom ",
                                  "redcapctl model save ",
                                  "redcapctl model train "])
def test_stack_names_are_the_redcap_devices_without_their_model_layers(tmp_path, line):
    path, args = fake_dmsetup(tmp_path, FAKE_DMSETUP)
    assert candidates(line, path=path, dm_driver="/") == ["data", "srv"]
    assert args.read_text().split("\n")[0].split()[:6] == ["info", "-c", "--noheadings", "-o",
                                                           "name,uuid", "--separator"]


def sys_block(tmp_path, devices):
    """A /sys/block with device-mapper devices {kernel name: (name, uuid)}."""
    root = tmp_path / "sys-block"
    for dev, (name, uuid) in devices.items():
        (root / dev / "dm").mkdir(parents=True)
        (root / dev / "dm" / "name").write_text(name + "\n")
        (root / dev / "dm" / "uuid").write_text(uuid + "\n")
    (root / "sda").mkdir(parents=True)
    return str(root)


SYS_DEVICES = {"dm-0": ("data", "REDCAP-data"), "dm-1": ("data-vd", "REDCAP-data-vd"),
               "dm-2": ("lvroot", "LVM-Wq2x1"), "dm-3": ("srv", "REDCAP-srv"),
               "dm-4": ("plain", "")}


def test_a_failing_dmsetup_falls_back_to_sysfs_silently(tmp_path):
    """As for a user who is not root: dmsetup fails, sysfs is readable."""
    path, _ = fake_dmsetup(tmp_path, "#!/bin/sh\necho 'Permission denied' >&2\nexit 1\n")
    sysfs = sys_block(tmp_path, SYS_DEVICES)
    # complete() asserts that nothing was written on stderr
    assert candidates("redcapctl status ", path=path, dm_driver="/", sys_block=sysfs) == \
        ["data", "srv"]
    assert candidates("redcapctl status ", path=path, dm_driver="/") == []


def test_no_dmsetup_at_all_is_silent(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    path = f"{empty}:/usr/bin:/bin"
    assert shutil.which("dmsetup", path=path) is None
    assert candidates("redcapctl status ", path=path, dm_driver="/") == []
    assert candidates("redcapctl status ", path=path, dm_driver="/",
                      sys_block=sys_block(tmp_path, SYS_DEVICES)) == ["data", "srv"]


def test_without_the_driver_dmsetup_is_not_run(tmp_path):
    path, args = fake_dmsetup(tmp_path, FAKE_DMSETUP)
    assert candidates("redcapctl status ", path=path,
                      sys_block=sys_block(tmp_path, SYS_DEVICES)) == []
    assert not args.exists()


def test_start_and_stop_offer_the_names_of_the_table(tmp_path):
    tab = tmp_path / "tab"
    tab.write_text("# name origin size\n\n  # indented\nalpha /dev/x 64M\nbeta PARTLABEL=b 1G nofail\n"
                   "srv /dev/y 8M\n")
    path, _ = fake_dmsetup(tmp_path, FAKE_DMSETUP)
    assert candidates(f"redcapctl start --tab {tab} ", path=path) == ["alpha", "beta", "srv"]
    assert candidates(f"redcapctl start --tab={tab} a", path=path) == ["alpha"]
    # stop: the table's and the running stacks, each once
    assert candidates(f"redcapctl stop --tab {tab} ", path=path, dm_driver="/") == \
        ["alpha", "beta", "data", "srv"]
    assert candidates("redcapctl start --tab /nonexistent ", path=path) == []
    assert candidates(f"redcapctl start --tab {tab} --all ", path=path) == []


def test_files_for_the_origin_the_model_file_and_the_tab(tmp_path):
    (tmp_path / "disk.img").write_text("")
    (tmp_path / "dir").mkdir()
    assert candidates("redcapctl create x d", cwd=tmp_path) == ["dir", "disk.img"]
    assert candidates("redcapctl create x /dev/nul") == ["/dev/null"]
    assert candidates("redcapctl create x PARTL") == ["PARTLABEL="]
    assert candidates("redcapctl model save x d", cwd=tmp_path) == ["dir", "disk.img"]
    assert candidates("redcapctl model train x d", cwd=tmp_path) == []
    assert candidates("redcapctl start --tab d", cwd=tmp_path) == ["dir", "disk.img"]
    assert candidates("redcapctl check --fstab d", cwd=tmp_path) == ["dir", "disk.img"]
    assert candidates("redcapctl stats x --out d", cwd=tmp_path) == ["dir", "disk.img"]


@pytest.mark.parametrize("tag,directory", [("PARTUUID", "/dev/disk/by-partuuid"),
                                           ("PARTLABEL", "/dev/disk/by-partlabel")])
def test_partitions_by_tag(tag, directory):
    there = sorted(os.listdir(directory)) if os.path.isdir(directory) else []
    assert candidates(f"redcapctl create x {tag}=") == there
