// SPDX-License-Identifier: GPL-2.0
/*
 * /etc/redcaptab parser (redcaptab.h, redcaptab(5)).  Option words are
 * checked with the target's own parsers (rc-args.c, rc-core.c, rc-policy.c),
 * so a line accepted here is one the kernel accepts.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "redcaptab.h"
#include "rc-args.h"
#include "rc-parse.h"

#define WS " \t\r\n\v\f"

static int fail(char *err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, RCTAB_ERR_MAX, fmt, ap);
	va_end(ap);
	return -1;
}

/* The digits at *@s as a number, *@s moved past them.  0, or -1. */
static int leading_number(const char **s, uint64_t *v)
{
	size_t n = strspn(*s, "0123456789");
	char digits[24];

	if (!n || n >= sizeof(digits))
		return -1;
	memcpy(digits, *s, n);
	digits[n] = '\0';
	*s += n;
	return rc_parse_u64(digits, UINT64_MAX, v);
}

int rctab_parse_size(const char *s, uint64_t *bytes)
{
	static const char units[] = "kmgt";
	const char *u;
	uint64_t v, mul = 1;

	if (leading_number(&s, &v))
		return -1;
	if (*s) {
		u = strchr(units, rc_lower(*s));
		if (!u)
			return -1;
		mul = 1ull << (10 * (u - units + 1));
		s++;
		if (*s && !rc_streq(s, "ib"))
			return -1;
	}
	if (v > UINT64_MAX / mul)
		return -1;
	*bytes = v * mul;
	return 0;
}

int rctab_parse_readahead(const char *s, uint64_t *bytes, char *err)
{
	uint64_t v;

	if (!strcmp(s, "auto")) {
		*bytes = RCTAB_READAHEAD_AUTO;
		return 0;
	}
	if (rctab_parse_size(s, &v))
		return fail(err, "auto or a size (1M, 512K, 0)");
	if (v % 4096 || v > RCTAB_READAHEAD_MAX)
		return fail(err, "a multiple of 4K from 0 to 64M, or auto");
	*bytes = v;
	return 0;
}

int rctab_parse_timespan(const char *s, uint64_t *us)
{
	static const struct { const char *unit; uint64_t us; } units[] = {
		{ "", 1000000 }, { "s", 1000000 }, { "sec", 1000000 }, { "ms", 1000 },
		{ "msec", 1000 }, { "m", 60000000 }, { "min", 60000000 },
		{ "h", 3600000000ull }, { "hr", 3600000000ull },
	};
	uint64_t v;
	size_t i;

	if (rc_streq(s, "infinity")) {
		*us = UINT64_MAX;
		return 0;
	}
	if (leading_number(&s, &v))
		return -1;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(s, units[i].unit))
			continue;
		if (v > UINT64_MAX / units[i].us)
			return -1;
		*us = v * units[i].us;
		return 0;
	}
	return -1;
}

bool rctab_name_ok(const char *name, char *err)
{
	size_t len = strlen(name);

	if (len > RCTAB_NAME_MAX)
		return !fail(err, "name '%.20s...' is longer than %d characters", name,
			     RCTAB_NAME_MAX);
	if (strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+_.-")
	    != len || name[0] == '-' || name[0] == '.')
		return !fail(err, "name '%s': use letters, digits and + _ . - "
			     "(not first: - or .)", name);
	if (len >= 3 && !strcmp(name + len - 3, "-vd"))
		return !fail(err, "name '%s': names ending in -vd are the model layers'", name);
	return true;
}

