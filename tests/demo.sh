# SPDX-License-Identifier: GPL-2.0
# "make demo", inside the guest (dash): an ext4 filesystem holding copies of
# a kernel-source subtree on a slow disk, read cold by 4 processes
# (find | cat) on the bare disk and through redcap; prints both times.
#
# The slow disk is, for now, null_blk with a fixed 5 ms per request at queue
# depth 1 and 150 MB/s (BENCH-NOTES: no seek model, so it flatters large
# prefetches); it becomes "vdisk emulate hdd7200" when that mode lands.
set -eu
lkr=$1		# a tar file of the kernel source subtree
nproc=4
segs=64
seg_sectors=256
mnt=/tmp/redcap-demo

say() { printf '%s\n' "$*"; }
cfg=/sys/kernel/config/nullb/demo
set_disk() {	# <power> [irqmode completion_nsec queue_depth mbps]
	echo 0 > $cfg/power
	if [ $# -gt 1 ]; then
		echo "$2" > $cfg/irqmode
		echo "$3" > $cfg/completion_nsec
		echo "$4" > $cfg/hw_queue_depth
		echo "$5" > $cfg/mbps
	fi
	echo "$1" > $cfg/power
	udevadm settle
}

modprobe null_blk nr_devices=0
mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
mkdir $cfg
echo 1024 > $cfg/size
echo 1 > $cfg/memory_backed
echo 4096 > $cfg/blocksize
echo 1 > $cfg/submit_queues
echo 1024 > $cfg/max_sectors	# the default, 255, would split every 128 KiB fill in two
set_disk 1
# null_blk names a configfs-made disk after its directory (older kernels: nullb<index>).
disk=/dev/demo
[ -b $disk ] || disk=/dev/nullb$(cat $cfg/index)

mkfs.ext4 -q -F $disk
mkdir -p $mnt
mount $disk $mnt
mkdir $mnt/p1
tar -C $mnt/p1 -xf "$lkr"
say "demo: $nproc copies of $(find $mnt/p1 -type f | wc -l) kernel source files ($(du -sm $mnt/p1 | cut -f1) MiB) on ext4 on $disk"
i=2
while [ $i -le $nproc ]; do cp -a $mnt/p1 $mnt/p$i; i=$((i + 1)); done
umount $mnt
set_disk 1 2 5000000 1 150
say "demo: disk is now slow: 5 ms per request, queue depth 1, 150 MB/s"

# Read every copy in parallel, cold; prints the elapsed seconds.
cold_read() {	# <device>
	mount -o ro "$1" $mnt
	sync
	echo 3 > /proc/sys/vm/drop_caches
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

reads() { awk '{ print $1 }' /sys/class/block/$(basename $disk)/stat; }

r0=$(reads)
bare=$(cold_read $disk)
r1=$(reads)
say "demo: bare disk:  ${bare} s, $((r1 - r0)) disk reads"

echo "0 $(blockdev --getsz $disk) redcap $disk $seg_sectors $segs" | dmsetup create demo-rc
udevadm settle
[ -e /dev/mapper/demo-rc ] || dmsetup mknodes demo-rc
r0=$(reads)
cached=$(cold_read /dev/mapper/demo-rc)
r1=$(reads)
say "demo: redcap:     ${cached} s, $((r1 - r0)) disk reads ($segs x $((seg_sectors / 2)) KiB segments, $((segs * seg_sectors / 2048)) MiB RAM)"
echo "$bare $cached" | awk '{ printf "demo: improvement: %.1f %% less time than the bare disk\n", 100 * ($1 - $2) / $1 }'
say "demo: redcap counters:"
dmsetup message demo-rc 0 stats | grep -E '^(state|policy|read_hits|read_hits_waited|read_misses|read_bypassed|fill_ios|fill_sectors)=' | sed 's/^/  /'
dmsetup remove demo-rc
set_disk 0
rmdir $cfg
