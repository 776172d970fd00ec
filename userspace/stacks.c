// SPDX-License-Identifier: GPL-2.0
/*
 * redcapctl create, remove, upgrade: building a stack (its model layer and
 * its cache over an origin), reading one, swapping its cache in and out.
 */
#define _GNU_SOURCE
#include <blkid/blkid.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <libdevmapper.h>
#include <libkmod.h>
#include <libmount/libmount.h>
#include <limits.h>
#include <linux/fs.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "dmctl.h"
#include "rc-args.h"
#include "rc-policy.h"
#include "redcapctl.h"
#include "redcaptab.h"

/* "64 MiB", "128 KiB", "1.5 GiB": for people; JSON has the bytes. */
const char *fmt_size(uint64_t bytes, char *buf, size_t len)
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

static const char *origin_tag(enum rctab_origin kind)
{
	return kind == RCTAB_ORIGIN_PARTUUID ? "PARTUUID" :
	       kind == RCTAB_ORIGIN_PARTLABEL ? "PARTLABEL" : NULL;
}

/* Find the origin's device.  0, or -1 with why in @why. */
int origin_resolve(enum rctab_origin kind, const char *value, struct origin *o,
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
void user_of(dev_t devno, char *buf, size_t len)
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
int stack_lookup(const char *name, bool vd, struct devinfo *di)
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
int stack_running(const char *name)
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
			 " write_policy %s", rc_write_policy_name((enum rc_write_policy)s->write_policy));
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
int stack_create(const struct spec *s)
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

bool is_redcap(const struct stack *k)
{
	return !strcmp(k->ttype, "redcap");
}

/* Read the stack @name.  0, or -1 with the error printed. */
int stack_load(const char *name, struct stack *k)
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

void stack_free(struct stack *k)
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
int stack_upgrade(const struct spec *s)
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

/*
 * Before stack @k's cache goes (a remove, or the linear table swapped in):
 * a write cache's dirty data is written back by a suspend.  What the
 * origin refused would be lost with the table (the kernel can only log
 * it), so the stack stays, resumed (or still suspended, if @suspended:
 * the admin's suspend wrote back already), and this fails.  0, or -1
 * printed.
 */
static int written_back(const struct stack *k, bool suspended)
{
	const char *wc = stats_find(&k->st, "write_cache"), *err;
	struct stats st;
	uint64_t dirty;

	if (!is_redcap(k) || !wc || !strcmp(wc, "none"))
		return 0;
	if (!suspended && dm_simple(DM_DEVICE_SUSPEND, k->name, false, DM_READ_AHEAD_AUTO))
		return fail("%s: cannot suspend it to write its cache back: %s", k->name, dm_why);
	stats_get(&k->dev, &st);
	dirty = stats_u64(&k->dev, &st, "dirty_segments", 0, UINT64_MAX);
	err = stats_str(&k->dev, &st, "writeback_error");
	if (!suspended &&
	    dm_simple(DM_DEVICE_RESUME, k->name, true, (uint32_t)(k->ra_bytes >> 9)))
		warn("%s: cannot resume it: %s", k->name, dm_why);
	if (!dirty)
		return 0;
	return fail("%s: the origin refused to take %" PRIu64 " dirty segments back "
		    "(write-back error %s): the stack stays, its data in RAM; "
		    "dmsetup remove would lose them", k->name, dirty, err);
}

/*
 * Remove the stack @name: NAME then NAME-vd; with @keep, NAME becomes a
 * linear device over the origin instead, live.  0, or -1 printed.
 */
int stack_remove(const char *name, bool keep)
{
	struct devinfo di, vdi;
	char vd[DM_NAME_LEN + 8], use[PATH_MAX], params[64];
	struct stack k;
	int r, rv, wb;

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
		if (written_back(&k, di.suspended)) {
			stack_free(&k);
			return -1;
		}
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
		if (stack_load(name, &k))
			return -1;
		wb = written_back(&k, di.suspended);
		stack_free(&k);
		if (wb)
			return -1;
		if (dm_remove_dev(name))
			return fail("%s: cannot remove: %s", name, dm_why);
	}
	if (rv && dm_remove_dev(vd))
		return fail("%s: cannot remove the model layer %s: %s", name, vd, dm_why);
	if (!keep || !r)
		printf("%s: removed\n", name);
	return 0;
}

/* The table file's rules for names: one check for both. */
void name_check(const char *name)
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
					      "one of invalidate, update, back, selective");
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

/* create's options (the command table's, redcapctl.c). */
const struct option create_options[] = {
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

int cmd_create(int argc, char **argv)
{
	struct spec s = {
		.ram_bytes = DEFAULT_RAM, .ram_str = "64M", .segment_bytes = RCTAB_DEFAULT_SEGMENT,
		.policy = -1, .write_policy = -1, .estimator = -1,
		.readahead_bytes = RCTAB_READAHEAD_AUTO,
	};
	int i = dmctl_parse_opts(argc, argv, create_options, create_opt, &s);
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

/* remove's options. */
const struct option remove_options[] = {
	{ "keep-device", no_argument, NULL, 'k' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

int cmd_remove(int argc, char **argv)
{
	bool keep = false;
	int i = dmctl_parse_opts(argc, argv, remove_options, dmctl_flag_opt, &keep);

	dmctl_operands(argc, argv, i, 1, 1);
	return stack_remove(argv[i], keep) ? 1 : 0;
}

static int strcmp_ptr(const void *a, const void *b)
{
	return strcmp(*(char * const *)a, *(char * const *)b);
}

/* The names of our stacks (not their model layers), sorted; NULL-terminated. */
char **stack_names(void)
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

/*
 * upgrade NAME|--all: the cache swapped in, live, under the linear stacks
 * of the table's entries (on-fail=linear, once the module loads).
 */
int cmd_upgrade(int argc, char **argv)
{
	struct tab_opts o = { .tab = DEFAULT_TAB };
	int i = dmctl_parse_opts(argc, argv, tab_options, tab_opt, &o), status = 0;
	const struct rctab_entry *e;
	struct devinfo di;
	struct spec s;
	char ram[32];
	struct tab t;

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
