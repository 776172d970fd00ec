// SPDX-License-Identifier: GPL-2.0
/*
 * redcapctl start, stop, check: the stacks of /etc/redcaptab (redcaptab(5)),
 * at boot, in the initramfs, and what stands between the host and them.
 */
#define _GNU_SOURCE
#include <blkid/blkid.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <libkmod.h>
#include <libmount/libmount.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "dmctl.h"
#include "modsig.h"
#include "redcapctl.h"
#include "redcaptab.h"

/* --- start, stop: the stacks of /etc/redcaptab --------------------------- */

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
void tab_read(struct tab *t, const char *path, bool missing_ok, bool bad_warns)
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

const struct rctab_entry *tab_find(const struct tab *t, const char *name)
{
	for (size_t i = 0; i < t->nr; i++)
		if (!strcmp(t->e[i].name, name))
			return &t->e[i];
	return NULL;
}

/* The stack an entry describes; @ram (32 bytes) holds its size for messages. */
void entry_spec(const struct rctab_entry *e, struct spec *s, char *ram)
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

void tab_opt(int c, const char *arg, void *ctx)
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

/* start's options; stop's and upgrade's, the table's entries by name or all of them. */
const struct option start_options[] = {
	{ "all", no_argument, NULL, 'a' },
	{ "initramfs", no_argument, NULL, 'i' },
	{ "tab", required_argument, NULL, 't' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

const struct option tab_options[] = {
	{ "all", no_argument, NULL, 'a' },
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
		uint64_t wait_us = e->device_timeout[0] ? e->device_timeout_us :
				   INITRAMFS_ORIGIN_WAIT_US;

		/* x-systemd.device-timeout=0 waits for ever, as infinity does. */
		if (e->initramfs && entry_start(e, wait_us ? wait_us : UINT64_MAX))
			status = 1;
	}
	free(t.e);
	return status;
}

static int cmd_start_stop(int argc, char **argv, bool start)
{
	struct tab_opts o = { .tab = DEFAULT_TAB };
	int i = dmctl_parse_opts(argc, argv, start ? start_options : tab_options, tab_opt, &o);
	const struct rctab_entry *e;
	int status = 0;
	struct tab t;

	if (o.initramfs && o.all)
		usage_error("start: --initramfs or --all, not both");
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

int cmd_start(int argc, char **argv)
{
	return cmd_start_stop(argc, argv, true);
}

int cmd_stop(int argc, char **argv)
{
	return cmd_start_stop(argc, argv, false);
}

/* --- check --------------------------------------------------------------- */

static int problems;

/* A line of check: ok, a warning (boot goes on), or a problem (exit 1). */
enum verdict { OK, WARNING, PROBLEM };

static void check_line(enum verdict v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check_line(enum verdict v, const char *fmt, ...)
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

/*
 * A module not loaded yet must load at the first start: on a kernel that
 * loads signed modules only (Secure Boot), it must be signed.  The
 * kernel's line first, once.
 */
static void check_signature(struct kmod_module *m, const char *mod)
{
	static const enum verdict verdicts[] = {
		[MODSIG_OK] = OK, [MODSIG_WARNING] = WARNING, [MODSIG_PROBLEM] = PROBLEM,
	};
	static bool kernel_said;
	static struct modsig_kernel k;
	struct kmod_list *info = NULL, *l;
	const char *signer = NULL;
	enum modsig_verdict v;
	char msg[512];

	if (!kernel_said) {
		modsig_kernel_read("", &k);
		v = modsig_kernel_finding(&k, msg, sizeof(msg));
		check_line(verdicts[v], "%s", msg);
		kernel_said = true;
	}
	if (kmod_module_get_info(m, &info) >= 0) {
		kmod_list_foreach(l, info) {
			if (!strcmp(kmod_module_info_get_key(l), "signer"))
				signer = kmod_module_info_get_value(l);
		}
	}
	v = modsig_module_finding(mod, signer, &k, msg, sizeof(msg));
	check_line(verdicts[v], "%s", msg);
	kmod_module_info_free_list(info);
}

static void check_module(const char *ttype, const char *mod)
{
	struct kmod_list *list = NULL;
	struct kmod_ctx *ctx;
	char version[32];
	struct utsname u;

	if (dm_has_target(ttype, version, sizeof(version))) {
		check_line(OK, "%s: loaded (target %s %s)", mod, ttype, version);
		return;
	}
	uname(&u);
	ctx = kmod_new(NULL, NULL);
	if (ctx && kmod_module_new_from_lookup(ctx, mod, &list) >= 0 && list) {
		struct kmod_module *m = kmod_module_get_module(list);
		const char *path = kmod_module_get_path(m);

		check_line(OK, "%s: %s, loaded at the first start", mod, path ? path : "built in");
		if (path)
			check_signature(m, mod);
		kmod_module_unref(m);
		kmod_module_unref_list(list);
	} else {
		check_line(PROBLEM, "%s: not built for kernel %s (no module in /lib/modules/%s): "
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
		check_line(PROBLEM, "%s: cannot be read", path);
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
			check_line(PROBLEM, "%s: '%s %s' mounts the origin of %s (%s) directly: mount "
			       "/dev/mapper/%s instead", path, src, mnt_fs_get_target(fs),
			       t->e[j].name, o[j].path, t->e[j].name);
			flagged++;
		}
	}
none:
	if (!flagged)
		check_line(OK, "%s: no line mounts an origin directly", path);
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
		check_line(PROBLEM, "%s: %s, with an initramfs entry (%s): update-initramfs -u",
		       img, strerror(errno), t->e[j].name);
	} else if (!stat(t->path, &tab_st) &&
		   (tab_st.st_mtim.tv_sec > img_st.st_mtim.tv_sec ||
		    (tab_st.st_mtim.tv_sec == img_st.st_mtim.tv_sec &&
		     tab_st.st_mtim.tv_nsec > img_st.st_mtim.tv_nsec))) {
		check_line(WARNING, "%s: older than %s, whose initramfs entries it builds from its "
		       "own copy: update-initramfs -u", img, t->path);
	} else {
		check_line(OK, "%s: newer than %s, for its initramfs entries", img, t->path);
	}
}

/* check's options. */
const struct option check_options[] = {
	{ "tab", required_argument, NULL, 't' },
	{ "fstab", required_argument, NULL, 'f' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

int cmd_check(int argc, char **argv)
{
	struct tab_opts opts = { .tab = DEFAULT_TAB, .fstab = "/etc/fstab" };
	int i = dmctl_parse_opts(argc, argv, check_options, tab_opt, &opts);
	char why[PATH_MAX + 64], use[PATH_MAX];
	struct devinfo di;
	struct origin *o;
	struct tab t;
	bool *found;

	dmctl_operands(argc, argv, i, 0, 0);
	if (dm_available())
		check_line(OK, "device-mapper: available");
	else
		check_line(PROBLEM, "device-mapper: not available: modprobe dm-mod");
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
		check_line(OK, "%s: none, so no stack starts at boot", opts.tab);
	else if (!t.bad)
		check_line(OK, "%s: %zu entries, every line good", opts.tab, t.nr);
	o = xmalloc((t.nr + 1) * sizeof(*o));
	found = xmalloc((t.nr + 1) * sizeof(*found));
	for (size_t j = 0; j < t.nr; j++) {
		const struct rctab_entry *e = &t.e[j];
		int r;

		found[j] = !origin_resolve(e->origin_kind, e->origin, &o[j], why, sizeof(why));
		if (!found[j]) {
			if (e->nofail)
				check_line(WARNING, "%s: %s (nofail: boot goes on without it)", e->name,
				       why);
			else
				check_line(PROBLEM, "%s: %s", e->name, why);
			continue;
		}
		if (e->warning[0])
			check_line(WARNING, "%s: %s", e->name, e->warning);
		dm_log_clear();
		r = stack_lookup(e->name, false, &di);
		if (r > 0) {
			check_line(OK, "%s: running over %s", e->name, o[j].path);
			continue;
		}
		if (r < 0)
			problems++;
		int fd = open(o[j].path, O_RDONLY | O_EXCL | O_CLOEXEC);

		if (fd >= 0) {
			close(fd);
			if (strcmp(o[j].spec, o[j].path))
				check_line(OK, "%s: origin %s is %s, free", e->name, o[j].spec,
				       o[j].path);
			else
				check_line(OK, "%s: origin %s is free", e->name, o[j].spec);
		} else {
			user_of(o[j].devno, use, sizeof(use));
			check_line(PROBLEM, "%s: origin %s (%s): in use: %s", e->name, o[j].spec,
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
