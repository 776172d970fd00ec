# SPDX-License-Identifier: GPL-2.0
# redcap: build, test, demo and install.  See README.md.

TOP := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
REDCAP_CACHE ?= $(HOME)/.cache/redcap
export REDCAP_CACHE
PYTHON ?= /usr/bin/python3

# Kernel to build for: 6.1 or 6.12 (the Debian guest kernels of tests/vm),
# debug (the KASAN/lockdep kernel of make check-debug),
# "native" (the running kernel, whose headers must be installed) or a full
# release string.  Default: native when its headers are there, else 6.1.
NATIVE_KDIR := /lib/modules/$(shell uname -r)/build
ifeq ($(origin KVER),undefined)
KVER := $(if $(wildcard $(NATIVE_KDIR)/Makefile),native,6.1)
endif
krel = $(strip $(if $(filter native,$(1)),$(shell uname -r),\
	$(if $(filter 6.1 6.12 debug,$(1)),$(shell cat $(REDCAP_CACHE)/kver-$(1) 2>/dev/null),$(1))))
KREL = $(call krel,$(KVER))
KBUILD_OUT = $(TOP)/build/$(KREL)
# Headers: installed for Debian's kernels, in the cache for the debug kernel.
KDIR = $(patsubst %/Makefile,%,$(firstword $(wildcard /lib/modules/$(KREL)/build/Makefile \
	$(REDCAP_CACHE)/kernels/$(KREL)/lib/modules/$(KREL)/build/Makefile)))
MODULE_SRCS := $(wildcard dm-redcap/* dm-vdisk-model/* include/*) Kbuild

# "make check" runs the guest suite on this series and then the other.
OTHER_KVER := $(if $(filter 6.12,$(KVER)),6.1,6.12)

DESTDIR ?=
PREFIX ?= /usr/local
# udev reads rules from /lib/udev (or /usr/lib/udev), never from PREFIX.
UDEVDIR ?= $(or $(shell pkg-config --variable=udevdir udev 2>/dev/null),/lib/udev)
BASH_COMPLETION_DIR ?= $(or $(shell pkg-config --variable=completionsdir bash-completion \
	2>/dev/null | sed 's|^/usr|$(PREFIX)|'),$(PREFIX)/share/bash-completion/completions)
# systemd reads units and generators from its own directories, never from PREFIX.
SYSTEMDUNITDIR ?= $(or $(shell pkg-config --variable=systemdsystemunitdir systemd 2>/dev/null),\
	/lib/systemd/system)
SYSTEMDGENERATORDIR ?= $(or $(shell pkg-config --variable=systemdsystemgeneratordir systemd \
	2>/dev/null),/lib/systemd/system-generators)
# mkinitramfs reads hooks and scripts from here (and /etc), never from PREFIX.
INITRAMFSTOOLSDIR ?= /usr/share/initramfs-tools

.PHONY: all deps modules userspace man boot-tools bench-tools test-tools rapiddisk host-tests check demo bench bench-apps bench-sim clean \
	install install-modules install-tools uninstall uninstall-tools deb lintian-trixie lockhold checkpatch sparse check-debug check-races check-boot check-crash soak fuzz

all: modules userspace man boot-tools

deps:
	@$(TOP)/tests/vm/setup packages source $(if $(filter 6.1 6.12,$(KVER)),kernel $(KVER)) \
		$(if $(filter check,$(MAKECMDGOALS)),kernel $(OTHER_KVER))

# Build in build/<release>/ so one tree can hold modules for several kernels.
modules:
	@test -n "$(KREL)" || { echo "make: kernel $(KVER) is not set up: run 'make deps KVER=$(KVER)'" >&2; exit 1; }
	@test -n "$(KDIR)" || { echo "make: no headers for $(KREL) in /lib/modules/$(KREL)/build" >&2; exit 1; }
	@mkdir -p $(KBUILD_OUT)
	@cp -a --parents $(MODULE_SRCS) $(KBUILD_OUT)/
	$(MAKE) -s -C $(KDIR) M=$(KBUILD_OUT) W=1 CONFIG_DEBUG_INFO_BTF_MODULES= \
		$(if $(FAULT_INJECTION),REDCAP_FAULT_INJECTION=y) modules

userspace:
	$(MAKE) -C userspace

# redcapctl(8), redcaptab(5) and redcap-generator(8), from docs/man/*.rst.
man:
	$(MAKE) -s -C docs/man

# The systemd generator and the udev helper (issue 15), calling redcapctl
# where install puts it.
boot-tools:
	$(MAKE) -C udev REDCAPCTL=$(PREFIX)/sbin/redcapctl

# The Debian packages redcap-dkms and redcap-tools in build/deb/, from a
# clean copy of the work tree; fails on any lintian error.
deb:
	@$(TOP)/debian/make-deb

# Trixie's lintian on build/deb's packages, in a cached trixie chroot (the
# same packages install on bookworm and trixie: docs/boot.rst); errors fail.
lintian-trixie:
	@$(TOP)/debian/lintian-on trixie

# The benchmark suite's reader: static, so that starting it in the guest
# reads nothing from the host's filesystem.
bench-tools: build/bench/rdpat
build/bench/rdpat: tests/bench/rdpat.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -static -Wall -Wextra -Werror -o $@ $<

# Everything the guest suite runs besides the modules: redcapctl and vdiskctl,
# the generator and the udev helper, the bench's reader.  make check's build
# phase, make check-debug and make soak build it, so that each works in a
# tree where no other target ran first.
test-tools: userspace boot-tools bench-tools

# RapidDisk's RAM disk and cache target (the bench's rapiddisk-brd), built
# from Debian's rapiddisk-dkms as make deps unpacked it, for the kernel of
# KVER, in build/<release>/rapiddisk/.  Not part of make check; tests/bench/run
# builds them.
RAPIDDISK_SRC = $(patsubst %/rapiddisk-cache.c,%,$(lastword $(sort $(wildcard \
	$(REDCAP_CACHE)/rapiddisk-dkms/usr/src/rapiddisk-*/rapiddisk-cache.c))))
