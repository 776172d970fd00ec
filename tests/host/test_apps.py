# SPDX-License-Identifier: GPL-2.0
"""The real-program workloads' pure parts (tests/bench/apps.py): each
workload's command lines, for one process and several, the sets the suite
reads (WRITES, MAX_PROCS, SERVER), the image's versioned name and what the
programs' outputs are parsed into.  No timing here: that is the guest's
(tests/bench/apps-check)."""

import pytest

import benchmod

apps = benchmod.load("apps")
CH = "/run/redcap-apps/bin/busybox chroot /run/redcap-apps /bin/sh -c "
PGB = "/usr/lib/postgresql/15/bin/pgbench"
GIT = "/usr/bin/git -c safe.directory=/data/git/linux -C /data/git/linux"
COPY_SRC = " ".join(f"/data/git/linux/{d}" for d in
                    ("arch", "fs", "net", "kernel", "mm", "include", "sound", "lib", "block",
                     "crypto", "security", "Documentation", "tools", "scripts"))


def test_workload_sets():
    assert set(apps.WORKLOADS) >= {"pgbench-ro", "pgbench-rw", "git-log", "git-grep",
                                   "git-checkout", "cp-a", "postmark", "dbench", "server-day"}
    assert len(set(apps.WORKLOADS)) == len(apps.WORKLOADS)
    assert set(apps.WRITES) <= set(apps.WORKLOADS)
    assert set(apps.SERVER) <= set(apps.WORKLOADS)
    assert set(apps.MAX_PROCS) <= set(apps.WORKLOADS)
    # only the git readers leave the filesystem as it was
    assert set(apps.WORKLOADS) - set(apps.WRITES) == {"git-log", "git-grep"}
    # a server that is started writes (pid file, checkpoint)
    assert set(apps.SERVER) <= set(apps.WRITES)
    assert set(apps.SERVER_DAY) <= set(apps.WORKLOADS)


def test_image_name_carries_the_recipe_version():
    assert apps.VERSION == 1
    assert apps.image_name() == "apps-v1.img"
    assert apps.PG_SCALE == 80


@pytest.mark.parametrize("name,cmd", [
    ("pgbench-ro", f"{PGB} -n -S -c 1 -j 1 -t 3000 -h /tmp -U postgres postgres "
     ">/out/pgbench-ro.txt 2>&1"),
    ("pgbench-rw", f"{PGB} -n -c 1 -j 1 -t 1500 -h /tmp -U postgres postgres "
     ">/out/pgbench-rw.txt 2>&1"),
    ("git-log", f"{GIT} log -p v6.12-headers -- arch include >/dev/null"),
    ("git-grep", f"{GIT} grep -n -F spin_lock_irqsave -- . >/dev/null || [ $? -eq 1 ]"),
    ("git-checkout", f"{GIT} checkout -q v6.12-headers"),
    ("cp-a", f"/usr/bin/mkdir /data/cp-a-0 && /usr/bin/cp -a {COPY_SRC} /data/cp-a-0/"),
    ("rsync", f"/usr/bin/rsync -a {COPY_SRC} /data/rsync-0/"),
    ("postmark", "/usr/bin/mkdir -p /data/postmark/0 && printf \"set location "
     "/data/postmark/0\\nset number 10000\\nset transactions 4000\\nset size 512 65536\\n"
     "set subdirectories 20\\nset seed 42\\nrun\\nquit\\n\" | /usr/bin/postmark "
     ">/out/postmark-0.txt 2>&1"),
    ("dbench", "/usr/bin/dbench -c /usr/share/dbench/client.txt -D /data/dbench -t 20 1 "
     ">/out/dbench.txt 2>&1"),
])
def test_one_process(name, cmd):
    assert apps.commands(name, 1, "/tmp/redcap-bench") == [f"{CH}'{cmd}'"]


def test_pgbench_clients_share_the_transactions():
    assert apps.commands("pgbench-ro", 4) == [
        f"{CH}'{PGB} -n -S -c 4 -j 4 -t 750 -h /tmp -U postgres postgres "
        ">/out/pgbench-ro.txt 2>&1'"]
    assert apps.commands("pgbench-rw", 16) == [
        f"{CH}'{PGB} -n -c 16 -j 16 -t 93 -h /tmp -U postgres postgres "
        ">/out/pgbench-rw.txt 2>&1'"]


def test_git_readers_split_the_tree():
    cmds = apps.commands("git-grep", 2)
    assert cmds == [
        f"{CH}'{GIT} grep -n -F spin_lock_irqsave -- drivers include net tools kernel "
        "scripts security block rust usr init certs >/dev/null || [ $? -eq 1 ]'",
        f"{CH}'{GIT} grep -n -F spin_lock_irqsave -- arch fs sound Documentation lib mm "
        "crypto samples virt io_uring ipc LICENSES >/dev/null || [ $? -eq 1 ]'"]
    assert len(apps.commands("git-log", 4)) == 4
    assert apps.commands("git-log", 4)[3] == (
        f"{CH}'{GIT} log -p v6.12-headers -- arch/arm arch/ia64 arch/mips arch/powerpc "
        "arch/sparc include/acpi include/drm include/kvm include/memory include/ras "
        "include/soc include/uapi include/xen >/dev/null'")
    logged = " ".join(apps.commands("git-log", 16))
    assert all(f" {p} " in logged for p in apps.LOG_SUBTREES)


