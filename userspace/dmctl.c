// SPDX-License-Identifier: GPL-2.0
/*
 * What vdiskctl and redcapctl share: error exits, number parsing, and
 * device-mapper messages and their key=value answers through libdevmapper.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libdevmapper.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "dmctl.h"
#include "kv.h"

#define DM_LOG_LEVEL_ERR	3	/* libdevmapper's _LOG_ERR */

const char *progname = "dmctl";
const char *usage_text = "";
static void (*help_fn)(const char *cmd);

/* train's progress line is on a tty and not ended yet */
bool progress_line;

/*
 * The one way errors and warnings are printed: "<progname>: <prefix><message>"
 * on stderr, after ending a progress line left on the terminal.
 */
static void report(const char *prefix, const char *fmt, va_list ap)
{
	if (progress_line) {
		fputc('\n', stderr);
		progress_line = false;
	}
	fprintf(stderr, "%s: %s", progname, prefix);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	report("", fmt, ap);
	va_end(ap);
	exit(1);
}

int fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	report("", fmt, ap);
	va_end(ap);
	return -1;
}

void usage_error(const char *fmt, ...)
{
	va_list ap;

	if (fmt) {
		va_start(ap, fmt);
		report("", fmt, ap);
		va_end(ap);
	}
	fputs(usage_text, stderr);
	exit(2);
}

char *xstrdup(const char *s)
{
	char *p = strdup(s);

	if (!p)
		die("out of memory");
	return p;
}

void *xmalloc(size_t size)
{
	void *p = malloc(size ? size : 1);

	if (!p)
		die("out of memory");
	return p;
}

/* Decimal digits at *p (no sign) into *v, *p moved past them; false if none or overflow. */
bool take_u64(const char **p, uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;

	if (*s < '0' || *s > '9')
		return false;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (x > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return false;
		x = x * 10 + (uint64_t)(*s - '0');
	}
	*p = s;
	*v = x;
	return true;
}

/* The whole of @s as a number in [min, max]. */
bool parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *v)
{
	return take_u64(&s, v) && !*s && *v >= min && *v <= max;
}

/* @lit at *p: *p moved past it. */
bool take(const char **p, const char *lit)
{
	size_t n = strlen(lit);

	if (strncmp(*p, lit, n))
		return false;
	*p += n;
	return true;
}
void dev_resolve(const char *arg, struct dev *d)
{
	struct stat st;

	memset(d, 0, sizeof(*d));
	d->arg = arg;
	if (!*arg)
		usage_error("empty device name");
	if (!strncmp(arg, "/dev/mapper/", 12) && arg[12] && !strchr(arg + 12, '/')) {
		d->name = arg + 12;
	} else if (strchr(arg, '/')) {
		if (stat(arg, &st))
			die("%s: %s", arg, strerror(errno));
		if (!S_ISBLK(st.st_mode))
			die("%s: not a block device", arg);
		d->major = (int)major(st.st_rdev);
		d->minor = (int)minor(st.st_rdev);
	} else {
		d->name = arg;
	}
	if ((size_t)snprintf(d->path, sizeof(d->path), "%s%s", d->name == arg ? "/dev/mapper/" : "",
			     arg) >= sizeof(d->path))
		die("%s: name too long", arg);
}

/* The first error libdevmapper logged since dm_send() began: ours to print, not its. */
static char dm_error[256];

static void dm_log(int level, const char *file, int line, int dm_errno_or_class,
		   const char *f, ...) __attribute__((format(printf, 5, 6)));
static void dm_log(int level, const char *file, int line, int dm_errno_or_class,
		   const char *f, ...)
{
	va_list ap;

	(void)file;
	(void)line;
	(void)dm_errno_or_class;
	if ((level & 0x7f) > DM_LOG_LEVEL_ERR || dm_error[0])
		return;
	va_start(ap, f);
	vsnprintf(dm_error, sizeof(dm_error), f, ap);
	va_end(ap);
}

/*
 * Whether the kernel has device-mapper.  Asked first because libdevmapper,
 * run as root, creates /dev/mapper/control even where there is no driver:
 * the node alone proves nothing (a host whose packages' scripts created it
 * answers ENODEV), so the driver must be registered, or load when its node
 * is opened (dm-mod not yet loaded).
 */
