#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make check-boot's steps, run inside the booted image by redcap-boottest,
# one per boot: bash steps.sh STEP, in the payload disk's directory, whose
# file "env" tests/boot/run wrote.  Each check appends to out/checks.txt
#   PASS|FAIL <test> <what>
# followed by its evidence, indented with "    | "; NOTE lines are evidence
# without a verdict.  The tests:
#   1 the stack across reboots   2 the data disk missing
#   3 the module refused, linear 4 a kernel upgrade (DKMS)
#   5 systemd-analyze verify, udevadm test   6 a bad redcaptab line
#   7 a warm cache after a reboot (HDC's hot set saved and prefilled)
#   8 the root filesystem on redcap (the initramfs builds its stack)
# A step ends when its checks are done; redcap-boottest then powers off
# (which stops the stacks: the shutdown is part of what the next boot sees).
set -u
STEP=$1
OUT=$PWD/out
CHECKS=$OUT/checks.txt
# shellcheck source=/dev/null
. ./env
NAME=data
ORIGIN=/dev/disk/by-id/virtio-redcapdata
MNT=/srv/data
SUM=/root/data.sha256
mkdir -p "$OUT"

say() { echo "steps: $*" >&2; }

# check TEST WHAT CMD...: CMD's status is the verdict, its output the evidence.
check() {
	local test=$1 what=$2 out rc
	shift 2
	out=$("$@" 2>&1)
	rc=$?
	if ((rc == 0)); then
		echo "PASS $test $what" | tee -a "$CHECKS"
	else
		echo "FAIL $test $what (exit $rc)" | tee -a "$CHECKS"
	fi
	if [[ -n $out ]]; then
		printf '%s\n' "$out" | head -n 25 | sed 's/^/    | /' | tee -a "$CHECKS"
	fi
	return $rc
}

# note TEST WHAT CMD...: evidence only, no verdict (NOTE).
note() {
	local test=$1 what=$2
	shift 2
	echo "NOTE $test $what" | tee -a "$CHECKS"
	"$@" 2>&1 | head -n 25 | sed 's/^/    | /' | tee -a "$CHECKS"
}

# The boot as an admin sees it once it is over: running, degraded, ...
wait_booted() {
	local state
	state=$(timeout 900 systemctl is-system-running --wait 2>&1)
	echo "$state" >"$OUT/system-state"
	say "system: $state"
	systemctl --failed --no-legend --plain >"$OUT/failed-units" 2>&1
	echo "$state"
}

# Evidence helpers: print, and succeed when the pattern is found.
journal_has() { # PATTERN journalctl-args...
	local pat=$1
	shift
	journalctl --no-pager -o short-monotonic "$@" | grep -E -- "$pat"
}
stack_state() { redcapctl status "$NAME" --json | sed -n 's/.*"state": *"\([a-z]*\)".*/\1/p' | head -n 1; }
json_num() { # KEY: the first "KEY": N of redcapctl status --json
	redcapctl status "$NAME" --json | tr ',{' '\n\n' | sed -n "s/^ *\"$1\": *\([0-9]*\).*/\1/p" | head -n 1
}

is_state() { # WANTED...: redcapctl status's state is one of them
	local s
	s=$(stack_state)
	redcapctl status "$NAME"
	for w; do [[ $s == "$w" ]] && return 0; done
	echo "state '$s', wanted: $*"
	return 1
}
mounted_through_stack() {
	findmnt -n -o SOURCE,TARGET,FSTYPE "$MNT" && [[ $(findmnt -n -o SOURCE "$MNT") == /dev/mapper/$NAME ]]
}
origin_is_member() {
	local dev
	dev=$(readlink -f "$ORIGIN") || return 1
	lsblk -o NAME,FSTYPE
	[[ $(lsblk -dn -o FSTYPE "$dev") == redcap_member ]]
}
data_intact() { (cd "$MNT" && sha256sum -c "$SUM"); }
active_and_intact() { is_state active inactive && data_intact; }
unit_active() { systemctl is-active "$1" && systemctl status --no-pager -n 5 "$1" | head -n 12; }

