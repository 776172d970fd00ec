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
#include "simulate.h"
#include "vdisk-tables.h"

#define UUID_PREFIX		"REDCAP-"
#define VD_SUFFIX		"-vd"
#define SCHEMA_VERSION		1
#define DEFAULT_RAM		(64ull << 20)
#define DEFAULT_POLICY		RC_POLICY_DEFAULT
#define DEFAULT_TAB		"/etc/redcaptab"
#define MODEL_DIR		"/var/lib/redcap"
#define MIB			(1024.0 * 1024.0)

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

/* "64 MiB", "128 KiB", "1.5 GiB": for people; JSON has the bytes. */
static const char *fmt_size(uint64_t bytes, char *buf, size_t len)
{
	static const char * const units[] = { "bytes", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)bytes;
	unsigned int u = 0;

	while (v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024;
		u++;
	}
	if (!u || v == floor(v))
		snprintf(buf, len, "%.0f %s", v, units[u]);
	else
		snprintf(buf, len, "%.1f %s", v, units[u]);
	return buf;
}

/* --- modules ------------------------------------------------------------- */

/*
 * Make target @ttype available, loading module @mod if the kernel lacks it.
 * 0, or -1 with why in @why.
 */
static int module_ensure(const char *ttype, const char *mod, char *why, size_t len)
{
	struct kmod_list *list = NULL, *l;
	struct kmod_ctx *ctx;
	struct utsname u;
	int err = 0;

	if (dm_has_target(ttype, NULL, 0))
		return 0;
	uname(&u);
	ctx = kmod_new(NULL, NULL);
	if (!ctx) {
		snprintf(why, len, "cannot start libkmod");
		return -1;
	}
	if (kmod_module_new_from_lookup(ctx, mod, &list) < 0 || !list) {
		snprintf(why, len, "not built for kernel %s (no %s module in /lib/modules/%s; "
			 "install redcap for this kernel)", u.release, mod, u.release);
		kmod_unref(ctx);
		return -1;
	}
	kmod_list_foreach(l, list) {
		struct kmod_module *m = kmod_module_get_module(l);

		err = kmod_module_probe_insert_module(m, KMOD_PROBE_APPLY_BLACKLIST, NULL, NULL,
						      NULL, NULL);
		kmod_module_unref(m);
		if (err)
			break;
	}
	kmod_module_unref_list(list);
	kmod_unref(ctx);
	if (err == KMOD_PROBE_APPLY_BLACKLIST) {
		snprintf(why, len, "blacklisted in /etc/modprobe.d");
		return -1;
	}
	if (err < 0) {
		snprintf(why, len, "the kernel refused it: %s", strerror(-err));
		return -1;
	}
	if (!dm_has_target(ttype, NULL, 0)) {
		snprintf(why, len, "loaded, but the kernel has no '%s' target", ttype);
		return -1;
	}
	return 0;
}

/* --- origins ------------------------------------------------------------- */

struct origin {
	char spec[RCTAB_ORIGIN_MAX + 16];	/* as given: /dev/..., PARTUUID=... */
	char path[PATH_MAX];			/* the block device */
	dev_t devno;
	uint64_t sectors;
	long ra_sectors;			/* its own read-ahead */
};

static const char *origin_tag(enum rctab_origin kind)
{
	return kind == RCTAB_ORIGIN_PARTUUID ? "PARTUUID" :
	       kind == RCTAB_ORIGIN_PARTLABEL ? "PARTLABEL" : NULL;
}

/* Find the origin's device.  0, or -1 with why in @why. */
static int origin_resolve(enum rctab_origin kind, const char *value, struct origin *o,
			  char *why, size_t len)
{
	const char *tag = origin_tag(kind);
	struct stat st;
	char *dev;
	int fd, e;

	memset(o, 0, sizeof(*o));
	snprintf(o->spec, sizeof(o->spec), "%s%s%s", tag ? tag : "", tag ? "=" : "", value);
	if (tag) {
		dev = blkid_evaluate_tag(tag, value, NULL);
		if (!dev) {
			snprintf(why, len, "origin %s: not found", o->spec);
			return -1;
		}
		snprintf(o->path, sizeof(o->path), "%s", dev);
		free(dev);
	} else {
		snprintf(o->path, sizeof(o->path), "%s", value);
	}
	if (stat(o->path, &st)) {
		snprintf(why, len, "origin %s: %s", o->spec,
			 errno == ENOENT ? "not found" : strerror(errno));
		return -1;
	}
	if (!S_ISBLK(st.st_mode)) {
		snprintf(why, len, "origin %s: not a block device", o->spec);
		return -1;
	}
	o->devno = st.st_rdev;
	fd = open(o->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || ioctl(fd, BLKGETSIZE64, &o->sectors) || ioctl(fd, BLKRAGET, &o->ra_sectors)) {
		e = errno;
		if (fd >= 0)
			close(fd);
		snprintf(why, len, "origin %s: %s", o->spec, strerror(e));
		return -1;
	}
	close(fd);
	o->sectors >>= 9;
	if (!o->sectors) {
		snprintf(why, len, "origin %s: empty device", o->spec);
		return -1;
	}
	return 0;
}

/* /dev/<kernel name> of @devno, from its uevent; "M:m" if it has none. */
static void devno_path(dev_t devno, char *buf, size_t len)
{
	char path[PATH_MAX], line[512];
	FILE *f;

	snprintf(buf, len, "%u:%u", major(devno), minor(devno));
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/uevent", major(devno), minor(devno));
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "DEVNAME=", 8)) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(buf, len, "/dev/%s", line + 8);
			break;
		}
	}
	if (f)
		fclose(f);
}

/* Who holds @devno (a device-mapper or md device stacked on it): "" if nobody. */
static void holder_of(dev_t devno, char *buf, size_t len)
{
	char path[PATH_MAX], dmname[256];
	struct dirent *de;
	DIR *d;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/holders", major(devno), minor(devno));
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/class/block/%s/dm/name", de->d_name);
		FILE *f = fopen(path, "re");

		if (f && fgets(dmname, sizeof(dmname), f)) {
			dmname[strcspn(dmname, "\n")] = '\0';
			snprintf(buf, len, "held by device-mapper device '%s'", dmname);
		} else {
			snprintf(buf, len, "held by %s", de->d_name);
		}
		if (f)
			fclose(f);
		break;
	}
	closedir(d);
}

/* Where @devno is mounted or used as swap: "" if nowhere. */
static void mount_of(dev_t devno, char *buf, size_t len)
{
	struct libmnt_table *tb = mnt_new_table();
	struct libmnt_fs *fs;

	buf[0] = '\0';
	if (!tb)
		return;
	if (!mnt_table_parse_mtab(tb, NULL)) {
		fs = mnt_table_find_devno(tb, devno, MNT_ITER_FORWARD);
		if (fs)
			snprintf(buf, len, "mounted on %s", mnt_fs_get_target(fs));
	}
	mnt_unref_table(tb);
	if (buf[0])
		return;
	tb = mnt_new_table();
	if (tb && !mnt_table_parse_swaps(tb, NULL)) {
		struct libmnt_iter *it = mnt_new_iter(MNT_ITER_FORWARD);
		struct stat st;

		while (it && !mnt_table_next_fs(tb, it, &fs)) {
			const char *src = mnt_fs_get_srcpath(fs);

			if (src && !stat(src, &st) && S_ISBLK(st.st_mode) && st.st_rdev == devno) {
				snprintf(buf, len, "used as swap");
				break;
			}
		}
		mnt_free_iter(it);
	}
	mnt_unref_table(tb);
}

/* Who uses @devno or one of its partitions: "" if nobody we can name. */
static void user_of(dev_t devno, char *buf, size_t len)
{
	char path[PATH_MAX], devstr[32], part[NAME_MAX + 16];
	unsigned int maj, min;
	struct dirent *de;
	DIR *d;

	mount_of(devno, buf, len);
	if (!buf[0])
		holder_of(devno, buf, len);
	if (buf[0])
		return;
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u", major(devno), minor(devno));
	d = opendir(path);
	while (d && (de = readdir(d)) && !buf[0]) {
		snprintf(part, sizeof(part), "%s/partition", de->d_name);
		if (sysfs_read(devno, part, devstr, sizeof(devstr)))
			continue;
		snprintf(part, sizeof(part), "%s/dev", de->d_name);
		if (sysfs_read(devno, part, devstr, sizeof(devstr)) ||
		    sscanf(devstr, "%u:%u", &maj, &min) != 2)
			continue;
		char use[PATH_MAX];

		mount_of(makedev(maj, min), use, sizeof(use));
		if (!use[0])
			holder_of(makedev(maj, min), use, sizeof(use));
		if (use[0])
			snprintf(buf, len, "partition %.64s %.200s", de->d_name, use);
	}
	if (d)
		closedir(d);
}

/*
 * 0 if nothing has the origin open exclusively (a mount, a device stacked
 * on it, swap, another program), else -1 with the error printed.
 */
static int origin_free(const char *name, const struct origin *o)
{
	char use[PATH_MAX];
	int fd = open(o->path, O_RDONLY | O_EXCL | O_CLOEXEC);

	if (fd >= 0) {
		close(fd);
		return 0;
	}
	if (errno != EBUSY)
		return fail("%s: origin %s: %s", name, o->spec, strerror(errno));
	user_of(o->devno, use, sizeof(use));
	return fail("%s: origin %s: in use: %s", name, o->spec,
		    use[0] ? use : "opened exclusively by another program");
}

/* --- stacks -------------------------------------------------------------- */

/* What a stack is made of: from create's options or a redcaptab entry. */
struct spec {
	const char *name;
	enum rctab_origin origin_kind;
	const char *origin;		/* the path, or the PARTUUID=/PARTLABEL= value */
	const char *ram_str;		/* the size as written, for messages */
	uint64_t ram_bytes;
	uint32_t segment_bytes;
	int policy, write_policy, estimator;	/* -1: the defaults */
	bool nomodel;
	bool on_fail_linear;		/* no module: a linear device, no cache */
	uint64_t readahead_bytes;	/* RCTAB_READAHEAD_AUTO: the origin's, at least 1M */
	uint32_t tunables_set;		/* redcaptab's window=, hdc=, ...: bit k of enum rc_tunable */
	const uint32_t *tunable;
};

/*
 * The read-ahead NAME gets, in sectors: the kernel reads ahead of a stream
 * in requests this large, which the cache passes down whole (a bypassed
 * read is not cut at segments).  With "auto", RCTAB_READAHEAD_AUTO_MIN,
 * or the origin's read-ahead if that is larger: the bench's streams on
 * both drives gain what the bare disk gains with read_ahead_kb 1024, and
 * nothing else changes (docs/results/README.md).
 */
static uint32_t readahead_of(const struct spec *s, const struct origin *o)
{
	uint64_t b = s->readahead_bytes;

	if (b == RCTAB_READAHEAD_AUTO) {
		b = RCTAB_READAHEAD_AUTO_MIN;
		if (o->ra_sectors > 0 && (uint64_t)o->ra_sectors * 512 > b)
			b = (uint64_t)o->ra_sectors * 512;
	}
	return (uint32_t)(b >> 9);
}

static const char *write_policy_name(int wp)
{
	return wp == RC_WRITE_UPDATE ? "update" : "invalidate";
}

static void vd_name(const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s" VD_SUFFIX, name);
}

static void stack_uuid(const char *name, bool vd, char *buf, size_t len)
{
	snprintf(buf, len, UUID_PREFIX "%s%s", name, vd ? VD_SUFFIX : "");
}

