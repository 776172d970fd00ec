# SPDX-License-Identifier: GPL-2.0
# What fio sees of the emulated disks (vdisk emulate over brd): sequential
# 128 KiB reads, random 4 KiB reads one at a time and 16 at once, and
# re-reads of a region just read (the drive cache), for each profile.
# Prints a markdown table.
# Runs in the guest, deterministic under icount:
#   tests/vm/run --icount -- sh tests/bench/vdisk-emulator.sh
set -eu
mb=256
sectors=$((mb * 2048))

modprobe brd rd_nr=1 rd_size=$((mb * 1024))
dd if=/dev/urandom of=/dev/ram0 bs=1M count=$mb oflag=direct status=none

stat() {	# <key>
	dmsetup message emu 0 stats | sed -n "s/^$1=//p"
}

# fio terse v3: field 7 read bandwidth KiB/s, 16 mean completion latency us
run() {	# <fio options>... -> "<MB/s> <mean latency us>"
	fio --name=emu --filename=/dev/mapper/emu --readonly --direct=1 --ioengine=psync \
		--output-format=terse --terse-version=3 "$@" |
		awk -F';' '{ printf "%.1f %.0f", $7 * 1.024 / 1000, $16 }'
}

row() {	# <profile> <workload> <fio options>...
	profile=$1 name=$2
	shift 2
	dmsetup message emu 0 reset_stats
	set -- $(run "$@")
	reqs=$(stat emu_requests)
	echo "| $profile | $name | $1 | $2 | $((reqs ? $(stat emu_busy_us) / reqs : 0)) |" \
		"$(stat emu_cache_hits) | $(stat emu_ra_hits) | $(stat emu_seeks) | $reqs |"
}

echo "| profile | workload | fio MB/s | fio mean latency us | drive mean us | cache hits | read-ahead hits | seeks | requests |"
echo "|---|---|---|---|---|---|---|---|---|"
for profile in hdd7200 hdd15k st1 nbd; do
	echo "0 $sectors vdisk /dev/ram0 4 mode emulate profile $profile" | dmsetup create emu
	udevadm settle
	[ -e /dev/mapper/emu ] || dmsetup mknodes emu
	dmsetup message emu 0 reset
	row $profile "sequential 128K, 64 MiB" --rw=read --bs=128k --size=64m
	row $profile "random 4K x 1000" --rw=randread --bs=4k --number_ios=1000 --randseed=3
	row $profile "random 4K x 1000, 16 at once" --rw=randread --bs=4k --number_ios=1000 \
		--randseed=3 --ioengine=libaio --iodepth=16
	run --rw=read --bs=4k --size=64k --offset=8m >/dev/null
	row $profile "re-read 64 KiB x 10" --rw=read --bs=4k --size=64k --offset=8m --loops=10
	dmsetup remove emu
done
modprobe -r brd
