// SPDX-License-Identifier: GPL-2.0
/*
 * redcapctl layout: the files of the filesystems mounted on a stack, walked
 * with FIEMAP, sent to its cache as runs (FOR: a fill stops at a file's end).
 *
 * A filesystem is on the stack when its mount's source is the stack's
 * device, or a device whose holders lead down to it alone: a partition, or
 * a device-mapper device of linear targets (an LV, kpartx's partitions),
 * as deep as MAX_DEPTH.  Where that device's bytes lie on the stack is a
 * map (struct layout_seg) composed along the way.  The runs, sorted and
 * deduplicated, go to the target as one layout_clear and as many
 * layout_runs messages of at most LAYOUT_MSG_MAX bytes as they need, the
 * dm-switch way; or, with --out, into a file, one message a line.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <libdevmapper.h>
#include <libmount/libmount.h>
#include <limits.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "dmctl.h"
#include "layout.h"
#include "redcapctl.h"
#include "redcaptab.h"

#define FIEMAP_BATCH	256	/* extents asked of one FS_IOC_FIEMAP */
#define MAX_DEPTH	8	/* devices between a filesystem and the stack */
#define NFTW_FDS	64	/* directories nftw() keeps open */
#define WHY_MAX		(PATH_MAX + 128)

/* A filesystem on the stack. */
struct lfs {
	char *mnt, *type, *device;	/* mount point, type, source */
	bool whole;			/* mounted there from its root */
	dev_t dev;			/* the block device */
	dev_t sdev;			/* its files' st_dev (btrfs: not dev) */
	struct layout_seg *map;		/* where dev lies on the stack */
	size_t map_nr;
};

/* What the walk has found: nftw() hands its callback no context. */
static struct {
	struct layout_conv conv;
	struct fiemap *fm;
	uint64_t files, skipped;	/* regular files; of them, not read */
	int skip_errno;			/* why the first was not read, */
	char skip_path[PATH_MAX];	/* and its path */
	int fatal;			/* an errno that stops the walk */
} walk;

static char *str_copy(const char *s)
{
	char *p = strdup(s ? s : "");

	if (!p)
		die("out of memory");
	return p;
}

/* --- where a device lies on the stack -------------------------------------- */

static int sys_u64(dev_t dev, const char *attr, uint64_t *v)
{
	char buf[32];

	return sysfs_read(dev, attr, buf, sizeof(buf)) || !parse_u64(buf, 0, UINT64_MAX >> 9, v) ?
	       -1 : 0;
}

static int sys_dev(dev_t dev, const char *attr, dev_t *d)
{
	unsigned int maj, min;
	char buf[32];

	if (sysfs_read(dev, attr, buf, sizeof(buf)) || sscanf(buf, "%u:%u", &maj, &min) != 2)
		return -1;
	*d = makedev(maj, min);
	return 0;
}

static void seg_push(struct layout_seg **map, size_t *nr, uint64_t from, uint64_t len,
		     uint64_t to)
{
	struct layout_seg *m = realloc(*map, (*nr + 1) * sizeof(*m));

	if (!m)
		die("out of memory");
	m[*nr] = (struct layout_seg){ from, len, to };
	*map = m;
	(*nr)++;
}

/*
 * @up (a device's bytes onto the device below) followed by @low (that
 * device's onto the stack): the device's bytes onto the stack.  @up is
 * sorted, so is the result.  Frees @up and @low.
 */
static void map_compose(struct layout_seg *up, size_t nu, struct layout_seg *low, size_t nl,
			struct layout_seg **out, size_t *nr)
{
	*out = NULL;
	*nr = 0;
	for (size_t i = 0; i < nu; i++) {
		uint64_t to = up[i].to, end = up[i].to + up[i].len;

		for (size_t j = 0; j < nl; j++) {
			uint64_t a = to > low[j].from ? to : low[j].from;
			uint64_t b = end < low[j].from + low[j].len ? end : low[j].from + low[j].len;

			if (a < b)
				seg_push(out, nr, up[i].from + (a - to), b - a,
					 low[j].to + (a - low[j].from));
		}
	}
	free(up);
	free(low);
}