# The stack of a new redcaptab entry (OPTIONS) started as its unit would
# be, ext4 made on it, mounted by its new fstab line (FSTAB_OPTIONS), and
# data written through it, with its checksum on the root filesystem.
setup_stack() { # TEST OPTIONS FSTAB_OPTIONS
	local test=$1 opts=$2 fsopts=$3
	{
		echo "# check-boot ($STEP)"
		echo "$NAME $ORIGIN 32M${opts:+ $opts}"
	} >/etc/redcaptab
	systemctl daemon-reload
	# The disk appeared before its entry: a change event makes it a member.
	udevadm trigger --action=change --settle "$(readlink -f "$ORIGIN")"
	check "$test" "setup: redcap@$NAME.service builds the new entry's stack" \
		systemctl start "redcap@$NAME.service" || return 1
	udevadm settle
	check "$test" "setup: mkfs.ext4 on /dev/mapper/$NAME" mkfs.ext4 -q -F -L rcdata "/dev/mapper/$NAME" ||
		return 1
	echo "/dev/mapper/$NAME $MNT ext4 $fsopts 0 2" >>/etc/fstab
	systemctl daemon-reload
	mkdir -p "$MNT"
	check "$test" "setup: fstab mounts /dev/mapper/$NAME on $MNT" \
		sh -c "systemctl start srv-data.mount && findmnt $MNT" || return 1
	dd if=/dev/urandom of="$MNT/random.bin" bs=1M count=16 status=none
	seq 1 200000 >"$MNT/numbers.txt"
	(cd "$MNT" && sha256sum random.bin numbers.txt >"$SUM")
	sync
	check "$test" "setup: data written through the stack" cat "$SUM"
}

# Reads through the stack, all over the disk, past the cache: I/O for the
# model layer to learn from.
model_io() {
	local i
	for i in $(seq 1 300); do
		dd if="/dev/mapper/$NAME" of=/dev/null bs=64k count=1 iflag=direct status=none \
			skip=$(((i * 7919) % 4000))
	done
	for i in $(seq 1 100); do
		dd if="/dev/mapper/$NAME" of=/dev/null bs=4k count=1 iflag=direct status=none \
			skip=$(((i * 104729) % 60000))
	done
}

# 7: the warm cache.  Segments of 128 KiB read whole with O_DIRECT: HOT,
# 40 spaced apart (no stream), read every round; each round's flood, 220
# others read once (a permutation of 880, never twice, never in a row),
# more than the LRU holds beside them.  The stack fills every miss
# (policy=always): under the default policy C-Aware passes such random
# misses by, the LRU keeps HOT without HDC, and HDC (which counts the
# misses the LRU does not serve) has nothing to choose.
HOT_SEGS=$(seq 100 7 373)
rstat() { dmsetup message "$NAME" 0 stats | sed -n "s/^$1=//p"; }
read_segs() { # SEGMENT...
	local s
	for s; do
		dd if="/dev/mapper/$NAME" of=/dev/null bs=128k count=1 iflag=direct skip="$s" status=none
	done
}
warm_round() { # ROUND
	read_segs $HOT_SEGS
	read_segs $(for k in $(seq $(($1 * 220)) $(($1 * 220 + 219))); do echo $((1000 + k * 37 % 880)); done)
}
# The hit ratio of round 3 from zeroed counters, in %: "<ratio> <hits> <reads>".
hit_ratio() {
	dmsetup message "$NAME" 0 reset_stats
	warm_round 3
	echo "$(($(rstat read_hits) * 1000 / $(rstat reads))) $(rstat read_hits) $(rstat reads)"
}
hot_chosen() { # every HOT segment is in the chosen set
	local chosen s
	chosen=" $(dmsetup message "$NAME" 0 chosen | sed -n 's/^segments=//p') "
	echo "chosen: $chosen"
	for s in $HOT_SEGS; do [[ $chosen == *" $s "* ]] || { echo "$s not chosen"; return 1; }; done
}
# Until every HOT segment is chosen (the worker looks each second), at most $1 seconds.
wait_chosen() {
	local end=$((SECONDS + $1))
	until hot_chosen >/dev/null; do
		((SECONDS < end)) || { hot_chosen; return 1; }
		sleep 1
	done
	hot_chosen
}
# Until each chosen segment has been pinned, and no fill flies, at most $1
# seconds.  A write drops a pinned copy (ext4 writes its metadata, some of
# it chosen) and ends its pin, counted in hdc_dropped: the segment is
# pinned again when next read, not prefilled again.
wait_pinned() {
	local end=$((SECONDS + $1)) n
	while :; do
		n=$(dmsetup message "$NAME" 0 chosen | sed -n 's/^chosen=//p')
		if (($(rstat hdc_pinned) + $(rstat hdc_dropped) >= n && n > 0)) &&
			(($(rstat segments_filling) == 0)); then
			echo "pinned $(rstat hdc_pinned) of $n chosen ($(rstat hdc_dropped) dropped by" \
				"a write), hdc_fills $(rstat hdc_fills), at uptime" \
				"$(cut -d' ' -f1 /proc/uptime) s"
			return 0
		fi
		((SECONDS < end)) || { echo "pinned $(rstat hdc_pinned) of $n, $(rstat hdc_dropped)" \
			"dropped, after $1 s"; return 1; }
		sleep 1
	done
}

