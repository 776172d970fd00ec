# SPDX-License-Identifier: GPL-2.0
# "make demo", inside the guest (dash): an ext4 filesystem holding copies of
# a kernel-source subtree on an emulated 7200 rpm disk, read cold by 4
# processes (find | cat) on the bare disk and through redcap; prints both
# times, the improvement and redcap's key counters.
#
# The disk: a RAM disk behind "vdisk emulate" (profile hdd7200: seeks,
# rotation, media rate and the drive's own read-ahead cache), standing for
# the first 256 MiB of a 1 TB drive, with a measuring vdisk on top whose
# latency model redcap uses to judge itself (policy adaptive+caware,
# estimator vdisk).  The bare run goes through the measuring vdisk too, so
# its model has learnt the disk by the time redcap starts.
set -eu
lkr=$1		# a tar file of the kernel source subtree
nproc=${REDCAP_DEMO_PROCS:-4}	# the test suite runs 1: the same path, a quarter of the reading
segs=64
seg_sectors=256
mnt=/tmp/redcap-demo
ram=/dev/ram0

say() { printf '%s\n' "$*"; }
dm_create() {	# <name> <table>
	echo "$2" | dmsetup create "$1"
	udevadm settle
	[ -e "/dev/mapper/$1" ] || dmsetup mknodes "$1"
}

# On a real host /dev/ram0 may hold someone's data: only a brd of our own.
if [ -d /sys/module/brd ]; then
	echo "demo: the brd module is loaded already (/dev/ram0 may be in use): unload it first" >&2
	exit 1
fi
modprobe brd rd_nr=1 rd_size=262144
mkfs.ext4 -q -F $ram
mkdir -p $mnt
mount $ram $mnt
mkdir $mnt/p1
tar -C $mnt/p1 -xf "$lkr"
say "demo: $nproc copies of $(find $mnt/p1 -type f | wc -l) kernel source files ($(du -sm $mnt/p1 | cut -f1) MiB) on ext4"
i=2
while [ $i -le $nproc ]; do cp -a $mnt/p1 $mnt/p$i; i=$((i + 1)); done
umount $mnt

n=$(blockdev --getsz $ram)
dm_create demo-hdd "0 $n vdisk $ram 4 mode emulate capacity 1953125000"
dm_create demo-vd "0 $n vdisk /dev/mapper/demo-hdd"
say "demo: the disk is now an emulated 7200 rpm drive (vdisk emulate hdd7200, 1 TB), measured by a vdisk sidecar"

# Until the disk has been idle for a moment: ext4 still reads metadata
# after mount returns, and a run started at once would queue behind it.
settle() {
	stat=/sys/block/$(basename "$(readlink -f /dev/mapper/demo-hdd)")/stat
	prev=
	while :; do
		sleep 0.2
		cur=$(cat "$stat")
		[ "$cur" = "$prev" ] && [ "$(echo $cur | cut -d' ' -f9)" = 0 ] && break
		prev=$cur
	done
}

# Read every copy in parallel, cold; prints the elapsed seconds.  A cold
# drive (empty cache, head at 0, counters zeroed), and with redcap
# (<name>) counters that count the run alone.
cold_read() {	# <device> [<redcap name>]
	mount -o ro "$1" $mnt
	sync
	echo 3 > /proc/sys/vm/drop_caches
	settle
	dmsetup message demo-hdd 0 reset
	[ -z "${2:-}" ] || dmsetup message "$2" 0 reset_stats
	t0=$(date +%s.%N)
	i=1
	while [ $i -le $nproc ]; do
		find $mnt/p$i -type f -exec cat {} + > /dev/null &
		i=$((i + 1))
	done
	wait
	t1=$(date +%s.%N)
	umount $mnt
	echo "$t0 $t1" | awk '{ printf "%.2f", $2 - $1 }'
}

drive() {	# <key>: the emulated drive's counter
	dmsetup message demo-hdd 0 stats | sed -n "s/^$1=//p"
}

bare=$(cold_read /dev/mapper/demo-vd)
say "demo: bare disk:  ${bare} s, $(drive emu_requests) disk requests, drive busy $(($(drive emu_busy_us) / 1000)) ms"

dm_create demo-rc "0 $n redcap /dev/mapper/demo-vd $seg_sectors $segs 4 policy adaptive+caware estimator vdisk"
cached=$(cold_read /dev/mapper/demo-rc demo-rc)
say "demo: redcap:     ${cached} s, $(drive emu_requests) disk requests, drive busy $(($(drive emu_busy_us) / 1000)) ms ($segs x $((seg_sectors / 2)) KiB segments, $((segs * seg_sectors / 2048)) MiB RAM)"
echo "$bare $cached" | awk '{ printf "demo: improvement: %.1f %% less time than the bare disk\n", 100 * ($1 - $2) / $1 }'
say "demo: redcap counters:"
dmsetup message demo-rc 0 stats |
	grep -E '^(state|policy|switches|read_hits|read_hits_waited|read_misses|read_bypassed|read_joined|caware_bypassed|fill_ios|fill_joined|fill_sectors|cache_time_us|est_disk_time_us)=' |
	sed 's/^/  /'
dmsetup remove demo-rc
dmsetup remove demo-vd
dmsetup remove demo-hdd
modprobe -r brd
