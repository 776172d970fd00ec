# SPDX-License-Identifier: GPL-2.0
"""dkms.conf, the kernel hook dkms/redcap-check and the version that
debian/ shares with them: what can be checked without building anything
(debian/make-deb builds the packages, make check-boot installs them)."""
import os
import re
import shutil
import subprocess

import pytest

TOP = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
HOOK = os.path.join(TOP, "dkms", "redcap-check")


def dkms_conf():
    """dkms.conf as dkms reads it: sourced by bash, arrays and all."""
    script = ('kernel_source_dir=/KSRC dkms_tree=/DKMS; . "$1"; '
              'for v in PACKAGE_NAME PACKAGE_VERSION CLEAN AUTOINSTALL BUILD_EXCLUSIVE_KERNEL '
              'BUILD_EXCLUSIVE_CONFIG; do printf "%s=%s\\n" "$v" "${!v}"; done; '
              'for i in "${!BUILT_MODULE_NAME[@]}"; do '
              'printf "M%s=%s %s %s\\n" "$i" "${BUILT_MODULE_NAME[$i]}" '
              '"${BUILT_MODULE_LOCATION[$i]}" "${DEST_MODULE_LOCATION[$i]}"; done; '
              'printf "MAKE=%s\\n" "${MAKE[0]}"')
    r = subprocess.run(["bash", "-c", script, "bash", os.path.join(TOP, "dkms.conf")],
                       capture_output=True, text=True, check=True)
    assert r.stderr == ""
    return dict(line.split("=", 1) for line in r.stdout.splitlines())


def test_dkms_conf_builds_both_modules_without_test_flags():
    c = dkms_conf()
    assert c["PACKAGE_NAME"] == "redcap"
    assert c["AUTOINSTALL"] == "yes"
    # dm-vdisk first: dm-redcap needs its symbols (one Kbuild, one modpost).
    assert c["M0"] == "dm-vdisk dm-vdisk-model/ /updates/dkms"
    assert c["M1"] == "dm-redcap dm-redcap/ /updates/dkms"
    make = c["MAKE"].split()
    assert make[:3] == ["make", "-C", "/KSRC"]
    assert "M=/DKMS/redcap/%s/build" % c["PACKAGE_VERSION"] in make
    assert "REDCAP_FAULT_INJECTION=" in make and "W=1" not in make
    assert make[-1] == "modules"
    assert c["CLEAN"].split()[-1] == "clean"
    assert c["BUILD_EXCLUSIVE_CONFIG"] == "CONFIG_BLK_DEV_DM"
    # The top-level Kbuild is what builds both directories.
    with open(os.path.join(TOP, "Kbuild")) as f:
        assert re.search(r"^obj-m \+= dm-redcap/ dm-vdisk-model/$", f.read(), re.M)


@pytest.mark.parametrize("kver,builds", [
    ("6.1.0-56-amd64", True), ("6.12.117+deb12-amd64", True), ("6.9.0", True),
    ("7.0.1-1-amd64", True), ("10.2.0", True),
    ("6.0.12-1-amd64", False), ("5.10.0-30-amd64", False), ("4.19.0-27-amd64", False),
])
def test_kernel_range(kver, builds):
    """dkms matches BUILD_EXCLUSIVE_KERNEL with bash's =~."""
    r = subprocess.run(["bash", "-c", '[[ $1 =~ $2 ]]', "bash", kver,
                        dkms_conf()["BUILD_EXCLUSIVE_KERNEL"]])
    assert (r.returncode == 0) == builds


def test_one_version():
    """dkms.conf's PACKAGE_VERSION is debian/changelog's and begins with the
    redcap target's version (debian/rules refuses to build otherwise)."""
    version = dkms_conf()["PACKAGE_VERSION"]
    with open(os.path.join(TOP, "debian", "changelog")) as f:
        first = f.readline()
    assert re.match(r"^redcap \(([^)]*)\) ", first).group(1) == version
    with open(os.path.join(TOP, "dm-redcap", "redcap-target.c")) as f:
        m = re.search(r"^\t\.version = \{(\d+), (\d+), (\d+)\},$", f.read(), re.M)
    target = ".".join(m.groups())
    assert version == target or version.startswith(target + ".")