/*
 * Whether @name is one of our devices: 1 yes (@di filled), 0 no such
 * device, -1 error printed (a device-mapper failure, or a device that is
 * not ours).
 */
static int stack_lookup(const char *name, bool vd, struct devinfo *di)
{
	char dev[DM_NAME_LEN + 8], uuid[DM_UUID_LEN];

	if (vd) {
		vd_name(name, dev, sizeof(dev));
	} else {
		snprintf(dev, sizeof(dev), "%s", name);
	}
	if (dm_info_get(dev, di))
		return fail("%s: %s", name, dm_why);
	if (!di->exists)
		return 0;
	stack_uuid(name, vd, uuid, sizeof(uuid));
	if (strcmp(di->uuid, uuid))
		return fail("%s: /dev/mapper/%s is not a redcap stack (its DM UUID is '%s', "
			    "not '%s')", name, dev, di->uuid, uuid);
	return 1;
}

/* Whether anything of stack @name runs (NAME or NAME-vd): 1, 0, or -1 printed. */
static int stack_running(const char *name)
{
	struct devinfo di;
	int r = stack_lookup(name, false, &di);

	if (r)
		return r;
	return stack_lookup(name, true, &di);
}

/* The sizes of @s against the target and this machine.  0, or -1 printed. */
static int spec_check_sizes(const struct spec *s)
{
	uint64_t seg = s->segment_bytes, half;
	long page = sysconf(_SC_PAGESIZE);
	struct sysinfo si;
	char buf[32];

	if (seg < RC_MIN_SEG_SECTORS * 512 || seg > RC_MAX_SEG_SECTORS * 512 || (seg & (seg - 1)))
		return fail("%s: segment size %" PRIu64 " bytes: the target takes a power of two "
			    "from 4K to 1M", s->name, seg);
	if (seg < (uint64_t)page)
		return fail("%s: segment size %" PRIu64 " bytes is smaller than a page (%ld "
			    "bytes) of this machine", s->name, seg, page);
	if (!s->ram_bytes || s->ram_bytes % seg)
		return fail("%s: cache size %s is not a multiple of the segment size (%s)",
			    s->name, s->ram_str, fmt_size(seg, buf, sizeof(buf)));
	if (s->ram_bytes / seg > RC_MAX_ENTRIES)
		return fail("%s: cache size %s is more than %u segments of %s", s->name,
			    s->ram_str, RC_MAX_ENTRIES, fmt_size(seg, buf, sizeof(buf)));
	sysinfo(&si);
	half = (uint64_t)si.totalram * si.mem_unit / 2;
	if (s->ram_bytes > half)
		return fail("%s: cache size %s is more than half of this machine's RAM (%s)",
			    s->name, s->ram_str, fmt_size(half * 2, buf, sizeof(buf)));
	return 0;
}

static void print_created(const struct spec *s, const struct origin *o, bool linear)
{
	char ram[32], seg[32], ra[32];

	fmt_size((uint64_t)readahead_of(s, o) << 9, ra, sizeof(ra));
	if (linear) {
		printf("%s: /dev/mapper/%s over %s, linear (no cache), read-ahead %s\n", s->name,
		       s->name, o->path, ra);
		return;
	}
	printf("%s: /dev/mapper/%s over %s%s, cache %s (%" PRIu64 " x %s), policy %s, "
	       "read-ahead %s\n",
	       s->name, s->name, o->path, s->nomodel ? "" : " (model layer measuring it)",
	       fmt_size(s->ram_bytes, ram, sizeof(ram)), s->ram_bytes / s->segment_bytes,
	       fmt_size(s->segment_bytes, seg, sizeof(seg)),
	       rc_policy_name(s->policy < 0 ? DEFAULT_POLICY : (enum rc_policy)s->policy), ra);
}

/* NAME as dm-linear over the origin: the degraded stack of on-fail=linear. */
static int stack_create_linear(const struct spec *s, const struct origin *o)
{
	char uuid[DM_UUID_LEN], params[64];

	stack_uuid(s->name, false, uuid, sizeof(uuid));
	snprintf(params, sizeof(params), "%u:%u 0", major(o->devno), minor(o->devno));
	if (dm_create_dev(s->name, uuid, o->sectors, "linear", params, 0, readahead_of(s, o)))
		return fail("%s: cannot create the linear device: %s", s->name, dm_why);
	print_created(s, o, true);
	return 0;
}

/*
 * The modules @s needs: 0, or -1 with the missing target in *@ttype and
 * why in @why.
 */
static int modules_ready(const struct spec *s, const char **ttype, char *why, size_t len)
{
	static const char * const ttypes[] = { "redcap", "vdisk" };

	for (int m = 0; m < 2; m++) {
		if ((m && s->nomodel) ||
		    !module_ensure(ttypes[m], m ? "dm-vdisk" : "dm-redcap", why, len))
			continue;
		*ttype = ttypes[m];
		return -1;
	}
	return 0;
}

/*
 * What the cache sits on: NAME-vd made over the origin, or the origin
 * itself with nomodel.  0 and its device in *@lower, or -1 printed.
 */
static int layer_create(const struct spec *s, const struct origin *o, dev_t *lower)
{
	char vd[DM_NAME_LEN + 8], uuid[DM_UUID_LEN], params[32];
	struct devinfo di;

	*lower = o->devno;
	if (s->nomodel)
		return 0;
	vd_name(s->name, vd, sizeof(vd));
	stack_uuid(s->name, true, uuid, sizeof(uuid));
	snprintf(params, sizeof(params), "%u:%u", major(o->devno), minor(o->devno));
	/* Hidden as lvm2 hides its sub-volumes: no links, no probing, no /dev/redcap. */
	if (dm_create_dev(vd, uuid, o->sectors, "vdisk", params,
			  DM_UDEV_DISABLE_SUBSYSTEM_RULES_FLAG | DM_UDEV_DISABLE_DISK_RULES_FLAG |
			  DM_UDEV_DISABLE_OTHER_RULES_FLAG, DM_READ_AHEAD_AUTO))
		return fail("%s: cannot create the model layer %s: %s", s->name, vd, dm_why);
	if (dm_info_get(vd, &di) || !di.exists) {
		fail("%s: model layer %s vanished: %s", s->name, vd, dm_why);
		dm_remove_dev(vd);
		return -1;
	}
	*lower = makedev(di.major, di.minor);
	return 0;
}

/* Undo layer_create(). */
static void layer_remove(const struct spec *s)
{
	char vd[DM_NAME_LEN + 8];

	vd_name(s->name, vd, sizeof(vd));
	if (!s->nomodel && dm_remove_dev(vd))
		fail("%s: cannot remove the model layer %s it made: %s", s->name, vd, dm_why);
}

/*
 * The redcap table line of @s over @lower: the geometry, and of the
 * features only what the admin chose; the target chooses the rest as
 * redcapctl would (its policy, and the estimator vdisk over the model
 * layer, spk without one).
 */
static void cache_params(const struct spec *s, dev_t lower, char *params, size_t len)
{
	char features[128] = "";
	unsigned int nf = 0;

	if (s->policy >= 0) {
		nf += 2;
		snprintf(features + strlen(features), sizeof(features) - strlen(features),
			 " policy %s", rc_policy_name((enum rc_policy)s->policy));
	}
	if (s->write_policy >= 0) {
		nf += 2;
		snprintf(features + strlen(features), sizeof(features) - strlen(features),
			 " write_policy %s", write_policy_name(s->write_policy));
	}
	if (s->estimator >= 0) {
		nf += 2;
		snprintf(features + strlen(features), sizeof(features) - strlen(features),
			 " estimator %s", rc_estimator_name((enum rc_estimator)s->estimator));
	}
	snprintf(params, len, "%u:%u %u %" PRIu64, major(lower), minor(lower),
		 s->segment_bytes >> 9, s->ram_bytes / s->segment_bytes);
	if (nf)
		snprintf(params + strlen(params), len - strlen(params), " %u%s", nf, features);
}

/*
 * The target's own reason for refusing a table or a message (EINVAL: the
 * ioctl's @err, or in @why) is only in the kernel log: say so.
 */
static const char *kernel_log_hint(int err, const char *why)
{
	return err == EINVAL || strstr(why, strerror(EINVAL)) ?
	       " (the kernel log says why)" : "";
}

/* The tunables @s gives (redcaptab's window=, hdc=, ...) set on its cache: 0, or -1 printed. */
static int stack_tune(const struct spec *s)
{
	char msg[64], *answer;
	const char *why;
	struct dev d;

	if (!s->tunables_set)
		return 0;
	dev_resolve(s->name, &d);
	for (int k = 0; k < RC_TUN_NR; k++) {
		if (!(s->tunables_set & (1u << k)))
			continue;
		snprintf(msg, sizeof(msg), "set %s %" PRIu32, rc_tunable_name(k), s->tunable[k]);
		why = dm_send(&d, msg, &answer);
		if (why)
			return fail("%s: cannot %s: %s%s", s->name, msg, why, kernel_log_hint(0, why));
		free(answer);
	}
	return 0;
}

/*
 * Build the stack of @s: checks everything first, then NAME-vd and NAME;
 * whatever fails, nothing is left behind.  0, or -1 with the error printed.
 */
static int stack_create(const struct spec *s)
{
	char vd[DM_NAME_LEN + 8], uuid[DM_UUID_LEN], why[256], params[160];
	const char *ttype;
	struct devinfo di;
	struct origin o;
	dev_t lower;

	if (spec_check_sizes(s))
		return -1;
	vd_name(s->name, vd, sizeof(vd));
	for (int v = 0; v < 2; v++) {
		/* Ours or another tool's: taken either way. */
		if (dm_info_get(v ? vd : s->name, &di))
			return fail("%s: %s", s->name, dm_why);
		if (di.exists)
			return fail("%s: name taken: /dev/mapper/%s exists", s->name,
				    v ? vd : s->name);
	}
	if (origin_resolve(s->origin_kind, s->origin, &o, why, sizeof(why)))
		return fail("%s: %s", s->name, why);
	if (origin_free(s->name, &o))
		return -1;
	if (modules_ready(s, &ttype, why, sizeof(why))) {
		if (!s->on_fail_linear)
			return fail("%s: dm-%s: %s", s->name, ttype, why);
		warn("%s: dm-%s: %s: starting it as a linear device, without cache "
		     "(on-fail=linear)", s->name, ttype, why);
		return stack_create_linear(s, &o);
	}
	if (layer_create(s, &o, &lower))
		return -1;
	cache_params(s, lower, params, sizeof(params));
	stack_uuid(s->name, false, uuid, sizeof(uuid));
	if (dm_create_dev(s->name, uuid, o.sectors, "redcap", params, 0, readahead_of(s, &o))) {
		fail("%s: cannot create the cache: %s%s", s->name, dm_why,
		     kernel_log_hint(dm_errno, dm_why));
		layer_remove(s);
		return -1;
	}
	if (stack_tune(s)) {
		if (dm_remove_dev(s->name))
			fail("%s: cannot remove the cache it made: %s", s->name, dm_why);
		layer_remove(s);
		return -1;
	}
	print_created(s, &o, false);
	return 0;
}

/* A running stack as the kernel shows it. */
struct stack {
	const char *name;
	struct dev dev, vdev;		/* NAME, NAME-vd */
	char vname[DM_NAME_LEN + 8];
	bool has_vd;
	char *ttype, *params;		/* NAME's table: "redcap" or "linear" (degraded) */
	uint64_t sectors;
	dev_t origin;
	char origin_path[PATH_MAX];
	uint32_t seg_sectors, nr_segs;
	uint64_t ra_bytes;		/* NAME's read-ahead */
	struct stats st, vst;		/* the answers to "stats" (redcap; vdisk if has_vd) */
};

