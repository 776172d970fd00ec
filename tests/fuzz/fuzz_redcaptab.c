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
#include "fuzz_gen.h"

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

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	atexit(gen_report);
	return 0;
}

/* A size of @bytes spelt in bytes or, when it divides, in K/M/G/T, any case, maybe "iB". */
static void gen_size(struct gen *g, struct gen_line *l, uint64_t bytes)
{
	static const char *const ib[] = { "", "", "iB", "ib", "IB", "Ib" };
	unsigned int shift = 10 * gen_pick(g, 5), up = gen_pick(g, 2);

	if (shift && bytes % (1ull << shift) == 0) {
		gen_number(g, l, bytes >> shift);
		line_put(l, "%c%s", (up ? "KMGT" : "kmgt")[shift / 10 - 1], ib[gen_pick(g, 6)]);
	} else {
		gen_number(g, l, bytes);
	}
}

/*
 * Valid redcaptab lines from the input's bytes: 1..4 entries with names of
 * their own (any of the name's characters, up to 124), a /dev path or a
 * PARTUUID=/PARTLABEL= origin, a size that is 1..2^24 segments, and any of
 * the options in any order, values in range and in any of their spellings,
 * another tool's x- option among them.  Each line must be accepted alone and
 * in the file, read as meant, and the line written back from the entry (the
 * canonical form: sizes in bytes, only what is not the default) must parse
 * to the same entry.
 */
