# SPDX-License-Identifier: GPL-2.0
"""The udev side of boot-time stacking on the host, without a device of its
own: redcap-udev (udev/redcap-udev.c) on made-up device nodes and links,
and udev/59-redcap-member.rules and 63-redcap-member.rules run by this
host's own udev rules under `udevadm test`.  Anything that would touch /dev
or /run happens in a mount namespace of the test's own, over a copy of /dev.
The real devices (loop, GPT partitions, device-mapper, ext4) are
tests/guest/test_udev_member.py's."""
import os
import re
import shutil
import subprocess

import pytest

TOP = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
HELPER = os.path.join(TOP, "build", "udev", "redcap-udev")
RULES = ["59-redcap-member.rules", "63-redcap-member.rules"]


@pytest.fixture(scope="module", autouse=True)
def built():
    subprocess.run(["make", "-s", "-C", os.path.join(TOP, "udev"), HELPER], check=True)


def helper(tab, *args, env=None, mode="--early"):
    """Run redcap-udev on a table's text (None: no file); the CompletedProcess."""
    e = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "SYSTEMD_PROC_CMDLINE": ""}
    if tab is not None:
        e["REDCAPTAB"] = tab
    e.update(env or {})
    return subprocess.run([HELPER, mode, *args], capture_output=True, text=True, env=e)


def props(out):
    return dict(line.split("=", 1) for line in out.splitlines())


@pytest.fixture
def tab(tmp_path):
    """tab(text) -> the path of a table holding text."""
    def write(text):
        path = tmp_path / "redcaptab"
        path.write_text(text)
        return str(path)
    return write


def escape(name):
    return subprocess.run(["systemd-escape", name], capture_output=True, text=True,
                          check=True).stdout.strip()


# --- matching: names the device has in this event -----------------------------

def test_a_kernel_name_is_matched_by_devnode(tab):
    r = helper(tab("data /dev/sdz 64M\n"), "/dev/sdz")
    assert (r.returncode, r.stderr) == (0, "")
    assert r.stdout == "REDCAP_NAME=data\n.REDCAP_UNIT=redcap@data.service\n"


def test_nothing_is_printed_for_a_device_not_in_the_table(tab):
    r = helper(tab("data /dev/sdz 64M\nsrv PARTUUID=1234-02 64M\n"), "/dev/sdy",
               "disk/by-id/ata-X", "disk/by-partuuid/1234-01")
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    r = helper(tab("data /dev/sdz 64M\n"), "/dev/sdy", mode="--late")
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")


@pytest.mark.parametrize("origin, link", [
    ("/dev/disk/by-id/wwn-0x5000c500a1b2c3d4", "disk/by-id/wwn-0x5000c500a1b2c3d4"),
    ("/dev/disk/by-path/pci-0000:00:1f.2-ata-1-part2", "disk/by-path/pci-0000:00:1f.2-ata-1-part2"),
    ("/dev/disk/by-id/wwn-0x5", "/dev/disk/by-id/wwn-0x5"),
    ("/dev//disk/./by-id/wwn-0x5/", "disk/by-id/wwn-0x5"),
    ("/dev/mapper/vg0-data", "mapper/vg0-data"),
    ("/dev/md/backup", "md/backup"),
    ("/dev/disk/by-partuuid/7c3a9d1e-02", "disk/by-partuuid/7c3a9d1e-02"),
])
@pytest.mark.parametrize("mode", ["--early", "--late"])
def test_a_path_is_matched_by_the_links_of_this_event(tab, origin, link, mode):
    r = helper(tab(f"data {origin} 64M\n"), "/dev/sdz", "disk/by-diskseq/9", link, mode=mode)
    assert (r.returncode, r.stderr) == (0, "")
    assert props(r.stdout)["REDCAP_NAME"] == "data"


def test_a_link_of_another_device_is_no_match(tab):
    r = helper(tab("data /dev/disk/by-id/wwn-0x5 64M\n"), "/dev/sdz", "disk/by-id/wwn-0x55",
               "disk/by-id/wwn-0x5-part1", "by-id/wwn-0x5")
    assert (r.returncode, r.stdout) == (0, "")