static uint64_t sv(const struct stack *k, const char *key)
{
	return stats_u64(&k->dev, &k->st, key, 0, UINT64_MAX);
}

static const char *ss(const struct stack *k, const char *key)
{
	return stats_str(&k->dev, &k->st, key);
}

static bool is_redcap(const struct stack *k)
{
	return !strcmp(k->ttype, "redcap");
}

/* Read the stack @name.  0, or -1 with the error printed. */
static int stack_load(const char *name, struct stack *k)
{
	struct devinfo di;
	unsigned int maj, min;
	uint64_t len;
	char *tt, *p, buf[32];
	int r;

	memset(k, 0, sizeof(*k));
	k->name = name;
	r = stack_lookup(name, false, &di);
	if (r < 0)
		return -1;
	if (!r)
		return fail("%s: no such redcap stack", name);
	if (sysfs_read(makedev(di.major, di.minor), "queue/read_ahead_kb", buf, sizeof(buf)) ||
	    !parse_u64(buf, 0, UINT64_MAX >> 10, &k->ra_bytes))
		return fail("%s: cannot read its read-ahead", name);
	k->ra_bytes <<= 10;
	r = stack_lookup(name, true, &di);
	if (r < 0)
		return -1;
	k->has_vd = r;
	dev_resolve(name, &k->dev);
	vd_name(name, k->vname, sizeof(k->vname));
	if (dm_target_get(DM_DEVICE_TABLE, name, &k->sectors, &k->ttype, &k->params))
		return fail("%s: %s", name, dm_why);
	if (sscanf(k->params, "%u:%u", &maj, &min) != 2)
		return fail("%s: cannot read its table '%s'", name, k->params);
	k->origin = makedev(maj, min);
	if (is_redcap(k)) {
		if (sscanf(k->params, "%*s %" SCNu32 " %" SCNu32, &k->seg_sectors,
			   &k->nr_segs) != 2)
			return fail("%s: cannot read its table '%s'", name, k->params);
		stats_get(&k->dev, &k->st);
	} else if (strcmp(k->ttype, "linear")) {
		return fail("%s: its table is '%s', neither redcap nor linear", name, k->ttype);
	}
	if (k->has_vd) {
		dev_resolve(k->vname, &k->vdev);
		if (dm_target_get(DM_DEVICE_TABLE, k->vname, &len, &tt, &p))
			return fail("%s: %s: %s", name, k->vname, dm_why);
		if (sscanf(p, "%u:%u", &maj, &min) == 2 && !strcmp(tt, "vdisk"))
			k->origin = makedev(maj, min);
		free(tt);
		free(p);
		stats_get(&k->vdev, &k->vst);
	}
	devno_path(k->origin, k->origin_path, sizeof(k->origin_path));
	return 0;
}

static void stack_free(struct stack *k)
{
	free(k->ttype);
	free(k->params);
	free(k->st.text);
	free(k->vst.text);
}

/*
 * Swap the cache in under a running linear stack (on-fail=linear, or
 * remove --keep-device), live: NAME-vd over the same origin, then NAME's
 * table.  device-mapper lets both hold the origin at once.  0, or -1 printed.
 */
static int stack_upgrade(const struct spec *s)
{
	char why[PATH_MAX + 64], params[160], origin[PATH_MAX];
	const char *ttype;
	struct devinfo di;
	struct origin o;
	struct stack k;
	dev_t lower;
	int r = -1;

	if (spec_check_sizes(s) || stack_load(s->name, &k))
		return -1;
	if (is_redcap(&k)) {
		printf("%s: has its cache already\n", s->name);
		r = 0;
		goto out;
	}
	if (origin_resolve(s->origin_kind, s->origin, &o, why, sizeof(why))) {
		fail("%s: %s", s->name, why);
		goto out;
	}
	if (o.devno != k.origin) {
		devno_path(k.origin, origin, sizeof(origin));
		fail("%s: origin %s is %s, but /dev/mapper/%s is over %s", s->name, o.spec, o.path,
		     s->name, origin);
		goto out;
	}
	if (modules_ready(s, &ttype, why, sizeof(why))) {
		fail("%s: dm-%s: %s", s->name, ttype, why);
		goto out;
	}
	if (!s->nomodel && stack_lookup(s->name, true, &di)) {
		fail("%s: name taken: /dev/mapper/%s" VD_SUFFIX " exists", s->name, s->name);
		goto out;
	}
	if (layer_create(s, &o, &lower))
		goto out;
	cache_params(s, lower, params, sizeof(params));
	if (dm_swap_table(s->name, k.sectors, "redcap", params, readahead_of(s, &o))) {
		fail("%s: cannot swap the cache in: %s%s", s->name, dm_why,
		     kernel_log_hint(dm_errno, dm_why));
		layer_remove(s);
		goto out;
	}
	if (stack_tune(s))
		goto out;
	print_created(s, &o, false);
	r = 0;
out:
	stack_free(&k);
	return r;
}

static double hit_ratio(uint64_t hits, uint64_t reads)
{
	return reads ? (double)hits / (double)reads : 0.0;
}

/* The reads sent to the origin, by why. */
struct bypass {
	uint64_t inactive, busy, caware, budget, held, nomem, joined, write;
};

static void bypass_split(const struct stack *k, struct bypass *b)
{
	uint64_t total = sv(k, "read_bypassed"), named;

	b->inactive = sv(k, "read_bypassed_inactive");
	b->busy = sv(k, "read_bypassed_busy");
	b->caware = sv(k, "caware_bypassed");
	b->budget = sv(k, "read_bypassed_budget");
	b->held = sv(k, "read_bypassed_held");
	b->nomem = sv(k, "read_bypassed_nomem");
	b->joined = sv(k, "read_bypassed_joined");
	named = b->inactive + b->busy + b->caware + b->budget + b->held + b->nomem + b->joined;
	/* The rest: a write was in flight to the segment. */
	b->write = total > named ? total - named : 0;
}

/* Why the cache is in its state, for people: one line. */
static void state_reason(const struct stack *k, char *buf, size_t len)
{
	const char *policy = ss(k, "policy");
	bool active = !strcmp(ss(k, "state"), "active");
	double cache_ms = (double)sv(k, "last_cache_time_us") / 1000.0;
	double disk_ms = (double)sv(k, "last_est_disk_time_us") / 1000.0;

	if (!strcmp(policy, "always"))
		snprintf(buf, len, "policy always: every read miss fills the cache");
	else if (!strcmp(policy, "off"))
		snprintf(buf, len, "policy off: reads go to the origin; the cache is simulated");
	else if (!strcmp(policy, "caware"))
		snprintf(buf, len, "policy caware: C-Aware decides miss by miss");
	else if (sv(k, "windows") == sv(k, "windows_unjudged"))
		snprintf(buf, len, "no window of %" PRIu64 " reads judged yet",
			 sv(k, "window"));
	else
		snprintf(buf, len, "last window: the cache %s %.1f ms, the bare disk %.1f ms "
			 "(estimator %s, margin %" PRIu64 " %%)", active ? "took" : "would take",
			 cache_ms, disk_ms, ss(k, "estimator"), sv(k, "margin"));
}

static json_object *jstr(const char *s)
{
	return s ? json_object_new_string(s) : NULL;
}

static json_object *ju64(uint64_t v)
{
	return json_object_new_uint64(v);
}

/* A number printed with @fmt ("%.4f"), not json-c's 17 digits. */
static json_object *jdouble(double v, const char *fmt)
{
	char buf[64];

	snprintf(buf, sizeof(buf), fmt, v);
	return json_object_new_double_s(v, buf);
}

/* status's object: the schema is docs/redcapctl.schema.json. */
static json_object *stack_json(const struct stack *k)
{
	json_object *o = json_object_new_object(), *b, *m;
	char buf[512];
	struct bypass bp;
	uint64_t reads, hits;

	json_object_object_add(o, "schema", json_object_new_int(SCHEMA_VERSION));
	json_object_object_add(o, "name", jstr(k->name));
	snprintf(buf, sizeof(buf), "/dev/mapper/%s", k->name);
	json_object_object_add(o, "device", jstr(buf));
	json_object_object_add(o, "origin", jstr(k->origin_path));
	json_object_object_add(o, "size_bytes", ju64(k->sectors << 9));
	json_object_object_add(o, "read_ahead_bytes", ju64(k->ra_bytes));
	if (!is_redcap(k)) {
		json_object_object_add(o, "state", jstr("linear"));
		json_object_object_add(o, "state_reason",
				       jstr("a linear device over the origin, without cache"));
		return o;
	}
	json_object_object_add(o, "segment_bytes", ju64((uint64_t)k->seg_sectors << 9));
	json_object_object_add(o, "segments", ju64(k->nr_segs));
	json_object_object_add(o, "ram_bytes", ju64((uint64_t)k->seg_sectors * k->nr_segs << 9));
	json_object_object_add(o, "segments_valid", ju64(sv(k, "segments_valid")));
	json_object_object_add(o, "segments_filling", ju64(sv(k, "segments_filling")));
	json_object_object_add(o, "ram_used_bytes",
			       ju64(sv(k, "segments_valid") * ((uint64_t)k->seg_sectors << 9)));
	json_object_object_add(o, "policy", jstr(ss(k, "policy")));
	json_object_object_add(o, "write_policy", jstr(ss(k, "write_policy")));
	json_object_object_add(o, "estimator", jstr(ss(k, "estimator")));
	json_object_object_add(o, "state", jstr(ss(k, "state")));
	state_reason(k, buf, sizeof(buf));
	json_object_object_add(o, "state_reason", jstr(buf));
	json_object_object_add(o, "last_cache_time_us", ju64(sv(k, "last_cache_time_us")));
	json_object_object_add(o, "last_est_disk_time_us", ju64(sv(k, "last_est_disk_time_us")));
	reads = sv(k, "reads");
	hits = sv(k, "read_hits") + sv(k, "read_hits_waited");
	json_object_object_add(o, "reads", ju64(reads));
	json_object_object_add(o, "read_hits", ju64(sv(k, "read_hits")));
	json_object_object_add(o, "read_hits_waited", ju64(sv(k, "read_hits_waited")));
	json_object_object_add(o, "read_misses", ju64(sv(k, "read_misses")));
	json_object_object_add(o, "read_bypassed", ju64(sv(k, "read_bypassed")));
	bypass_split(k, &bp);
	b = json_object_new_object();
	json_object_object_add(b, "inactive", ju64(bp.inactive));
	json_object_object_add(b, "busy", ju64(bp.busy));
	json_object_object_add(b, "caware", ju64(bp.caware));
	json_object_object_add(b, "budget", ju64(bp.budget));
	json_object_object_add(b, "held", ju64(bp.held));
	json_object_object_add(b, "nomem", ju64(bp.nomem));
	json_object_object_add(b, "joined", ju64(bp.joined));
	json_object_object_add(b, "write", ju64(bp.write));
	json_object_object_add(o, "read_bypassed_by_reason", b);
	json_object_object_add(o, "read_resent", ju64(sv(k, "read_resent")));
	json_object_object_add(o, "hit_ratio", jdouble(hit_ratio(hits, reads), "%.6g"));
	json_object_object_add(o, "fill_ios", ju64(sv(k, "fill_ios")));
	json_object_object_add(o, "fill_bytes", ju64(sv(k, "fill_sectors") << 9));
	json_object_object_add(o, "fill_errors", ju64(sv(k, "fill_errors")));
	json_object_object_add(o, "writes", ju64(sv(k, "writes")));
	json_object_object_add(o, "invalidations", ju64(sv(k, "invalidations")));
	json_object_object_add(o, "switches", ju64(sv(k, "switches")));
	json_object_object_add(o, "windows", ju64(sv(k, "windows")));
	if (!k->has_vd) {
		json_object_object_add(o, "model", NULL);
		return o;
	}
	m = json_object_new_object();
	json_object_object_add(m, "device", jstr(k->vname));
	json_object_object_add(m, "mode", jstr(stats_str(&k->vdev, &k->vst, "mode")));
	json_object_object_add(m, "learning", json_object_new_boolean(
		!strcmp(stats_str(&k->vdev, &k->vst, "train"), "on")));
	json_object_object_add(m, "cells_filled",
			       ju64(stats_u64(&k->vdev, &k->vst, "cells_filled", 0, UINT64_MAX)));
	json_object_object_add(m, "read_samples",
			       ju64(stats_u64(&k->vdev, &k->vst, "read_samples", 0, UINT64_MAX)));
	json_object_object_add(m, "write_samples",
			       ju64(stats_u64(&k->vdev, &k->vst, "write_samples", 0, UINT64_MAX)));
	json_object_object_add(o, "model", m);
	return o;
}

