// SPDX-License-Identifier: GPL-2.0
/*
 * redcapctl hot save|load: a stack's hot set (HDC's chosen segments, those
 * that missed most) saved to a file and loaded back after a restart, so
 * that the cache comes back warm: the target pins each of them when it is
 * read, or fills it while the disk is idle (the "prefill" message).
 *
 * The file, by default /var/lib/redcap/NAME.hot, is written whole and
 * renamed over the old one:
 *
 *   redcap-hot 1 segment=<sectors> capacity=<sectors> id=<disk>
 *   <segment>          one a line, ascending
 *
 * id and capacity are the disk's, as the model's file says them
 * (vdt_identity()): a file made for another disk is refused.  One saved
 * with another segment size is converted: each saved segment becomes the
 * segments that now hold its sectors.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "dmctl.h"
#include "rc-args.h"
#include "redcapctl.h"
#include "vdisk-tables.h"

#define HOT_MAGIC	"redcap-hot"
#define HOT_VERSION	1
#define HOT_DIR		"/var/lib/redcap"
#define HOT_TRIES	5	/* reads of a set that keeps changing */

struct hot_set {
	uint64_t *seg;
	size_t nr, cap;
};

static void hot_add(struct hot_set *h, uint64_t seg)
{
	if (h->nr == h->cap) {
		h->cap = h->cap ? 2 * h->cap : 1024;
		h->seg = realloc(h->seg, h->cap * sizeof(*h->seg));
		if (!h->seg)
			die("out of memory");
	}
	h->seg[h->nr++] = seg;
}

/* The chosen set of @d, whole: answers of "chosen FROM" of one generation. */
static void hot_read(const struct redcapctl_cache *c, struct hot_set *h)
{
	for (int tries = 0; tries < HOT_TRIES; tries++) {
		uint64_t nr = 0, gen = 0, g, from;
		bool moved = false;

		h->nr = 0;
		do {
			char msg[32];
			struct stats st;
			const char *p;
			uint64_t seg;

			snprintf(msg, sizeof(msg), "chosen %zu", h->nr);
			answer_get(&c->dev, msg, &st);
			g = stats_u64(&c->dev, &st, "gen", 0, UINT32_MAX);
			from = stats_u64(&c->dev, &st, "from", 0, UINT32_MAX);
			if (!h->nr) {
				nr = stats_u64(&c->dev, &st, "chosen", 0, UINT32_MAX);
				gen = g;
			}
			moved = g != gen || from != h->nr ||
				stats_u64(&c->dev, &st, "chosen", 0, UINT32_MAX) != nr;
			for (p = stats_str(&c->dev, &st, "segments"); *p && !moved;) {
				if (!take_u64(&p, &seg) || (*p && !take(&p, " ")))
					die("%s: bad answer to '%s': segments=%.40s", c->dev.arg,
					    msg, stats_str(&c->dev, &st, "segments"));
				hot_add(h, seg);
			}
			free(st.text);
			if (!moved && h->nr == from && h->nr < nr)
				die("%s: bad answer to '%s': no segments", c->dev.arg, msg);
		} while (!moved && h->nr < nr);
		if (!moved)
			return;
	}
	die("%s: its hot set changed %d times while it was read; try again", c->dev.arg,
	    HOT_TRIES);
}

static void hot_save(const struct redcapctl_cache *c, const char *file)
{
	struct hot_set h = { 0 };
	char *id = vdt_identity(major(c->origin), minor(c->origin));
	FILE *f;

	hot_read(c, &h);
	f = vdt_create("hot save", file);
	fprintf(f, HOT_MAGIC " %d segment=%" PRIu32 " capacity=%" PRIu64 " id=%s\n",
		HOT_VERSION, c->seg_sectors, c->sectors, id);
	for (size_t i = 0; i < h.nr; i++)
		fprintf(f, "%" PRIu64 "\n", h.seg[i]);
	vdt_commit(f, "hot save", file);
	printf("%s: hot set of %zu segments saved to %s\n", c->dev.arg, h.nr, file);
	free(h.seg);
	free(id);
}

/*
 * @file's segments, checked against the stack @c and converted to its
 * segment size; exits on a bad or foreign file.
 */
static void hot_file_read(const struct redcapctl_cache *c, const char *file,
			  struct hot_set *h)
{
	uint64_t version, seg_sectors, capacity, seg, last = 0, lineno = 1;
	char *line = NULL, *id;
	const char *p;
	size_t cap = 0;
	ssize_t n;
	FILE *f;

