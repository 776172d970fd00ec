// SPDX-License-Identifier: GPL-2.0
/*
 * What vdiskctl and redcapctl share: error exits, number parsing, and
 * device-mapper messages and their key=value answers through libdevmapper.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
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

#define DM_LOG_LEVEL_ERR	3	/* libdevmapper's _LOG_ERR */

const char *progname = "dmctl";
const char *usage_text = "";

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

/* --- stats: key=value lines ---------------------------------------------- */

/* Splits the answer to "stats" into key=value pairs; exits on a bad answer. */
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
	if (argv[1][0] == '-')
		usage_error("unknown option '%s'", argv[1]);
	usage_error("unknown command '%s'", argv[1]);
}

void answer_get(const struct dev *d, const char *msg, struct stats *st)
{
	char *line, *next, *eq;

	st->text = dm_message(d, msg);
	st->msg = msg;
	st->n = 0;
	for (line = st->text; *line; line = next) {
		next = line + strcspn(line, "\n");
		if (*next)
			*next++ = '\0';
		if (!*line)
			continue;
		eq = strchr(line, '=');
		if (!eq || eq == line)
			die("%s: bad answer to '%s': '%.60s' is not key=value", d->arg, msg, line);
		if (st->n == MAX_STATS)
			die("%s: bad answer to '%s': more than %d lines", d->arg, msg, MAX_STATS);
		*eq = '\0';
		st->kv[st->n].key = line;
		st->kv[st->n].val = eq + 1;
		st->n++;
	}
}

void stats_get(const struct dev *d, struct stats *st)
{
	answer_get(d, "stats", st);
}

const char *stats_str(const struct dev *d, const struct stats *st, const char *key)
{
	for (int i = 0; i < st->n; i++)
		if (!strcmp(st->kv[i].key, key))
			return st->kv[i].val;
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
void dmctl_init(const char *prog, const char *usage)
{
	progname = prog;
	usage_text = usage;
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
