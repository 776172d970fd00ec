/* SPDX-License-Identifier: GPL-2.0 */
/*
 * /etc/redcaptab: one redcap stack per line, "name origin size [options]"
 * (redcaptab(5)).  One parser for redcapctl, the udev helper and the
 * systemd generator.  It checks everything a line says by itself (names,
 * sizes, option words, against the target's own parsers); what depends on
 * the machine (the origin present and free, RAM) is redcapctl's to check.
 */
#ifndef REDCAPTAB_H
#define REDCAPTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* DM_NAME_LEN (128, with its NUL) less the "-vd" of the model layer. */
#define RCTAB_NAME_MAX		124
#define RCTAB_ORIGIN_MAX	4095
#define RCTAB_ERR_MAX		256
#define RCTAB_DEFAULT_SEGMENT	(128u << 10)
/*
 * readahead=auto: the kernel's read-ahead on the redcap device is set to
 * RCTAB_READAHEAD_AUTO_MIN, or to the origin's own if that is larger
 * (docs/redcap.rst, "Read-ahead").
 */
#define RCTAB_READAHEAD_AUTO	UINT64_MAX
#define RCTAB_READAHEAD_AUTO_MIN	(1u << 20)
#define RCTAB_READAHEAD_MAX	(64u << 20)

/* Room for the target's tunables (enum rc_tunable), options of their own. */
#define RCTAB_TUNABLES		16

enum rctab_origin { RCTAB_ORIGIN_PATH, RCTAB_ORIGIN_PARTUUID, RCTAB_ORIGIN_PARTLABEL };
enum rctab_on_fail { RCTAB_ON_FAIL_FAIL, RCTAB_ON_FAIL_LINEAR };

struct rctab_entry {
	unsigned int line;			/* 1-based, in its file */
	char name[RCTAB_NAME_MAX + 1];
	enum rctab_origin origin_kind;
	char origin[RCTAB_ORIGIN_MAX + 1];	/* the path, or what follows PARTUUID=/PARTLABEL= */
	uint64_t ram_bytes;
	uint32_t segment_bytes;			/* RCTAB_DEFAULT_SEGMENT unless segment= */
	uint32_t nr_segments;			/* ram_bytes / segment_bytes */
	int policy;				/* enum rc_policy, or -1: the tool's default */
	int write_policy;			/* enum rc_write_policy, or -1 */
	int estimator;				/* enum rc_estimator, or -1 */
	uint64_t readahead_bytes;		/* RCTAB_READAHEAD_AUTO unless readahead= */
	/* the tunables given (window=, hdc=, ...): bit k for enum rc_tunable k */
	uint32_t tunables_set;
	uint32_t tunable[RCTAB_TUNABLES];
	bool nomodel, nofail, noauto;
	bool initramfs;				/* started by the initramfs; on-fail=linear unless said */
	enum rctab_on_fail on_fail;
	char device_timeout[32];		/* x-systemd.device-timeout= as written; "": none */
	uint64_t device_timeout_us;		/* its value (UINT64_MAX: infinity) */
	char warning[RCTAB_ERR_MAX];		/* "" or advice (e.g. a /dev/sdX origin) */
};

/*
 * Parse one line (without or with its newline).  Returns 1 and fills @e for
 * an entry, 0 for a blank or comment line, -1 with the reason in @err
 * (RCTAB_ERR_MAX bytes) for a bad one.
 */
int rctab_parse_line(const char *text, unsigned int lineno, struct rctab_entry *e, char *err);

/* Whether @name may name a stack; if not, why in @err (RCTAB_ERR_MAX bytes). */
bool rctab_name_ok(const char *name, char *err);

/*
 * A size in bytes: digits with an optional K, M, G or T (powers of 1024,
 * any case, optionally followed by "iB").  0, or -1 on a malformed or
 * overflowing size.
 */
int rctab_parse_size(const char *s, uint64_t *bytes);

/*
 * The read-ahead of readahead= and of redcapctl create --readahead: "auto"
 * (RCTAB_READAHEAD_AUTO), or a size, a multiple of 4K up to
 * RCTAB_READAHEAD_MAX (0: none).  0, or -1 with why in @err (RCTAB_ERR_MAX
 * bytes, after "readahead=@s: " or "--readahead @s: ").
 */
int rctab_parse_readahead(const char *s, uint64_t *bytes, char *err);

/* A systemd time span as fstab options use it: "30", "30s", "500ms", "2min", "1h", "infinity". */
int rctab_parse_timespan(const char *s, uint64_t *us);

/*
 * A whole file: @entry is called for each good entry (in order), @bad for
 * each bad line, with "line N: why".  A name used twice is an error on the
 * later line.  Returns the number of bad lines, or -1 if @f cannot be read.
 */
int rctab_read(FILE *f, void (*entry)(const struct rctab_entry *e, void *arg),
	       void (*bad)(unsigned int line, const char *why, void *arg), void *arg);

/*
 * systemd's unit_name_escape() (systemd-escape): '/' becomes '-'; a leading
 * '.' and any byte outside [A-Za-z0-9:_.] become \xNN.  @out has room for
 * 4 * strlen(@s) + 1.  The generator names a stack's units with it, and the
 * udev helper the unit a member wants: they must agree.
 */
void rctab_unit_escape(const char *s, char *out);

/* systemd's parse_boolean(): 1, 0, or -1 for neither ("yes", "off", ...). */
int rctab_parse_boolean(const char *v);

/*
 * Whether the kernel command line turns redcap on: the last "redcap=BOOL"
 * decides (a bare "redcap" is on, none is on).  The line is
 * $SYSTEMD_PROC_CMDLINE when set, as for systemd's own tools, else
 * /proc/cmdline (on if it cannot be read).  Words are split on blanks
 * outside quotes, which are dropped, as systemd splits them.  @bad, if not
 * NULL, is called with each redcap= word whose value is no boolean, which
 * is ignored.  The generator and the udev helper both ask this, so that
 * redcap=0 turns off the units and the member rules alike.
 */
bool rctab_enabled_by_cmdline(void (*bad)(const char *word, void *arg), void *arg);

#endif