static void json_print(json_object *o)
{
	puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
					    JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
}

static uint64_t jget(json_object *o, const char *key)
{
	json_object *v = json_object_object_get(o, key);

	return v ? json_object_get_uint64(v) : 0;
}

static const char *jgets(json_object *o, const char *key)
{
	json_object *v = json_object_object_get(o, key);

	return v ? json_object_get_string(v) : "";
}

static void stack_print(const struct stack *k)
{
	json_object *o = stack_json(k), *b, *m;
	char a[32], c[32], d[32];

	printf("%s: /dev/mapper/%s\n", k->name, k->name);
	printf("  origin:     %s\n", k->origin_path);
	printf("  read-ahead: %s\n", fmt_size(k->ra_bytes, a, sizeof(a)));
	if (!is_redcap(k)) {
		printf("  state:      linear: %s\n", jgets(o, "state_reason"));
		json_object_put(o);
		return;
	}
	printf("  cache:      %s = %u x %s; %" PRIu64 " segments hold data (%s), %" PRIu64
	       " filling\n", fmt_size(jget(o, "ram_bytes"), a, sizeof(a)), k->nr_segs,
	       fmt_size(jget(o, "segment_bytes"), c, sizeof(c)), jget(o, "segments_valid"),
	       fmt_size(jget(o, "ram_used_bytes"), d, sizeof(d)), jget(o, "segments_filling"));
	printf("  policy:     %s, write policy %s, estimator %s\n", jgets(o, "policy"),
	       jgets(o, "write_policy"), jgets(o, "estimator"));
	printf("  state:      %s: %s\n", jgets(o, "state"), jgets(o, "state_reason"));
	printf("  reads:      %" PRIu64 ": %" PRIu64 " hits, %" PRIu64 " hits after a wait, %"
	       PRIu64 " misses, %" PRIu64 " bypassed, %" PRIu64 " resent\n", jget(o, "reads"),
	       jget(o, "read_hits"), jget(o, "read_hits_waited"), jget(o, "read_misses"),
	       jget(o, "read_bypassed"), jget(o, "read_resent"));
	b = json_object_object_get(o, "read_bypassed_by_reason");
	printf("  bypassed:   inactive %" PRIu64 ", busy %" PRIu64 ", C-Aware %" PRIu64
	       ", budget %" PRIu64 ", suspending %" PRIu64 ", no memory %" PRIu64
	       ", joined %" PRIu64 ", write in flight %" PRIu64 "\n",
	       jget(b, "inactive"), jget(b, "busy"), jget(b, "caware"), jget(b, "budget"),
	       jget(b, "held"), jget(b, "nomem"), jget(b, "joined"), jget(b, "write"));
	printf("  hit ratio:  %.1f %%\n",
	       100.0 * json_object_get_double(json_object_object_get(o, "hit_ratio")));
	printf("  fills:      %" PRIu64 " (%s), %" PRIu64 " failed\n", jget(o, "fill_ios"),
	       fmt_size(jget(o, "fill_bytes"), a, sizeof(a)), jget(o, "fill_errors"));
	printf("  writes:     %" PRIu64 ", %" PRIu64 " cached segments invalidated\n",
	       jget(o, "writes"), jget(o, "invalidations"));
	printf("  switches:   %" PRIu64 " in %" PRIu64 " windows\n", jget(o, "switches"),
	       jget(o, "windows"));
	m = json_object_object_get(o, "model");
	if (m)
		printf("  model:      %s, %s, learning %s, %" PRIu64 " cells filled, %" PRIu64
		       " reads and %" PRIu64 " writes timed\n", jgets(m, "device"),
		       jgets(m, "mode"),
		       json_object_get_boolean(json_object_object_get(m, "learning")) ? "on" : "off",
		       jget(m, "cells_filled"), jget(m, "read_samples"), jget(m, "write_samples"));
	else
		printf("  model:      none (created with --no-model)\n");
	json_object_put(o);
}

/*
 * Remove the stack @name: NAME then NAME-vd; with @keep, NAME becomes a
 * linear device over the origin instead, live.  0, or -1 printed.
 */
static int stack_remove(const char *name, bool keep)
{
	struct devinfo di, vdi;
	char vd[DM_NAME_LEN + 8], use[PATH_MAX], params[64];
	struct stack k;
	int r, rv;

	r = stack_lookup(name, false, &di);
	if (r < 0)
		return -1;
	rv = stack_lookup(name, true, &vdi);
	if (rv < 0)
		return -1;
	if (!r && !rv)
		return fail("%s: no such redcap stack", name);
	vd_name(name, vd, sizeof(vd));
	if (r && keep) {
		if (stack_load(name, &k))
			return -1;
		if (is_redcap(&k)) {
			snprintf(params, sizeof(params), "%u:%u 0", major(k.origin), minor(k.origin));
			if (dm_swap_table(name, k.sectors, "linear", params,
					  (uint32_t)(k.ra_bytes >> 9))) {
				stack_free(&k);
				return fail("%s: cannot swap in a linear table: %s", name, dm_why);
			}
		}
		printf("%s: /dev/mapper/%s is now a linear device over %s, without cache\n",
		       name, name, k.origin_path);
		stack_free(&k);
	} else if (r) {
		if (di.open_count) {
			user_of(makedev(di.major, di.minor), use, sizeof(use));
			if (!use[0])
				snprintf(use, sizeof(use), "open (%u openers)", di.open_count);
			return fail("%s: in use: %s", name, use);
		}
		if (dm_remove_dev(name))
			return fail("%s: cannot remove: %s", name, dm_why);
	}
	if (rv && dm_remove_dev(vd))
		return fail("%s: cannot remove the model layer %s: %s", name, vd, dm_why);
	if (!keep || !r)
		printf("%s: removed\n", name);
	return 0;
}

/* --- command lines ------------------------------------------------------- */