def test_the_first_entry_that_names_the_device_wins(tab):
    r = helper(tab("a /dev/sdy 64M\nb /dev/disk/by-id/x 64M\nc /dev/sdz 64M\n"),
               "/dev/sdz", "disk/by-id/x")
    assert props(r.stdout)["REDCAP_NAME"] == "b"


@pytest.mark.parametrize("origin, env, links", [
    ("PARTUUID=7c3a9d1e-02", {"ID_PART_ENTRY_UUID": "7c3a9d1e-02"}, []),
    ("PARTUUID=0fc63daf-8483-4772-8e79-3d69d8477de4",
     {"ID_PART_ENTRY_UUID": "0fc63daf-8483-4772-8e79-3d69d8477de4"}, []),
    ("PARTLABEL=scratch", {"ID_PART_ENTRY_NAME": "scratch"}, []),
    # udev keeps a partition name encoded as blkid_encode_string() does.
    ("PARTLABEL=my(disk)", {"ID_PART_ENTRY_NAME": r"my\x28disk\x29"}, []),
    ("PARTLABEL=données", {"ID_PART_ENTRY_NAME": "données"}, []),
    ("PARTUUID=7c3a9d1e-02", {}, ["disk/by-partuuid/7c3a9d1e-02"]),
    ("PARTLABEL=my(disk)", {}, [r"disk/by-partlabel/my\x28disk\x29"]),
    # A UUID in any case, as the generator binds it to the lower-case link.
    ("PARTUUID=7C3A9D1E-02", {"ID_PART_ENTRY_UUID": "7c3a9d1e-02"}, []),
    ("PARTUUID=0FC63DAF-8483-4772-8e79-3d69d8477de4", {},
     ["disk/by-partuuid/0fc63daf-8483-4772-8e79-3d69d8477de4"]),
])
def test_late_partuuid_and_partlabel_from_blkid_s_properties(tab, origin, env, links):
    r = helper(tab(f"data {origin} 64M\n"), "/dev/sdz3", *links, env=env, mode="--late")
    assert (r.returncode, r.stderr) == (0, "")
    assert props(r.stdout)["REDCAP_NAME"] == "data"


@pytest.mark.parametrize("origin, env", [
    ("PARTUUID=7c3a9d1e-02", {"ID_PART_ENTRY_UUID": "7c3a9d1e-03"}),
    ("PARTUUID=7c3a9d1e-02", {"ID_PART_ENTRY_NAME": "7c3a9d1e-02"}),
    ("PARTLABEL=scratch", {"ID_PART_ENTRY_NAME": "scratch2"}),
    ("PARTLABEL=scratch", {"ID_PART_ENTRY_UUID": "scratch"}),
    ("PARTLABEL=scratch", {"ID_PART_ENTRY_NAME": "Scratch"}),
    ("PARTLABEL=my(disk)", {"ID_PART_ENTRY_NAME": "my(disk)"}),
])
def test_late_partuuid_and_partlabel_must_be_equal(tab, origin, env):
    # A partition name exactly, as the by-partlabel link names it.
    r = helper(tab(f"data {origin} 64M\n"), "/dev/sdz3", env=env, mode="--late")
    assert (r.returncode, r.stdout) == (0, "")


def test_early_does_not_trust_the_environment_for_the_partition(tab):
    # --early runs before blkid: ID_PART_ENTRY_* there could only be stale.
    r = helper(tab("data PARTUUID=7c3a9d1e-02 64M\n"), "/dev/sdz3",
               env={"ID_PART_ENTRY_UUID": "7c3a9d1e-02"})
    assert (r.returncode, r.stdout) == (0, "")


# --- what a match prints ---------------------------------------------------------

def test_noauto_is_a_member_that_systemd_is_not_asked_to_start(tab):
    r = helper(tab("data /dev/sdz 64M noauto,nofail\n"), "/dev/sdz")
    assert (r.returncode, r.stdout, r.stderr) == (0, "REDCAP_NAME=data\n", "")