# 8: the root filesystem on redcap.  The image's root is ext4 on the whole
# disk (serial redcaproot); the stack "root" over it, built by the
# initramfs, shows the same filesystem.
ROOT_ORIGIN=/dev/disk/by-id/virtio-redcaproot
ROOT_SUM=/root/rootdata.sha256
initramfs_has() { # KERNEL: its initramfs holds what the hook adds
	local ls
	ls=$(lsinitramfs "/boot/initrd.img-$1")
	printf '%s\n' "$ls" | grep -E 'redcap|dm-vdisk|local-top'
	for f in "lib/modules/$1/updates/dkms/dm-redcap.ko" "lib/modules/$1/updates/dkms/dm-vdisk.ko" \
		sbin/redcapctl etc/redcaptab scripts/local-top/redcap lib/udev/redcap-udev \
		lib/udev/rules.d/59-redcap-member.rules; do
		# (under /usr or not; a module compressed or not)
		printf '%s\n' "$ls" | sed -E 's|^usr/||; s/\.(xz|zst|gz)$//' | grep -Fxq "$f" ||
			{ echo "missing: $f"; return 1; }
	done
}
# An initramfs entry for the root, the root's fstab line on the stack, the
# initramfs rebuilt, data on the root, and the kernel and initramfs for the
# run to boot with root=/dev/mapper/root.
setup_root() {
	echo "root $ROOT_ORIGIN 64M initramfs" >>/etc/redcaptab
	sed -i 's|^LABEL=redcaproot / |/dev/mapper/root / |' /etc/fstab
	# (check also says the origin is in use: mounted on /, until the reboot)
	check 8 "setup: redcapctl check finds every line good" \
		sh -c "redcapctl check 2>&1 | grep -F '/etc/redcaptab: 2 entries, every line good'"
	check 8 "setup: update-initramfs -u -k $K61" update-initramfs -u -k "$K61" || return 1
	check 8 "setup: the initramfs has the modules, redcapctl, the table, the script" \
		initramfs_has "$K61" || return 1
	dd if=/dev/urandom of=/root/rootdata.bin bs=1M count=8 status=none
	sha256sum /root/rootdata.bin >"$ROOT_SUM"
	sync
	cp "/boot/vmlinuz-$K61" "/boot/initrd.img-$K61" "$OUT/"
}
root_through_stack() {
	findmnt -n -o SOURCE,TARGET,FSTYPE /
	[[ $(readlink -f "$(findmnt -n -o SOURCE /)") == $(readlink -f /dev/mapper/root) ]]
}
root_data_intact() { sha256sum -c "$ROOT_SUM"; }
root_reads_hit() { # the root stack serves a second read of the same blocks from RAM
	local before after
	# Every miss filled for the probe: the default policy may pass these by.
	redcapctl set root policy=always
	dmsetup message root 0 reset_stats
	dd if=/dev/mapper/root of=/dev/null bs=128k count=32 skip=4000 iflag=direct status=none
	before=$(dmsetup message root 0 stats | sed -n 's/^read_hits=//p')
	dd if=/dev/mapper/root of=/dev/null bs=128k count=32 skip=4000 iflag=direct status=none
	after=$(dmsetup message root 0 stats | sed -n 's/^read_hits=//p')
	redcapctl set root policy=adaptive+caware
	echo "read_hits $before after the first pass, $after after the second (32 reads)"
	((after - before >= 32))
}
root_checks() { # KERNEL
	check 8 "running $1 with root=/dev/mapper/root" \
		sh -c "uname -r; cat /proc/cmdline; [ \"\$(uname -r)\" = $1 ] && grep -q 'root=/dev/mapper/root' /proc/cmdline"
	check 8 "the initramfs built the root stack (journalctl -k -t redcap-initramfs)" \
		journal_has "redcap-initramfs: root: /dev/mapper/root over " -b -k
	check 8 "/ is mounted from /dev/mapper/root" root_through_stack
	check 8 "the root stack is redcap over its model layer over the disk" \
		sh -c "dmsetup table root; dmsetup table root-vd; dmsetup table root | grep -q ' redcap ' &&
			dmsetup table root-vd | grep -q ' vdisk '"
	check 8 "redcap@root.service is active, and left the stack as it was" \
		sh -c "systemctl status --no-pager -n 6 redcap@root.service; systemctl is-active redcap@root.service &&
			journalctl -b --no-pager -u redcap@root.service | grep -F 'root: already running'"
	check 8 "redcap-model@root.service is active" unit_active redcap-model@root.service
	check 8 "the root stack caches: a second read hits" root_reads_hit
	check 8 "redcapctl check finds no problem (the initramfs is newer than the table)" \
		sh -c "redcapctl check 2>&1 | grep -E 'root|initrd|problem'; redcapctl check >/dev/null 2>&1"
	check 8 "the data on the root reads back" root_data_intact
	check 8 "the boot finished: $state" sh -c "[ '$state' = running ] || { cat $OUT/failed-units; false; }"
}