def test_copies_split_the_directories():
    assert apps.commands("cp-a", 2) == [
        f"{CH}'/usr/bin/mkdir /data/cp-a-0 && /usr/bin/cp -a /data/git/linux/arch "
        "/data/git/linux/net /data/git/linux/mm /data/git/linux/sound /data/git/linux/block "
        "/data/git/linux/security /data/git/linux/tools /data/cp-a-0/'",
        f"{CH}'/usr/bin/mkdir /data/cp-a-1 && /usr/bin/cp -a /data/git/linux/fs "
        "/data/git/linux/kernel /data/git/linux/include /data/git/linux/lib "
        "/data/git/linux/crypto /data/git/linux/Documentation /data/git/linux/scripts "
        "/data/cp-a-1/'"]


def test_postmark_and_dbench_with_processes():
    pm = apps.commands("postmark", 2)
    assert len(pm) == 2
    assert "set location /data/postmark/1\\nset number 5000\\nset transactions 2000" in pm[1]
    assert "set seed 43" in pm[1] and ">/out/postmark-1.txt" in pm[1]
    assert apps.commands("dbench", 8) == [
        f"{CH}'/usr/bin/dbench -c /usr/share/dbench/client.txt -D /data/dbench -t 20 8 "
        ">/out/dbench.txt 2>&1'"]


def test_server_day_is_its_parts_at_once():
    assert apps.commands("server-day", 1) == [
        f"{CH}'{PGB} -n -c 4 -j 4 -t 75 -h /tmp -U postgres postgres "
        ">/out/pgbench-rw.txt 2>&1'",
        f"{CH}'{GIT} grep -n -F spin_lock_irqsave -- fs net kernel mm >/dev/null "
        "|| [ $? -eq 1 ]'",
        f"{CH}'/usr/bin/mkdir /data/cp-a-0 && /usr/bin/cp -a /data/git/linux/fs "
        "/data/git/linux/kernel /data/cp-a-0/'",
        f"{CH}'/usr/bin/dbench -c /usr/share/dbench/client.txt -D /data/dbench -t 20 2 "
        ">/out/dbench.txt 2>&1'"]


def test_smoke_runs_are_small():
    assert apps.commands("pgbench-rw", 1, smoke=True) == [
        f"{CH}'{PGB} -n -c 1 -j 1 -t 50 -h /tmp -U postgres postgres "
        ">/out/pgbench-rw.txt 2>&1'"]
    assert apps.commands("git-grep", 1, smoke=True) == [
        f"{CH}'{GIT} grep -n -F spin_lock_irqsave -- Makefile block >/dev/null "
        "|| [ $? -eq 1 ]'"]
    assert apps.commands("git-log", 1, smoke=True) == [
        f"{CH}'{GIT} log -p v6.12-headers~1..v6.12-headers -- Makefile block >/dev/null'"]
    assert "-t 3 1 >" in apps.commands("dbench", 1, smoke=True)[0]


def test_every_workload_every_count():
    for name in apps.WORKLOADS:
        for procs in (1, 2, 4, 8, 16):
            if procs > apps.MAX_PROCS.get(name, procs):
                with pytest.raises(ValueError):
                    apps.commands(name, procs)
                continue
            cmds = apps.commands(name, procs)
            assert cmds and all(c.startswith(CH) for c in cmds)
            # each command one single-quoted sh -c argument
            assert all(c[len(CH):].count("'") == 2 for c in cmds)
    with pytest.raises(ValueError):
        apps.commands("nosuch", 1)
    with pytest.raises(ValueError):
        apps.commands("git-grep", 0)


def test_results_parse_the_programs_outputs():
    texts = {
        "pgbench-rw.txt": "transaction type: <builtin: TPC-B (sort of)>\n"
        "number of transactions actually processed: 1500/1500\n"
        "latency average = 23.1 ms\n"
        "initial connection time = 3.2 ms\n"
        "tps = 43.219876 (without initial connection time)\n",
        "dbench.txt": " Flush 479 2.350 90.886\n\n"
        "Throughput 88.0867 MB/sec  2 clients  2 procs  max_latency=90.902 ms\n",
        "postmark-0.txt": "Time:\n\t31 seconds total\n"
        "\t30 seconds of transactions (1333 per second)\n\nFiles:\n"
        "\t217 created (217 per second)\n",
    }
    assert apps.parse_results("server-day", texts) == {
        "pgbench-rw_tps": 43.219876, "pgbench-rw_transactions": 1500,
        "dbench_mb_s": 88.0867, "postmark-0_tps": 1333}
    assert apps.parse_results("pgbench-ro", {"pgbench-ro.txt": "FATAL: no"}) == {}


def test_snapshot_table():
    """The restore: a non-persistent snapshot with 4 KiB chunks."""
    assert apps.snapshot_table("/dev/ram0", "/dev/ram1", 7864320) == \
        "0 7864320 snapshot /dev/ram0 /dev/ram1 N 8"