@pytest.mark.parametrize("name", ["a-b", "a+b", "x.y", "A_1", "a-b-c", "data", "0", "+" * 124,
                                  "a-b.c+d_e-vdx"])
def test_the_unit_instance_is_escaped_as_systemd_escape_does(tab, name):
    r = helper(tab(f"{name} /dev/sdz 64M\n"), "/dev/sdz")
    assert r.returncode == 0
    assert props(r.stdout)[".REDCAP_UNIT"] == f"redcap@{escape(name)}.service"


def test_late_drops_the_filesystem_links_and_keeps_the_others(tab):
    r = helper(tab("data /dev/disk/by-id/ata-X 64M\n"), "/dev/sdz", "disk/by-diskseq/3",
               "disk/by-uuid/3e6be9de-8139-11d1-9106-a43f08d823a6", "disk/by-id/ata-X",
               r"disk/by-label/my\x20data", "disk/by-path/pci-0000:00:1f.2-ata-1",
               "disk/by-id/wwn-0x5", mode="--late")
    assert (r.returncode, r.stderr) == (0, "")
    assert r.stdout == ("REDCAP_NAME=data\n.REDCAP_UNIT=redcap@data.service\n"
                        ".REDCAP_FIX_LINKS=1\n.REDCAP_LINKS=disk/by-diskseq/3 disk/by-id/ata-X "
                        "disk/by-path/pci-0000:00:1f.2-ata-1 disk/by-id/wwn-0x5\n")


def test_late_with_no_filesystem_link_prints_no_link_list(tab):
    r = helper(tab("data /dev/disk/by-id/ata-X 64M\n"), "/dev/sdz", "disk/by-id/ata-X",
               mode="--late")
    assert r.stdout == "REDCAP_NAME=data\n.REDCAP_UNIT=redcap@data.service\n"


def test_late_with_only_filesystem_links_keeps_none(tab):
    r = helper(tab("data /dev/sdz 64M\n"), "/dev/sdz", "disk/by-uuid/x", "/dev/disk/by-label/y",
               mode="--late")
    assert r.stdout == "REDCAP_NAME=data\n.REDCAP_UNIT=redcap@data.service\n.REDCAP_FIX_LINKS=1\n"


def test_late_after_an_early_match_only_fixes_the_links(tab):
    # The early rule found the entry: the table is not read again.
    r = helper(None, "/dev/md127", "md/backup", "disk/by-uuid/x", "disk/by-id/md-uuid-1",
               env={"REDCAP_NAME": "backup"}, mode="--late")
    assert (r.returncode, r.stderr) == (0, "")
    assert r.stdout == ".REDCAP_FIX_LINKS=1\n.REDCAP_LINKS=md/backup disk/by-id/md-uuid-1\n"
    r = helper(None, "/dev/sdz", "disk/by-id/x", env={"REDCAP_NAME": "data"}, mode="--late")
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")


# --- the table and the kernel command line ------------------------------------------

def test_no_table_is_no_match_and_no_message(tmp_path):
    r = helper(str(tmp_path / "none"), "/dev/sdz")
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")


def test_an_unreadable_table_is_no_match_with_a_debug_message(tmp_path):
    r = helper(str(tmp_path), "/dev/sdz")
    assert (r.returncode, r.stdout) == (0, "")
    assert r.stderr == f"redcap-udev: {tmp_path}: Is a directory\n"


def test_bad_lines_are_skipped_and_said_on_stderr(tab):
    path = tab("data /dev/sdz 64MB\nsrv /dev/sdz 64M\ndata2 UUID=1b2f 64M\n")
    r = helper(path, "/dev/sdz")
    assert (r.returncode, props(r.stdout)["REDCAP_NAME"]) == (0, "srv")
    assert r.stderr == (f"redcap-udev: {path}: line 1: size '64MB' is not a size in bytes "
                        "(64M, 1G)\n"
                        f"redcap-udev: {path}: line 3: origin 'UUID=1b2f' names a filesystem, "
                        "which the redcap device shows too: use /dev/disk/by-id/..., PARTUUID= "
                        "or PARTLABEL=\n")