case $STEP in
s1a)	# 1: a new entry, ext4 on it, data; the shutdown saves the model.
	state=$(wait_booted)
	setup_stack 1 "" defaults
	model_io
	check 1 "setup: model layer learning" sh -c "redcapctl status $NAME --json | grep -A3 '\"model\"'"
	;;
s1b)	# 1 after the first reboot, and 5.
	state=$(wait_booted)
	check 1 "the boot finished: $state" sh -c "[ '$state' = running ] || { cat $OUT/failed-units; false; }"
	check 1 "redcap@$NAME.service is active" unit_active "redcap@$NAME.service"
	check 1 "redcapctl status: state active or inactive" is_state active inactive
	check 1 "$MNT is mounted from /dev/mapper/$NAME" mounted_through_stack
	check 1 "lsblk shows the origin as redcap_member" origin_is_member
	check 1 "the data written before the reboot reads back" data_intact
	check 1 "the first shutdown saved the model: /var/lib/redcap/$NAME.vdisk" \
		sh -c "ls -l /var/lib/redcap/$NAME.vdisk && vdiskctl check-file /var/lib/redcap/$NAME.vdisk &&
			journalctl -b -1 --no-pager -o short-monotonic -u redcap-model@$NAME.service | tail -n 4"
	check 1 "this boot loaded it" journal_has "model loaded from /var/lib/redcap/$NAME.vdisk" \
		-b -u "redcap-model@$NAME.service"
	# 5: the generated units as systemd loads them, and the member rule.
	# --generators=yes: verify runs the generators (ours, fstab's) into a
	# directory of its own and loads what they made.
	check 5 "systemd-analyze verify: the generated units, the static ones, the mount" \
		sh -c "systemd-analyze verify --generators=yes --man=no redcap.target \
			redcap@$NAME.service redcap-model@$NAME.service redcap-model-save@$NAME.timer \
			redcap-model-save@$NAME.service srv-data.mount && echo 'no warning'"
	check 5 "the generator's units are where docs/boot.rst says" \
		sh -c "ls -R /run/systemd/generator | grep -i redcap; systemctl cat redcap@$NAME.service | head -n 30"
	dev=$(readlink -f "$ORIGIN")
	udevadm test --action=add "/sys/class/block/${dev#/dev/}" >"$OUT/udevadm-test.txt" 2>&1
	# systemd 257 (trixie) runs no program in udevadm test ("Running in test
	# mode, skipping execution of 'redcap-udev ...'"): the properties that
	# the rules import are then udevd's, from its run of them at this boot.
	props=$OUT/udevadm-test.txt how="udevadm test"
	if grep -q "skipping execution of 'redcap-udev" "$OUT/udevadm-test.txt"; then
		udevadm info --query=property "$dev" >"$OUT/udevadm-info.txt" 2>&1
		props=$OUT/udevadm-info.txt how="udevadm info (udevadm test runs no program)"
	fi
	check 5 "$how $dev: the member rule's properties" \
		sh -c "grep -E '^(REDCAP_[A-Z_]*|ID_FS_TYPE|SYSTEMD_WANTS|UDISKS_IGNORE|ID_FS_UUID|UDEV_DISABLE_PERSISTENT_STORAGE_BLKID_FLAG)=' $props;
			grep -q '^REDCAP_NAME=$NAME\$' $props &&
			grep -q '^ID_FS_TYPE=redcap_member\$' $props &&
			grep -Eq '^SYSTEMD_WANTS=.*redcap@$NAME\.service' $props"
	check 5 "udevadm test: 59- and 63-redcap-member.rules import redcap-udev's properties" \
		sh -c "grep -E 'redcap-member.rules|redcap-udev' $OUT/udevadm-test.txt &&
			grep -q '59-redcap-member.rules:[0-9]* Importing properties from results of .redcap-udev --early' $OUT/udevadm-test.txt &&
			grep -q '63-redcap-member.rules:[0-9]* Importing properties from results of .redcap-udev --late' $OUT/udevadm-test.txt"
	check 5 "no by-uuid or by-label link to the origin" \
		sh -c "ls -l /dev/disk/by-uuid /dev/disk/by-label; ! ls -l /dev/disk/by-uuid /dev/disk/by-label | grep -q '/$(basename "$dev")\$'"
	model_io
	redcapctl status "$NAME" --json >"$OUT/status-before-shutdown.json"
	;;
