# SPDX-License-Identifier: GPL-2.0
# The write cache against write-through on an emulated drive (vdisk
# emulate over brd), redcap 64 MiB of 128 KiB segments on top: fio's small
# random writes without and with fsyncs, a read/write mix and a sequential
# write, for write_policy invalidate (write-through), back and selective.
# Prints a markdown table of fio's run time (emulated: under --icount it is
# the guest's own clock), median and every run, the write cache's counters
# and, where the job fsyncs, the fsync latency's median and 99th
# percentile.  Runs in the guest:
#   tests/vm/run --icount -- sh tests/bench/wcache.sh [REPEATS [PROFILE]]
set -eu
repeats=${1:-3}
profile=${2:-hdd7200}
mb=512
sectors=$((mb * 2048))

modprobe brd rd_nr=1 rd_size=$((mb * 1024))
dd if=/dev/zero of=/dev/ram0 bs=1M count=$mb oflag=direct status=none

stat() {	# <key>
	dmsetup message rc 0 stats | sed -n "s/^$1=//p"
}

# fio's JSON: the write phase's run time in ms, and fsync's latency
# percentiles when it synced; end_fsync: the job ends once everything is
# on the disk, so the cache cannot win by keeping it
run() {	# <fio options>... -> "<seconds> <fsync p50 ms> <fsync p99 ms>"
	fio --name=w --filename=/dev/mapper/rc --direct=1 --ioengine=psync --randrepeat=1 \
		--randseed=7 --end_fsync=1 --output-format=json "$@" |
		python3 -c '
import json, sys
j = json.load(sys.stdin)["jobs"][0]
p = j.get("sync", {}).get("lat_ns", {}).get("percentile") if j.get("sync", {}).get("total_ios", 0) > 1 else None
lat = " ".join("%.2f" % (p[k] / 1e6) for k in ("50.000000", "99.000000")) if p else "- -"
print("%.2f %s" % (max(j["write"]["runtime"], j["read"]["runtime"]) / 1000, lat))'
}

stack() {	# <write policy>
	echo "0 $sectors vdisk /dev/ram0 4 mode emulate profile $profile" | dmsetup create emu
	udevadm settle
	[ -e /dev/mapper/emu ] || dmsetup mknodes emu
	echo "0 $sectors redcap /dev/mapper/emu 256 512 4 policy always write_policy $1" |
		dmsetup create rc
	udevadm settle
	[ -e /dev/mapper/rc ] || dmsetup mknodes rc
}

unstack() {
	dmsetup remove rc
	dmsetup remove emu
}

row() {	# <workload> <fio options>...
	name=$1
	shift
	for wp in invalidate back selective; do
		times=""
		for i in $(seq "$repeats"); do
			stack $wp
			out=$(run "$@")
			t=${out%% *}
			lat=${out#* }
			times="$times $t"
			cached=$(stat write_cached) through=$(stat write_through)
			wb=$(stat writeback_ios) fl=$(stat flushes)
			unstack
		done
		med=$(echo "$times" | tr ' ' '\n' | sed '/^$/d' | sort -n | awk '{a[NR]=$1} END {print a[int((NR + 1) / 2)]}')
		echo "| $name | $wp | $med | $times | $cached | $through | $wb | $fl | ${lat% *} | ${lat#* } |"
	done
}

echo "$profile, $repeats run(s) a cell"
echo
echo "| workload | write policy | median s | runs s | writes cached | through | write-backs | flushes | fsync p50 ms | fsync p99 ms |"
echo "|---|---|---|---|---|---|---|---|---|---|"
row "random 4K x 2000 over 256 MiB" --rw=randwrite --bs=4k --size=256m --number_ios=2000
row "random 4K x 2000, fsync every 32" --rw=randwrite --bs=4k --size=256m --number_ios=2000 \
	--fsync=32
row "random 4K x 2000 in 16 MiB" --rw=randwrite --bs=4k --size=16m --number_ios=2000
row "random 8K x 2000 half reads over 256 MiB" --rw=randrw --rwmixread=50 --bs=8k --size=256m \
	--number_ios=2000
row "sequential 1M x 64" --rw=write --bs=1m --size=64m
modprobe -r brd
