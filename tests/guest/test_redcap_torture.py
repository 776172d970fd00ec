# SPDX-License-Identifier: GPL-2.0
"""ext4 on redcap under an I/O torture tool nobody here wrote: stress-ng's
hdd stressor (Debian's stress-ng, installed by make deps) with its own data
verification (--verify), buffered and O_DIRECT workers at once, while the
page cache is dropped so that reads keep coming through redcap.  Then the
filesystem must check clean and redcap and the origin be byte-identical.

stress-ng's hdd stressor writes files and reads them back, checking every
byte against the pattern it wrote: the most direct packaged check that a
cache in the read path hands back what was written."""
import os
import subprocess
import tempfile
import threading

import pytest

from dmtest import Dm, dev_sectors, drop_caches, read_blocks, sh

SEG, NSEGS = 256, 64            # 8 MiB of 128 KiB segments
SECONDS = 12


def stress(path, opts):
    return subprocess.Popen(
        ["stress-ng", "--hdd", "2", "--hdd-bytes", "8M", "--hdd-opts", opts, "--verify",
         "--temp-path", path, "--timeout", f"{SECONDS}s", "--metrics-brief"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=path,
        start_new_session=True)


@pytest.mark.parametrize("write_policy", ["invalidate", "update"])
def test_stress_ng_hdd_verify_on_ext4_over_redcap(loop128, dmname, write_policy):
    n = dev_sectors(loop128)
    features = "2 write_policy update" if write_policy == "update" else ""
    with Dm(dmname(), f"0 {n} redcap {loop128} {SEG} {NSEGS} {features}") as rc:
        sh("mkfs.ext4", "-q", "-F", "-E", "nodiscard", rc.path)
        mnt = tempfile.mkdtemp(prefix="redcap-torture-")
        sh("mount", rc.path, mnt)
        try:
            rc.message("reset_stats")
            workers = [stress(mnt, "wr-rnd,rd-rnd,direct"), stress(mnt, "wr-seq,rd-seq")]
            stop = threading.Event()

            def dropper():
                while not stop.wait(2):
                    drop_caches()
            t = threading.Thread(target=dropper)
            t.start()
            try:
                outs = [w.communicate(timeout=SECONDS + 300)[0] for w in workers]
            finally:
                stop.set()
                t.join()
                for w in workers:
                    if w.poll() is None:
                        os.killpg(w.pid, 9)
                        w.wait()
            st = rc.stats()
        finally:
            sh("umount", mnt)
            os.rmdir(mnt)
        for w, out in zip(workers, outs):
            assert w.returncode == 0, out
            assert "] successful run completed" in out, out   # not "unsuccessful"
            assert "fail" not in out.lower(), out
        fsck = sh("e2fsck", "-f", "-n", rc.path, check=False)
        assert fsck.returncode == 0, fsck.stdout + fsck.stderr
        # Reads came through redcap, from RAM and from fills, not only bypasses.
        assert st["read_hits"] > 0 and st["fill_ios"] > 0, st
        chunk = 1 << 20
        for off in range(0, n * 512, chunk):
            assert read_blocks(rc.path, off, chunk) == read_blocks(loop128, off, chunk), \
                f"redcap and origin differ in MiB {off >> 20}"