s1c)	# 1 after the second reboot.
	state=$(wait_booted)
	check 1 "the boot finished: $state" sh -c "[ '$state' = running ] || { cat $OUT/failed-units; false; }"
	check 1 "redcap@$NAME.service is active (second reboot)" unit_active "redcap@$NAME.service"
	check 1 "$MNT is mounted from /dev/mapper/$NAME (second reboot)" mounted_through_stack
	check 1 "the data reads back (second reboot)" data_intact
	check 1 "this boot loaded the model saved by the last shutdown" \
		journal_has "model loaded from /var/lib/redcap/$NAME.vdisk" -b -u "redcap-model@$NAME.service"
	filled=$(json_num cells_filled)
	check 1 "the model's tables survived: cells_filled=${filled:-?} > 0" \
		sh -c "vdiskctl check-file /var/lib/redcap/$NAME.vdisk; redcapctl status $NAME --json |
			grep -A8 '\"model\"'; [ '${filled:-0}' -gt 0 ]"
	# 6, next boot: a bad line after the good one.  The fstab line stays
	# without nofail: another line's mistake must not cost this mount (a
	# boot that ends in emergency mode fails the test, console shown).
	{
		echo "# check-boot (s1d): line 3 is bad"
		echo "$NAME $ORIGIN 32M"
		echo "broken /dev/disk/by-id/virtio-nothere 64M nofial"
	} >/etc/redcaptab
	;;
s1d)	# 6: a bad line in the table.
	state=$(wait_booted)
	check 6 "the journal names the bad line and the problem (journalctl -b -t redcap-generator)" \
		journal_has "redcaptab: line 3: .*nofial" -b -t redcap-generator
	note 6 "what the journal says of line 3" sh -c "journalctl -b --no-pager -o short-monotonic | grep -E 'line 3|nofial'"
	check 6 "the other entry's unit redcap@$NAME.service is active" unit_active "redcap@$NAME.service"
	check 6 "the other entry's stack is up and mounted" \
		sh -c "dmsetup ls | grep -E '^$NAME(-vd)?\s' && findmnt -n $MNT"
	check 6 "no unit for the bad line" sh -c "! systemctl cat redcap@broken.service 2>&1"
	check 6 "the boot finished: $state" sh -c "[ '$state' = running ] || { cat $OUT/failed-units; false; }"
	;;