rapiddisk:
	@test -n "$(KREL)" || { echo "make: kernel $(KVER) is not set up: run 'make deps KVER=$(KVER)'" >&2; exit 1; }
	@test -n "$(KDIR)" || { echo "make: no headers for $(KREL) in /lib/modules/$(KREL)/build" >&2; exit 1; }
	@test -n "$(RAPIDDISK_SRC)" || { echo "make: no RapidDisk sources: run 'make deps'" >&2; exit 1; }
	@mkdir -p $(KBUILD_OUT)/rapiddisk
	@cp -a $(RAPIDDISK_SRC)/rapiddisk.c $(RAPIDDISK_SRC)/rapiddisk-cache.c $(KBUILD_OUT)/rapiddisk/
	@echo 'obj-m := rapiddisk.o rapiddisk-cache.o' > $(KBUILD_OUT)/rapiddisk/Kbuild.new
	@cmp -s $(KBUILD_OUT)/rapiddisk/Kbuild.new $(KBUILD_OUT)/rapiddisk/Kbuild || \
		mv $(KBUILD_OUT)/rapiddisk/Kbuild.new $(KBUILD_OUT)/rapiddisk/Kbuild
	@rm -f $(KBUILD_OUT)/rapiddisk/Kbuild.new
	$(MAKE) -s -C $(KDIR) M=$(KBUILD_OUT)/rapiddisk CONFIG_DEBUG_INFO_BTF_MODULES= modules

# Lock holds of a discard's walk at 1M segments and of the model's pricing (issue 13).
lockhold: build/bench/lockhold
	@build/bench/lockhold
