// SPDX-License-Identifier: GPL-2.0
/*
 * redcapctl: the administrator's tool for redcap stacks (redcapctl(8)).
 *
 * A stack is two device-mapper devices: NAME-vd, a vdisk layer over the
 * origin that measures it (hidden from udev's other rules, as lvm2 hides its
 * sub-volumes), and NAME, the redcap cache over it.  Their DM UUIDs are
 * REDCAP-NAME-vd and REDCAP-NAME; that prefix is how redcapctl knows its own
 * devices.  Every device-mapper operation goes through libdevmapper, with
 * udev synchronisation; origins are resolved with libblkid, their users found
 * with libmount and sysfs, modules loaded with libkmod, JSON made by json-c.
 */
#define _GNU_SOURCE
#include <blkid/blkid.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <langinfo.h>
#include <libdevmapper.h>
#include <libkmod.h>
#include <libmount/libmount.h>
#include <limits.h>
#include <locale.h>
#include <linux/dm-ioctl.h>
#include <linux/fs.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "dmctl.h"
#include "redcapctl.h"
#include "metrics.h"
#include "redcaptab.h"
#include "rc-args.h"
#include "rc-policy.h"
#include "vdisk-tables.h"

static const char redcapctl_usage[] =
"usage: redcapctl create NAME ORIGIN [--ram SIZE] [--segment SIZE] [--policy P]\n"
"                        [--write-policy invalidate|update] [--estimator spk|vdisk]\n"
"                        [--no-model] [--readahead auto|SIZE]\n"
"       redcapctl remove NAME [--keep-device]\n"
"       redcapctl list [--json]\n"
"       redcapctl status NAME [--json]\n"
"       redcapctl stats NAME|--all [--format text|json|prometheus] [--json]\n"
"                       [--watch[=SECONDS]] [--out FILE]\n"
"       redcapctl set NAME KEY=VALUE...\n"
"       redcapctl drop-cache NAME\n"
"       redcapctl reset-stats NAME\n"
"       redcapctl model save|load NAME [FILE] [--if-present]\n"
"       redcapctl model train NAME [--time SECONDS] [--write] [--seed N] [--max-kib K]\n"
"       redcapctl hot save|load NAME [FILE] [--if-present]\n"
"       redcapctl start NAME|--all|--initramfs [--tab FILE]\n"
"       redcapctl stop NAME|--all [--tab FILE]\n"
"       redcapctl upgrade NAME|--all [--tab FILE]\n"
"       redcapctl check [--tab FILE] [--fstab FILE]\n"
"       redcapctl simulate --trace FILE [--warm FILE] [--format blkparse|csv] [--disk PROFILE]\n"
"                          [--model FILE] [--save-model FILE] [--no-train] [--drive-cache]\n"
"                          [--capacity SECTORS] --config SPEC... [--json]\n"
"       redcapctl -h|--help\n";

static const char try_help[] = "Try 'redcapctl --help' for more information.\n";

static const char redcapctl_help[] =
"Build, inspect and tune redcap stacks: a RAM read cache (/dev/mapper/NAME)\n"
"over a measuring vdisk layer (NAME-vd) over a disk.  Sizes take K, M, G, T.\n"
"\n"
"  create       build a stack over ORIGIN (a /dev path, PARTUUID= or PARTLABEL=);\n"
"               cache 64M of 128K segments, policy adaptive+caware, estimator\n"
"               vdisk (spk with --no-model) by default; read-ahead auto (1M,\n"
"               or the origin's if larger)\n"
"  remove       tear it down; --keep-device leaves NAME as a linear device\n"
"               over the origin, so a mounted filesystem stays mounted\n"
"  list         the stacks, one line each\n"
"  status       geometry, policy, state and why, counters, model\n"
"  stats        rates per second over one second; --watch redraws them every\n"
"               SECONDS (default 1) until interrupted; --format prometheus:\n"
"               the counters as they are, of NAME or of --all stacks, in\n"
"               Prometheus' text format (--out FILE: written whole, renamed)\n"
"  set          policy, write_policy, estimator, window, margin, decay_ms,\n"
"               budget_share, budget_cap_ms, prefetch, hdc, hot_period\n"
"  drop-cache   empty the cache;  reset-stats: zero the counters\n"
"  model        save, load or train the latency tables of NAME-vd (default FILE:\n"
"               " MODEL_DIR "/NAME.vdisk)\n"
"  hot          save HDC's hot set (the segments it pins) or load it back, to\n"
"               be filled while the disk is idle (default FILE:\n"
"               " MODEL_DIR "/NAME.hot)\n"
"  start, stop  the stacks of " DEFAULT_TAB " (redcaptab(5)): one by name, or\n"
"               --all (start skips noauto entries); start --initramfs: the\n"
"               initramfs entries, each origin waited for\n"
"  upgrade      swap the cache in, live, under a stack started linear\n"
"               (on-fail=linear) once the redcap module loads\n"
"  check        what stands between this host and its stacks\n"
"  simulate     replay a block trace through the emulated disk (--disk hdd7200\n"
"               or hdd15k) or a saved model (--model), and through redcap\n"
"               configurations (--config bare, or SEGMENTSxSIZE:POLICY[,KEY=VALUE],\n"
"               e.g. 64x128k:adaptive+caware)\n"
"\n"
"Exit status: 0 success, 1 error, 2 usage error.  See redcapctl(8).\n";

/* -h, --help: every command's. */
static void help(const char *cmd)
{
	(void)cmd;
	fputs(redcapctl_usage, stdout);
	fputs(redcapctl_help, stdout);
}

int main(int argc, char **argv)
{
	static const struct dmctl_cmd cmds[] = {
		{ "create", cmd_create }, { "remove", cmd_remove }, { "list", cmd_list },
		{ "status", cmd_status }, { "stats", cmd_stats }, { "set", cmd_set },
		{ "drop-cache", cmd_drop_cache }, { "reset-stats", cmd_reset_stats },
		{ "hot", cmd_hot },
		{ "model", cmd_model }, { "start", cmd_start }, { "stop", cmd_stop },
		{ "upgrade", cmd_upgrade },
		{ "check", cmd_check }, { "simulate", cmd_simulate },
	};

	/* A usage error prints its reason and where to read more, not all commands. */
	dmctl_init("redcapctl", try_help, help);
	if (argc < 2) {
		fputs(redcapctl_usage, stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		help(NULL);
		return 0;
	}
	atexit(vdt_cleanup);
	return dmctl_dispatch(argc, argv, cmds, sizeof(cmds) / sizeof(cmds[0]));
}