static void gen_valid(const uint8_t *data, size_t size)
{
	static const char name_chars[] =
		"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+_.-";
	static const char *const origins[] = { "/dev/disk/by-id/ata-X", "/dev/md/data",
					       "/dev/sdb1", "/dev/mapper/vg-lv" };
	static const char *const wps[] = { "invalidate", "update" };
	static const char *const spans[] = { "", "s", "sec", "ms", "msec", "m", "min", "h", "hr" };
	static const char *const opts[] = { "segment", "policy", "write_policy", "estimator",
					    "nomodel", "nofail", "noauto", "on-fail", "readahead",
					    "x-systemd.device-timeout", "x-other" };
	struct gen g = { data, size };
	/* Static: large, and ASan's poisoning of large stack frames costs. */
	static struct gen_line file, line, back;
	static struct rctab_entry e, e2;
	char err[RCTAB_ERR_MAX], name[4][RCTAB_NAME_MAX + 1];
	unsigned int nlines = 1 + gen_pick(&g, 4), n, i, k, order[11], nopt;
	FILE *f;

	file.len = 0;
	for (n = 0; n < nlines; n++) {
		struct gen_line *l = &line;
		unsigned int len = (unsigned int)gen_range(&g, 1, RCTAB_NAME_MAX - 2);
		uint32_t seg = RCTAB_DEFAULT_SEGMENT, nr;
		unsigned int kind = gen_pick(&g, 3), pol = gen_pick(&g, RC_POLICY_NR);
		unsigned int wp = gen_pick(&g, 2), est = gen_pick(&g, RC_EST_NR);
		uint64_t ra = 0, tmo = 0;
		unsigned int span = gen_pick(&g, 10);
		int nomodel = 0, linear = gen_pick(&g, 2);

		/* The name: not '-' or '.' first, not "-vd" last, its index last. */
		for (k = 0; k + 2 < len; k++)
			name[n][k] = name_chars[gen_pick(&g, sizeof(name_chars) - 1)];
		if (len > 2 && (name[n][0] == '-' || name[n][0] == '.'))
			name[n][0] = 'a';
		name[n][len > 2 ? len - 2 : 0] = '_';
		name[n][len > 2 ? len - 1 : 1] = (char)('0' + n);
		name[n][len > 2 ? len : 2] = '\0';
		if (len <= 2)
			name[n][0] = 'a', name[n][1] = (char)('0' + n), name[n][2] = '\0';

		nopt = gen_pick(&g, 12);
		gen_shuffle(&g, order, 11);
		for (i = 0; i < nopt; i++) {
			if (order[i] == 0)
				seg = 1u << gen_range(&g, 12, 20);
			if (order[i] == 4)
				nomodel = 1;
			if (order[i] == 8)
				ra = 4096 * gen_range(&g, 0, RCTAB_READAHEAD_MAX / 4096);
			if (order[i] == 9)
				tmo = gen_range(&g, 0, 99999999);
		}
		if (nomodel && est == RC_EST_VDISK)
			est = RC_EST_SPK;
		nr = (uint32_t)gen_range(&g, 1, RC_MAX_ENTRIES);

		l->len = 0;
		line_put(l, "%s", gen_pick(&g, 4) ? "" : " \t");
		line_put(l, "%s%s", name[n], gen_pick(&g, 2) ? " " : "\t ");
		if (kind == 0)
			line_put(l, "%s", origins[gen_pick(&g, 4)]);
		else
			line_put(l, "%s%s", kind == 1 ? "PARTUUID=" : "PARTLABEL=",
				 kind == 1 ? "7c3a9d1e-02" : "data");
		line_put(l, " ");
		gen_size(&g, l, (uint64_t)nr * seg);
		for (i = 0; i < nopt; i++) {
			line_put(l, "%s%s", i ? "," : " ", opts[order[i]]);
			switch (order[i]) {
			case 0:
				line_put(l, "=");
				gen_size(&g, l, seg);
				break;
			case 1:
				line_put(l, "=");
				gen_word(&g, l, rc_policy_name((enum rc_policy)pol), 1, 0);
				break;
			case 2:
				line_put(l, "=");
				gen_word(&g, l, wps[wp], 1, 0);
				break;
			case 3:
				line_put(l, "=");
				gen_word(&g, l, rc_estimator_name((enum rc_estimator)est), 1, 0);
				break;
			case 7:
				line_put(l, "=%s", linear ? "linear" : "fail");
				break;
			case 8:
				line_put(l, "=");
				if (ra == 0 && gen_pick(&g, 2))
					line_put(l, "auto");
				else
					gen_size(&g, l, ra);
				break;
			case 9:
				line_put(l, "=");
				if (span == 9)
					gen_word(&g, l, "infinity", 1, 0);
				else
					line_put(l, "%llu%s", (unsigned long long)tmo, spans[span]);
				break;
			case 10:
				line_put(l, "=whatever");
				break;
			default:	/* nomodel, nofail, noauto */
				break;
			}
		}
		line_put(l, "%s", gen_pick(&g, 4) ? "" : " \t");
		line_put(&file, "%s\n", l->s);

		/* Alone: accepted, as meant. */
		k = (unsigned int)rctab_parse_line(l->s, n + 1, &e, err);
		if (k != 1)
			fprintf(stderr, "fuzz_gen: refused: %s\n", err);
		GEN_CHECK(k == 1, l->s);
		check_entry(&e);
		GEN_CHECK(!strcmp(e.name, name[n]) && e.line == n + 1, l->s);
		GEN_CHECK(e.origin_kind == (enum rctab_origin)kind, l->s);
		GEN_CHECK(e.segment_bytes == seg && e.nr_segments == nr, l->s);
		GEN_CHECK(e.ram_bytes == (uint64_t)nr * seg, l->s);
		for (i = 0; i < 11; i++) {
			int given = i < nopt;

			switch (order[i]) {
			case 1:
				GEN_CHECK(e.policy == (given ? (int)pol : -1), l->s);
				break;
			case 2:
				GEN_CHECK(e.write_policy == (given ? (int)wp : -1), l->s);
				break;
			case 3:
				GEN_CHECK(e.estimator == (given ? (int)est : -1), l->s);
				break;
			case 4:
				GEN_CHECK(e.nomodel == given, l->s);
				break;
			case 5:
				GEN_CHECK(e.nofail == given, l->s);
				break;
			case 6:
				GEN_CHECK(e.noauto == given, l->s);
				break;
			case 7:
				GEN_CHECK(e.on_fail == (given && linear ? RCTAB_ON_FAIL_LINEAR :
							RCTAB_ON_FAIL_FAIL), l->s);
				break;
			case 8:
				GEN_CHECK(e.readahead_bytes == (given ? ra : RCTAB_READAHEAD_AUTO) ||
					  (given && !ra && e.readahead_bytes == RCTAB_READAHEAD_AUTO),
					  l->s);
				break;
			case 9:
				GEN_CHECK(given ? e.device_timeout_us ==
					  (span == 9 ? UINT64_MAX : tmo * (span < 3 ? 1000000 :
					   span < 5 ? 1000 : span < 7 ? 60000000 : 3600000000ull)) :
					  !e.device_timeout[0], l->s);
				break;
			default:
				break;
			}
		}

		/* Back as a canonical line, parsed again: the same entry. */
		back.len = 0;
		line_put(&back, "%s %s%s %llu", e.name,
			 e.origin_kind == RCTAB_ORIGIN_PARTUUID ? "PARTUUID=" :
			 e.origin_kind == RCTAB_ORIGIN_PARTLABEL ? "PARTLABEL=" : "",
			 e.origin, (unsigned long long)e.ram_bytes);
		k = 0;
#define OPT(...) do { line_put(&back, k++ ? "," : " "); line_put(&back, __VA_ARGS__); } while (0)
		if (e.segment_bytes != RCTAB_DEFAULT_SEGMENT)
			OPT("segment=%u", e.segment_bytes);
		if (e.policy >= 0)
			OPT("policy=%s", rc_policy_name((enum rc_policy)e.policy));
		if (e.write_policy >= 0)
			OPT("write_policy=%s", wps[e.write_policy]);
		if (e.estimator >= 0)
			OPT("estimator=%s", rc_estimator_name((enum rc_estimator)e.estimator));
		if (e.nomodel)
			OPT("nomodel");
		if (e.nofail)
			OPT("nofail");
		if (e.noauto)
			OPT("noauto");
		if (e.on_fail == RCTAB_ON_FAIL_LINEAR)
			OPT("on-fail=linear");
		if (e.readahead_bytes != RCTAB_READAHEAD_AUTO)
			OPT("readahead=%llu", (unsigned long long)e.readahead_bytes);
		if (e.device_timeout[0])
			OPT("x-systemd.device-timeout=%s", e.device_timeout);
#undef OPT
		k = (unsigned int)rctab_parse_line(back.s, n + 1, &e2, err);
		if (k != 1)
			fprintf(stderr, "fuzz_gen: refused: %s\n", err);
		GEN_CHECK(k == 1, back.s);
		GEN_CHECK(!memcmp(&e, &e2, sizeof(e)), back.s);
	}

	/* The file of them: every line an entry, none bad. */
	f = fmemopen(file.s, file.len, "r");
	if (!f)
		return;
	entries = bad_lines = last_line = 0;
	k = (unsigned int)rctab_read(f, on_entry, on_bad, NULL);
	fclose(f);
	GEN_CHECK(k == 0 && bad_lines == 0 && entries == nlines, file.s);
	gen_valid_lines++;
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
	gen_valid(data, size);
	return 0;
}