/* A kernel name (sda1, vdb, nvme0n1p2, hdc): it may change at the next boot. */
static bool kernel_disk_name(const char *path)
{
	static const char * const prefixes[] = { "/dev/sd", "/dev/vd", "/dev/hd", "/dev/xvd",
						 "/dev/nvme", "/dev/mmcblk" };
	size_t i;

	for (i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (!strncmp(path, prefixes[i], strlen(prefixes[i])))
			return true;
	return false;
}

static int parse_origin(const char *word, struct rctab_entry *e, char *err)
{
	static const struct { const char *tag; enum rctab_origin kind; } tags[] = {
		{ "PARTUUID=", RCTAB_ORIGIN_PARTUUID }, { "PARTLABEL=", RCTAB_ORIGIN_PARTLABEL },
	};
	const char *value = word;
	size_t i;

	if (strlen(word) > RCTAB_ORIGIN_MAX)
		return fail(err, "origin is longer than %d characters", RCTAB_ORIGIN_MAX);
	e->origin_kind = RCTAB_ORIGIN_PATH;
	for (i = 0; i < sizeof(tags) / sizeof(tags[0]); i++) {
		if (!strncmp(word, tags[i].tag, strlen(tags[i].tag))) {
			e->origin_kind = tags[i].kind;
			value = word + strlen(tags[i].tag);
			if (!*value)
				return fail(err, "origin '%s' has no value", word);
		}
	}
	if (!strncmp(word, "UUID=", 5) || !strncmp(word, "LABEL=", 6))
		return fail(err, "origin '%s' names a filesystem, which the redcap device "
			    "shows too: use /dev/disk/by-id/..., PARTUUID= or PARTLABEL=", word);
	if (e->origin_kind == RCTAB_ORIGIN_PATH && word[0] != '/')
		return fail(err, "origin '%s' is not a /dev path, PARTUUID= or PARTLABEL=", word);
	if (e->origin_kind == RCTAB_ORIGIN_PATH && kernel_disk_name(word))
		snprintf(e->warning, sizeof(e->warning),
			 "origin %s is a kernel name, which may name another disk after a "
			 "reboot: prefer /dev/disk/by-id/... or PARTUUID=", word);
	strcpy(e->origin, value);
	return 0;
}

/* policy=, write_policy=, estimator=: the target's own words for them. */
static int parse_keyword(const char *opt, const char *val, int (*parse)(const char *name),
			 const char *choices, int *out, char *err)
{
	int r = parse(val);

	if (r < 0)
		return fail(err, "%s=%s: %s", opt, val, choices);
	*out = r;
	return 0;
}

_Static_assert(RC_TUN_NR <= RCTAB_TUNABLES, "room for every tunable");

/* A tunable of the target's set message (window=, hdc=, ...), by its name. */
static int parse_tunable(const char *opt, const char *val, struct rctab_entry *e, char *err)
{
	int k = rc_tunable_key(opt);
	uint32_t min, max;

	if (e->tunables_set & (1u << k))
		return fail(err, "option '%s' given twice", opt);
	if (!val || !*val)
		return fail(err, "option '%s' needs a value", opt);
	if (!rc_tunable_value(k, val, &e->tunable[k], &min, &max))
		return fail(err, "%s=%s: a number from %" PRIu32 " to %" PRIu32, opt, val, min, max);
	e->tunables_set |= 1u << k;
	return 0;
}

enum { O_SEGMENT, O_POLICY, O_WRITE_POLICY, O_ESTIMATOR, O_NOMODEL, O_NOFAIL,
       O_NOAUTO, O_INITRAMFS, O_ON_FAIL, O_READAHEAD, O_TIMEOUT, O_NR };

/* One comma-separated option; *seen marks which were given, to refuse repeats. */
static int parse_option(char *opt, struct rctab_entry *e, unsigned int *seen, char *err)
{
	static const char * const names[O_NR] = {
		"segment", "policy", "write_policy", "estimator", "nomodel", "nofail",
		"noauto", "initramfs", "on-fail", "readahead", "x-systemd.device-timeout",
	};
	char *val = strchr(opt, '='), why[RCTAB_ERR_MAX];
	uint64_t v;
	int o;

	if (val)
		*val++ = '\0';
	for (o = 0; o < O_NR; o++)
		if (!strcmp(opt, names[o]))
			break;
	if (o == O_NR) {
		if (!strncmp(opt, "x-", 2))
			return 0;	/* another tool's, as in fstab */
		o = rc_tunable_key(opt);
		if (o >= 0 && !strcmp(opt, rc_tunable_name(o)))
			return parse_tunable(opt, val, e, err);
		return fail(err, "unknown option '%s'", opt);
	}
	if (*seen & (1u << o))
		return fail(err, "option '%s' given twice", opt);
	*seen |= 1u << o;
	if (o == O_NOMODEL || o == O_NOFAIL || o == O_NOAUTO || o == O_INITRAMFS) {
		if (val)
			return fail(err, "option '%s' takes no value", opt);
	} else if (!val || !*val) {
		return fail(err, "option '%s' needs a value", opt);
	}

	switch (o) {
	case O_NOMODEL:
		e->nomodel = true;
		return 0;
	case O_NOFAIL:
		e->nofail = true;
		return 0;
	case O_NOAUTO:
		e->noauto = true;
		return 0;
	case O_INITRAMFS:
		e->initramfs = true;
		return 0;
	case O_SEGMENT:
		if (rctab_parse_size(val, &v))
			return fail(err, "segment=%s is not a size", val);
		if (v < RC_MIN_SEG_SECTORS * 512 || v > RC_MAX_SEG_SECTORS * 512 || (v & (v - 1)))
			return fail(err, "segment=%s: a power of 2 from 4K to 1M", val);
		e->segment_bytes = (uint32_t)v;
		return 0;
	case O_POLICY:
		return parse_keyword(opt, val, rc_policy_parse,
				     "one of always, off, adaptive, caware, adaptive+caware",
				     &e->policy, err);
	case O_WRITE_POLICY:
		return parse_keyword(opt, val, rc_write_policy_parse,
				     "one of invalidate, update, back, selective",
				     &e->write_policy, err);
	case O_ESTIMATOR:
		return parse_keyword(opt, val, rc_estimator_parse, "spk or vdisk",
				     &e->estimator, err);
	case O_ON_FAIL:
		if (!strcmp(val, "linear"))
			e->on_fail = RCTAB_ON_FAIL_LINEAR;
		else if (!strcmp(val, "fail"))
			e->on_fail = RCTAB_ON_FAIL_FAIL;
		else
			return fail(err, "on-fail=%s: linear or fail", val);
		return 0;
	case O_READAHEAD:
		if (rctab_parse_readahead(val, &e->readahead_bytes, why))
			return fail(err, "readahead=%s: %s", val, why);
		return 0;
	default:	/* O_TIMEOUT */
		if (strlen(val) >= sizeof(e->device_timeout) ||
		    rctab_parse_timespan(val, &e->device_timeout_us))
			return fail(err, "x-systemd.device-timeout=%s is not a time span "
				    "(30s, 2min, infinity)", val);
		strcpy(e->device_timeout, val);
		return 0;
	}
}

int rctab_parse_line(const char *text, unsigned int lineno, struct rctab_entry *e, char *err)
{
	char *copy, *save, *field[5], *tok, *opt;
	unsigned int n = 0, seen = 0;
	int r = -1;

	memset(e, 0, sizeof(*e));
	e->line = lineno;
	e->segment_bytes = RCTAB_DEFAULT_SEGMENT;
	e->policy = e->write_policy = e->estimator = -1;
	e->readahead_bytes = RCTAB_READAHEAD_AUTO;
	err[0] = '\0';

	copy = strdup(text);
	if (!copy)
		return fail(err, "out of memory");
	for (tok = strtok_r(copy, WS, &save); tok && n < 5; tok = strtok_r(NULL, WS, &save))
		field[n++] = tok;
	if (!n || field[0][0] == '#') {
		r = 0;
		goto out;
	}
	if (n < 3) {
		fail(err, "%s: want 'name origin size [options]'",
		     n == 1 ? "no origin or size" : "no size");
		goto out;
	}
	if (n == 5) {
		fail(err, "more than 4 fields: options are one field, comma-separated");
		goto out;
	}
	if (!rctab_name_ok(field[0], err))
		goto out;
	strcpy(e->name, field[0]);
	if (parse_origin(field[1], e, err))
		goto out;
	if (rctab_parse_size(field[2], &e->ram_bytes) || !e->ram_bytes) {
		fail(err, "size '%s' is not a size in bytes (64M, 1G)", field[2]);
		goto out;
	}
	if (n == 4) {
		for (opt = strtok_r(field[3], ",", &save); opt; opt = strtok_r(NULL, ",", &save))
			if (parse_option(opt, e, &seen, err))
				goto out;
	}
	if (e->ram_bytes % e->segment_bytes) {
		fail(err, "size %s is not a multiple of the segment (%u bytes)", field[2],
		     e->segment_bytes);
		goto out;
	}
	if (e->ram_bytes / e->segment_bytes > RC_MAX_ENTRIES) {
		fail(err, "size %s is more than %u segments of %u bytes", field[2],
		     RC_MAX_ENTRIES, e->segment_bytes);
		goto out;
	}
	e->nr_segments = (uint32_t)(e->ram_bytes / e->segment_bytes);
	if (e->nomodel && e->estimator == RC_EST_VDISK) {
		fail(err, "estimator=vdisk needs the model that nomodel leaves out");
		goto out;
	}
	if (e->initramfs && e->noauto) {
		fail(err, "initramfs and noauto: the initramfs starts every initramfs entry");
		goto out;
	}
	/* What the initramfs mounts must mount: uncached if the module is missing. */
	if (e->initramfs && !(seen & (1u << O_ON_FAIL)))
		e->on_fail = RCTAB_ON_FAIL_LINEAR;
	r = 1;
out:
	free(copy);
	return r;
}

struct seen_name {
	char name[RCTAB_NAME_MAX + 1];
	unsigned int line;
};

int rctab_read(FILE *f, void (*entry)(const struct rctab_entry *e, void *arg),
	       void (*bad)(unsigned int line, const char *why, void *arg), void *arg)
{
	struct seen_name *names = NULL, *grown;
	size_t nr = 0, cap = 0, len = 0, i;
	struct rctab_entry e;
	char err[RCTAB_ERR_MAX], why[RCTAB_ERR_MAX + 64];
	unsigned int lineno = 0;
	char *text = NULL;
	int bad_lines = 0, r;

	while (getline(&text, &len, f) >= 0) {
		lineno++;
		r = rctab_parse_line(text, lineno, &e, err);
		for (i = 0; r == 1 && i < nr; i++) {
			if (!strcmp(names[i].name, e.name)) {
				snprintf(err, sizeof(err), "name '%s' is already used on line %u",
					 e.name, names[i].line);
				r = -1;
			}
		}
		if (r < 0) {
			snprintf(why, sizeof(why), "line %u: %s", lineno, err);
			bad(lineno, why, arg);
			bad_lines++;
			continue;
		}
		if (!r)
			continue;
		if (nr == cap) {
			cap = cap ? 2 * cap : 8;
			grown = realloc(names, cap * sizeof(*names));
			if (!grown) {
				bad_lines = -1;
				errno = ENOMEM;
				break;
			}
			names = grown;
		}
		strcpy(names[nr].name, e.name);
		names[nr++].line = lineno;
		entry(&e, arg);
	}
	if (bad_lines >= 0 && ferror(f))
		bad_lines = -1;
	free(text);
	free(names);
	return bad_lines;
}

void rctab_unit_escape(const char *s, char *out)
{
	static const char valid[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				    "0123456789:_.";
	const char *p;

	for (p = s; *p; p++) {
		if (*p == '/')
			*out++ = '-';
		else if ((p == s && *p == '.') || !strchr(valid, *p))
			out += sprintf(out, "\\x%02x", (unsigned char)*p);
		else
			*out++ = *p;
	}
	*out = '\0';
}

int rctab_parse_boolean(const char *v)
{
	static const char * const yes[] = { "1", "yes", "y", "true", "t", "on" };
	static const char * const no[] = { "0", "no", "n", "false", "f", "off" };
	size_t i;

	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!strcasecmp(v, yes[i]))
			return 1;
		if (!strcasecmp(v, no[i]))
			return 0;
	}
	return -1;
}

