/* SPDX-License-Identifier: GPL-2.0 */
/*
 * redcapctl's commands, one family a file (stacks.c, show.c with its views
 * in show.h, tune.c, tab.c, model.c, hot-cmd.c, simulate.c), what they
 * share, and what redcapctl.c's command table takes from them.
 */
#ifndef REDCAPCTL_H
#define REDCAPCTL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dmctl.h"
#include "redcaptab.h"

#define UUID_PREFIX		"REDCAP-"
#define VD_SUFFIX		"-vd"
#define SCHEMA_VERSION		2
#define DEFAULT_RAM		(64ull << 20)
#define DEFAULT_POLICY		RC_POLICY_DEFAULT
#define DEFAULT_TAB		"/etc/redcaptab"
#define MODEL_DIR		"/var/lib/redcap"
#define MIB			(1024.0 * 1024.0)

/*
 * The commands, argv[0] their name (for model and hot, the verb follows):
 * each returns its exit status, or exits with a usage error.
 */
typedef int command_fn(int argc, char **argv);

command_fn cmd_create, cmd_remove, cmd_upgrade;		/* stacks.c */
command_fn cmd_list, cmd_status, cmd_stats;		/* show.c */
command_fn cmd_set, cmd_drop_cache, cmd_reset_stats;	/* tune.c */
command_fn cmd_start, cmd_stop, cmd_check;		/* tab.c */
command_fn cmd_model;					/* model.c */
command_fn cmd_hot;					/* hot-cmd.c */
command_fn cmd_simulate;				/* simulate.c */

/*
 * set's keys, from the target's tables (rc-args.c), ", " between them;
 * lines of @width characters at most, "\n" between them (0: one line).
 */
const char *set_keys(size_t width);

/* Their options, for getopt_long and for the command table (redcapctl.c). */
extern const struct option create_options[], remove_options[], list_options[],
	stats_options[], start_options[], tab_options[], check_options[],
	if_present_options[], simulate_options[];

/* --- stacks.c: origins and stacks ---------------------------------------- */

struct origin {
	char spec[RCTAB_ORIGIN_MAX + 16];	/* as given: /dev/..., PARTUUID=... */
	char path[PATH_MAX];			/* the block device */
	dev_t devno;
	uint64_t sectors;
	long ra_sectors;			/* its own read-ahead */
};

/* "64 MiB", "128 KiB", "1.5 GiB" of @bytes in @buf: for people; JSON has the bytes. */
const char *fmt_size(uint64_t bytes, char *buf, size_t len);
/* A usage error of the command being parsed unless @name is a good stack name. */
void name_check(const char *name);
/* Find the origin's device.  0, or -1 with why in @why. */
int origin_resolve(enum rctab_origin kind, const char *value, struct origin *o,
		   char *why, size_t len);
/* Who uses @devno or one of its partitions: "" if nobody we can name. */
void user_of(dev_t devno, char *buf, size_t len);

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

/*
 * Whether @name is one of our devices: 1 yes (@di filled), 0 no such
 * device, -1 error printed (a device-mapper failure, or a device that is
 * not ours).  @vd: its model layer NAME-vd.
 */
int stack_lookup(const char *name, bool vd, struct devinfo *di);
/* Whether anything of stack @name runs (NAME or NAME-vd): 1, 0, or -1 printed. */
int stack_running(const char *name);
/*
 * Build the stack of @s: checks everything first, then NAME-vd and NAME;
 * whatever fails, nothing is left behind.  0, or -1 with the error printed.
 */
int stack_create(const struct spec *s);
/* Swap the cache in under a running linear stack, live.  0, or -1 printed. */
int stack_upgrade(const struct spec *s);
/*
 * Remove the stack @name: NAME then NAME-vd; with @keep, NAME becomes a
 * linear device over the origin instead, live.  0, or -1 printed.
 */
int stack_remove(const char *name, bool keep);
/* Read the stack @name.  0, or -1 with the error printed. */
int stack_load(const char *name, struct stack *k);
void stack_free(struct stack *k);
/* Whether @k has its cache (not the linear table of on-fail=linear). */
bool is_redcap(const struct stack *k);
/* The names of our stacks (not their model layers), sorted; NULL-terminated. */
char **stack_names(void);

/* --- model.c: the commands of verbs on a stack's file (model, hot) ------- */

/*
 * "CMD VERB NAME ..." (argv[0] CMD), VERB one of @verbs (NULL-ended):
 * its options parsed with @longopts and @opt; the index of NAME.  -h or
 * --help for VERB is CMD's help; another word a usage error.
 */
int verb_parse(int argc, char **argv, const char *const *verbs, const struct option *longopts,
	       void (*opt)(int c, const char *arg, void *ctx), void *ctx);
/*
 * The file of "CMD save|load NAME [FILE]", argv[@i] NAME: FILE, or
 * @dir/NAME.@ext, @dir made for a save to it.
 */
void verb_file(int argc, char **argv, int i, const char *dir, const char *ext, char *file,
	       size_t len);

/* --- tab.c: the table file ----------------------------------------------- */

struct tab {
	const char *path;
	struct rctab_entry *e;
	size_t nr;
	int bad;
	bool bad_warns;		/* bad lines are warnings: one entry is wanted */
};

struct tab_opts {
	bool all, initramfs;
	const char *tab, *fstab;
};

void tab_opt(int c, const char *arg, void *ctx);
/*
 * Read the table file; its bad lines are printed (as warnings with
 * @bad_warns: another line's mistake must not fail one entry's boot unit),
 * its good ones kept.
 */
void tab_read(struct tab *t, const char *path, bool missing_ok, bool bad_warns);
const struct rctab_entry *tab_find(const struct tab *t, const char *name);
/* The stack an entry describes; @ram (32 bytes) holds its size for messages. */
void entry_spec(const struct rctab_entry *e, struct spec *s, char *ram);

/* --- tune.c: a stack's cache, for the commands that message it ----------- */

/* What a stack with its cache is, for the commands that message it. */
struct redcapctl_cache {
	struct dev dev;			/* NAME */
	dev_t origin;			/* the disk under it (and its model layer) */
	uint64_t sectors;
	uint32_t seg_sectors;
};

/*
 * Stack @name's cache: 0 and *@c; 1, said on standard output, if it is a
 * linear device without cache and @linear_ok; else -1, the error printed.
 */
int redcapctl_cache_get(const char *name, bool linear_ok, struct redcapctl_cache *c);

#endif