static const struct option help_only[] = {
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

static void no_opts(int c, const char *arg, void *ctx)
{
	(void)c;
	(void)arg;
	(void)ctx;
}

static void bool_opt(int c, const char *arg, void *ctx)
{
	(void)c;
	(void)arg;
	*(bool *)ctx = true;
}

/* The table file's rules for names: one check for both. */
static void name_check(const char *name)
{
	char err[RCTAB_ERR_MAX];

	if (!rctab_name_ok(name, err))
		usage_error("%s: %s", cmd_name, err);
}

static uint64_t size_arg(const char *opt, const char *val)
{
	uint64_t v;

	if (rctab_parse_size(val, &v) || !v)
		usage_error("%s: %s '%s' is not a size (64M, 1G)", cmd_name, opt, val);
	return v;
}

static int keyword_arg(const char *opt, const char *val, int (*parse)(const char *),
		       const char *choices)
{
	int r = parse(val);

	if (r < 0)
		usage_error("%s: %s '%s': %s", cmd_name, opt, val, choices);
	return r;
}

#define POLICIES	"one of always, off, adaptive, caware, adaptive+caware"

static void create_opt(int c, const char *arg, void *ctx)
{
	char why[RCTAB_ERR_MAX];
	struct spec *s = ctx;
	uint64_t v;

	switch (c) {
	case 'r':
		s->ram_bytes = size_arg("--ram", arg);
		s->ram_str = arg;
		break;
	case 's':
		v = size_arg("--segment", arg);
		s->segment_bytes = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
		break;
	case 'p':
		s->policy = keyword_arg("--policy", arg, rc_policy_parse, POLICIES);
		break;
	case 'w':
		s->write_policy = keyword_arg("--write-policy", arg, rc_write_policy_parse,
					      "invalidate or update");
		break;
	case 'e':
		s->estimator = keyword_arg("--estimator", arg, rc_estimator_parse, "spk or vdisk");
		break;
	case 'n':
		s->nomodel = true;
		break;
	case 'a':
		if (rctab_parse_readahead(arg, &s->readahead_bytes, why))
			usage_error("%s: --readahead '%s': %s", cmd_name, arg, why);
		break;
	}
}

static int cmd_create(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "ram", required_argument, NULL, 'r' },
		{ "segment", required_argument, NULL, 's' },
		{ "policy", required_argument, NULL, 'p' },
		{ "write-policy", required_argument, NULL, 'w' },
		{ "estimator", required_argument, NULL, 'e' },
		{ "no-model", no_argument, NULL, 'n' },
		{ "readahead", required_argument, NULL, 'a' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct spec s = {
		.ram_bytes = DEFAULT_RAM, .ram_str = "64M", .segment_bytes = RCTAB_DEFAULT_SEGMENT,
		.policy = -1, .write_policy = -1, .estimator = -1,
		.readahead_bytes = RCTAB_READAHEAD_AUTO,
	};
	int i = dmctl_parse_opts(argc, argv, longopts, create_opt, &s);
	const char *origin;

	dmctl_operands(argc, argv, i, 2, 2);
	name_check(argv[i]);
	s.name = argv[i];
	origin = argv[i + 1];
	s.origin = origin;
	if (!strncmp(origin, "PARTUUID=", 9)) {
		s.origin_kind = RCTAB_ORIGIN_PARTUUID;
		s.origin = origin + 9;
	} else if (!strncmp(origin, "PARTLABEL=", 10)) {
		s.origin_kind = RCTAB_ORIGIN_PARTLABEL;
		s.origin = origin + 10;
	} else if (!strncmp(origin, "UUID=", 5) || !strncmp(origin, "LABEL=", 6)) {
		usage_error("create: origin '%s' names a filesystem, which the redcap device shows "
			    "too: use a /dev path, PARTUUID= or PARTLABEL=", origin);
	}
	if (s.nomodel && s.estimator == RC_EST_VDISK)
		usage_error("create: --estimator vdisk needs the model that --no-model leaves out");
	return stack_create(&s) ? 1 : 0;
}

static int cmd_remove(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "keep-device", no_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	bool keep = false;
	int i = dmctl_parse_opts(argc, argv, longopts, bool_opt, &keep);

	dmctl_operands(argc, argv, i, 1, 1);
	return stack_remove(argv[i], keep) ? 1 : 0;
}

static int strcmp_ptr(const void *a, const void *b)
{
	return strcmp(*(char * const *)a, *(char * const *)b);
}

/* The names of our stacks (not their model layers), sorted; NULL-terminated. */
static char **stack_names(void)
{
	struct dm_task *dmt = dm_task_new(DM_DEVICE_LIST, NULL);
	struct dm_names *n;
	char **names = NULL;
	size_t nr = 0;
	unsigned int next = 0;
	struct devinfo di;

	if (!dmt || !dm_task_run(dmt))
		die("list: %s", dmt ? dm_task_error(dmt) : dm_why);
	n = dm_task_get_names(dmt);
	names = xmalloc(sizeof(*names));
	if (n && n->dev) {
		do {
			n = (struct dm_names *)((char *)n + next);
			next = n->next;
			size_t len = strlen(n->name);

			if (len > 3 && !strcmp(n->name + len - 3, VD_SUFFIX))
				continue;
			char uuid[DM_UUID_LEN];

			stack_uuid(n->name, false, uuid, sizeof(uuid));
			if (dm_info_get(n->name, &di) || !di.exists || strcmp(di.uuid, uuid))
				continue;
			names = realloc(names, (nr + 2) * sizeof(*names));
			if (!names)
				die("out of memory");
			names[nr++] = xstrdup(n->name);
		} while (next);
	}
	names[nr] = NULL;
	dm_task_destroy(dmt);
	qsort(names, nr, sizeof(*names), strcmp_ptr);
	return names;
}

static int cmd_list(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	bool json = false;
	int i = dmctl_parse_opts(argc, argv, longopts, bool_opt, &json), status = 0;
	json_object *all = json_object_new_array(), *o;
	char **names, ram[32], seg[32];
	struct stack k;

	dmctl_operands(argc, argv, i, 0, 0);
	names = stack_names();
	for (char **n = names; *n; n++) {
		if (stack_load(*n, &k)) {
			status = 1;
			continue;
		}
		json_object_array_add(all, stack_json(&k));
		stack_free(&k);
	}
	if (json) {
		o = json_object_new_object();
		json_object_object_add(o, "schema", json_object_new_int(SCHEMA_VERSION));
		json_object_object_add(o, "stacks", all);
		json_print(o);
	} else {
		if (json_object_array_length(all))
			printf("%-16s %-20s %-9s %-8s %-16s %-8s %s\n", "NAME", "ORIGIN", "CACHE",
			       "SEGMENT", "POLICY", "STATE", "HITS");
		for (size_t j = 0; j < json_object_array_length(all); j++) {
			o = json_object_array_get_idx(all, j);
			if (!strcmp(jgets(o, "state"), "linear")) {
				printf("%-16s %-20s %-9s %-8s %-16s %-8s %s\n", jgets(o, "name"),
				       jgets(o, "origin"), "-", "-", "-", "linear", "-");
				continue;
			}
			printf("%-16s %-20s %-9s %-8s %-16s %-8s %.1f%%\n", jgets(o, "name"),
			       jgets(o, "origin"), fmt_size(jget(o, "ram_bytes"), ram, sizeof(ram)),
			       fmt_size(jget(o, "segment_bytes"), seg, sizeof(seg)),
			       jgets(o, "policy"), jgets(o, "state"), 100.0 *
			       json_object_get_double(json_object_object_get(o, "hit_ratio")));
		}
		json_object_put(all);
	}
	for (char **n = names; *n; n++)
		free(*n);
	free(names);
	return status;
}

static int cmd_status(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	bool json = false;
	int i = dmctl_parse_opts(argc, argv, longopts, bool_opt, &json);
	struct stack k;

	dmctl_operands(argc, argv, i, 1, 1);
	if (stack_load(argv[i], &k))
		return 1;
	if (json)
		json_print(stack_json(&k));
	else
		stack_print(&k);
	stack_free(&k);
	return 0;
}

/* --- stats: rates -------------------------------------------------------- */

struct sample {
	double t;
	uint64_t reads, hits, misses, bypassed, fill_sectors;
	uint64_t cache_us, disk_us;	/* the judged windows' two sides */
	struct bypass bp;
	char state[16], policy[24];
	uint32_t valid, segments;
};

static void sample_take(const char *name, struct sample *s)
{
	struct stack k;

	if (stack_load(name, &k))
		exit(1);
	if (!is_redcap(&k))
		die("%s: a linear device without cache has no statistics", name);
	s->t = now_s();
	s->reads = sv(&k, "reads");
	s->hits = sv(&k, "read_hits") + sv(&k, "read_hits_waited");
	s->misses = sv(&k, "read_misses");
	s->bypassed = sv(&k, "read_bypassed");
	s->fill_sectors = sv(&k, "fill_sectors");
	s->cache_us = sv(&k, "cache_time_us");
	s->disk_us = sv(&k, "est_disk_time_us");
	bypass_split(&k, &s->bp);
	snprintf(s->state, sizeof(s->state), "%s", ss(&k, "state"));
	snprintf(s->policy, sizeof(s->policy), "%s", ss(&k, "policy"));
	s->valid = (uint32_t)sv(&k, "segments_valid");
	s->segments = k.nr_segs;
	stack_free(&k);
}

/* Counters zeroed meanwhile (reset-stats) count from zero. */
static double rate(uint64_t a, uint64_t b, double dt)
{
	return (double)(b >= a ? b - a : b) / dt;
}

static json_object *jrate(double v)
{
	return jdouble(v, "%.1f");
}

/*
 * --watch's history, for a person: the hit ratio and the disk time saved
 * (the bare disk's estimated time less the cache's, in seconds a second)
 * of the last SPARK_N intervals, oldest first.  NAN: no reads.
 */
#define SPARK_N		60
struct history {
	double hit[SPARK_N], saved[SPARK_N];
	int n;
};

static void history_add(struct history *h, double hit, double saved)
{
	if (h->n == SPARK_N) {
		memmove(h->hit, h->hit + 1, (SPARK_N - 1) * sizeof(*h->hit));
		memmove(h->saved, h->saved + 1, (SPARK_N - 1) * sizeof(*h->saved));
		h->n--;
	}
	h->hit[h->n] = hit;
	h->saved[h->n++] = saved;
}

/*
 * @v (@n values) as a sparkline of eighth blocks, 0 to @hi: the lowest
 * block for 0 or less, a space for NAN.
 */
static void sparkline(const double *v, int n, double hi)
{
	static const char *const blocks[] = { "\u2581", "\u2582", "\u2583", "\u2584",
					      "\u2585", "\u2586", "\u2587", "\u2588" };
	static const char ascii[] = "_.-~=+*#";	/* a terminal without UTF-8 */
	static int utf8 = -1;

	if (utf8 < 0) {
		setlocale(LC_CTYPE, "");
		utf8 = !strcmp(nl_langinfo(CODESET), "UTF-8");
	}
	for (int i = 0; i < n; i++) {
		int b = hi > 0 && v[i] > 0 ? (int)(v[i] / hi * 8) : 0;

		b = b > 7 ? 7 : b;
		if (isnan(v[i]))
			putchar(' ');
		else if (utf8)
			fputs(blocks[b], stdout);
		else
			putchar(ascii[b]);
	}
}

static void history_show(const struct history *h, double interval)
{
	double lo = INFINITY, hi = -INFINITY, peak = 0, sum = 0;

	for (int i = 0; i < h->n; i++) {
		if (!isnan(h->hit[i])) {
			lo = fmin(lo, h->hit[i]);
			hi = fmax(hi, h->hit[i]);
		}
		peak = fmax(peak, h->saved[i]);
		sum += h->saved[i] * interval;
	}
	printf("  hit ratio   ");
	sparkline(h->hit, h->n, 1.0);
	if (lo <= hi)
		printf("%*s  %.1f to %.1f %%", SPARK_N - h->n, "", 100 * lo, 100 * hi);
	else
		printf("%*s  no reads", SPARK_N - h->n, "");
	printf("\n  disk saved  ");
	sparkline(h->saved, h->n, peak);
	printf("%*s  %.2f s in all, at most %.2f s a second\n", SPARK_N - h->n, "", sum, peak);
	printf("              (the last %g s)\n", h->n * interval);
}

static void stats_show(const char *name, const struct sample *a, const struct sample *b,
		       bool json, bool watch, double interval, const struct history *h)
{
	double dt = b->t - a->t, reads = rate(a->reads, b->reads, dt);
	double hits = rate(a->hits, b->hits, dt);
	const struct bypass *p = &a->bp, *q = &b->bp;
	json_object *o, *r;
	char clock[16];
	time_t t = time(NULL);

	if (json) {
		o = json_object_new_object();
		json_object_object_add(o, "schema", json_object_new_int(SCHEMA_VERSION));
		json_object_object_add(o, "name", jstr(name));
		json_object_object_add(o, "interval_s", jdouble(dt, "%.3f"));
		json_object_object_add(o, "state", jstr(b->state));
		json_object_object_add(o, "policy", jstr(b->policy));
		json_object_object_add(o, "reads", ju64(b->reads));
		json_object_object_add(o, "reads_per_s", jrate(reads));
		json_object_object_add(o, "hits_per_s", jrate(hits));
		json_object_object_add(o, "misses_per_s", jrate(rate(a->misses, b->misses, dt)));
		json_object_object_add(o, "bypassed_per_s", jrate(rate(a->bypassed, b->bypassed, dt)));
		r = json_object_new_object();
		json_object_object_add(r, "inactive", jrate(rate(p->inactive, q->inactive, dt)));
		json_object_object_add(r, "busy", jrate(rate(p->busy, q->busy, dt)));
		json_object_object_add(r, "caware", jrate(rate(p->caware, q->caware, dt)));
		json_object_object_add(r, "budget", jrate(rate(p->budget, q->budget, dt)));
		json_object_object_add(r, "held", jrate(rate(p->held, q->held, dt)));
		json_object_object_add(r, "nomem", jrate(rate(p->nomem, q->nomem, dt)));
		json_object_object_add(r, "joined", jrate(rate(p->joined, q->joined, dt)));
		json_object_object_add(r, "write", jrate(rate(p->write, q->write, dt)));
		json_object_object_add(o, "bypassed_per_s_by_reason", r);
		json_object_object_add(o, "fill_mib_per_s",
				       jrate(rate(a->fill_sectors, b->fill_sectors, dt) * 512 / MIB));
		json_object_object_add(o, "hit_ratio", jdouble(reads > 0 ? hits / reads : 0.0,
							       "%.6g"));
		/* --watch: one object per line (JSON Lines), for a pipe. */
		puts(json_object_to_json_string_ext(o, watch ? JSON_C_TO_STRING_PLAIN :
						    JSON_C_TO_STRING_PRETTY));
		json_object_put(o);
		fflush(stdout);
		return;
	}
	strftime(clock, sizeof(clock), "%H:%M:%S", localtime(&t));
	if (watch && isatty(STDOUT_FILENO))
		fputs("\033[H\033[2J", stdout);	/* redraw in place */
	printf("%s at %s: %s, policy %s, %u of %u segments hold data", name, clock, b->state,
	       b->policy, b->valid, b->segments);
	if (watch)
		printf(" (every %g s; Ctrl-C stops)", interval);
	printf("\n  reads/s     %10.1f   (%" PRIu64 " reads in all)\n", reads, b->reads);
	printf("  hits/s      %10.1f   %.1f %% of the reads\n", hits,
	       reads > 0 ? 100.0 * hits / reads : 0.0);
	printf("  misses/s    %10.1f\n", rate(a->misses, b->misses, dt));
	printf("  bypassed/s  %10.1f   inactive %.1f, busy %.1f, C-Aware %.1f, budget %.1f,"
	       " suspending %.1f, no memory %.1f, joined %.1f,"
	       " write in flight %.1f\n",
	       rate(a->bypassed, b->bypassed, dt), rate(p->inactive, q->inactive, dt),
	       rate(p->busy, q->busy, dt), rate(p->caware, q->caware, dt),
	       rate(p->budget, q->budget, dt), rate(p->held, q->held, dt),
	       rate(p->nomem, q->nomem, dt), rate(p->joined, q->joined, dt),
	       rate(p->write, q->write, dt));
	printf("  fill MiB/s  %10.1f\n", rate(a->fill_sectors, b->fill_sectors, dt) * 512 / MIB);
	if (watch)
		history_show(h, interval);
	if (watch && !isatty(STDOUT_FILENO))
		putchar('\n');
	fflush(stdout);
}

/* Sleep @s seconds; false if a signal came. */
static bool pause_for(double s)
{
	struct timespec ts = { .tv_sec = (time_t)s,
			       .tv_nsec = (long)((s - floor(s)) * 1e9) };

	return !nanosleep(&ts, NULL) && !interrupted;
}

/* --- stats --format prometheus: the counters as they are, for a scraper ---- */

/*
 * Read the stack @name into @m for the metrics, its answer to "stats" in
 * *@text (malloc'd, or NULL).  0, or -1 with why in @why: nothing printed,
 * so that --all can go on with the other stacks.
 */
static int metrics_read(const char *name, struct metrics_stack *m, char **text, char *why,
			size_t len)
{
	char *ttype, *params;
	const char *err;
	uint64_t sectors;
	struct dev d;
	int r = -1;

	m->name = name;
	m->kind = METRICS_FAILED;
	*text = NULL;
	if (dm_target_get(DM_DEVICE_TABLE, name, &sectors, &ttype, &params)) {
		snprintf(why, len, "%s", dm_why);
		return -1;
	}
	if (!strcmp(ttype, "linear")) {
		m->kind = METRICS_LINEAR;
		r = 0;
	} else if (strcmp(ttype, "redcap")) {
		snprintf(why, len, "its table is '%s', neither redcap nor linear", ttype);
	} else {
		dev_resolve(name, &d);
		err = dm_send(&d, "stats", text);
		if (err)
			snprintf(why, len, "message 'stats': %s", err);
		else
			r = metrics_parse(m, *text, why, len);
		if (r)
			m->kind = METRICS_FAILED;
	}
	free(ttype);
	free(params);
	return r;
}

/*
 * @path replaced whole by @size bytes of @buf: a file of its own beside it
 * (a name that does not end in .prom, which node_exporter skips), renamed
 * over it.  Not synced: it is rewritten at every scrape, and one lost in a
 * crash is no loss.  0, or -1 printed.
 */
static int file_replace(const char *path, const char *buf, size_t size)
{
	char *tmp;
	ssize_t n;
	int fd, err, r;

	if (asprintf(&tmp, "%s.XXXXXX", path) < 0)
		die("out of memory");
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		err = errno;
		free(tmp);
		return fail("stats: %s: %s", path, strerror(err));
	}
	for (size_t done = 0; done < size; done += (size_t)n) {
		n = write(fd, buf + done, size - done);
		if (n < 0)
			goto bad;
	}
	/* node_exporter reads it as the user prometheus; mkostemp made it 0600. */
	if (fchmod(fd, 0644))
		goto bad;
	r = close(fd);
	fd = -1;
	if (r || rename(tmp, path))
		goto bad;
	free(tmp);
	return 0;
bad:
	err = errno;
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	free(tmp);
	return fail("stats: %s: %s", path, strerror(err));
}