/*
 * Device-mapper device @dev's table as a map onto @lower: every target
 * linear, over @lower.  0, or -1 with why in @why.
 */
static int dm_linear_map(dev_t dev, dev_t lower, struct layout_seg **map, size_t *nr,
			 char *why, size_t len)
{
	struct dm_task *dmt = dm_task_create(DM_DEVICE_TABLE);
	uint64_t start, length, off;
	unsigned int maj, min;
	char *ttype, *params;
	void *next = NULL;
	int r = -1;

	*map = NULL;
	*nr = 0;
	if (!dmt || !dm_task_set_major(dmt, (int)major(dev)) ||
	    !dm_task_set_minor(dmt, (int)minor(dev)) || !dm_task_run(dmt)) {
		snprintf(why, len, "cannot read its table: %s",
			 dmt ? dm_task_why(dmt) : "cannot talk to device-mapper");
		goto out;
	}
	do {
		next = dm_get_next_target(dmt, next, &start, &length, &ttype, &params);
		if (!ttype)
			break;
		if (strcmp(ttype, "linear")) {
			snprintf(why, len, "a '%s' target, which redcapctl cannot follow", ttype);
			goto out;
		}
		if (sscanf(params, "%u:%u %" SCNu64, &maj, &min, &off) != 3 ||
		    makedev(maj, min) != lower || off > UINT64_MAX >> 9 ||
		    start > UINT64_MAX >> 9 || length > UINT64_MAX >> 9) {
			snprintf(why, len, "a linear target '%s' not over %u:%u", params,
				 major(lower), minor(lower));
			goto out;
		}
		seg_push(map, nr, start << 9, length << 9, off << 9);
	} while (next);
	r = 0;
out:
	if (r) {
		free(*map);
		*map = NULL;
	}
	if (dmt)
		dm_task_destroy(dmt);
	return r;
}

/*
 * Where block device @dev lies on the stack @stack, @stack_bytes long:
 * 1 and its map, 0 if it is not on the stack, -1 if it is but not in a
 * way redcapctl can follow (why in @why).
 */
static int dev_on_stack(dev_t dev, dev_t stack, uint64_t stack_bytes, int depth,
			struct layout_seg **map, size_t *nr, char *why, size_t len)
{
	char path[PATH_MAX], buf[32];
	struct layout_seg *low = NULL, *up = NULL;
	size_t nl = 0, nu = 0, slaves = 0;
	dev_t below = 0, d;
	uint64_t start, size;
	struct dirent *de;
	int r, found = 0;
	DIR *dir;

	*map = NULL;
	*nr = 0;
	if (dev == stack) {
		seg_push(map, nr, 0, stack_bytes, 0);
		return 1;
	}
	if (depth == MAX_DEPTH)
		return 0;
	/* A partition: its disk below, from its start. */
	if (!sysfs_read(dev, "partition", buf, sizeof(buf))) {
		if (sys_dev(dev, "../dev", &below) || sys_u64(dev, "start", &start) ||
		    sys_u64(dev, "size", &size))
			return 0;
		r = dev_on_stack(below, stack, stack_bytes, depth + 1, &low, &nl, why, len);
		if (r <= 0)
			return r;
		seg_push(&up, &nu, 0, size << 9, start << 9);
		map_compose(up, nu, low, nl, map, nr);
		return 1;
	}
	/* A device-mapper (or md) device: the devices it is made of. */
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/slaves", major(dev), minor(dev));
	dir = opendir(path);
	if (!dir)
		return 0;
	while (found >= 0 && (de = readdir(dir))) {
		struct layout_seg *m;
		size_t mn;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "slaves/%s/dev", de->d_name);
		if (sys_dev(dev, path, &d))
			continue;
		slaves++;
		r = dev_on_stack(d, stack, stack_bytes, depth + 1, &m, &mn, why, len);
		if (r > 0 && !found) {
			found = 1;
			below = d;
			low = m;
			nl = mn;
			m = NULL;
		} else if (r < 0) {
			found = -1;
		}
		free(m);
	}
	closedir(dir);
	if (found <= 0) {
		free(low);
		return found;
	}
	if (slaves > 1) {
		free(low);
		snprintf(why, len, "it spans %zu devices, the stack among them", slaves);
		return -1;
	}
	if (dm_linear_map(dev, below, &up, &nu, why, len)) {
		free(low);
		return -1;
	}
	map_compose(up, nu, low, nl, map, nr);
	return 1;
}