def test_scripts_are_executable_and_parse():
    for path, shell in (("dkms/redcap-check", "sh"), ("debian/make-deb", "bash")):
        full = os.path.join(TOP, path)
        assert os.access(full, os.X_OK), path
        subprocess.run([shell, "-n", full], check=True)
    assert os.access(os.path.join(TOP, "debian", "rules"), os.X_OK)
    # run-parts skips names with anything but letters, digits, - and _.
    assert re.fullmatch(r"[A-Za-z0-9_-]+", os.path.basename(HOOK))


# --- dkms/redcap-check, on trees of its own ---------------------------------

KVER = "6.12.117+deb12-amd64"


@pytest.fixture
def trees(tmp_path):
    src = tmp_path / "src" / "redcap-0.3.0"
    src.mkdir(parents=True)
    shutil.copy(os.path.join(TOP, "dkms.conf"), src / "dkms.conf")
    headers = tmp_path / "headers"
    (headers / "include").mkdir(parents=True)
    (headers / ".config").write_text("CONFIG_BLK_DEV_DM=m\n")
    mods = tmp_path / "modules"
    (mods / KVER).mkdir(parents=True)
    (mods / KVER / "build").symlink_to(headers)
    dkms = tmp_path / "dkms"
    (dkms / "redcap" / "0.3.0" / "build").mkdir(parents=True)
    env = dict(os.environ, REDCAP_CHECK_SRCTREE=str(tmp_path / "src"),
               REDCAP_CHECK_DKMSTREE=str(dkms), REDCAP_CHECK_MODTREE=str(mods))
    return tmp_path, env


def hook(env, kver=KVER):
    r = subprocess.run([HOOK, kver, "/boot/vmlinuz-" + kver], env=env, capture_output=True,
                       text=True)
    assert r.returncode == 0, "a kernel hook must never fail the kernel's installation"
    return r


def install(tmp_path, *names, kver=KVER):
    d = tmp_path / "modules" / kver / "updates" / "dkms"
    d.mkdir(parents=True, exist_ok=True)
    for n in names:
        (d / n).write_bytes(b"")


def test_hook_quiet_when_installed(trees):
    tmp_path, env = trees
    install(tmp_path, "dm-vdisk.ko.xz", "dm-redcap.ko.xz")
    r = hook(env)
    assert r.stderr == ""
    assert r.stdout == f"redcap-check: redcap 0.3.0 is installed for kernel {KVER}\n"


def test_hook_names_kernel_and_log_of_failed_build(trees):
    tmp_path, env = trees
    install(tmp_path, "dm-vdisk.ko.xz")
    log = tmp_path / "dkms" / "redcap" / "0.3.0" / "build" / "make.log"
    log.write_text(f"DKMS make.log for redcap-0.3.0 for kernel {KVER} (x86_64)\nerror\n")
    r = hook(env)
    assert r.stdout == ""
    assert f"WARNING: dm-redcap.ko not installed for kernel {KVER}" in r.stderr
    assert f"The build failed; its log: {log}" in r.stderr
    assert f"dkms install redcap/0.3.0 -k {KVER}" in r.stderr


def test_hook_ignores_failed_log_of_another_kernel(trees):
    tmp_path, env = trees
    log = tmp_path / "dkms" / "redcap" / "0.3.0" / "build" / "make.log"
    log.write_text("DKMS make.log for redcap-0.3.0 for kernel 6.1.0-56-amd64 (x86_64)\n")
    r = hook(env)
    assert "dm-vdisk.ko dm-redcap.ko not installed" in r.stderr
    assert str(log) not in r.stderr
    assert "No DKMS build log for " + KVER in r.stderr


def test_hook_says_headers_are_missing(trees):
    tmp_path, env = trees
    (tmp_path / "modules" / KVER / "build").unlink()
    r = hook(env)
    assert f"install linux-headers-{KVER}" in r.stderr


def test_hook_says_kernel_is_out_of_range(trees):
    tmp_path, env = trees
    r = hook(env, "5.10.0-30-amd64")
    assert "6.1 and later only" in r.stderr
    assert "dkms install" not in r.stderr


def test_hook_silent_once_the_package_is_removed(trees):
    """The hooks are conffiles: removing redcap-dkms leaves them behind."""
    tmp_path, env = trees
    shutil.rmtree(tmp_path / "src" / "redcap-0.3.0")
    r = hook(env)
    assert r.stdout == r.stderr == ""