s2a)	# 2: an entry and a mount, both nofail.
	state=$(wait_booted)
	setup_stack 2 "nofail,x-systemd.device-timeout=20s" \
		"defaults,nofail,x-systemd.device-timeout=30s"
	;;
s2b)	# 2, booted without the data disk.
	state=$(wait_booted)
	target=$(systemctl get-default)
	check 2 "the boot finished: $state (running or degraded)" \
		sh -c "echo '$state' | grep -Eqx 'running|degraded' && cat $OUT/failed-units"
	check 2 "the default target $target is reached" systemctl is-active "$target"
	check 2 "no emergency or rescue mode" \
		sh -c "! systemctl is-active emergency.target rescue.target"
	check 2 "redcap@$NAME.service did not start" \
		sh -c "systemctl status --no-pager redcap@$NAME.service | head -n 12; ! systemctl is-active --quiet redcap@$NAME.service"
	dev_unit=$(systemd-escape --path --suffix=device "$ORIGIN")
	check 2 "the journal names the missing device, and the stack that needed it" \
		sh -c "journalctl -b --no-pager -o short-monotonic >/tmp/journal &&
			grep -F 'Timed out waiting for device $dev_unit' /tmp/journal &&
			grep -F 'Dependency failed for redcap@$NAME.service' /tmp/journal"
	# docs/boot.rst: the job failed, the unit never ran (inactive, not
	# failed), and its status names the device it waited for.
	check 2 "systemctl status redcap@$NAME.service names the device" \
		sh -c "systemctl status --no-pager redcap@$NAME.service |
			grep -F 'Dependency failed for redcap@$NAME.service - redcap stack $NAME over $ORIGIN.'"
	check 2 "journalctl -u redcap@$NAME.service names the device" \
		journal_has "Dependency failed for redcap@$NAME.service - redcap stack $NAME over $ORIGIN\\." \
		-b -u "redcap@$NAME.service"
	note 2 "systemctl --failed" \
		sh -c "systemctl --failed --no-pager; echo \"is-failed: \$(systemctl is-failed redcap@$NAME.service)\""
	;;
s3a)	# 3: an on-fail=linear entry with data; then the module refused.
	state=$(wait_booted)
	setup_stack 3 "on-fail=linear" defaults
	printf 'blacklist dm_redcap\ninstall dm_redcap /bin/false\n' >/etc/modprobe.d/redcap-test.conf
	;;
s3b)	# 3: the module refused.
	state=$(wait_booted)
	check 3 "dm_redcap is not loaded" sh -c "cat /etc/modprobe.d/redcap-test.conf; ! grep -E '^dm_redcap ' /proc/modules"
	check 3 "redcap@$NAME.service is active" unit_active "redcap@$NAME.service"
	check 3 "/dev/mapper/$NAME is a linear device" sh -c "dmsetup table $NAME | tee /dev/stderr | grep -q ' linear '"
	check 3 "redcapctl status says linear" is_state linear
	check 3 "$MNT is mounted through the linear fallback" mounted_through_stack
	check 3 "the data is intact" data_intact
	check 3 "the journal says why it is linear" \
		journal_has 'linear' -b -u "redcap@$NAME.service"
	# The module is there, not loaded: check says whether it could load.
	# DKMS signed it (openssl is in the image): check names the signer.
	check 3 "redcapctl check: DKMS signed the module; this kernel needs no signature" \
		sh -c "redcapctl check 2>&1 | grep -E 'dm-redcap|Secure Boot';
			redcapctl check 2>&1 | grep -Eq '^ok +Secure Boot: off \(not a UEFI boot\); this kernel loads unsigned modules too\$' &&
			redcapctl check 2>&1 | grep -Eq \"^ok +dm-redcap: signed by '[^']+'\\\$\" &&
			modinfo -F signer dm_redcap | grep -q ."
	note 3 "the boot finished: $state" cat "$OUT/failed-units"
	# And back: the module allowed again, redcapctl upgrade swaps redcap in, live.
	rm -f /etc/modprobe.d/redcap-test.conf
	check 3 "redcapctl upgrade $NAME: redcap swapped in under the mounted filesystem" \
		sh -c "redcapctl upgrade $NAME && findmnt -n $MNT"
	check 3 "... now active or inactive, data intact" active_and_intact
	;;
