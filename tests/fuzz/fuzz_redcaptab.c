// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer harness of the /etc/redcaptab parser (userspace/redcaptab.c):
 * the input is a whole file, read with rctab_read() from memory, and each of
 * its lines parsed alone as well.  Any sanitizer report aborts; so does an
 * accepted entry the harness's own reading disagrees with, or a refusal
 * without a reason (README.md).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redcaptab.h"
#include "rc-args.h"

#define MAX_INPUT 8192

static void check(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "fuzz_redcaptab: broken invariant: %s\n", what);
		abort();
	}
}

static void check_entry(const struct rctab_entry *e)
{
	size_t len = strlen(e->name);
	uint32_t seg = e->segment_bytes;
	uint64_t us;

	check(len > 0 && len <= RCTAB_NAME_MAX, "name length");
	check(strspn(e->name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+_.-")
	      == len && e->name[0] != '-' && e->name[0] != '.', "name characters");
	check(len < 3 || strcmp(e->name + len - 3, "-vd"), "name ends in -vd");
	check(e->origin[0] && strlen(e->origin) <= RCTAB_ORIGIN_MAX, "origin");
	check(e->origin_kind != RCTAB_ORIGIN_PATH || e->origin[0] == '/', "origin path");
	check(!strpbrk(e->origin, " \t\r\n\v\f"), "origin whitespace");
	check(seg >= 4096 && seg <= (1u << 20) && !(seg & (seg - 1)), "segment size");
	check(e->nr_segments >= 1 && e->nr_segments <= RC_MAX_ENTRIES, "segment count");
	check((uint64_t)e->nr_segments * seg == e->ram_bytes, "size = segments x segment");
	check(e->policy >= -1 && e->policy < RC_POLICY_NR, "policy");
	check(e->write_policy >= -1 && e->write_policy <= RC_WRITE_UPDATE, "write_policy");
	check(e->estimator >= -1 && e->estimator < RC_EST_NR, "estimator");
	check(!(e->nomodel && e->estimator == RC_EST_VDISK), "nomodel with estimator vdisk");
	check(!e->device_timeout[0] || (!rctab_parse_timespan(e->device_timeout, &us) &&
					us == e->device_timeout_us), "device timeout text");
	check(strlen(e->warning) < RCTAB_ERR_MAX, "warning length");
}

static unsigned int entries, bad_lines, last_line;

static void on_entry(const struct rctab_entry *e, void *arg)
{
	(void)arg;
	check(e->line > last_line, "entries in order");
	last_line = e->line;
	check_entry(e);
	entries++;
}

static void on_bad(unsigned int line, const char *why, void *arg)
{
	(void)arg;
	check(line > last_line, "bad lines in order");
	last_line = line;
	check(!strncmp(why, "line ", 5) && strlen(why) > 8, "bad line has a reason");
	bad_lines++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rctab_entry e;
	char err[RCTAB_ERR_MAX], *text, *line, *save;
	unsigned int lineno = 0, nr_entries = 0;
	FILE *f;
	int r;

	if (!size || size > MAX_INPUT)
		return 0;
	f = fmemopen((void *)data, size, "r");
	if (!f)
		return 0;
	entries = bad_lines = last_line = 0;
	r = rctab_read(f, on_entry, on_bad, NULL);
	fclose(f);
	check(r >= 0 && (unsigned int)r == bad_lines, "rctab_read's count");

	/* Each line alone: entries agree with the file's, less the repeats. */
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	for (line = text; line; line = save) {
		save = strchr(line, '\n');
		if (save)
			*save++ = '\0';
		lineno++;
		r = rctab_parse_line(line, lineno, &e, err);
		check(r >= -1 && r <= 1, "return value");
		if (r < 0)
			check(err[0] && strlen(err) < RCTAB_ERR_MAX, "refusal has a reason");
		if (r == 1) {
			check_entry(&e);
			check(e.line == lineno, "line number");
			nr_entries++;
		}
	}
	free(text);
	/* A NUL ends getline's view of a line only for the string functions. */
	if (!memchr(data, '\0', size))
		check(nr_entries >= entries, "file entries are line entries");
	return 0;
}