bool dm_available(void)
{
	char line[64];
	bool found = false;
	FILE *f;
	int fd;

	f = fopen("/proc/misc", "r");
	if (f) {
		while (!found && fgets(line, sizeof(line), f))
			found = strstr(line, " device-mapper\n") != NULL;
		fclose(f);
	}
	if (found)
		return true;
	fd = open("/dev/mapper/control", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/*
 * Sends @msg to sector 0 of @d.  Returns NULL with the answer in *@answer
 * (malloc'd, "" when the target said nothing), or why the message failed.
 */
const char *dm_send(const struct dev *d, const char *msg, char **answer)
{
	const char *why = NULL;
	struct dm_task *dmt;

	if (!dm_available())
		return "device-mapper is not available (no /dev/mapper/control)";
	dm_error[0] = '\0';
	dmt = dm_task_create(DM_DEVICE_TARGET_MSG);
	if (!dmt)
		return dm_error[0] ? dm_error : "cannot talk to device-mapper";
	if (!(d->name ? dm_task_set_name(dmt, d->name) :
	      dm_task_set_major(dmt, d->major) && dm_task_set_minor(dmt, d->minor)) ||
	    !dm_task_set_sector(dmt, 0) || !dm_task_set_message(dmt, msg)) {
		why = dm_error[0] ? dm_error : "out of memory";
	} else if (!dm_task_run(dmt)) {
		why = dm_task_why(dmt);
	} else {
		const char *a = dm_task_get_message_response(dmt);

		*answer = strdup(a ? a : "");
		if (!*answer)
			why = "out of memory";
	}
	dm_task_destroy(dmt);
	return why;
}

/* dm_send(), exiting with an error if the message failed. */
char *dm_message(const struct dev *d, const char *msg)
{
	const char *why;
	char *answer;

	why = dm_send(d, msg, &answer);
	if (why)
		die("%s: message '%.40s%s': %s", d->arg, msg, strlen(msg) > 40 ? "..." : "", why);
	return answer;
}

/* --- device-mapper tasks through libdevmapper, with udev synchronisation -- */

char dm_why[320];
int dm_errno;

const char *dm_task_error(struct dm_task *dmt)
{
	dm_errno = dmt ? dm_task_get_errno(dmt) : 0;
	snprintf(dm_why, sizeof(dm_why), "%s", dmt ? dm_task_why(dmt) :
		 *dm_last_error() ? dm_last_error() : "cannot talk to device-mapper");
	return dm_why;
}

struct dm_task *dm_task_new(int type, const char *name)
{
	struct dm_task *dmt;

	dm_log_clear();
	if (!dm_available()) {
		snprintf(dm_why, sizeof(dm_why),
			 "device-mapper is not available (no /dev/mapper/control; modprobe dm-mod)");
		return NULL;
	}
	dmt = dm_task_create(type);
	if (!dmt) {
		dm_task_error(NULL);
		return NULL;
	}
	if (name && !dm_task_set_name(dmt, name)) {
		dm_task_error(dmt);
		dm_task_destroy(dmt);
		return NULL;
	}
	return dmt;
}

/* 0 and @di filled (di->exists false if there is no such device), or -1 and dm_why. */
int dm_info_get(const char *name, struct devinfo *di)
{
	struct dm_task *dmt = dm_task_new(DM_DEVICE_INFO, name);
	struct dm_info info;
	const char *uuid;
	int r = -1;

	memset(di, 0, sizeof(*di));
	if (!dmt)
		return -1;
	if (!dm_task_run(dmt) || !dm_task_get_info(dmt, &info)) {
		dm_task_error(dmt);
		goto out;
	}
	di->exists = info.exists;
	if (info.exists) {
		di->major = info.major;
		di->minor = info.minor;
		di->open_count = (unsigned int)info.open_count;
		di->suspended = info.suspended;
		uuid = dm_task_get_uuid(dmt);
		snprintf(di->uuid, sizeof(di->uuid), "%s", uuid ? uuid : "");
	}
	r = 0;
out:
	dm_task_destroy(dmt);
	return r;
}

/*
 * The first target of @name's table (DM_DEVICE_TABLE) or status
 * (DM_DEVICE_STATUS): its length, type and parameters (malloc'd).
 */
int dm_target_get(int type, const char *name, uint64_t *len, char **ttype, char **params)
{
	struct dm_task *dmt = dm_task_new(type, name);
	uint64_t start, length;
	char *tt = NULL, *p = NULL;
	int r = -1;

	if (!dmt)
		return -1;
	if (!dm_task_run(dmt)) {
		dm_task_error(dmt);
		goto out;
	}
	dm_get_next_target(dmt, NULL, &start, &length, &tt, &p);
	if (!tt) {
		snprintf(dm_why, sizeof(dm_why), "no table loaded");
		goto out;
	}
	*len = length;
	*ttype = xstrdup(tt);
	*params = xstrdup(p ? p : "");
	r = 0;
out:
	dm_task_destroy(dmt);
	return r;
}

/*
 * Run @dmt, whose setup went well if @ready, waiting for udev's work on it
 * with @udev_flags (none: -1), and destroy it.  0, or -1 with dm_why.
 */
static int task_finish(struct dm_task *dmt, bool ready, int udev_flags)
{
	uint32_t cookie = 0;
	int r = -1;

	if (!ready || (udev_flags >= 0 && !dm_task_set_cookie(dmt, &cookie, (uint16_t)udev_flags)) ||
	    !dm_task_run(dmt))
		dm_task_error(dmt);
	else
		r = 0;
	if (udev_flags >= 0)
		dm_udev_wait(cookie);
	dm_task_destroy(dmt);
	return r;
}

/* A read-ahead of @ra_sectors for the device @dmt makes or resumes, unless DM_READ_AHEAD_AUTO. */
static bool task_read_ahead(struct dm_task *dmt, uint32_t ra_sectors)
{
	return ra_sectors == DM_READ_AHEAD_AUTO || dm_task_set_read_ahead(dmt, ra_sectors, 0);
}

int dm_create_dev(const char *name, const char *uuid, uint64_t sectors, const char *ttype,
		  const char *params, uint16_t udev_flags, uint32_t ra_sectors)
{
	struct dm_task *dmt = dm_task_new(DM_DEVICE_CREATE, name);

	if (!dmt)
		return -1;
	return task_finish(dmt, dm_task_set_uuid(dmt, uuid) &&
			   dm_task_add_target(dmt, 0, sectors, ttype, params) &&
			   task_read_ahead(dmt, ra_sectors), udev_flags);
}

int dm_remove_dev(const char *name)
{
	struct dm_task *dmt = dm_task_new(DM_DEVICE_REMOVE, name);

	if (!dmt)
		return -1;
	/* udev's own probe of a device may still hold it open for a moment. */
	return task_finish(dmt, dm_task_retry_remove(dmt), 0);
}

int dm_simple(int type, const char *name, bool with_cookie, uint32_t ra_sectors)
{
	struct dm_task *dmt = dm_task_new(type, name);

	if (!dmt)
		return -1;
	return task_finish(dmt, task_read_ahead(dmt, ra_sectors), with_cookie ? 0 : -1);
}

/*
 * Replace @name's table live: load, suspend, resume with read-ahead
 * @ra_sectors (a new table resets it to the kernel's); the old table is gone.
 */
int dm_swap_table(const char *name, uint64_t sectors, const char *ttype, const char *params,
		  uint32_t ra_sectors)
{
	struct dm_task *dmt = dm_task_new(DM_DEVICE_RELOAD, name);
	char why[sizeof(dm_why)];

	if (!dmt || task_finish(dmt, dm_task_add_target(dmt, 0, sectors, ttype, params), -1))
		return -1;
	if (dm_simple(DM_DEVICE_SUSPEND, name, false, DM_READ_AHEAD_AUTO)) {
		memcpy(why, dm_why, sizeof(why));
		dm_simple(DM_DEVICE_CLEAR, name, false, DM_READ_AHEAD_AUTO);
		memcpy(dm_why, why, sizeof(why));
		return -1;
	}
	return dm_simple(DM_DEVICE_RESUME, name, true, ra_sectors);
}

/* Whether the kernel has target type @ttype now; its version in @version. */
bool dm_has_target(const char *ttype, char *version, size_t len)
{
	struct dm_task *dmt = dm_task_new(DM_DEVICE_LIST_VERSIONS, NULL);
	struct dm_versions *v, *last;
	bool found = false;

	if (!dmt)
		return false;
	if (dm_task_run(dmt)) {
		v = dm_task_get_versions(dmt);
		do {
			last = v;
			if (!strcmp(v->name, ttype)) {
				found = true;
				if (version)
					snprintf(version, len, "%u.%u.%u", v->version[0],
						 v->version[1], v->version[2]);
			}
			v = (struct dm_versions *)((char *)v + v->next);
		} while (last != v && !found);
	}
	dm_task_destroy(dmt);
	return found;
}

/* --- command lines ------------------------------------------------------- */

const char *cmd_name;

int dmctl_parse_opts(int argc, char **argv, const struct option *longopts,
		     void (*opt)(int c, const char *arg, void *ctx), void *ctx)
{
	int c;

	cmd_name = argv[0];
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		if (c == 'h') {
			help_fn(argv[0]);
			exit(0);
		}
		/* A short option by its letter; a long one as written (--json=1). */
		if (c == '?' && optopt && strncmp(argv[optind - 1], "--", 2))
			usage_error("%s: unknown option '-%c'", argv[0], optopt);
		if (c == '?')
			usage_error("%s: unknown option '%s'", argv[0], argv[optind - 1]);
		if (c == ':')
			usage_error("%s: option '%s' needs a value", argv[0], argv[optind - 1]);
		opt(c, optarg, ctx);
	}
	return optind;
}

const struct option dmctl_help_only[] = {
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

void dmctl_no_opts(int c, const char *arg, void *ctx)
{
	(void)c;
	(void)arg;
	(void)ctx;
}

void dmctl_flag_opt(int c, const char *arg, void *ctx)
{
	(void)c;
	(void)arg;
	*(bool *)ctx = true;
}

void dmctl_operands(int argc, char **argv, int first, int min, int max)
{
	if (argc - first < min)
		usage_error("%s: missing operand", argv[0]);
	if (argc - first > max)
		usage_error("%s: unexpected operand '%s'", argv[0], argv[first + max]);
}

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

volatile sig_atomic_t interrupted;

void on_interrupt(int sig)
{
	(void)sig;
	interrupted = 1;
}

int dmctl_dispatch(int argc, char **argv, const struct dmctl_cmd *cmds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].fn(argc - 1, argv + 1);
	dmctl_unknown(argv[1]);
}

void dmctl_unknown(const char *word)
{
	if (word[0] == '-')
		usage_error("unknown option '%s'", word);
	usage_error("unknown command '%s'", word);
}

void answer_get(const struct dev *d, const char *msg, struct stats *st)
{
	char *text, *key, *val;
	int r;

	st->text = dm_message(d, msg);
	st->msg = msg;
	st->n = 0;
	for (text = st->text; (r = kv_next(&text, &key, &val));) {
		if (r < 0)
			die("%s: bad answer to '%s': '%.60s' is not key=value", d->arg, msg, key);
		if (st->n == MAX_STATS)
			die("%s: bad answer to '%s': more than %d lines", d->arg, msg, MAX_STATS);
		st->kv[st->n].key = key;
		st->kv[st->n].val = val;
		st->n++;
	}
}

void stats_get(const struct dev *d, struct stats *st)
{
	answer_get(d, "stats", st);
}

const char *stats_find(const struct stats *st, const char *key)
{
	for (int i = 0; i < st->n; i++)
		if (!strcmp(st->kv[i].key, key))
			return st->kv[i].val;
	return NULL;
}

const char *stats_str(const struct dev *d, const struct stats *st, const char *key)
{
	const char *v = stats_find(st, key);

	if (v)
		return v;
	die("%s: bad answer to '%s': no %s=%s", d->arg, st->msg, key,
	    strcmp(st->msg, "stats") ? "" : " (not a vdisk device?)");
}

uint64_t stats_u64(const struct dev *d, const struct stats *st, const char *key,
			  uint64_t min, uint64_t max)
{
	const char *s = stats_str(d, st, key);
	uint64_t v;

	if (!parse_u64(s, min, max, &v))
		die("%s: bad answer to '%s': %s=%.40s", d->arg, st->msg, key, s);
	return v;
}

/* libdevmapper logs through dm_log(): its errors become ours to print. */
void dmctl_init(const char *prog, const char *usage, void (*help)(const char *cmd))
{
	progname = prog;
	usage_text = usage;
	help_fn = help;
	dm_log_with_errno_init(dm_log);
}

const char *dm_task_why(struct dm_task *dmt)
{
	/* The ioctl's errno if it ran; else why it could not run. */
	int err = dm_task_get_errno(dmt);

	if (err == ENXIO)
		return "no such device-mapper device";
	if (err)
		return strerror(err);
	return dm_error[0] ? dm_error : "device-mapper failure";
}

const char *dm_last_error(void)
{
	return dm_error;
}

void dm_log_clear(void)
{
	dm_error[0] = '\0';
}

/* A sysfs attribute of /sys/dev/block/M:m, newline stripped.  0, or -1. */
int sysfs_read(dev_t devno, const char *attr, char *buf, size_t len)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/%s", major(devno), minor(devno), attr);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* "<progname>: warning: <what>" on stderr. */
void warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	report("warning: ", fmt, ap);
	va_end(ap);
}
