# SPDX-License-Identifier: GPL-2.0
# The virtual disk's accuracy (the virtual-disk paper's experiment, scaled
# down): a measuring vdisk over an emulated 7200 rpm disk (vdisk emulate on
# brd), trained off-line with vdiskctl, then the REDCAP paper's access
# patterns one after another, twice.  For each phase: the time the measure
# layer saw the disk busy (busy_us), the time its virtual disk computed for
# the same requests from the model (virtual_busy_us), and the emulated
# drive's own time (emu_busy_us, the truth).  Prints a markdown table.
# Runs in the guest, deterministic under icount:
#   tests/vm/run --icount -- sh tests/bench/vdisk-accuracy.sh [train seconds] [--drive-cache]
# With --drive-cache the training ends with vdiskctl train's probe, and the
# model prices the drive cache it learnt.
set -eu
top=${REDCAP_TOP:-$(pwd)}
train=${1:-20}
dcache=${2:-}
mb=256
sectors=$((mb * 2048))

modprobe brd rd_nr=1 rd_size=$((mb * 1024))
dd if=/dev/urandom of=/dev/ram0 bs=1M count=$mb oflag=direct status=none

mk() {	# <name> <table>
	echo "0 $sectors $2" | dmsetup create "$1"
	udevadm settle
	[ -e "/dev/mapper/$1" ] || dmsetup mknodes "$1"
}
mk acc-hdd "vdisk /dev/ram0 2 mode emulate"
mk acc-vd "vdisk /dev/mapper/acc-hdd"
dev=/dev/mapper/acc-vd

stat() {	# <dm name> <key>
	dmsetup message "$1" 0 stats | sed -n "s/^$2=//p"
}

fio_run() {	# <fio options>...
	fio --name=acc --filename=$dev --readonly --direct=1 --ioengine=psync \
		--output=/dev/null "$@"
}

phase() {	# <pass> <name> <command>...
	pass=$1 name=$2
	shift 2
	dmsetup message acc-vd 0 reset_stats
	dmsetup message acc-hdd 0 reset_stats
	"$@"
	busy=$(stat acc-vd busy_us)
	virt=$(stat acc-vd virtual_busy_us)
	emu=$(stat acc-hdd emu_busy_us)
	reqs=$(stat acc-vd virtual_requests)
	unest=$(stat acc-vd virtual_unestimated)
	err=$(awk -v v="$virt" -v b="$busy" 'BEGIN { printf "%+.1f", b ? 100 * (v - b) / b : 0 }')
	echo "| $pass | $name | $reqs | $((busy / 1000)) | $((virt / 1000)) | $err | $((emu / 1000)) | $unest |"
}

seq_read() { fio_run --rw=read --bs=128k --size=64m; }
backward() { fio_run --rw=read:-128k --bs=64k --offset=64m --size=32m; }
strided() { fio_run --rw=read:8k --bs=4k --offset=96m --size=48m --io_size=16m; }
random_read() { fio_run --rw=randread --bs=4k --number_ios=2000 --randseed=7; }
random_2jobs() { fio_run --rw=randread --bs=4k --number_ios=1000 --numjobs=2 --randseed=11; }
streams_4() { fio_run --rw=read --bs=8k --numjobs=4 --offset=128m --offset_increment=16m --size=4m; }
random_mixed() {
	fio --name=acc --filename=$dev --direct=1 --ioengine=psync --output=/dev/null \
		--rw=randrw --rwmixread=70 --bs=4k --size=${mb}m --number_ios=1500 --randseed=9
}
buffered_seq() {
	blockdev --flushbufs $dev
	dd if=$dev of=/dev/null bs=1M count=64 skip=160 status=none
}

"$top/build/userspace/vdiskctl" train acc-vd --time "$train" --write $dcache >/dev/null 2>&1
echo "trained for $train s: $(stat acc-vd cells_filled) cells," \
	"$(stat acc-vd model_read_samples) read and $(stat acc-vd model_write_samples) write samples;" \
	"drive cache priced: $(stat acc-vd dcache_segments) segments of" \
	"$(stat acc-vd dcache_segment_sectors) sectors, read-ahead" \
	"$(stat acc-vd dcache_readahead_sectors), $(stat acc-vd dcache_media_mbps) MB/s"
echo
echo "| pass | phase | requests | measured busy ms | virtual ms | virtual vs measured | emulated drive ms | unestimated |"
echo "|---|---|---|---|---|---|---|---|"
for pass in 1 2; do
	phase $pass "sequential 128K" seq_read
	phase $pass "backward 64K" backward
	phase $pass "strided 4K/8K skip" strided
	phase $pass "random 4K" random_read
	phase $pass "random 4K, 2 readers" random_2jobs
	phase $pass "sequential 8K, 4 readers" streams_4
	phase $pass "random 4K 70% read" random_mixed
	phase $pass "buffered sequential" buffered_seq
done

dmsetup remove acc-vd acc-hdd
modprobe -r brd