/* --- which filesystems ------------------------------------------------------ */

static void lfs_free(struct lfs *fs, size_t nr)
{
	for (size_t i = 0; i < nr; i++) {
		free(fs[i].mnt);
		free(fs[i].type);
		free(fs[i].device);
		free(fs[i].map);
	}
	free(fs);
}

/*
 * The filesystems mounted on stack @name (device @stack, @stack_bytes
 * long), each once: by a mount of its whole tree where there is one.
 * Exits with an error for one that is on the stack in a way it cannot
 * follow.
 */
static struct lfs *filesystems(const char *name, dev_t stack, uint64_t stack_bytes, size_t *nr)
{
	struct libmnt_table *tb = mnt_new_table();
	struct libmnt_iter *it = mnt_new_iter(MNT_ITER_FORWARD);
	struct libmnt_fs *m;
	struct lfs *fs = NULL;
	char why[WHY_MAX];

	*nr = 0;
	if (!tb || !it || mnt_table_parse_mtab(tb, NULL))
		die("layout: %s: cannot read the mount table", name);
	while (!mnt_table_next_fs(tb, it, &m)) {
		const char *src = mnt_fs_get_srcpath(m), *root = mnt_fs_get_root(m);
		bool whole = root && !strcmp(root, "/");
		struct layout_seg *map;
		struct stat st;
		size_t map_nr, i;
		dev_t dev;
		int r;

		/* By its source: btrfs shows an anonymous device in the mount table. */
		if (!src || src[0] != '/')
			continue;
		if (!stat(src, &st) && S_ISBLK(st.st_mode))
			dev = st.st_rdev;
		else
			dev = mnt_fs_get_devno(m);
		if (!dev || !major(dev))
			continue;
		for (i = 0; i < *nr && fs[i].dev != dev; i++)
			;
		if (i < *nr) {
			/* A second mount of it: the whole tree's is the one to walk. */
			if (whole && !fs[i].whole) {
				free(fs[i].mnt);
				fs[i].mnt = str_copy(mnt_fs_get_target(m));
				fs[i].whole = true;
				fs[i].sdev = mnt_fs_get_devno(m);
			}
			continue;
		}
		why[0] = '\0';
		r = dev_on_stack(dev, stack, stack_bytes, 0, &map, &map_nr, why, sizeof(why));
		if (r < 0)
			die("layout: %s: %s (%s) is on the stack through %u:%u: %s", name,
			    mnt_fs_get_target(m), src, major(dev), minor(dev), why);
		if (!r)
			continue;
		fs = realloc(fs, (*nr + 1) * sizeof(*fs));
		if (!fs)
			die("out of memory");
		fs[*nr] = (struct lfs){
			.mnt = str_copy(mnt_fs_get_target(m)), .type = str_copy(mnt_fs_get_fstype(m)),
			.device = str_copy(src), .whole = whole, .dev = dev,
			.sdev = mnt_fs_get_devno(m), .map = map, .map_nr = map_nr,
		};
		(*nr)++;
	}
	mnt_free_iter(it);
	mnt_unref_table(tb);
	return fs;
}

/* --- the walk --------------------------------------------------------------- */

