# SPDX-License-Identifier: GPL-2.0
"""redcap-generator's messages at boot reach the real /dev/kmsg.

Under PID 1 a generator's stderr is /dev/null, so the generator writes its
messages to /dev/kmsg, whence journald files them under its identifier
(journalctl -t redcap-generator).  The host test binds a regular file over
/dev/kmsg, which takes any write; the kernel's device does not: it refuses
lseek(SEEK_CUR), and glibc's dprintf() gave up on that before writing a
byte, so at boot the bad line of a redcaptab was lost (check-boot scenario
6).  Here the generator writes to the guest kernel's own log."""
import os
import re
import subprocess
import uuid

TOP = os.environ.get("REDCAP_TOP", os.path.realpath(os.path.join(os.path.dirname(__file__),
                                                                  "..", "..")))
GEN = os.path.join(TOP, "build", "udev", "redcap-generator")


def kernel_log():
    return subprocess.run(["dmesg"], capture_output=True, text=True, check=True).stdout


def test_a_bad_line_is_in_the_kernel_log_under_the_generators_name(tmp_path):
    marker = uuid.uuid4().hex[:12]
    tab = tmp_path / "redcaptab"
    tab.write_text(f"data /dev/disk/by-id/virtio-{marker} 64M\n"
                   f"broken /dev/disk/by-id/virtio-{marker} 64M nofial\n")
    out = tmp_path / "normal"
    out.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "SYSTEMD_LOG_TARGET"}
    env.update(REDCAPTAB=str(tab), SYSTEMD_PROC_CMDLINE="")
    r = subprocess.run([GEN, str(out), str(tmp_path), str(tmp_path)], env=env,
                       stdin=subprocess.DEVNULL, capture_output=True, text=True)
    # Nothing on stderr: the message went to the kernel log, not its fallback.
    assert (r.returncode, r.stderr) == (0, "")
    lines = [re.sub(r"^\[\s*[\d.]+\] ", "", line) for line in kernel_log().splitlines()
             if f"{tab}:" in line]
    assert [re.sub(r"\[\d+\]", "[PID]", line) for line in lines] == [
        f"redcap-generator[PID]: {tab}: line 2: unknown option 'nofial'"]
    assert (out / "redcap@data.service").is_file()
    assert not (out / "redcap@broken.service").exists()