/*
 * stats --format prometheus: NAME (NULL: every stack) read once and
 * printed, or written to @out; nothing at all unless every part is there.
 * With --all a stack that cannot be read is left out with a warning, and
 * shows as redcap_scrape_error.
 */
static int stats_prometheus(const char *name, const char *out)
{
	char **names, *one[2] = { NULL, NULL }, **text, why[PATH_MAX + 128], *buf;
	struct metrics_stack *m;
	struct devinfo di;
	size_t nr = 0, size;
	FILE *mem;
	int r = 0;

	if (name) {
		r = stack_lookup(name, false, &di);
		if (!r)
			fail("%s: no such redcap stack", name);
		if (r <= 0)
			return 1;
		r = 0;
		one[0] = xstrdup(name);
		names = one;
	} else {
		names = stack_names();
	}
	while (names[nr])
		nr++;
	m = xmalloc((nr ? nr : 1) * sizeof(*m));
	text = xmalloc((nr ? nr : 1) * sizeof(*text));
	for (size_t i = 0; i < nr; i++) {
		if (!metrics_read(names[i], &m[i], &text[i], why, sizeof(why)))
			continue;
		if (name) {
			fail("%s: %s", name, why);
			r = -1;
			break;
		}
		warn("%s: %s (redcap_scrape_error 1)", names[i], why);
	}
	if (!r) {
		mem = open_memstream(&buf, &size);
		if (!mem || metrics_write(mem, m, nr) || fclose(mem))
			die("out of memory");
		if (out && strcmp(out, "-")) {
			r = file_replace(out, buf, size);
		} else if (fwrite(buf, 1, size, stdout) != size || fflush(stdout)) {
			fail("stats: standard output: %s", strerror(errno));
			r = -1;
		}
		free(buf);
	}
	for (size_t i = 0; i < nr; i++) {
		free(text[i]);
		free(names[i]);
	}
	if (names != one)
		free(names);
	free(text);
	free(m);
	return r ? 1 : 0;
}

enum stats_format { STATS_TEXT, STATS_JSON, STATS_PROMETHEUS };

static const char * const stats_formats[] = {
	[STATS_TEXT] = "text", [STATS_JSON] = "json", [STATS_PROMETHEUS] = "prometheus",
};

struct stats_opts {
	bool json, watch, all;
	int format;			/* enum stats_format, or -1: not given */
	const char *out;
	double interval;
};

static void stats_opt(int c, const char *arg, void *ctx)
{
	struct stats_opts *o = ctx;
	char *end;

	switch (c) {
	case 'j':
		o->json = true;
		return;
	case 'a':
		o->all = true;
		return;
	case 'o':
		if (!*arg)
			usage_error("stats: --out: an empty file name");
		o->out = arg;
		return;
	case 'f':
		for (o->format = STATS_PROMETHEUS; o->format >= 0; o->format--)
			if (!strcmp(arg, stats_formats[o->format]))
				return;
		usage_error("stats: --format: '%s' is not text, json or prometheus", arg);
	}
	o->watch = true;
	if (!arg)
		return;
	errno = 0;
	o->interval = strtod(arg, &end);
	if (errno || end == arg || *end || !(o->interval >= 0.1 && o->interval <= 3600))
		usage_error("stats: --watch=%s: seconds from 0.1 to 3600", arg);
}

static int cmd_stats(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "watch", optional_argument, NULL, 'w' },
		{ "format", required_argument, NULL, 'f' },
		{ "all", no_argument, NULL, 'a' },
		{ "out", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct stats_opts o = { .format = -1, .interval = 1.0 };
	int i = dmctl_parse_opts(argc, argv, longopts, stats_opt, &o);
	struct sigaction sa = { .sa_handler = on_interrupt };
	struct history h = { .n = 0 };
	struct sample a, b;
	bool json;

	/* --json is --format json, as it was before --format. */
	if (o.json && o.format >= 0 && o.format != STATS_JSON)
		usage_error("stats: --json and --format %s: one format only",
			    stats_formats[o.format]);
	if (o.format != STATS_PROMETHEUS) {
		if (o.all)
			usage_error("stats: --all needs --format prometheus");
		if (o.out)
			usage_error("stats: --out needs --format prometheus");
	} else if (o.watch) {
		usage_error("stats: --watch does not go with --format prometheus");
	}
	dmctl_operands(argc, argv, i, o.all ? 0 : 1, o.all ? 0 : 1);
	if (o.format == STATS_PROMETHEUS)
		return stats_prometheus(o.all ? NULL : argv[i], o.out);
	json = o.json || o.format == STATS_JSON;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sample_take(argv[i], &a);
	while (pause_for(o.interval)) {
		double dt, reads;

		sample_take(argv[i], &b);
		dt = b.t - a.t;
		reads = rate(a.reads, b.reads, dt);
		history_add(&h, reads > 0 ? rate(a.hits, b.hits, dt) / reads : NAN,
			    (rate(a.disk_us, b.disk_us, dt) - rate(a.cache_us, b.cache_us, dt)) / 1e6);
		stats_show(argv[i], &a, &b, json, o.watch, o.interval, &h);
		if (!o.watch)
			return 0;
		a = b;
	}
	/* Interrupted: the end a --watch is meant to have. */
	return o.watch ? 0 : 130;
}

/* --- set, drop-cache, reset-stats ---------------------------------------- */

/* A stack that has a cache: 0, or -1 printed. */
static int cache_load(const char *name, struct stack *k)
{
	if (stack_load(name, k))
		return -1;
	if (!is_redcap(k)) {
		stack_free(k);
		return fail("%s: a linear device without cache (once the redcap module loads, "
			    "redcapctl upgrade swaps the cache in)", name);
	}
	return 0;
}

int redcapctl_cache_get(const char *name, bool linear_ok, struct redcapctl_cache *c)
{
	struct stack k;

	if (stack_load(name, &k))
		return -1;
	if (!is_redcap(&k) && linear_ok) {
		printf("%s: a linear device without cache: nothing to do\n", name);
		stack_free(&k);
		return 1;
	}
	if (!is_redcap(&k)) {
		stack_free(&k);
		return fail("%s: a linear device without cache (once the redcap module loads, "
			    "redcapctl upgrade swaps the cache in)", name);
	}
	*c = (struct redcapctl_cache){ .dev = k.dev, .origin = k.origin, .sectors = k.sectors,
				       .seg_sectors = k.seg_sectors };
	stack_free(&k);
	return 0;
}

#define SET_KEYS	"policy, write_policy, estimator, window, margin, decay_ms, " \
			"budget_share, budget_cap_ms, prefetch, hdc, hot_period"

/* A key of the target's "set" message. */
static bool is_tunable(const char *key)
{
	int k;

	for (k = 0; k < RC_TUN_NR; k++)
		if (!strcmp(key, rc_tunable_name((enum rc_tunable)k)))
			return true;
	return false;
}

static int cmd_set(int argc, char **argv)
{
	int i = dmctl_parse_opts(argc, argv, help_only, no_opts, NULL), nr;
	char *(*words)[3], buf[256], *key;
	struct stack k;
	struct rc_msg m;

	dmctl_operands(argc, argv, i, 2, INT_MAX);
	nr = argc - i - 1;
	words = xmalloc((size_t)nr * sizeof(*words));
	/* Every pair is checked with the target's own parser before any is sent. */
	for (int j = 0; j < nr; j++) {
		char *kv = argv[i + 1 + j], *val = strchr(kv, '=');
		unsigned int n;
		const char *err;

		if (!val || val == kv || !val[1])
			usage_error("set: '%s' is not KEY=VALUE", kv);
		key = strndup(kv, (size_t)(val - kv));
		if (!key)
			die("out of memory");
		val++;
		if (!strcmp(key, "policy") || !strcmp(key, "write_policy") ||
		    !strcmp(key, "estimator")) {
			words[j][0] = key;
			words[j][1] = val;
			n = 2;
		} else if (is_tunable(key)) {
			words[j][0] = "set";
			words[j][1] = key;
			words[j][2] = val;
			n = 3;
		} else {
			usage_error("set: unknown key '%s' (" SET_KEYS ")", key);
		}
		err = rc_parse_message(n, words[j], &m, buf, sizeof(buf));
		if (err) {
			/* The parser's text names its verb ("set: ...", "policy: ..."). */
			const char *colon = strstr(err, ": ");

			usage_error("set: %s=%s: %s", key, val, colon ? colon + 2 : err);
		}
		if (n == 2)
			words[j][2] = NULL;
	}
	if (cache_load(argv[i], &k))
		return 1;
	for (int j = 0; j < nr; j++) {
		if (!strcmp(words[j][0], "estimator") && !k.has_vd &&
		    rc_estimator_parse(words[j][1]) == RC_EST_VDISK)
			die("%s: estimator=vdisk needs the model layer, which this stack has not "
			    "(created with --no-model)", argv[i]);
	}
	for (int j = 0; j < nr; j++) {
		snprintf(buf, sizeof(buf), "%s %s%s%s", words[j][0], words[j][1],
			 words[j][2] ? " " : "", words[j][2] ? words[j][2] : "");
		free(dm_message(&k.dev, buf));
	}
	stack_free(&k);
	free(words);
	return 0;
}