LOCKHOLD_SRCS := dm-redcap/rc-core.c dm-redcap/rc-hot.c dm-redcap/rc-policy.c dm-vdisk-model/vd-model.c
build/bench/lockhold: tests/bench/lockhold.c $(LOCKHOLD_SRCS) $(wildcard dm-redcap/*.h \
		dm-vdisk-model/*.h include/*.h)
	@mkdir -p $(dir $@)
	$(CC) -O2 -Wall -Wextra -Werror -Wno-unused-parameter -Iinclude -Idm-redcap \
		-Idm-vdisk-model -o $@ tests/bench/lockhold.c $(LOCKHOLD_SRCS)

host-tests:
	$(MAKE) -s -C tests/host

check: deps
	@$(TOP)/tests/check $(KVER) $(OTHER_KVER)

# The whole guest suite on the debug kernel (KASAN, KFENCE, lockdep,
# kmemleak, UBSAN, ...), built once from Debian's linux-source-6.1; fails on
# any kernel report.  Not part of make check (README.md: how long it takes).
check-debug: deps
	@$(TOP)/tests/vm/debug-kernel
	@$(TOP)/tests/check-debug

# The data path's race tests on that kernel with 2 vCPUs, the part of
# make check-debug that races between CPUs: make check's guests have one
# vCPU each (tests/check says why), so every issue's definition of done
# has this run.
RACE_TESTS := $(addprefix tests/guest/test_redcap_,data.py trust.py prefetch.py faults.py)
check-races: deps
	@$(TOP)/tests/vm/debug-kernel
	@$(TOP)/tests/check-debug $(RACE_TESTS)

# redcap's Debian packages installed on Debian bookworm and trixie images
# booted under QEMU, systemd as PID 1 (issue 15, issue 50): the stack across
# reboots, a missing disk, the linear fallback, a kernel upgrade, the units
# and the udev rule; trixie's lintian on the packages.  The images are
# cached under REDCAP_CACHE/boot; results in build/boot/.  BOOT_RELEASE=bookworm
# or trixie boots one of them.  Not part of make check (README.md: how long
# it takes).
BOOT_RELEASE ?= all
check-boot: deps
	@$(TOP)/tests/boot/run --release $(BOOT_RELEASE)

# The write cache's crash consistency (issue 48): filesystems on redcap on
# dm-log-writes, the log replayed to every flush point and checked, on both
# kernels (tests/crash/run); results in build/crash/.  Not part of make check.
check-crash: deps
	@$(TOP)/tests/crash/run $(KVER) $(OTHER_KVER)

# The soak (issue 13) on the debug kernel: SOAK_MIN minutes, 60 by default.
SOAK_MIN ?= 60
soak: deps
	@$(TOP)/tests/vm/debug-kernel
	@$(TOP)/tests/soak/run $(SOAK_MIN)

# The parsers under libFuzzer (tests/fuzz/README.md); make check runs a short round.
FUZZ_RUNS ?= 10000000
fuzz: deps
	@$(MAKE) -s -C tests/fuzz run FUZZ_RUNS=$(FUZZ_RUNS)

# The benchmark suite (docs/results/README.md): the server set; QUICK=1 for the reduced set.
PROFILE ?= hdd7200
JOBS ?= 2
bench: deps
	@$(TOP)/tests/bench/run --kernel $(if $(filter native,$(KVER)),6.1,$(KVER)) \
		--profile $(PROFILE) --jobs $(JOBS) $(if $(QUICK),--quick)

# The real programs (tests/bench/apps.py) at the server set's scale.
bench-apps: deps
	@$(TOP)/tests/bench/run --kernel $(if $(filter native,$(KVER)),6.1,$(KVER)) \
		--profile $(PROFILE) --jobs $(JOBS) --set apps

# redcapctl simulate at the paper's scale, on the host (docs/results/README.md):
# QUICK=1 for 1 and 4 processes and no curve.
bench-sim: deps userspace
	@$(PYTHON) $(TOP)/tests/bench/sim-scale.py --out $(TOP)/docs/results $(if $(QUICK),--quick)

# Natively on a host that can load our modules (root, KVER=native), else
# in the guest.
demo: deps
	@$(TOP)/tests/demo-run $(KVER) $(REDCAP_CACHE)/lkr.tar

checkpatch:
	@$(PYTHON) -m pytest -p no:cacheprovider -q $(TOP)/tests/host/test_style.py -k checkpatch

sparse: modules
	@mkdir -p $(KBUILD_OUT)
	$(MAKE) -s -C $(KDIR) M=$(KBUILD_OUT) C=2 \
		$(if $(FAULT_INJECTION),REDCAP_FAULT_INJECTION=y) modules

# install-modules and install-tools, which a package (or a test) may run alone.
install: install-modules install-tools
	$(if $(DESTDIR),,depmod -a $(KREL))
	$(if $(DESTDIR),,udevadm control --reload 2>/dev/null || true)
	$(if $(DESTDIR),,systemctl daemon-reload 2>/dev/null || true)

install-modules: modules
	$(MAKE) -C $(KDIR) M=$(KBUILD_OUT) \
		INSTALL_MOD_PATH=$(DESTDIR) INSTALL_MOD_DIR=updates modules_install

install-tools: userspace man boot-tools
	install -D -m 755 build/userspace/redcapctl $(DESTDIR)$(PREFIX)/sbin/redcapctl
	install -D -m 755 build/userspace/vdiskctl $(DESTDIR)$(PREFIX)/sbin/vdiskctl
	install -D -m 644 build/man/redcapctl.8 $(DESTDIR)$(PREFIX)/share/man/man8/redcapctl.8
	install -D -m 644 userspace/vdiskctl.8 $(DESTDIR)$(PREFIX)/share/man/man8/vdiskctl.8
	install -D -m 644 build/man/redcaptab.5 $(DESTDIR)$(PREFIX)/share/man/man5/redcaptab.5
	install -D -m 644 build/man/redcap-generator.8 \
		$(DESTDIR)$(PREFIX)/share/man/man8/redcap-generator.8
	install -D -m 644 udev/redcapctl.bash-completion $(DESTDIR)$(BASH_COMPLETION_DIR)/redcapctl
	install -d $(DESTDIR)$(UDEVDIR)/rules.d $(DESTDIR)$(SYSTEMDUNITDIR)/sysinit.target.wants
	install -m 644 -t $(DESTDIR)$(UDEVDIR)/rules.d udev/*.rules
	install -D -m 755 build/udev/redcap-udev $(DESTDIR)$(UDEVDIR)/redcap-udev
	install -D -m 755 build/udev/redcap-generator \
		$(DESTDIR)$(SYSTEMDGENERATORDIR)/redcap-generator
	sed 's|/usr/sbin/redcapctl|$(PREFIX)/sbin/redcapctl|' udev/redcap-model-save@.service \
		> $(DESTDIR)$(SYSTEMDUNITDIR)/redcap-model-save@.service
	sed 's|/usr/sbin/redcapctl|$(PREFIX)/sbin/redcapctl|' udev/redcap-metrics.service \
		> $(DESTDIR)$(SYSTEMDUNITDIR)/redcap-metrics.service
	install -m 644 -t $(DESTDIR)$(SYSTEMDUNITDIR) udev/redcap.target udev/redcap-model-save@.timer \
		udev/redcap-metrics.timer
	install -d $(DESTDIR)$(INITRAMFSTOOLSDIR)/hooks $(DESTDIR)$(INITRAMFSTOOLSDIR)/scripts/local-top
	sed -e 's|^REDCAPCTL=.*|REDCAPCTL=$(PREFIX)/sbin/redcapctl|' -e 's|^UDEVDIR=.*|UDEVDIR=$(UDEVDIR)|' \
		udev/initramfs-tools-hook > $(DESTDIR)$(INITRAMFSTOOLSDIR)/hooks/redcap
	chmod 755 $(DESTDIR)$(INITRAMFSTOOLSDIR)/hooks/redcap
	install -m 755 udev/initramfs-tools-local-top \
		$(DESTDIR)$(INITRAMFSTOOLSDIR)/scripts/local-top/redcap
	ln -sfn ../redcap.target $(DESTDIR)$(SYSTEMDUNITDIR)/sysinit.target.wants/redcap.target
	install -D -m 644 docs/redcap.rst $(DESTDIR)$(PREFIX)/share/doc/redcap/redcap.rst
	install -D -m 644 docs/vdisk.rst $(DESTDIR)$(PREFIX)/share/doc/redcap/vdisk.rst
	install -D -m 644 docs/admin-guide.rst $(DESTDIR)$(PREFIX)/share/doc/redcap/admin-guide.rst
	install -D -m 644 docs/boot.rst $(DESTDIR)$(PREFIX)/share/doc/redcap/boot.rst
	install -D -m 644 docs/redcapctl.schema.json \
		$(DESTDIR)$(PREFIX)/share/doc/redcap/redcapctl.schema.json
	install -d -m 755 $(DESTDIR)/var/lib/redcap

# What install put in place, for the kernel it was built for (KVER); the
# model files in /var/lib/redcap and /etc/redcaptab are the admin's and stay.
uninstall: uninstall-tools
	rm -f $(DESTDIR)/lib/modules/$(KREL)/updates/dm-redcap/dm-redcap.ko \
		$(DESTDIR)/lib/modules/$(KREL)/updates/dm-vdisk-model/dm-vdisk.ko
	$(if $(DESTDIR),,depmod -a $(KREL))

uninstall-tools:
	rm -f $(DESTDIR)$(PREFIX)/sbin/redcapctl $(DESTDIR)$(PREFIX)/sbin/vdiskctl \
		$(DESTDIR)$(PREFIX)/share/man/man8/redcapctl.8 \
		$(DESTDIR)$(PREFIX)/share/man/man8/vdiskctl.8 \
		$(DESTDIR)$(PREFIX)/share/man/man5/redcaptab.5 \
		$(DESTDIR)$(PREFIX)/share/man/man8/redcap-generator.8 \
		$(DESTDIR)$(BASH_COMPLETION_DIR)/redcapctl \
		$(addprefix $(DESTDIR)$(UDEVDIR)/rules.d/,$(notdir $(wildcard udev/*.rules))) \
		$(DESTDIR)$(UDEVDIR)/redcap-udev $(DESTDIR)$(SYSTEMDGENERATORDIR)/redcap-generator \
		$(DESTDIR)$(SYSTEMDUNITDIR)/redcap.target \
		$(DESTDIR)$(SYSTEMDUNITDIR)/redcap-model-save@.service \
		$(DESTDIR)$(SYSTEMDUNITDIR)/redcap-model-save@.timer \
		$(DESTDIR)$(SYSTEMDUNITDIR)/redcap-metrics.service \
		$(DESTDIR)$(SYSTEMDUNITDIR)/redcap-metrics.timer \
		$(DESTDIR)$(SYSTEMDUNITDIR)/sysinit.target.wants/redcap.target \
		$(DESTDIR)$(INITRAMFSTOOLSDIR)/hooks/redcap \
		$(DESTDIR)$(INITRAMFSTOOLSDIR)/scripts/local-top/redcap
	rm -rf $(DESTDIR)$(PREFIX)/share/doc/redcap

clean:
	rm -rf build