/* The extents of open file @fd into the runs.  0, or an errno. */
static int file_extents(int fd)
{
	struct fiemap *fm = walk.fm;
	struct layout_extent e;
	uint64_t at = 0, next;
	int err = 0;

	for (;;) {
		memset(fm, 0, sizeof(*fm));
		fm->fm_start = at;
		fm->fm_length = FIEMAP_MAX_OFFSET - at;
		fm->fm_extent_count = FIEMAP_BATCH;
		if (ioctl(fd, FS_IOC_FIEMAP, fm)) {
			err = errno;
			break;
		}
		if (!fm->fm_mapped_extents)
			break;
		for (uint32_t i = 0; i < fm->fm_mapped_extents; i++) {
			const struct fiemap_extent *x = &fm->fm_extents[i];

			e = (struct layout_extent){ x->fe_logical, x->fe_physical, x->fe_length,
						    x->fe_flags };
			if (layout_conv_add(&walk.conv, &e))
				die("out of memory");
		}
		/* e is the last extent of the batch */
		next = e.logical + e.length;
		if ((e.flags & FIEMAP_EXTENT_LAST) || next <= at)
			break;
		at = next;
	}
	if (layout_conv_end(&walk.conv))
		die("out of memory");
	return err;
}

static void skip(const char *path, int err)
{
	if (!walk.skipped++) {
		walk.skip_errno = err;
		snprintf(walk.skip_path, sizeof(walk.skip_path), "%s", path);
	}
}

/* nftw()'s callback: each regular file's extents.  Non-zero stops the walk. */
static int walk_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	int fd, err;

	(void)ftw;
	if (flag == FTW_DNR || flag == FTW_NS) {
		skip(path, errno ? errno : EACCES);
		return 0;
	}
	if (flag != FTW_F || !S_ISREG(st->st_mode))
		return 0;
	walk.files++;
	if (!st->st_blocks)
		return 0;	/* nothing on the device: empty, or all inline */
	fd = open(path, O_RDONLY | O_NOATIME | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0 && errno == EPERM)
		fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		skip(path, errno);
		return 0;
	}
	err = file_extents(fd);
	close(fd);
	if (err == EOPNOTSUPP || err == ENOTTY) {
		walk.fatal = err;
		return 1;
	}
	if (err)
		skip(path, err);
	return 0;
}

/* Walks @fs into the runs.  Exits with an error if it cannot. */
static void walk_fs(const char *name, const struct lfs *fs, unsigned int shift,
		    struct layout_runs *runs, uint64_t *extents, uint64_t *skipped)
{
	struct stat st;

	/* Not another filesystem mounted over it since. */
	if (stat(fs->mnt, &st))
		die("layout: %s: %s: %s", name, fs->mnt, strerror(errno));
	if (fs->sdev && st.st_dev != fs->sdev)
		die("layout: %s: %s: another filesystem is mounted over it", name, fs->mnt);
	layout_conv_init(&walk.conv, shift, fs->map, fs->map_nr, runs);
	walk.fatal = 0;
	if (nftw(fs->mnt, walk_one, NFTW_FDS, FTW_PHYS | FTW_MOUNT)) {
		if (walk.fatal)
			die("layout: %s: %s: FIEMAP: %s", name, fs->mnt, strerror(walk.fatal));
		die("layout: %s: %s: %s", name, fs->mnt, strerror(errno));
	}
	*extents += walk.conv.extents;
	*skipped += walk.conv.skipped;
}

/* --- the messages ------------------------------------------------------------ */

/*
 * layout_clear, then the runs' layout_runs messages: into @out, one a
 * line, or without @out to the stack @name.  Their number, or exits.
 */
static size_t send_all(const char *name, unsigned int unit_sectors,
		       const struct layout_run *r, size_t nr, FILE *out)
{
	char buf[LAYOUT_MSG_MAX + 1], *answer;
	size_t pos = 0, msgs = 0;
	const char *why;
	struct dev d;

	dev_resolve(name, &d);
	snprintf(buf, sizeof(buf), "layout_clear %u", unit_sectors);
	do {
		if (out) {
			fputs(buf, out);
			fputc('\n', out);
		} else {
			why = dm_send(&d, buf, &answer);
			if (why)
				die("layout: %s: %s (message %zu): %s%s", name,
				    msgs ? "layout_runs" : "layout_clear", msgs + 1, why,
				    !strcmp(why, strerror(EINVAL)) ? " (the kernel log says why)" : "");
			free(answer);
		}
		msgs++;
	} while (layout_format(r, nr, &pos, buf, LAYOUT_MSG_MAX));
	return msgs;
}

