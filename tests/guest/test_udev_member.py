# SPDX-License-Identifier: GPL-2.0
"""udev/59-redcap-member.rules and 63-redcap-member.rules under the guest's
running udevd, on loop devices with an ext4 on them: a device that
/etc/redcaptab names (by kernel name, by a by-id link made in the same
event, by PARTUUID= or PARTLABEL= of a GPT or MBR partition, as a
device-mapper device) is a redcap member (ID_FS_TYPE=redcap_member, which
lsblk shows; REDCAP_NAME; SYSTEMD_WANTS=redcap@NAME.service; no by-uuid
link), the same after "change" and "add" events; anything else is left as
udev found it.  The table is a file of the test's, given to redcap-udev by
a test rule (ENV{REDCAPTAB}); the rules and the helper are installed in
/run/udev/rules.d for this module only."""
import os
import shutil
import struct
import subprocess
import tempfile
import uuid
import zlib

import pytest

import dmtest
from dmtest import sh

TOP = os.environ.get("REDCAP_TOP", os.path.realpath(os.path.join(os.path.dirname(__file__),
                                                                  "..", "..")))
HELPER = os.path.join(TOP, "build", "udev", "redcap-udev")
RCTL = os.path.join(TOP, "build", "userspace", "redcapctl")
RULES_D = "/run/udev/rules.d"
RULES = ["59-redcap-member.rules", "63-redcap-member.rules"]
TEST_RULES = ["58-redcap-test-tab.rules", "60-redcap-test-byid.rules"]
MiB = 1 << 20
# Properties that differ from one event to the next whatever the rules say.
VOLATILE = {"ACTION", "SEQNUM", "USEC_INITIALIZED", "SYNTH_UUID", "DM_COOKIE"}