def test_tab_option_wins_over_the_environment(tab, tmp_path):
    other = tmp_path / "other"
    other.write_text("other /dev/sdz 64M\n")
    r = helper(tab("data /dev/sdz 64M\n"), "--tab", str(other), "/dev/sdz")
    assert props(r.stdout)["REDCAP_NAME"] == "other"


# The generator's switch (tests/host/test_generator.py), word for word.
@pytest.mark.parametrize("cmdline", [
    "redcap=0", "redcap=off", "redcap=no", "redcap=false", "redcap=OFF", "redcap=n",
    "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro quiet redcap=0 splash",
    "redcap=1 redcap=0", "redcap redcap=0",
])
@pytest.mark.parametrize("mode", ["--early", "--late"])
def test_redcap_0_on_the_kernel_command_line_marks_nothing(tab, cmdline, mode):
    r = helper(tab("data /dev/sdz 64M\n"), "/dev/sdz", env={"SYSTEMD_PROC_CMDLINE": cmdline},
               mode=mode)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")


@pytest.mark.parametrize("cmdline, stderr", [
    ("", ""), ("quiet", ""), ("redcap", ""), ("redcap=1", ""), ("redcap=yes", ""),
    ("redcap=0 redcap=1", ""), ("rd.redcap=0", ""), ("xredcap=0", ""),
    ('foo="redcap=0 bar"', ""),
    ("'redcap=0 x'", "redcap-udev: kernel command line: 'redcap=0 x' is not redcap=0 "
                     "or redcap=1, ignored\n"),
    ("redcap=maybe", "redcap-udev: kernel command line: 'redcap=maybe' is not redcap=0 "
                     "or redcap=1, ignored\n"),
])
def test_other_kernel_command_lines_leave_it_on(tab, cmdline, stderr):
    r = helper(tab("data /dev/sdz 64M\n"), "/dev/sdz", env={"SYSTEMD_PROC_CMDLINE": cmdline})
    assert (r.returncode, r.stderr) == (0, stderr)
    assert props(r.stdout)["REDCAP_NAME"] == "data"


def test_redcap_0_does_not_stop_the_link_fix_of_a_member_already_found(tab):
    # Only the early run decides; the late one completes what it decided.
    r = helper(None, "/dev/sdz", "disk/by-uuid/x", env={"REDCAP_NAME": "data",
                                                        "SYSTEMD_PROC_CMDLINE": "redcap=0"},
               mode="--late")
    assert r.stdout == ".REDCAP_FIX_LINKS=1\n"


@pytest.mark.parametrize("args", [[], ["--early"], ["--late"], ["--middle", "/dev/sdz"],
                                  ["--early", "--tab"], ["--early", "--tab", "/etc/x"]])
def test_a_wrong_command_line_is_status_2(args):
    r = subprocess.run([HELPER, *args], capture_output=True, text=True)
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == "usage: redcap-udev --early|--late [--tab FILE] DEVNODE [LINK...]\n"


# --- in a mount namespace: /dev of the test's own ---------------------------------

def can_unshare():
    return (os.geteuid() == 0 and shutil.which("unshare") and
            subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode == 0)


NS_SETUP = r"""
set -e
mount --make-rprivate /
mount -t tmpfs tmpfs /run
mkdir -p /run/ov/up /run/ov/work /run/udev/rules.d
mount -t overlay overlay -o lowerdir=/dev,upperdir=/run/ov/up,workdir=/run/ov/work /dev
"""


def in_namespace(script, env=None):
    """Run a bash script with a private /run (tmpfs) and /dev (an overlay)."""
    if not can_unshare():
        pytest.skip("needs root and a mount namespace (unshare -m)")
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run(["unshare", "-m", "bash", "-c", NS_SETUP + script],
                          capture_output=True, text=True, env=e)


def free_devt():
    """A block device number that sysfs does not know: redcap-udev never opens it."""
    for minor in range(200, 256):
        if not os.path.exists(f"/sys/dev/block/240:{minor}"):
            return 240, minor
    pytest.skip("no free block device number")


