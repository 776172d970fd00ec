/* SPDX-License-Identifier: GPL-2.0 */
/* What vdiskctl and redcapctl share (dmctl.c): errors, command lines, device-mapper. */
#ifndef DMCTL_H
#define DMCTL_H

#include <getopt.h>
#include <limits.h>
#include <linux/dm-ioctl.h>
#include <stdbool.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>


#define MAX_STATS	256	/* key=value lines in a stats answer */

extern const char *progname;	/* before every error: "<progname>: <what>: <why>" */
extern const char *usage_text;	/* printed after a usage error */
extern bool progress_line;	/* a progress line is on the terminal, not ended yet */

/*
 * A tool's name, the usage text printed after a usage error, and what
 * prints the help of a command (argv[0]) asked for with -h or --help.
 */
void dmctl_init(const char *prog, const char *usage, void (*help)(const char *cmd));

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
char *xstrdup(const char *s);

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

/*
 * The device-mapper tasks of the tools, through libdevmapper with udev
 * synchronisation.  Each returns 0, or -1 with why in dm_why (and the
 * ioctl's errno, if it ran, in dm_errno).
 */
extern char dm_why[320];
extern int dm_errno;

struct devinfo {
	bool exists;
	unsigned int major, minor, open_count;
	bool suspended;
	char uuid[DM_UUID_LEN];
};

/* A task of @type on @name (NULL: none), or NULL with why in dm_why. */
struct dm_task *dm_task_new(int type, const char *name);
/* Why the task @dmt failed to run (NULL: it could not be made), in dm_why. */
const char *dm_task_error(struct dm_task *dmt);
/* @di filled (di->exists false if there is no such device). */
int dm_info_get(const char *name, struct devinfo *di);
/*
 * The first target of @name's table (DM_DEVICE_TABLE) or status
 * (DM_DEVICE_STATUS): its length, type and parameters (malloc'd).
 */
int dm_target_get(int type, const char *name, uint64_t *len, char **ttype, char **params);
/*
 * Create @name with one target and resume it, waiting for udev; its
 * read-ahead @ra_sectors, or the kernel's with DM_READ_AHEAD_AUTO.
 */
int dm_create_dev(const char *name, const char *uuid, uint64_t sectors, const char *ttype,
		  const char *params, uint16_t udev_flags, uint32_t ra_sectors);
/* Remove @name, retried while udev's probe holds it, waiting for udev. */
int dm_remove_dev(const char *name);
/* @type on @name; a resume (@with_cookie) sets read-ahead @ra_sectors too. */
int dm_simple(int type, const char *name, bool with_cookie, uint32_t ra_sectors);
/*
 * Replace @name's table live: load, suspend, resume with read-ahead
 * @ra_sectors (a new table resets it to the kernel's); the old table is gone.
 */
int dm_swap_table(const char *name, uint64_t sectors, const char *ttype, const char *params,
		  uint32_t ra_sectors);
/* Whether the kernel has target type @ttype now; its version in @version. */
bool dm_has_target(const char *ttype, char *version, size_t len);

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

/*
 * getopt_long over a command's options, argv[0] its name: each option
 * through @opt; -h and --help print the command's help and exit 0; an
 * unknown option, or one without its value, is a usage error.  Returns
 * the index of the first operand.
 */
int dmctl_parse_opts(int argc, char **argv, const struct option *longopts,
		     void (*opt)(int c, const char *arg, void *ctx), void *ctx);
/* The command being parsed (argv[0] of dmctl_parse_opts()), for messages. */
extern const char *cmd_name;
/* The options of a command that has none but --help. */
extern const struct option dmctl_help_only[];
/* dmctl_parse_opts()'s @opt for no option, and for one flag: *(bool *)@ctx set. */
void dmctl_no_opts(int c, const char *arg, void *ctx);
void dmctl_flag_opt(int c, const char *arg, void *ctx);
/* A usage error unless argv[@first..] holds @min to @max operands. */
void dmctl_operands(int argc, char **argv, int first, int min, int max);

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
/* The usage error of a first word that names no command (or no option) of the tool. */
void dmctl_unknown(const char *word) __attribute__((noreturn));

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
/* The value of @key, or NULL (a module without it). */
const char *stats_find(const struct stats *st, const char *key);
/* The value of @key; exits if there is none. */
const char *stats_str(const struct dev *d, const struct stats *st, const char *key);
uint64_t stats_u64(const struct dev *d, const struct stats *st, const char *key,
		   uint64_t min, uint64_t max);

#endif