/* --- the command --------------------------------------------------------------- */

struct layout_opts {
	uint64_t unit;
	const char *out;
	bool json;
};

static void layout_opt(int c, const char *arg, void *ctx)
{
	struct layout_opts *o = ctx;
	const char *why;

	switch (c) {
	case 'u':
		if (rctab_parse_size(arg, &o->unit))
			usage_error("layout: --unit '%s' is not a size (4K, 64K, 1M)", arg);
		why = layout_unit_check(o->unit);
		if (why)
			usage_error("layout: --unit '%s': %s", arg, why);
		break;
	case 'o':
		if (!*arg)
			usage_error("layout: --out: an empty file name");
		o->out = arg;
		break;
	case 'j':
		o->json = true;
		break;
	}
}

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

struct layout_result {
	uint64_t unit, files, skipped_files, extents, skipped_extents;
	size_t runs, msgs;
	double cpu_s;
};

static void report_json(const char *name, const struct layout_opts *o, const struct lfs *fs,
			size_t nfs, const struct layout_result *res, FILE *to)
{
	json_object *j = json_object_new_object(), *a = json_object_new_array(), *f;
	char cpu[32];

	json_object_object_add(j, "schema", json_object_new_int(1));
	json_object_object_add(j, "name", json_object_new_string(name));
	json_object_object_add(j, "unit_bytes", json_object_new_uint64(res->unit));
	for (size_t i = 0; i < nfs; i++) {
		f = json_object_new_object();
		json_object_object_add(f, "mountpoint", json_object_new_string(fs[i].mnt));
		json_object_object_add(f, "type", json_object_new_string(fs[i].type));
		json_object_object_add(f, "device", json_object_new_string(fs[i].device));
		json_object_array_add(a, f);
	}
	json_object_object_add(j, "filesystems", a);
	json_object_object_add(j, "files", json_object_new_uint64(res->files));
	json_object_object_add(j, "files_skipped", json_object_new_uint64(res->skipped_files));
	json_object_object_add(j, "extents", json_object_new_uint64(res->extents));
	json_object_object_add(j, "extents_skipped",
			       json_object_new_uint64(res->skipped_extents));
	json_object_object_add(j, "runs", json_object_new_uint64(res->runs));
	json_object_object_add(j, "messages", json_object_new_uint64(res->msgs));
	json_object_object_add(j, "out", o->out ? json_object_new_string(o->out) : NULL);
	snprintf(cpu, sizeof(cpu), "%.3f", res->cpu_s);
	json_object_object_add(j, "cpu_s", json_object_new_double_s(res->cpu_s, cpu));
	fprintf(to, "%s\n", json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY |
							 JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(j);
}

static void report_text(const char *name, const struct layout_opts *o, const struct lfs *fs,
			size_t nfs, const struct layout_result *res, FILE *to)
{
	char where[1024] = "", unit[32], sent[PATH_MAX + 16];
	size_t n = 0;

	for (size_t i = 0; i < nfs && n < sizeof(where); i++)
		n += (size_t)snprintf(where + n, sizeof(where) - n, "%s%s (%s)", i ? ", " : "",
				      fs[i].mnt, fs[i].type);
	if (res->unit >= 1u << 20)
		snprintf(unit, sizeof(unit), "%" PRIu64 " MiB", res->unit >> 20);
	else
		snprintf(unit, sizeof(unit), "%" PRIu64 " KiB", res->unit >> 10);
	if (!o->out)
		snprintf(sent, sizeof(sent), "sent");
	else if (!strcmp(o->out, "-"))
		snprintf(sent, sizeof(sent), "written to standard output");
	else
		snprintf(sent, sizeof(sent), "written to %s", o->out);
	fprintf(to, "%s: %s: %" PRIu64 " files, %" PRIu64 " extents, %zu runs of %s; "
		"%zu messages %s, %.2f s of CPU\n", name, where, res->files, res->extents,
		res->runs, unit, res->msgs, sent, res->cpu_s);
}

int redcapctl_layout(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "unit", required_argument, NULL, 'u' },
		{ "out", required_argument, NULL, 'o' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct layout_opts o = { .unit = LAYOUT_UNIT_DEFAULT };
	int i = redcapctl_parse_opts(argc, argv, longopts, layout_opt, &o);
	struct layout_result res = { .unit = o.unit };
	struct layout_runs runs = { 0 };
	unsigned int shift = 0;
	uint64_t stack_sectors;
	FILE *out = NULL, *to;
	const char *name;
	struct lfs *fs;
	struct statfs sfs;
	size_t nfs;
	dev_t stack;

	if (argc - i < 1)
		usage_error("layout: missing operand");
	if (argc - i > 1)
		usage_error("layout: unexpected operand '%s'", argv[i + 1]);
	name = argv[i];
	while ((1ull << shift) < o.unit)
		shift++;
	/* Without --out the messages go to the cache: a linear stack has none. */
	if (redcapctl_stack_dev(name, !o.out, &stack))
		return 1;
	if (sys_u64(stack, "size", &stack_sectors))
		die("layout: %s: cannot read its size", name);
	fs = filesystems(name, stack, stack_sectors << 9, &nfs);
	if (!nfs)
		die("layout: %s: no filesystem on it is mounted", name);
	for (size_t f = 0; f < nfs; f++) {
		if (!fs[f].whole)
			warn("layout: %s: only a subdirectory of %s is mounted, at %s: the "
				    "layout has its files alone", name, fs[f].device, fs[f].mnt);
		if (statfs(fs[f].mnt, &sfs))
			die("layout: %s: %s: %s", name, fs[f].mnt, strerror(errno));
		if (sfs.f_type == BTRFS_SUPER_MAGIC)
			die("layout: %s: btrfs is not supported (FIEMAP returns btrfs logical "
			    "addresses, not device offsets)", name);
	}
	if (o.out) {
		out = strcmp(o.out, "-") ? fopen(o.out, "we") : stdout;
		if (!out)
			die("layout: %s: %s: %s", name, o.out, strerror(errno));
	}
	walk.fm = xmalloc(sizeof(*walk.fm) + FIEMAP_BATCH * sizeof(walk.fm->fm_extents[0]));
	for (size_t f = 0; f < nfs; f++)
		walk_fs(name, &fs[f], shift, &runs, &res.extents, &res.skipped_extents);
	free(walk.fm);
	res.files = walk.files;
	res.skipped_files = walk.skipped;
	res.runs = layout_sort_dedupe(runs.r, runs.nr);
	res.msgs = send_all(name, (unsigned int)(o.unit >> 9), runs.r, res.runs, out);
	if (out && (out == stdout ? fflush(out) : fclose(out)))
		die("layout: %s: %s: %s", name, o.out, strerror(errno));
	res.cpu_s = cpu_seconds();
	if (walk.skipped)
		warn("layout: %s: %" PRIu64 " files not read (the first: %s: %s)", name,
			    walk.skipped, walk.skip_path, strerror(walk.skip_errno));
	if (res.skipped_extents)
		warn("layout: %s: %" PRIu64 " extents skipped: not written yet, inline "
			    "or encoded (run sync first)", name, res.skipped_extents);
	/* Standard output may hold the messages: the report goes beside them. */
	to = out == stdout ? stderr : stdout;
	if (o.json)
		report_json(name, &o, fs, nfs, &res, to);
	else
		report_text(name, &o, fs, nfs, &res, to);
	layout_runs_free(&runs);
	lfs_free(fs, nfs);
	return 0;
}
