/* SPDX-License-Identifier: GPL-2.0 */
/* What vdiskctl and redcapctl share (dmctl.c). */
#ifndef DMCTL_H
#define DMCTL_H

#include <limits.h>
#include <stdbool.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define MAX_STATS	256	/* key=value lines in a stats answer */

extern const char *progname;	/* before every error: "<progname>: <what>: <why>" */
extern const char *usage_text;	/* printed after a usage error */
extern bool progress_line;	/* a progress line is on the terminal, not ended yet */

void dmctl_init(const char *prog, const char *usage);

/*
 * The one error model of both tools.  die(): "<progname>: <message>" on
 * stderr, exit 1.  fail(): the same, returning -1, for an error that
 * must not stop the rest (one stack's failure among --all's).
 * usage_error(): the same and the usage text, exit 2; a NULL @fmt prints
 * the usage alone.  warn(): "<progname>: warning: <message>".
 */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void *xmalloc(size_t size);

bool take_u64(const char **p, uint64_t *v);
bool parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *v);
bool take(const char **p, const char *lit);

/* A sysfs attribute of /sys/dev/block/M:m, newline stripped.  0, or -1. */
int sysfs_read(dev_t devno, const char *attr, char *buf, size_t len);

struct dev {
	const char *arg;	/* as given, for messages */
	const char *name;	/* dm name, or NULL: use major:minor */
	int major, minor;
	char path[PATH_MAX];	/* the block device, for train */
};

/* A device-mapper name, /dev/mapper/<name>, or a block device path. */
void dev_resolve(const char *arg, struct dev *d);

/* Whether the kernel has device-mapper (without creating its control node). */
bool dm_available(void);
/* @msg to sector 0 of @d: NULL and the answer in *@answer (malloc'd), or why not. */
const char *dm_send(const struct dev *d, const char *msg, char **answer);
/* dm_send(), exiting with an error if the message failed. */
char *dm_message(const struct dev *d, const char *msg);
struct dm_task;
/* Why @dmt, which dm_task_run() refused, failed: the ioctl's errno, or libdevmapper's error. */
const char *dm_task_why(struct dm_task *dmt);
/* The last error libdevmapper logged, "" if none since the last dm_log_clear(). */
const char *dm_last_error(void);
void dm_log_clear(void);

/* CLOCK_MONOTONIC in seconds. */
double now_s(void);
/* Set by on_interrupt(), the SIGINT/SIGTERM handler of long commands (train, stats --watch). */
extern volatile sig_atomic_t interrupted;
void on_interrupt(int sig);

/* A command of a tool: its name and what runs it, with argv[0] the name. */
struct dmctl_cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
};

/*
 * Run the command argv[1] names among @cmds (@n of them) with argv + 1:
 * its exit status; a usage error if there is none of that name.
 */
int dmctl_dispatch(int argc, char **argv, const struct dmctl_cmd *cmds, size_t n);

struct stats {
	char *text;
	const char *msg;		/* the message answered, for errors */
	int n;
	struct {
		const char *key, *val;
	} kv[MAX_STATS];
};

/* Splits the answer to @msg into key=value lines; exits on a bad answer. */
void answer_get(const struct dev *d, const char *msg, struct stats *st);
/* answer_get() of "stats". */
void stats_get(const struct dev *d, struct stats *st);
/* The value of @key; exits if there is none. */
const char *stats_str(const struct dev *d, const struct stats *st, const char *key);
uint64_t stats_u64(const struct dev *d, const struct stats *st, const char *key,
		   uint64_t min, uint64_t max);

#endif