@pytest.fixture(scope="module")
def workdir():
    d = tempfile.mkdtemp(prefix="redcap-udev-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def rules(workdir):
    """Our two rules (calling the helper of build/udev), a test rule that
    points the helper at workdir/redcaptab, and one that gives a loop device
    over workdir/NAME a by-id link in 60-persistent-storage's stead: made
    after the early rule, in the same event, as a disk's serial-number link."""
    if not os.access(HELPER, os.X_OK):
        sh("make", "-s", "-C", os.path.join(TOP, "udev"), HELPER)
    os.makedirs(RULES_D, exist_ok=True)
    for name in RULES:
        with open(os.path.join(TOP, "udev", name)) as f:
            text = f.read()
        assert "redcap-udev " in text
        with open(os.path.join(RULES_D, name), "w") as f:
            f.write(text.replace("redcap-udev ", HELPER + " "))
    with open(os.path.join(RULES_D, TEST_RULES[0]), "w") as f:
        f.write(f'SUBSYSTEM=="block", ENV{{REDCAPTAB}}="{workdir}/redcaptab"\n'
                f'SUBSYSTEM=="block", TEST=="{workdir}/cmdline", '
                f'IMPORT{{file}}="{workdir}/cmdline"\n')
    with open(os.path.join(RULES_D, TEST_RULES[1]), "w") as f:
        f.write('SUBSYSTEM=="block", KERNEL=="loop[0-9]*", ENV{DEVTYPE}=="disk", '
                f'ATTR{{loop/backing_file}}=="{workdir}/*", '
                'PROGRAM="/usr/bin/basename $attr{loop/backing_file}", '
                'SYMLINK+="disk/by-id/redcap-test-$result"\n')
    sh("udevadm", "control", "--reload")
    yield
    for name in RULES + TEST_RULES:
        os.unlink(os.path.join(RULES_D, name))
    sh("udevadm", "control", "--reload")


@pytest.fixture
def tab(workdir, rules):
    """tab(text): write the table (and leave the kernel command line alone)."""
    path = os.path.join(workdir, "redcaptab")

    def write(text, cmdline=None):
        with open(path, "w") as f:
            f.write(text)
        cl = os.path.join(workdir, "cmdline")
        if cmdline is None:
            if os.path.exists(cl):
                os.unlink(cl)
        else:
            with open(cl, "w") as f:
                f.write(f"SYSTEMD_PROC_CMDLINE={cmdline}\n")
    yield write
    write("")


@pytest.fixture
def devices():
    """attach(image, partscan=False) -> /dev/loopN; all detached at the end."""
    attached = []

    def attach(image, partscan=False):
        args = ["losetup", "--find", "--show"] + (["--partscan"] if partscan else []) + [image]
        dev = sh(*args).stdout.strip()
        attached.append(dev)
        sh("udevadm", "settle")
        return dev
    yield attach
    for dev in attached:
        sh("losetup", "-d", dev, check=False)
    sh("udevadm", "settle")


# --- images ------------------------------------------------------------------------

def image(workdir, size=64 * MiB):
    fd, path = tempfile.mkstemp(dir=workdir, prefix="img-")
    os.ftruncate(fd, size)
    os.close(fd)
    return path


def mkfs(path, offset=0, size=None):
    """An ext4 at @offset of the image (@size bytes, else to the end): its UUID."""
    fs_uuid = str(uuid.uuid4())
    args = ["mkfs.ext4", "-q", "-F", "-U", fs_uuid]
    if offset:
        args += ["-E", f"offset={offset}"]
    args.append(path)
    if size:
        args.append(f"{size // 1024}k")
    sh(*args)
    return fs_uuid


LINUX_FS = uuid.UUID("0fc63daf-8483-4772-8e79-3d69d8477de4")


def write_gpt(path, parts):
    """A GPT (protective MBR, both headers) with @parts: [(first LBA, last
    LBA, partition UUID, name)], as sfdisk would write it."""
    size = os.path.getsize(path)
    sectors = size // 512
    entries = bytearray(128 * 128)
    for i, (first, last, puuid, name) in enumerate(parts):
        entries[i * 128:(i + 1) * 128] = (LINUX_FS.bytes_le + uuid.UUID(puuid).bytes_le +
                                          struct.pack("<QQQ", first, last, 0) +
                                          name.encode("utf-16-le").ljust(72, b"\0"))
    entries_crc = zlib.crc32(entries)
    disk_guid = uuid.uuid4().bytes_le

    def header(current, backup, entries_lba):
        h = struct.pack("<8sIIIIQQQQ16sQIII", b"EFI PART", 0x00010000, 92, 0, 0, current,
                        backup, 34, sectors - 34, disk_guid, entries_lba, 128, 128, entries_crc)
        h = h[:16] + struct.pack("<I", zlib.crc32(h)) + h[20:]
        return h.ljust(512, b"\0")
    mbr = bytearray(512)
    mbr[446:462] = struct.pack("<B3sB3sII", 0, b"\x00\x02\x00", 0xEE, b"\xff\xff\xff", 1,
                               min(sectors - 1, 0xFFFFFFFF))
    mbr[510:512] = b"\x55\xaa"
    with open(path, "r+b") as f:
        f.write(mbr)
        f.write(header(1, sectors - 1, 2))
        f.write(entries)
        f.seek((sectors - 33) * 512)
        f.write(entries)
        f.write(header(sectors - 1, 1, sectors - 33))


def write_mbr(path, disk_id, parts):
    """A DOS partition table with disk identifier @disk_id and @parts: [(first LBA, sectors)]."""
    mbr = bytearray(512)
    mbr[440:444] = struct.pack("<I", disk_id)
    for i, (first, count) in enumerate(parts):
        mbr[446 + 16 * i:462 + 16 * i] = struct.pack("<B3sB3sII", 0, b"\xfe\xff\xff", 0x83,
                                                     b"\xfe\xff\xff", first, count)
    mbr[510:512] = b"\x55\xaa"
    with open(path, "r+b") as f:
        f.write(mbr)


# --- what udev says -----------------------------------------------------------------

def props(dev):
    out = sh("udevadm", "info", "--query=property", f"--name={dev}").stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def stable(p):
    """The properties, without those of the event; the links in any order."""
    return {k: " ".join(sorted(v.split())) if k == "DEVLINKS" else v
            for k, v in p.items() if k not in VOLATILE}


def ours(p):
    """What the rules of udev/ decide (a device-mapper event brings more)."""
    return {k: v for k, v in stable(p).items()
            if k.startswith(("REDCAP_", "ID_FS_", "ID_PART_")) or k in (
                "SYSTEMD_WANTS", "UDISKS_IGNORE", "UDEV_DISABLE_PERSISTENT_STORAGE_BLKID_FLAG",
                "DEVLINKS")}


def unit_escape(name):
    return sh("systemd-escape", name).stdout.strip()


def fstype(dev):
    return sh("lsblk", "-dno", "FSTYPE", dev).stdout.strip()


def by_uuid(fs_uuid):
    """The device /dev/disk/by-uuid/UUID points at, or None."""
    link = f"/dev/disk/by-uuid/{fs_uuid}"
    return os.path.realpath(link) if os.path.lexists(link) else None


def assert_member(dev, name, fs_uuid, wants=True):
    p = props(dev)
    assert p.get("REDCAP_NAME") == name
    assert p.get("ID_FS_TYPE") == "redcap_member"
    assert p.get("UDISKS_IGNORE") == "1"
    if wants:
        assert p.get("SYSTEMD_WANTS") == f"redcap@{unit_escape(name)}.service"
    else:
        assert "SYSTEMD_WANTS" not in p
    for key in ("ID_FS_UUID", "ID_FS_UUID_ENC", "ID_FS_USAGE", "ID_FS_VERSION",
                "REDCAP_UNIT", ".REDCAP_UNIT"):
        assert key not in p
    assert not [link for link in p.get("DEVLINKS", "").split()
                if "/by-uuid/" in link or "/by-label/" in link]
    assert by_uuid(fs_uuid) != os.path.realpath(dev)
    assert fstype(dev) == "redcap_member"
    return p


def assert_untouched(dev, fs_uuid):
    p = props(dev)
    assert "REDCAP_NAME" not in p and "UDISKS_IGNORE" not in p
    assert "redcap@" not in p.get("SYSTEMD_WANTS", "")
    assert p.get("ID_FS_TYPE") == "ext4" and p.get("ID_FS_UUID") == fs_uuid
    assert by_uuid(fs_uuid) == os.path.realpath(dev)
    assert fstype(dev) == "ext4"
    return p


def trigger(dev, action):
    sh("udevadm", "trigger", f"--action={action}", "--settle", dev)
    sh("udevadm", "settle")


def next_loop():
    return sh("losetup", "--find").stdout.strip()


# --- whole disks ----------------------------------------------------------------------

def test_a_disk_named_by_kernel_name_is_a_member_from_its_first_event(workdir, tab, devices):
    img = image(workdir)
    fs_uuid = mkfs(img)
    dev = next_loop()
    tab(f"data {dev} 64M\n")
    assert devices(img) == dev
    p = assert_member(dev, "data", fs_uuid)
    # Found before 60-persistent-storage: its blkid probe was skipped.
    assert p["UDEV_DISABLE_PERSISTENT_STORAGE_BLKID_FLAG"] == "1"
    assert by_uuid(fs_uuid) is None


def test_a_device_not_in_the_table_is_untouched(workdir, tab, devices):
    img, other = image(workdir), image(workdir)
    fs_uuid, other_uuid = mkfs(img), mkfs(other)
    tab("data /dev/disk/by-id/redcap-test-none 64M\nsrv PARTUUID=00000000-01 64M\n")
    dev = devices(img)
    member = next_loop()
    tab(f"data {member} 64M\n")
    devices(other)
    assert_untouched(dev, fs_uuid)
    assert "UDEV_DISABLE_PERSISTENT_STORAGE_BLKID_FLAG" not in props(dev)
    assert_member(member, "data", other_uuid)


@pytest.mark.parametrize("action", ["change", "add"])
def test_events_after_the_first_give_the_same_properties(workdir, tab, devices, action):
    img = image(workdir)
    fs_uuid = mkfs(img)
    dev = next_loop()
    tab(f"data {dev} 64M\n")
    devices(img)
    first = stable(assert_member(dev, "data", fs_uuid))
    for _ in range(3):
        trigger(dev, action)
        assert stable(assert_member(dev, "data", fs_uuid)) == first


def test_a_by_id_link_made_in_the_same_event_is_found_by_the_late_rule(workdir, tab, devices):
    # At its first event the link does not exist when the early rule runs,
    # blkid probes the disk, and the late rule takes its by-uuid link back;
    # from the next event on, the early rule finds the link.  Same result.
    img = image(workdir)
    fs_uuid = mkfs(img)
    link = f"/dev/disk/by-id/redcap-test-{os.path.basename(img)}"
    tab(f"data {link} 64M\n")
    dev = devices(img)
    assert os.path.realpath(link) == dev
    first = assert_member(dev, "data", fs_uuid)
    assert link in first["DEVLINKS"].split()
    trigger(dev, "change")
    assert stable(assert_member(dev, "data", fs_uuid)) == stable(first)


def test_a_noauto_entry_is_a_member_that_systemd_does_not_start(workdir, tab, devices):
    img = image(workdir)
    fs_uuid = mkfs(img)
    dev = next_loop()
    tab(f"data {dev} 64M noauto\n")
    devices(img)
    assert_member(dev, "data", fs_uuid, wants=False)
    trigger(dev, "change")
    assert_member(dev, "data", fs_uuid, wants=False)


def test_the_unit_name_is_escaped_for_systemd(workdir, tab, devices):
    img = image(workdir)
    mkfs(img)
    dev = next_loop()
    tab(f"my-data+1 {dev} 64M\n")
    devices(img)
    assert props(dev)["SYSTEMD_WANTS"] == r"redcap@my\x2ddata\x2b1.service"


def test_redcap_0_on_the_kernel_command_line_marks_nothing(workdir, tab, devices):
    img = image(workdir)
    fs_uuid = mkfs(img)
    dev = next_loop()
    tab(f"data {dev} 64M\n", cmdline="quiet redcap=0")
    devices(img)
    assert_untouched(dev, fs_uuid)
    # And back on: the next event marks it.
    tab(f"data {dev} 64M\n")
    trigger(dev, "change")
    assert_member(dev, "data", fs_uuid)


def test_a_line_taken_out_of_the_table_frees_the_disk_at_the_next_event(workdir, tab, devices):
    img = image(workdir)
    fs_uuid = mkfs(img)
    dev = next_loop()
    tab(f"data {dev} 64M\n")
    devices(img)
    assert_member(dev, "data", fs_uuid)
    tab(f"#data {dev} 64M\n")
    trigger(dev, "change")
    assert_untouched(dev, fs_uuid)


# --- partitions -----------------------------------------------------------------------

def gpt_image(workdir):
    """Two 16 MiB GPT partitions with an ext4 each: (image, [(partuuid, label, fs uuid)])."""
    img = image(workdir)
    parts = []
    for i in range(2):
        first = 2048 + i * 32768
        parts.append((first, first + 32767, str(uuid.uuid4()), f"rc-{uuid.uuid4().hex[:12]}"))
    write_gpt(img, parts)
    fs = [mkfs(img, offset=first * 512, size=16 * MiB) for first, _, _, _ in parts]
    return img, [(pu, label, f) for (_, _, pu, label), f in zip(parts, fs)]


@pytest.mark.parametrize("kind", ["PARTUUID", "PARTLABEL"])
def test_a_gpt_partition_named_by_partuuid_or_partlabel(workdir, tab, devices, kind):
    img, [(pu, label, fs_uuid), (pu2, label2, fs_uuid2)] = gpt_image(workdir)
    tab(f"data {kind}={pu if kind == 'PARTUUID' else label} 64M\n")
    dev = devices(img, partscan=True)
    part, other = dev + "p1", dev + "p2"
    p = assert_member(part, "data", fs_uuid)
    # Found early, by the helper's own look at the partition table: blkid was
    # skipped, and the helper gave the partition entry in its stead, so the
    # by-partuuid and by-partlabel links are still made.
    assert p["UDEV_DISABLE_PERSISTENT_STORAGE_BLKID_FLAG"] == "1"
    assert p["ID_PART_ENTRY_UUID"] == pu and p["ID_PART_ENTRY_NAME"] == label
    assert p["ID_PART_ENTRY_SCHEME"] == "gpt"
    assert os.path.realpath(f"/dev/disk/by-partuuid/{pu}") == part
    assert os.path.realpath(f"/dev/disk/by-partlabel/{label}") == part
    q = assert_untouched(other, fs_uuid2)
    assert sorted(k for k in p if k.startswith("ID_PART_")) == \
        sorted(k for k in q if k.startswith("ID_PART_"))
    for key in ("ID_PART_ENTRY_TYPE", "ID_PART_ENTRY_NUMBER", "ID_PART_ENTRY_OFFSET",
                "ID_PART_ENTRY_SIZE", "ID_PART_ENTRY_DISK", "ID_PART_TABLE_TYPE",
                "ID_PART_TABLE_UUID"):
        assert (p[key] == q[key]) == (key not in ("ID_PART_ENTRY_NUMBER",
                                                  "ID_PART_ENTRY_OFFSET")), key
    assert "REDCAP_NAME" not in props(dev)
    for action in ("change", "add"):
        trigger(part, action)
        assert stable(assert_member(part, "data", fs_uuid)) == stable(p)


def test_an_mbr_partition_named_by_partuuid(workdir, tab, devices):
    img = image(workdir)
    write_mbr(img, 0x7c3a9d1e, [(2048, 32768), (34816, 32768)])
    fs_uuid = mkfs(img, offset=34816 * 512, size=16 * MiB)
    tab("data PARTUUID=7c3a9d1e-02 64M\n")
    dev = devices(img, partscan=True)
    p = assert_member(dev + "p2", "data", fs_uuid)
    assert p["ID_PART_ENTRY_UUID"] == "7c3a9d1e-02" and p["ID_PART_ENTRY_SCHEME"] == "dos"
    assert os.path.realpath("/dev/disk/by-partuuid/7c3a9d1e-02") == dev + "p2"
    assert "REDCAP_NAME" not in props(dev + "p1")


# --- device-mapper origins, and the stack over a member -----------------------------------

def test_a_device_mapper_origin_is_marked_by_the_late_rule(workdir, tab, devices, dmname):
    img = image(workdir)
    fs_uuid = mkfs(img)
    loop = devices(img)
    name = dmname()
    tab(f"data /dev/mapper/{name} 64M\n")
    with dmtest.Dm(name, f"0 {dmtest.dev_sectors(loop)} linear {loop} 0") as dm:
        sh("udevadm", "settle")
        node = os.path.realpath(dm.path)
        p = assert_member(node, "data", fs_uuid)
        # 60-persistent-storage-dm probed it; 63 took the filesystem's links back.
        assert "UDEV_DISABLE_PERSISTENT_STORAGE_BLKID_FLAG" in p
        assert by_uuid(fs_uuid) == loop      # the loop under it is not in the table
        trigger(node, "change")
        assert ours(assert_member(node, "data", fs_uuid)) == ours(p)
    sh("udevadm", "settle")


def test_the_stack_over_a_member_owns_the_by_uuid_link(workdir, tab, devices, dmname):
    if not os.access(RCTL, os.X_OK):
        pytest.fail(f"{RCTL} is not built: make userspace")
    img = image(workdir)
    fs_uuid = mkfs(img)
    dev = next_loop()
    name = dmname()
    tab(f"{name} {dev} 16M nomodel\n")
    devices(img)
    assert_member(dev, name, fs_uuid)
    assert by_uuid(fs_uuid) is None
    r = subprocess.run([RCTL, "start", name, "--tab", os.path.join(workdir, "redcaptab")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    try:
        sh("udevadm", "settle")
        assert by_uuid(fs_uuid) == os.path.realpath(f"/dev/mapper/{name}")
        assert_member(dev, name, fs_uuid)
        assert fstype(f"/dev/mapper/{name}") == "ext4"
    finally:
        subprocess.run([RCTL, "stop", name, "--tab", os.path.join(workdir, "redcaptab")],
                       capture_output=True, text=True)
        if os.path.exists(f"/dev/mapper/{name}"):
            sh("dmsetup", "remove", "--retry", name, check=False)
        sh("udevadm", "settle")