@pytest.mark.parametrize("origin, expect", [
    ("/dev/disk/by-id/ata-X", "data"),          # a link of an earlier event
    ("/dev/disk/by-id/../by-id/ata-X", "data"),
    ("/dev/rcfake", "data"),
    ("/dev/block/{maj}:{min}", "data"),         # udev's own link, made after the rules
    ("/dev/disk/by-id/ata-Y", None),            # a link to another device
    ("/dev/disk/by-id/ata-none", None),
    ("{tmp}/link", None),                       # outside /dev: never followed
])
def test_a_path_that_already_resolves_to_the_device(tmp_path, origin, expect):
    maj, mnr = free_devt()
    origin = origin.format(maj=maj, min=mnr, tmp=tmp_path)
    path = tmp_path / "redcaptab"
    path.write_text(f"data {origin} 64M\n")
    r = in_namespace(f"""
mknod /dev/rcfake b {maj} {mnr}
mknod /dev/rcother b {maj} {mnr + 1 if mnr < 255 else mnr - 1}
mkdir -p /dev/disk/by-id
ln -s ../../rcfake /dev/disk/by-id/ata-X
ln -s ../../rcother /dev/disk/by-id/ata-Y
ln -sf /dev/rcfake {tmp_path}/link
REDCAPTAB={path} SYSTEMD_PROC_CMDLINE= {HELPER} --early /dev/rcfake
""")
    assert (r.returncode, r.stderr) == (0, "")
    if expect:
        assert r.stdout == f"REDCAP_NAME={expect}\n.REDCAP_UNIT=redcap@{expect}.service\n"
    else:
        assert r.stdout == ""


# --- the rules, under udevadm test ------------------------------------------------------

def loop_device():
    for name in sorted(os.listdir("/sys/class/block")):
        if re.fullmatch(r"loop\d+", name) and os.path.exists(f"/dev/{name}"):
            return name
    pytest.skip("no loop device on this host for udevadm test")


# What 60-persistent-storage's blkid and link rules would give a disk with an
# ext4 on it and a by-id name, for a loop device that has neither: after
# 60-persistent-storage.rules, before 63-redcap-member.rules, and no probe
# when the early rule said so (as blkid).
FAKE_DISK = r"""
SUBSYSTEM=="block", KERNEL=="{dev}", ENV{{UDEV_DISABLE_PERSISTENT_STORAGE_BLKID_FLAG}}!="1", \
  ENV{{ID_FS_TYPE}}="ext4", ENV{{ID_FS_USAGE}}="filesystem", ENV{{ID_FS_VERSION}}="1.0", \
  ENV{{ID_FS_UUID}}="4c1e4b0e-5a77-4d2e-9b0a-6f7c25d10f4e", \
  ENV{{ID_FS_UUID_ENC}}="4c1e4b0e-5a77-4d2e-9b0a-6f7c25d10f4e", \
  ENV{{ID_FS_LABEL}}="my data", ENV{{ID_FS_LABEL_ENC}}="my\x20data", \
  SYMLINK+="disk/by-uuid/4c1e4b0e-5a77-4d2e-9b0a-6f7c25d10f4e disk/by-label/my\x20data"
SUBSYSTEM=="block", KERNEL=="{dev}", SYMLINK+="disk/by-id/redcap-test-{dev}"
"""


