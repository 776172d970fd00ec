# SPDX-License-Identifier: GPL-2.0
# Fast-device overhead of redcap (policy off) and vdisk (measure) against
# dm-linear: 4 KiB random O_DIRECT reads on a loop device over tmpfs, all in
# one guest run, alternating configurations, median of the repetitions.
# "hit": redcap over the vdisk, every read a hit (64 MiB read through a
# 64 MiB cache, warmed first): what the hit path costs, the model's pricing
# and the shadow caches included.  "hit1m" (only when asked): the same
# through a cache of 2^20 segments of 4 KiB (4 GiB: give the guest 10G).
# Under icount (--icount) IOPS count instructions: run it in the guests of
# two builds to price a change.
# Runs in the guest:  tests/vm/run -- sh tests/bench/overhead.sh [reps] [seconds] [configs]
set -eu
reps=${1:-5}
secs=${2:-10}
configs=${3:-linear redcap vdisk hit}
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
mk ov-linear "linear $loop 0"
mk ov-redcap "redcap $loop 256 64 2 policy off"
mk ov-vdisk "vdisk $loop"
mk ov-hit "redcap /dev/mapper/ov-vdisk 256 512 2 policy always"
dd if=/dev/mapper/ov-hit of=/dev/null bs=128k count=512 iflag=direct status=none
case " $configs " in *" hit1m "*)
	mk ov-hit1m "redcap /dev/mapper/ov-vdisk 8 1048576 2 policy always"
	dd if=/dev/mapper/ov-hit1m of=/dev/null bs=128k count=512 iflag=direct status=none ;;
esac

iops() {	# <device> [size] -> IOPS
	fio --name=ov --filename="$1" --direct=1 --ioengine=psync --rw=randread --bs=4k \
		${2:+--size=$2} --time_based --runtime="$secs" --randseed=5 --output-format=terse \
		--terse-version=3 | awk -F';' '{ print $8 }'
}

echo "config rep iops"
r=1
while [ "$r" -le "$reps" ]; do
	for c in $configs; do
		case $c in
		hit*) echo "$c $r $(iops /dev/mapper/ov-$c 64m)" ;;
		*) echo "$c $r $(iops /dev/mapper/ov-$c)" ;;
		esac
	done
	r=$((r + 1))
done
for c in $configs; do
	case $c in hit*)
		echo "$c:"
		dmsetup message ov-$c 0 stats | grep -E '^(reads|read_hits|read_misses)='
		dmsetup message ov-$c 0 shadows | grep -E '^shadow_(32k|1024k)_(sampled|reads)=' ;;
	esac
done
[ -e /dev/mapper/ov-hit1m ] && dmsetup remove ov-hit1m
dmsetup remove ov-hit ov-linear ov-redcap ov-vdisk
losetup -d "$loop"
umount "$dir"