static int cmd_simple_message(int argc, char **argv, const char *msg)
{
	int i = dmctl_parse_opts(argc, argv, help_only, no_opts, NULL);
	struct stack k;
	const char *why;
	char *answer;

	dmctl_operands(argc, argv, i, 1, 1);
	if (cache_load(argv[i], &k))
		return 1;
	why = dm_send(&k.dev, msg, &answer);
	stack_free(&k);
	if (why) {
		fail("%s: %s: %s", argv[i], argv[0], !strcmp(why, strerror(EBUSY)) ?
		     "segments stayed busy for 10 s; try again" : why);
		return 1;
	}
	free(answer);
	return 0;
}

static int cmd_drop_cache(int argc, char **argv)
{
	return cmd_simple_message(argc, argv, "drop_cache");
}

static int cmd_reset_stats(int argc, char **argv)
{
	return cmd_simple_message(argc, argv, "reset_stats");
}

/* --- model: vdiskctl's table commands on NAME-vd ------------------------- */

static int cmd_model(int argc, char **argv)
{
	static const struct option model_opts[] = {
		{ "if-present", no_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct vdt_train t = VDT_TRAIN_DEFAULTS;
	const char *verb = argc > 1 ? argv[1] : "";
	bool if_present = false;
	char file[PATH_MAX];
	struct stack k;
	int i, r = 0;

	if (!strcmp(verb, "-h") || !strcmp(verb, "--help")) {
		dmctl_parse_opts(argc, argv, help_only, no_opts, NULL);
	}
	if (strcmp(verb, "save") && strcmp(verb, "load") && strcmp(verb, "train"))
		usage_error(*verb ? "model: unknown verb '%s' (save, load, train)" :
			    "model: missing verb (save, load, train)%s", verb);
	argv[1] = argv[0];	/* "model save NAME": parse from "save" */
	if (!strcmp(verb, "train")) {
		i = dmctl_parse_opts(argc - 1, argv + 1, vdt_train_options, vdt_train_opt, &t) + 1;
		dmctl_operands(argc, argv, i, 1, 1);
	} else {
		/*
		 * --if-present, for the boot units: no file yet (before the first
		 * save), a stack started linear or made without a model layer, is
		 * nothing to do, not an error.
		 */
		i = dmctl_parse_opts(argc - 1, argv + 1, model_opts, bool_opt, &if_present) + 1;
		dmctl_operands(argc, argv, i, 1, 2);
	}
	if (stack_load(argv[i], &k))
		return 1;
	if (!k.has_vd && if_present) {
		printf("%s: %s: no model to %s\n", argv[i], is_redcap(&k) ?
		       "created with --no-model" : "a linear device without cache", verb);
		stack_free(&k);
		return 0;
	}
	if (!k.has_vd) {
		fail("%s: no model layer (%s)", argv[i], is_redcap(&k) ?
		     "created with --no-model" : "a linear device without cache");
		stack_free(&k);
		return 1;
	}
	if (argc - i == 2)
		snprintf(file, sizeof(file), "%s", argv[i + 1]);
	else
		snprintf(file, sizeof(file), MODEL_DIR "/%s.vdisk", argv[i]);
	if (!strcmp(verb, "save")) {
		if (argc - i == 1 && mkdir(MODEL_DIR, 0755) && errno != EEXIST)
			die("model save: %s: %s", MODEL_DIR, strerror(errno));
		vdt_save(&k.vdev, file);
		printf("%s: model saved to %s\n", argv[i], file);
	} else if (!strcmp(verb, "load")) {
		if (if_present && access(file, F_OK) && errno == ENOENT) {
			printf("%s: no saved model in %s: the model learns from nothing\n", argv[i],
			       file);
		} else {
			vdt_load(&k.vdev, file);
			printf("%s: model loaded from %s\n", argv[i], file);
		}
	} else {
		r = vdt_train(&k.vdev, &t);
	}
	stack_free(&k);
	return r;
}

/* --- start, stop: the stacks of /etc/redcaptab --------------------------- */

struct tab {
	const char *path;
	struct rctab_entry *e;
	size_t nr;
	int bad;
	bool bad_warns;		/* bad lines are warnings: one entry is wanted */
};

static void tab_entry(const struct rctab_entry *e, void *arg)
{
	struct tab *t = arg;

	t->e = realloc(t->e, (t->nr + 1) * sizeof(*t->e));
	if (!t->e)
		die("out of memory");
	t->e[t->nr++] = *e;
}

static void tab_bad(unsigned int line, const char *why, void *arg)
{
	struct tab *t = arg;

	(void)line;
	if (t->bad_warns)
		warn("%s: %s", t->path, why);
	else
		fail("%s: %s", t->path, why);
}

/*
 * Read the table file; its bad lines are printed (as warnings with
 * @bad_warns: another line's mistake must not fail one entry's boot unit),
 * its good ones kept.
 */
static void tab_read(struct tab *t, const char *path, bool missing_ok, bool bad_warns)
{
	FILE *f = fopen(path, "re");

	memset(t, 0, sizeof(*t));
	t->path = path;
	t->bad_warns = bad_warns;
	if (!f) {
		if (missing_ok && errno == ENOENT)
			return;
		die("%s: %s", path, strerror(errno));
	}
	t->bad = rctab_read(f, tab_entry, tab_bad, t);
	if (t->bad < 0)
		die("%s: %s", path, strerror(errno));
	fclose(f);
}

static const struct rctab_entry *tab_find(const struct tab *t, const char *name)
{
	for (size_t i = 0; i < t->nr; i++)
		if (!strcmp(t->e[i].name, name))
			return &t->e[i];
	return NULL;
}

/* The stack an entry describes; @ram (32 bytes) holds its size for messages. */
static void entry_spec(const struct rctab_entry *e, struct spec *s, char *ram)
{
	snprintf(ram, 32, "%" PRIu64, e->ram_bytes);
	*s = (struct spec){
		.name = e->name, .origin_kind = e->origin_kind, .origin = e->origin,
		.ram_str = ram, .ram_bytes = e->ram_bytes, .segment_bytes = e->segment_bytes,
		.policy = e->policy, .write_policy = e->write_policy, .estimator = e->estimator,
		.nomodel = e->nomodel, .on_fail_linear = e->on_fail == RCTAB_ON_FAIL_LINEAR,
		.readahead_bytes = e->readahead_bytes,
		.tunables_set = e->tunables_set, .tunable = e->tunable,
	};
}

/* How long start --initramfs waits for an origin without x-systemd.device-timeout: systemd's. */
#define INITRAMFS_ORIGIN_WAIT_US	(90ull * 1000000)

/*
 * Find the origin of @e, waiting up to @wait_us for it to appear (the
 * initramfs, where nothing else waits for it).  0, or -1 with why in @why.
 */
static int entry_origin(const struct rctab_entry *e, uint64_t wait_us, struct origin *o,
			char *why, size_t len)
{
	double end = now_s() + wait_us / 1e6;
	bool said = false;

	while (origin_resolve(e->origin_kind, e->origin, o, why, len)) {
		if (!wait_us || now_s() >= end)
			return -1;
		if (!said) {
			if (wait_us == UINT64_MAX)
				printf("%s: waiting for origin %s\n", e->name, o->spec);
			else
				printf("%s: waiting up to %.0f s for origin %s\n", e->name,
				       wait_us / 1e6, o->spec);
			fflush(stdout);
			said = true;
		}
		usleep(100 * 1000);
	}
	return 0;
}

/* Start one entry: 0 (started, running already, or skipped by nofail), or -1. */
static int entry_start(const struct rctab_entry *e, uint64_t wait_us)
{
	char ram[32], why[PATH_MAX + 64];
	struct devinfo di;
	struct origin o;
	struct spec s;
	int r = stack_lookup(e->name, false, &di);

	if (r < 0)
		return -1;
	if (r) {
		printf("%s: already running\n", e->name);
		return 0;
	}
	if (e->warning[0])
		warn("%s: %s", e->name, e->warning);
	if (entry_origin(e, wait_us, &o, why, sizeof(why))) {
		if (e->nofail) {
			warn("%s: %s; skipped (nofail)", e->name, why);
			return 0;
		}
		return fail("%s: %s", e->name, why);
	}
	entry_spec(e, &s, ram);
	return stack_create(&s);
}

struct tab_opts {
	bool all, initramfs;
	const char *tab, *fstab;
};

static void tab_opt(int c, const char *arg, void *ctx)
{
	struct tab_opts *o = ctx;

	if (c == 'a')
		o->all = true;
	else if (c == 'i')
		o->initramfs = true;
	else if (c == 't')
		o->tab = arg;
	else if (c == 'f')
		o->fstab = arg;
}

static const struct option tab_longopts[] = {
	{ "all", no_argument, NULL, 'a' },
	{ "initramfs", no_argument, NULL, 'i' },
	{ "tab", required_argument, NULL, 't' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

static void cmdline_bad(const char *word, void *arg)
{
	(void)arg;
	warn("kernel command line: '%s' is not a boolean; ignored", word);
}

/*
 * start --initramfs: the entries marked initramfs, each origin waited for
 * (nothing else waits for it there), unless redcap=0 on the command line.
 */
static int start_initramfs(const struct tab_opts *o)
{
	const struct rctab_entry *e;
	int status = 0;
	struct tab t;

	if (!rctab_enabled_by_cmdline(cmdline_bad, NULL)) {
		printf("redcap=0 on the kernel command line: no stack started\n");
		return 0;
	}
	tab_read(&t, o->tab, true, false);
	if (t.bad)
		status = 1;
	for (size_t j = 0; j < t.nr; j++) {
		e = &t.e[j];
		if (e->initramfs &&
		    entry_start(e, e->device_timeout[0] ? e->device_timeout_us :
				INITRAMFS_ORIGIN_WAIT_US))
			status = 1;
	}
	free(t.e);
	return status;
}

static int cmd_start_stop(int argc, char **argv, bool start)
{
	struct tab_opts o = { .tab = DEFAULT_TAB };
	int i = dmctl_parse_opts(argc, argv, tab_longopts, tab_opt, &o), status = 0;
	const struct rctab_entry *e;
	struct tab t;

	if (o.initramfs && (!start || o.all))
		usage_error(start ? "start: --initramfs or --all, not both" :
			    "stop: unknown option '--initramfs'");
	if (o.initramfs) {
		dmctl_operands(argc, argv, i, 0, 0);
		return start_initramfs(&o);
	}
	dmctl_operands(argc, argv, i, o.all ? 0 : 1, o.all ? 0 : 1);
	if (!o.all)
		name_check(argv[i]);
	/* Stopping one stack needs no table: it may have left the file already. */
	if (!start && !o.all) {
		int r = stack_running(argv[i]);

		if (!r)
			printf("%s: not running\n", argv[i]);
		return r < 0 || (r > 0 && stack_remove(argv[i], false)) ? 1 : 0;
	}
	/* No table at all: nothing to start or stop (a host without stacks boots). */
	tab_read(&t, o.tab, o.all, !o.all);
	if (t.bad && o.all)
		status = 1;
	if (!o.all) {
		e = tab_find(&t, argv[i]);
		if (!e) {
			fail("%s: no entry in %s", argv[i], o.tab);
			status = 1;
		} else if (entry_start(e, 0)) {
			status = 1;
		}
	}
	for (size_t j = 0; o.all && j < t.nr; j++) {
		e = &t.e[j];
		if (start) {
			if (!e->noauto && entry_start(e, 0))
				status = 1;
			continue;
		}
		int r = stack_running(e->name);

		if (r < 0 || (r > 0 && stack_remove(e->name, false)))
			status = 1;
	}
	free(t.e);
	return status;
}

/*
 * upgrade NAME|--all: the cache swapped in, live, under the linear stacks
 * of the table's entries (on-fail=linear, once the module loads).
 */
static int cmd_upgrade(int argc, char **argv)
{
	struct tab_opts o = { .tab = DEFAULT_TAB };
	int i = dmctl_parse_opts(argc, argv, tab_longopts, tab_opt, &o), status = 0;
	const struct rctab_entry *e;
	struct devinfo di;
	struct spec s;
	char ram[32];
	struct tab t;

	if (o.initramfs)
		usage_error("upgrade: unknown option '--initramfs'");
	dmctl_operands(argc, argv, i, o.all ? 0 : 1, o.all ? 0 : 1);
	if (!o.all)
		name_check(argv[i]);
	tab_read(&t, o.tab, o.all, !o.all);
	if (t.bad && o.all)
		status = 1;
	if (!o.all && !tab_find(&t, argv[i])) {
		fail("%s: no entry in %s", argv[i], o.tab);
		status = 1;
	}
	for (size_t j = 0; j < t.nr; j++) {
		e = &t.e[j];
		if (!o.all && strcmp(e->name, argv[i]))
			continue;
		int r = stack_lookup(e->name, false, &di);

		if (!r && !o.all)
			fail("%s: not running (redcapctl start builds it)", e->name);
		entry_spec(e, &s, ram);
		if (r < 0 || (!r && !o.all) || (r > 0 && stack_upgrade(&s)))
			status = 1;
	}
	free(t.e);
	return status;
}

static int cmd_start(int argc, char **argv)
{
	return cmd_start_stop(argc, argv, true);
}

static int cmd_stop(int argc, char **argv)
{
	return cmd_start_stop(argc, argv, false);
}

/* --- check --------------------------------------------------------------- */

static int problems;

/* A line of check: ok, a warning (boot goes on), or a problem (exit 1). */
enum verdict { OK, WARNING, PROBLEM };

static void report(enum verdict v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void report(enum verdict v, const char *fmt, ...)
{
	static const char * const words[] = { "ok", "warning", "problem" };
	va_list ap;

	printf("%-8s ", words[v]);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	if (v == PROBLEM)
		problems++;
}

static void check_module(const char *ttype, const char *mod)
{
	struct kmod_list *list = NULL;
	struct kmod_ctx *ctx;
	char version[32];
	struct utsname u;

	if (dm_has_target(ttype, version, sizeof(version))) {
		report(OK, "%s: loaded (target %s %s)", mod, ttype, version);
		return;
	}
	uname(&u);
	ctx = kmod_new(NULL, NULL);
	if (ctx && kmod_module_new_from_lookup(ctx, mod, &list) >= 0 && list) {
		struct kmod_module *m = kmod_module_get_module(list);
		const char *path = kmod_module_get_path(m);

		report(OK, "%s: %s, loaded at the first start", mod, path ? path : "built in");
		kmod_module_unref(m);
		kmod_module_unref_list(list);
	} else {
		report(PROBLEM, "%s: not built for kernel %s (no module in /lib/modules/%s): "
		       "install redcap for this kernel", mod, u.release, u.release);
	}
	kmod_unref(ctx);
}

/* The device an fstab source names, or 0. */
static dev_t fstab_source_dev(struct libmnt_fs *fs)
{
	const char *tag, *val, *src;
	struct stat st;
	dev_t d = 0;
	char *dev;

	if (!mnt_fs_get_tag(fs, &tag, &val)) {
		dev = blkid_evaluate_tag(tag, val, NULL);
		if (dev && !stat(dev, &st) && S_ISBLK(st.st_mode))
			d = st.st_rdev;
		free(dev);
		return d;
	}
	src = mnt_fs_get_srcpath(fs);
	if (src && !stat(src, &st) && S_ISBLK(st.st_mode))
		d = st.st_rdev;
	return d;
}

/* fstab lines that mount an origin directly, by its path or its filesystem's tags. */
static void check_fstab(const char *path, const struct tab *t, const struct origin *o,
			const bool *found)
{
	struct libmnt_table *tb = mnt_new_table();
	struct libmnt_iter *it = mnt_new_iter(MNT_ITER_FORWARD);
	struct libmnt_fs *fs;
	int flagged = 0;
	struct stat st;

	/* libmount refuses an empty file; it mounts nothing, so nothing directly. */
	if (!stat(path, &st) && !st.st_size)
		goto none;
	if (!tb || !it || mnt_table_parse_fstab(tb, path)) {
		report(PROBLEM, "%s: cannot be read", path);
		goto out;
	}
	while (!mnt_table_next_fs(tb, it, &fs)) {
		const char *tag, *val, *src = mnt_fs_get_source(fs);
		dev_t d = fstab_source_dev(fs);

		for (size_t j = 0; j < t->nr; j++) {
			bool hit = found[j] && d == o[j].devno;

			if (found[j] && !mnt_fs_get_tag(fs, &tag, &val) &&
			    (!strcmp(tag, "UUID") || !strcmp(tag, "LABEL"))) {
				char *v = blkid_get_tag_value(NULL, tag, o[j].path);

				hit = hit || (v && !strcmp(v, val));
				free(v);
			}
			if (!hit)
				continue;
			report(PROBLEM, "%s: '%s %s' mounts the origin of %s (%s) directly: mount "
			       "/dev/mapper/%s instead", path, src, mnt_fs_get_target(fs),
			       t->e[j].name, o[j].path, t->e[j].name);
			flagged++;
		}
	}
none:
	if (!flagged)
		report(OK, "%s: no line mounts an origin directly", path);
out:
	mnt_free_iter(it);
	mnt_unref_table(tb);
}

/*
 * The initramfs builds its entries from the copy of the table that
 * update-initramfs put in it: one older than the table may miss a change.
 * $REDCAP_INITRD names the image (the tests'); else the running kernel's.
 */
static void check_initramfs(const struct tab *t)
{
	const char *env = getenv("REDCAP_INITRD");
	struct stat tab_st, img_st;
	char img[PATH_MAX];
	struct utsname u;
	size_t j;

	for (j = 0; j < t->nr && !t->e[j].initramfs; j++)
		;
	if (j == t->nr)
		return;
	uname(&u);
	snprintf(img, sizeof(img), "%s", env ? env : "");
	if (!env)
		snprintf(img, sizeof(img), "/boot/initrd.img-%s", u.release);
	if (stat(img, &img_st)) {
		report(PROBLEM, "%s: %s, with an initramfs entry (%s): update-initramfs -u",
		       img, strerror(errno), t->e[j].name);
	} else if (!stat(t->path, &tab_st) &&
		   (tab_st.st_mtim.tv_sec > img_st.st_mtim.tv_sec ||
		    (tab_st.st_mtim.tv_sec == img_st.st_mtim.tv_sec &&
		     tab_st.st_mtim.tv_nsec > img_st.st_mtim.tv_nsec))) {
		report(WARNING, "%s: older than %s, whose initramfs entries it builds from its "
		       "own copy: update-initramfs -u", img, t->path);
	} else {
		report(OK, "%s: newer than %s, for its initramfs entries", img, t->path);
	}
}

static int cmd_check(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "tab", required_argument, NULL, 't' },
		{ "fstab", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct tab_opts opts = { .tab = DEFAULT_TAB, .fstab = "/etc/fstab" };
	int i = dmctl_parse_opts(argc, argv, longopts, tab_opt, &opts);
	char why[PATH_MAX + 64], use[PATH_MAX];
	struct devinfo di;
	struct origin *o;
	struct tab t;
	bool *found;

	dmctl_operands(argc, argv, i, 0, 0);
	if (dm_available())
		report(OK, "device-mapper: available");
	else
		report(PROBLEM, "device-mapper: not available: modprobe dm-mod");
	tab_read(&t, opts.tab, true, false);
	check_module("redcap", "dm-redcap");
	/* The model layer's module, unless every stack goes without it. */
	for (size_t j = 0; j <= t.nr; j++) {
		if (j == t.nr || !t.e[j].nomodel) {
			check_module("vdisk", "dm-vdisk");
			break;
		}
	}
	problems += t.bad;
	if (access(opts.tab, F_OK))
		report(OK, "%s: none, so no stack starts at boot", opts.tab);
	else if (!t.bad)
		report(OK, "%s: %zu entries, every line good", opts.tab, t.nr);
	o = xmalloc((t.nr + 1) * sizeof(*o));
	found = xmalloc((t.nr + 1) * sizeof(*found));
	for (size_t j = 0; j < t.nr; j++) {
		const struct rctab_entry *e = &t.e[j];
		int r;

		found[j] = !origin_resolve(e->origin_kind, e->origin, &o[j], why, sizeof(why));
		if (!found[j]) {
			if (e->nofail)
				report(WARNING, "%s: %s (nofail: boot goes on without it)", e->name,
				       why);
			else
				report(PROBLEM, "%s: %s", e->name, why);
			continue;
		}
		if (e->warning[0])
			report(WARNING, "%s: %s", e->name, e->warning);
		dm_log_clear();
		r = stack_lookup(e->name, false, &di);
		if (r > 0) {
			report(OK, "%s: running over %s", e->name, o[j].path);
			continue;
		}
		if (r < 0)
			problems++;
		int fd = open(o[j].path, O_RDONLY | O_EXCL | O_CLOEXEC);

		if (fd >= 0) {
			close(fd);
			if (strcmp(o[j].spec, o[j].path))
				report(OK, "%s: origin %s is %s, free", e->name, o[j].spec,
				       o[j].path);
			else
				report(OK, "%s: origin %s is free", e->name, o[j].spec);
		} else {
			user_of(o[j].devno, use, sizeof(use));
			report(PROBLEM, "%s: origin %s (%s): in use: %s", e->name, o[j].spec,
			       o[j].path, use[0] ? use : strerror(errno));
		}
	}
	check_fstab(opts.fstab, &t, o, found);
	check_initramfs(&t);
	free(o);
	free(found);
	free(t.e);
	if (problems) {
		fail("check: %d problem%s", problems, problems == 1 ? "" : "s");
		return 1;
	}
	return 0;
}

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
		{ "hot", redcapctl_hot },
		{ "model", cmd_model }, { "start", cmd_start }, { "stop", cmd_stop },
		{ "upgrade", cmd_upgrade },
		{ "check", cmd_check }, { "simulate", redcapctl_simulate },
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