def udevadm_test(tmp_path, tab_text, actions=("add",), cmdline=None, rules=RULES, tab_env=True):
    """udevadm test on a loop device with our rules (and the fake disk
    rules) installed in the namespace's /run/udev/rules.d; for each action,
    (properties, log)."""
    dev = loop_device()
    tabpath = tmp_path / "redcaptab"
    tabpath.write_text(tab_text.format(dev=dev))
    install = []
    for name in rules:
        install.append(f"sed 's|redcap-udev |{HELPER} |' {TOP}/udev/{name} "
                       f"> /run/udev/rules.d/{name}")
    test_env = f'ENV{{REDCAPTAB}}="{tabpath}"' if tab_env else 'ENV{REDCAP_TEST}="1"'
    if cmdline is not None:
        test_env += f', ENV{{SYSTEMD_PROC_CMDLINE}}="{cmdline}"'
    (tmp_path / "58-redcap-test.rules").write_text(f'SUBSYSTEM=="block", {test_env}\n')
    (tmp_path / "60-redcap-test.rules").write_text(FAKE_DISK.format(dev=dev))
    with open(f"/sys/class/block/{dev}/dev") as f:
        devt = f.read().strip()
    runs = []
    for i, action in enumerate(actions):
        runs.append(f"udevadm test --action={action} /sys/class/block/{dev} "
                    f"> {tmp_path}/out{i} 2> {tmp_path}/log{i}")
        runs.append(f"cp /run/udev/data/b{devt} {tmp_path}/db{i}")
    r = in_namespace("\n".join(install) + f"""
cp {tmp_path}/58-redcap-test.rules {tmp_path}/60-redcap-test.rules /run/udev/rules.d/
""" + "\n".join(runs) + "\n")
    assert r.returncode == 0, r.stderr
    results = []
    for i in range(len(actions)):
        out = (tmp_path / f"out{i}").read_text()
        log = (tmp_path / f"log{i}").read_text()
        p = {}
        for line in out.splitlines():
            m = re.fullmatch(r"([A-Za-z0-9_.]+)=(.*)", line)
            if m:
                p[m.group(1)] = m.group(2)
        p["(db)"] = (tmp_path / f"db{i}").read_text()
        results.append((p, log))
    return dev, results


def links(p):
    return set(p.get("DEVLINKS", "").split())


def member_props(p):
    return {k: p.get(k) for k in ("REDCAP_NAME", "SYSTEMD_WANTS", "ID_FS_TYPE", "UDISKS_IGNORE",
                                  "ID_FS_UUID", "ID_FS_UUID_ENC", "ID_FS_LABEL", "ID_FS_USAGE",
                                  "ID_FS_VERSION", "UDEV_DISABLE_PERSISTENT_STORAGE_BLKID_FLAG")}


MEMBER = {"REDCAP_NAME": "data", "SYSTEMD_WANTS": "redcap@data.service",
          "ID_FS_TYPE": "redcap_member", "UDISKS_IGNORE": "1", "ID_FS_UUID": None,
          "ID_FS_UUID_ENC": None, "ID_FS_LABEL": None, "ID_FS_USAGE": None,
          "ID_FS_VERSION": None, "UDEV_DISABLE_PERSISTENT_STORAGE_BLKID_FLAG": "1"}


def blkid_ran(log, dev):
    return f"{dev}: /usr/lib/udev/rules.d/60-persistent-storage.rules" in log and \
        "Importing properties from results of builtin command 'blkid'" in log


def test_udevadm_test_rules_load_without_complaint(tmp_path):
    dev, [(p, log)] = udevadm_test(tmp_path, "other /dev/nothing 64M\n")
    for name in RULES:
        assert f"Reading rules file: /run/udev/rules.d/{name}" in log
        assert not [line for line in log.splitlines()
                    if name in line and re.search(r"(?i)invalid|error|fail|unknown|ignor", line)]


def test_udevadm_test_without_a_table_the_helper_is_not_run(tmp_path):
    if os.path.exists("/etc/redcaptab"):
        pytest.skip("this host has an /etc/redcaptab")
    dev, [(p, log)] = udevadm_test(tmp_path, "data /dev/{dev} 64M\n", tab_env=False)
    assert "redcap-udev" not in log and "REDCAP_NAME" not in p
    assert "/dev/disk/by-uuid/4c1e4b0e-5a77-4d2e-9b0a-6f7c25d10f4e" in links(p)


def test_udevadm_test_a_device_not_in_the_table_is_untouched(tmp_path):
    dev, [(p, log)] = udevadm_test(tmp_path, "other /dev/nothing 64M\n")
    assert blkid_ran(log, dev)
    assert "REDCAP_NAME" not in p and "SYSTEMD_WANTS" not in p and "UDISKS_IGNORE" not in p
    assert p["ID_FS_TYPE"] == "ext4" and p["ID_FS_UUID"] == "4c1e4b0e-5a77-4d2e-9b0a-6f7c25d10f4e"
    assert "/dev/disk/by-uuid/4c1e4b0e-5a77-4d2e-9b0a-6f7c25d10f4e" in links(p)