bool rctab_enabled_by_cmdline(void (*bad)(const char *word, void *arg), void *arg)
{
	const char *env = getenv("SYSTEMD_PROC_CMDLINE");
	char buf[8192], word[sizeof(buf)], *w;
	const char *p;
	bool on = true;
	char quote;
	size_t n = 0;
	FILE *f;
	int r;

	if (env) {
		snprintf(buf, sizeof(buf), "%s", env);
	} else {
		f = fopen("/proc/cmdline", "re");
		if (f) {
			n = fread(buf, 1, sizeof(buf) - 1, f);
			fclose(f);
		}
		buf[n] = '\0';
	}
	for (p = buf; *p;) {
		p += strspn(p, " \t\n\r");
		if (!*p)
			break;
		for (w = word, quote = 0; *p && (quote || !strchr(" \t\n\r", *p)); p++) {
			if (quote && *p == quote)
				quote = 0;
			else if (!quote && (*p == '"' || *p == '\''))
				quote = *p;
			else
				*w++ = *p;
		}
		*w = '\0';
		if (!strcmp(word, "redcap")) {
			on = true;
		} else if (!strncmp(word, "redcap=", 7)) {
			r = rctab_parse_boolean(word + 7);
			if (r >= 0)
				on = r;
			else if (bad)
				bad(word, arg);
		}
	}
	return on;
}