s4a)	# 4 and 8: the data stack, and the root filesystem on redcap from the next boot.
	state=$(wait_booted)
	setup_stack 4 "" defaults
	setup_root
	;;
s4b)	# 8 on 6.1: the root on redcap; then 4: bookworm's 6.12 installed.
	state=$(wait_booted)
	root_checks "$K61"
	check 4 "running $(uname -r), redcap from DKMS" \
		sh -c "dkms status; modinfo -n dm_redcap"
	say "installing linux-image-$K612 and its headers (DKMS builds redcap for it)"
	# Each line with the time it came: where the quarter of an hour goes.
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
		/var/cache/redcap-kernel/*.deb 2>&1 |
		while IFS= read -r line; do printf '[%(%T)T] %s\n' -1 "$line"; done >"$OUT/kernel-install.log"
	echo "apt-get exit ${PIPESTATUS[0]}" >>"$OUT/kernel-install.log"
	check 4 "apt-get install linux-image-$K612 linux-headers-$K612" \
		sh -c "grep -E 'apt-get exit|Setting up linux-(image|headers)|redcap|dkms|DKMS' $OUT/kernel-install.log; grep -q 'apt-get exit 0' $OUT/kernel-install.log"
	check 4 "DKMS built and installed redcap for $K612" \
		sh -c "dkms status redcap; dkms status redcap -k $K612 | grep -q ': installed' &&
			find /lib/modules/$K612 -name 'dm-redcap.ko*' -o -name 'dm-vdisk.ko*' | grep -c . | grep -qx 2"
	check 8 "the initramfs of $K612 has the DKMS-built modules (the kernel upgrade ran the hook)" \
		initramfs_has "$K612"
	cp "/boot/vmlinuz-$K612" "/boot/initrd.img-$K612" "$OUT/"
	;;
s4c)	# 4 and 8: booted into 6.12, the root on redcap.
	state=$(wait_booted)
	check 4 "running $K612" sh -c "uname -r; [ \"\$(uname -r)\" = $K612 ]"
	check 4 "dm_redcap and dm_vdisk loaded from DKMS's build" \
		sh -c "dkms status redcap; modinfo -n dm_redcap dm_vdisk; grep -E '^dm_(redcap|vdisk) ' /proc/modules &&
			modinfo -n dm_redcap | grep -q /updates/dkms/"
	check 4 "redcap@$NAME.service is active" unit_active "redcap@$NAME.service"
	check 4 "redcapctl status: state active or inactive" is_state active inactive
	check 4 "$MNT is mounted from /dev/mapper/$NAME" mounted_through_stack
	check 4 "the data reads back" data_intact
	check 4 "the boot finished: $state" sh -c "[ '$state' = running ] || { cat $OUT/failed-units; false; }"
	root_checks "$K612"
	check 8 "this boot loaded the root stack's model saved by the last shutdown" \
		journal_has "model loaded from /var/lib/redcap/root.vdisk" -b -u redcap-model@root.service
	# Next: an initramfs without dm-redcap, as after a DKMS build that failed.
	ko=$(modinfo -k "$K612" -n dm_redcap)
	mv "$ko" /root/dm-redcap.ko.away && depmod "$K612"
	update-initramfs -u -k "$K612" >"$OUT/update-initramfs.log" 2>&1
	echo "update-initramfs exit $?" >>"$OUT/update-initramfs.log"
	mv /root/dm-redcap.ko.away "$ko" && depmod "$K612"
	check 8 "setup: update-initramfs without dm-redcap warns and names the remedy" \
		sh -c "cat $OUT/update-initramfs.log; grep -q 'update-initramfs exit 0' $OUT/update-initramfs.log &&
			grep -F 'W: redcap: dm-redcap is not built for kernel $K612' $OUT/update-initramfs.log"
	check 8 "setup: that initramfs has redcapctl and the table, not dm-redcap" \
		sh -c "lsinitramfs /boot/initrd.img-$K612 >/tmp/ls; grep -E 'redcapctl|redcaptab|dm-redcap|dm-vdisk' /tmp/ls;
			grep -q 'sbin/redcapctl\$' /tmp/ls && ! grep -q 'dm-redcap.ko' /tmp/ls"
	# (/boot keeps it: this image boots no more after the next boot.)
	cp "/boot/vmlinuz-$K612" "/boot/initrd.img-$K612" "$OUT/"
	;;
s4d)	# 8: the initramfs without the module: the root mounts linear, the cache comes later.
	state=$(wait_booted)
	check 8 "the initramfs started the root stack linear (journalctl -k -t redcap-initramfs)" \
		journal_has "redcap-initramfs: .*root: dm-redcap: .*linear device" -b -k
	check 8 "/ is mounted from /dev/mapper/root" root_through_stack
	check 8 "redcap@root.service swapped the cache in under the mounted root" \
		sh -c "systemctl status --no-pager -n 8 redcap@root.service; systemctl is-active redcap@root.service &&
			dmsetup table root | tee /dev/stderr | grep -q ' redcap ' &&
			journalctl -b --no-pager -u redcap@root.service | grep -E 'root: .*cache'"
	check 8 "the data on the root reads back" root_data_intact
	check 8 "the boot finished: $state" sh -c "[ '$state' = running ] || { cat $OUT/failed-units; false; }"
	;;
s7a)	# 7: a load with a hot set; HDC chooses it; the shutdown saves it.
	state=$(wait_booted)
	setup_stack 7 "policy=always" defaults
	for r in 0 1 2; do warm_round $r; done
	# The period (an hour) ends at the next read: HDC chooses from the
	# rounds' misses, three of each hot segment, one of each flood's.
	redcapctl set "$NAME" hot_period=1
	sleep 2
	read_segs 99
	redcapctl set "$NAME" hot_period=3600
	check 7 "before the reboot: HDC chose the 40 hot segments" wait_chosen 60
	check 7 "before the reboot: the chosen set is pinned" wait_pinned 300
	read -r before hits reads < <(hit_ratio)
	echo "$before" >/root/hit-before
	check 7 "before the reboot: the load's hit ratio $((before / 10)).$((before % 10)) % ($hits of $reads reads)" \
		sh -c "[ $hits -gt 0 ]"
	;;
s7b)	# 7 after the reboot: the hot set loaded and prefilled while idle.
	state=$(wait_booted)
	check 7 "the boot finished: $state" sh -c "[ '$state' = running ] || { cat $OUT/failed-units; false; }"
	check 7 "the shutdown saved the hot set: /var/lib/redcap/$NAME.hot" \
		sh -c "head -n 3 /var/lib/redcap/$NAME.hot && [ \$(wc -l </var/lib/redcap/$NAME.hot) -gt 40 ] &&
			journalctl -b -1 --no-pager -o short-monotonic -u redcap-model@$NAME.service | grep 'hot set'"
	check 7 "this boot loaded it (redcap-model@$NAME.service)" \
		journal_has "hot set loaded from /var/lib/redcap/$NAME.hot" -b -u "redcap-model@$NAME.service"
	check 7 "the load did not hold up the boot: redcap-model@$NAME.service took under 10 s" \
		sh -c "systemd-analyze blame --no-pager | grep -E 'redcap' ;
			t=\$(systemctl show -P ExecMainExitTimestampMonotonic redcap-model@$NAME.service);
			s=\$(systemctl show -P ExecMainStartTimestampMonotonic redcap-model@$NAME.service);
			echo \"model unit ran \$(( (t - s) / 1000 )) ms\"; [ \$(( t - s )) -lt 10000000 ]"
	check 7 "the loaded set is chosen again" wait_chosen 60
	check 7 "the cache prefilled it in the background while the disk was idle" wait_pinned 300
	read -r after hits reads < <(hit_ratio)
	before=$(cat /root/hit-before)
	check 7 "after the reboot: hit ratio $((after / 10)).$((after % 10)) % ($hits of $reads reads), at least 80 % of $((before / 10)).$((before % 10)) % before" \
		sh -c "[ $((after * 10)) -ge $((before * 8)) ]"
	check 7 "the data reads back" data_intact
	;;
*)
	echo "steps: unknown step '$STEP'" >&2
	exit 2
	;;
esac
cp /etc/redcaptab "$OUT/redcaptab" 2>/dev/null
cp /etc/fstab "$OUT/fstab"
exit 0