def test_udevadm_test_kernel_name_early_no_blkid_no_by_uuid(tmp_path):
    dev, [(p, log)] = udevadm_test(tmp_path, "data /dev/{dev} 64M\n")
    assert not blkid_ran(log, dev)
    assert member_props(p) == MEMBER
    assert f"/dev/disk/by-id/redcap-test-{dev}" in links(p)
    assert not [link for link in links(p) if "/by-uuid/" in link or "/by-label/" in link]


def test_udevadm_test_by_id_late_on_add_then_early_on_change(tmp_path):
    # "add": the by-id link is made in this event, after the early rule:
    # the late one finds it, blkid has run, and its links are taken back.
    # "change": the link is there; the early rule finds it and blkid is skipped.
    dev, [(add, log_add), (change, log_change)] = udevadm_test(
        tmp_path, "data /dev/disk/by-id/redcap-test-{dev} 64M\n", actions=("add", "change"))
    assert blkid_ran(log_add, dev) and not blkid_ran(log_change, dev)
    assert member_props(add) == MEMBER and member_props(change) == MEMBER
    assert links(add) == links(change)
    assert f"/dev/disk/by-id/redcap-test-{dev}" in links(add)
    assert not [link for link in links(add) if "/by-uuid/" in link or "/by-label/" in link]


def test_udevadm_test_change_after_change_is_the_same(tmp_path):
    dev, runs = udevadm_test(tmp_path, "data /dev/{dev} 64M\n", actions=("add", "change", "change"))
    assert [(member_props(p), links(p)) for p, _ in runs] == \
        [(member_props(runs[0][0]), links(runs[0][0]))] * 3


def test_udevadm_test_late_rule_alone_does_the_whole_marking(tmp_path):
    # Without the early file (a device-mapper or md origin, which are probed
    # whatever the early rule says): same marks, no filesystem links.
    dev, [(p, log)] = udevadm_test(tmp_path, "data /dev/{dev} 64M\n",
                                   rules=["63-redcap-member.rules"])
    assert blkid_ran(log, dev)
    assert member_props(p) == MEMBER
    assert links(p) == {link for link in links(p) if "/by-uuid/" not in link
                        and "/by-label/" not in link}
    assert f"/dev/disk/by-id/redcap-test-{dev}" in links(p)


def test_udevadm_test_noauto_member_is_not_started(tmp_path):
    dev, [(p, log)] = udevadm_test(tmp_path, "data /dev/{dev} 64M noauto\n")
    assert member_props(p) == {**MEMBER, "SYSTEMD_WANTS": None}


def test_udevadm_test_redcap_0_leaves_the_device_alone(tmp_path):
    dev, [(p, log)] = udevadm_test(tmp_path, "data /dev/{dev} 64M\n", cmdline="quiet redcap=0")
    assert blkid_ran(log, dev)
    assert "REDCAP_NAME" not in p and "SYSTEMD_WANTS" not in p
    assert p["ID_FS_TYPE"] == "ext4"
    assert "/dev/disk/by-uuid/4c1e4b0e-5a77-4d2e-9b0a-6f7c25d10f4e" in links(p)


def test_udevadm_test_event_only_properties_are_not_kept(tmp_path):
    # The helper's dot names are udev's for the event: not in the database,
    # which has the member's marks.
    dev, [(p, log)] = udevadm_test(tmp_path, "data /dev/disk/by-id/redcap-test-{dev} 64M\n")
    assert p[".REDCAP_UNIT"] == "redcap@data.service" and p[".REDCAP_FIX_LINKS"] == "1"
    db = p["(db)"].splitlines()
    assert "E:REDCAP_NAME=data" in db and "E:SYSTEMD_WANTS=redcap@data.service" in db
    assert "E:ID_FS_TYPE=redcap_member" in db
    assert not [line for line in db if "REDCAP_UNIT" in line or "REDCAP_LINKS" in line
                or "by-uuid" in line or "by-label" in line or "ID_FS_UUID" in line]
