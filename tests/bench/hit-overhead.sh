# SPDX-License-Identifier: GPL-2.0
# The hit path's cost under icount: 4 KiB random O_DIRECT reads, QD1, all
# of them hits (64 MiB read through a 64 MiB cache, warmed first), through
# redcap over a measuring vdisk (its model prices every read, and the
# shadow caches see it), against dm-linear on the same loop device.  Run it
# in the guests of two builds to price a change of the hit path:
#   tests/vm/run --icount -- sh tests/bench/hit-overhead.sh [reps] [seconds]
set -eu
reps=${1:-3}
secs=${2:-5}
dir=$(mktemp -d)
mount -t tmpfs -o size=300m none "$dir"
truncate -s 256M "$dir/disk"
loop=$(losetup --find --show "$dir/disk")
dd if=/dev/urandom of="$loop" bs=1M count=256 oflag=direct status=none
n=$(blockdev --getsz "$loop")

mk() {	# <name> <table>
	echo "0 $n $2" | dmsetup create "$1"
	udevadm settle
	[ -e "/dev/mapper/$1" ] || dmsetup mknodes "$1"
}
mk hit-linear "linear $loop 0"
mk hit-vd "vdisk $loop"
mk hit-redcap "redcap /dev/mapper/hit-vd 256 512 2 policy always"
dd if=/dev/mapper/hit-redcap of=/dev/null bs=128k count=512 iflag=direct status=none

iops() {	# <device> -> IOPS
	fio --name=hit --filename="$1" --direct=1 --ioengine=psync --rw=randread --bs=4k \
		--size=64m --time_based --runtime="$secs" --randseed=5 --output-format=terse \
		--terse-version=3 | awk -F';' '{ print $8 }'
}

echo "config rep iops"
r=1
while [ "$r" -le "$reps" ]; do
	for c in linear redcap; do
		echo "$c $r $(iops /dev/mapper/hit-$c)"
	done
	r=$((r + 1))
done
dmsetup message hit-redcap 0 stats | grep -E '^(reads|read_hits|read_misses)='
dmsetup remove hit-redcap hit-vd hit-linear
losetup -d "$loop"
umount "$dir"