	f = fopen(file, "re");
	if (!f)
		die("hot load: %s: %s", file, strerror(errno));
	n = getline(&line, &cap, f);
	if (n > 0 && line[n - 1] == '\n')
		line[--n] = '\0';
	p = line;
	if (n <= 0 || !take(&p, HOT_MAGIC " ") || !take_u64(&p, &version) ||
	    version != HOT_VERSION || !take(&p, " segment=") || !take_u64(&p, &seg_sectors) ||
	    !take(&p, " capacity=") || !take_u64(&p, &capacity) || !take(&p, " id=") || !*p ||
	    strchr(p, ' ') || !seg_sectors || seg_sectors & (seg_sectors - 1))
		die("hot load: %s: line 1: bad header (expected '" HOT_MAGIC " %d segment=<sectors> "
		    "capacity=<sectors> id=<disk>')", file, HOT_VERSION);
	id = vdt_identity(major(c->origin), minor(c->origin));
	if (strcmp(p, id) || capacity != c->sectors)
		die("hot load: %s: made for disk '%s' (capacity %" PRIu64 " sectors), not for '%s'"
		    " (capacity %" PRIu64 " sectors)", file, p, capacity, id, c->sectors);
	free(id);
	while ((n = getline(&line, &cap, f)) > 0) {
		lineno++;
		if (line[n - 1] == '\n')
			line[--n] = '\0';
		if (!parse_u64(line, 0, (capacity - 1) / seg_sectors, &seg) || (lineno > 2 && seg <= last))
			die("hot load: %s: line %" PRIu64 ": '%.40s' is not a segment after %" PRIu64
			    " and within %" PRIu64 " sectors", file, lineno, line, last, capacity);
		last = seg;
		/* The segments of @c that hold its sectors, each once: ascending. */
		for (uint64_t s = seg * seg_sectors / c->seg_sectors;
		     s <= ((seg + 1) * seg_sectors - 1) / c->seg_sectors &&
		     s * c->seg_sectors < c->sectors; s++)
			if (!h->nr || h->seg[h->nr - 1] < s)
				hot_add(h, s);
	}
	if (ferror(f))
		die("hot load: %s: %s", file, strerror(errno));
	fclose(f);
	free(line);
}

static void hot_load(const struct redcapctl_cache *c, const char *file)
{
	struct hot_set h = { 0 };
	uint64_t chosen = 0, added = 0, max;
	struct stats st;

	hot_file_read(c, file, &h);
	stats_get(&c->dev, &st);
	max = stats_u64(&c->dev, &st, "hdc_max", 0, UINT32_MAX);
	free(st.text);
	if (!max) {
		printf("%s: hdc is 0: the hot set of %s is not loaded\n", c->dev.arg, file);
		free(h.seg);
		return;
	}
	for (size_t i = 0; i < h.nr;) {
		size_t k = h.nr - i < RC_PIN_MAX ? h.nr - i : RC_PIN_MAX;
		char *msg = NULL;
		size_t len;
		FILE *m = open_memstream(&msg, &len);

		if (!m)
			die("out of memory");
		fputs("prefill", m);
		for (size_t j = i; j < i + k; j++)
			fprintf(m, " %" PRIu64, h.seg[j]);
		if (fclose(m))
			die("out of memory");
		answer_get(&c->dev, msg, &st);
		added += stats_u64(&c->dev, &st, "added", 0, UINT32_MAX);
		chosen = stats_u64(&c->dev, &st, "chosen", 0, UINT32_MAX);
		free(st.text);
		free(msg);
		i += k;
	}
	printf("%s: hot set loaded from %s: %" PRIu64 " of its %zu segments chosen, "
	       "%" PRIu64 " in all (the pinned share holds %" PRIu64 "); filled while the "
	       "disk is idle\n", c->dev.arg, file, added, h.nr, chosen, max);
	free(h.seg);
}

int cmd_hot(int argc, char **argv)
{
	static const char *const verbs[] = { "save", "load", NULL };
	const char *verb = argc > 1 ? argv[1] : "";
	struct redcapctl_cache c;
	bool if_present = false;
	char file[4096];
	int i = verb_parse(argc, argv, verbs, if_present_options, dmctl_flag_opt, &if_present), r;

	dmctl_operands(argc, argv, i, 1, 2);
	/* --if-present, for the boot units: a linear stack, or no file yet. */
	r = redcapctl_cache_get(argv[i], if_present, &c);
	if (r)
		return r < 0;
	verb_file(argc, argv, i, HOT_DIR, "hot", file, sizeof(file));
	if (!strcmp(verb, "save")) {
		hot_save(&c, file);
	} else if (if_present && access(file, F_OK) && errno == ENOENT) {
		printf("%s: no saved hot set in %s: the cache warms from nothing\n", argv[i], file);
	} else {
		hot_load(&c, file);
	}
	return 0;
}
