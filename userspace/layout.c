// SPDX-License-Identifier: GPL-2.0
/*
 * FOR's layout on the userspace side: files' extents (FIEMAP's) made into
 * runs of units of the stack, and the runs packed into layout_runs messages.
 * Pure functions, no I/O: redcapctl layout (layout-cmd.c) walks the
 * filesystem and sends; tests/host/layout_test.c checks these.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <linux/fiemap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layout.h"

/* Extents with no place of their own on the device, or none known yet. */
#define LAYOUT_SKIP_FLAGS	(FIEMAP_EXTENT_DELALLOC | FIEMAP_EXTENT_UNKNOWN |	\
				 FIEMAP_EXTENT_ENCODED | FIEMAP_EXTENT_NOT_ALIGNED |	\
				 FIEMAP_EXTENT_DATA_INLINE | FIEMAP_EXTENT_DATA_TAIL)

const char *layout_unit_check(uint64_t unit)
{
	if (unit < LAYOUT_UNIT_MIN || unit > LAYOUT_UNIT_MAX || (unit & (unit - 1)))
		return "a power of two from 4K to 1M";
	return NULL;
}

int layout_runs_push(struct layout_runs *rs, uint64_t start, uint64_t len)
{
	if (rs->nr == rs->alloc) {
		size_t alloc = rs->alloc ? rs->alloc * 2 : 1024;
		struct layout_run *r = realloc(rs->r, alloc * sizeof(*r));

		if (!r)
			return -1;
		rs->r = r;
		rs->alloc = alloc;
	}
	rs->r[rs->nr].start = start;
	rs->r[rs->nr].len = len;
	rs->nr++;
	return 0;
}

void layout_runs_free(struct layout_runs *rs)
{
	free(rs->r);
	memset(rs, 0, sizeof(*rs));
}

void layout_conv_init(struct layout_conv *c, unsigned int shift, const struct layout_seg *map,
		      size_t map_nr, struct layout_runs *out)
{
	memset(c, 0, sizeof(*c));
	c->shift = shift;
	c->map = map;
	c->map_nr = map_nr;
	c->out = out;
}

/* The run of stack bytes [a, b), b > a, in units: from a's unit to b - 1's. */
static int emit(struct layout_conv *c, uint64_t a, uint64_t b)
{
	uint64_t first = a >> c->shift, last = (b - 1) >> c->shift;

	return layout_runs_push(c->out, first, last - first + 1);
}

static int close_run(struct layout_conv *c)
{
	if (!c->open)
		return 0;
	c->open = false;
	return emit(c, c->phys_start, c->phys_end);
}

/* @len bytes at @log in the file, at @phys on the stack. */
static int piece(struct layout_conv *c, uint64_t log, uint64_t phys, uint64_t len,
		 bool unwritten)
{
	if (c->open && !unwritten && log == c->log_end && phys == c->phys_end) {
		c->log_end += len;
		c->phys_end += len;
		return 0;
	}
	if (close_run(c))
		return -1;
	if (unwritten)
		return emit(c, phys, phys + len);
	c->open = true;
	c->log_end = log + len;
	c->phys_start = phys;
	c->phys_end = phys + len;
	return 0;
}

/* The first segment of @map that ends after @at (@nr if none). */
static size_t map_find(const struct layout_seg *map, size_t nr, uint64_t at)
{
	size_t lo = 0, hi = nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (map[mid].from + map[mid].len <= at)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int layout_conv_add(struct layout_conv *c, const struct layout_extent *e)
{
	bool unwritten = e->flags & FIEMAP_EXTENT_UNWRITTEN;
	uint64_t off = e->physical, end;
	size_t i;

	c->extents++;
	if ((e->flags & LAYOUT_SKIP_FLAGS) || !e->length || off > UINT64_MAX - e->length ||
	    e->logical > UINT64_MAX - e->length) {
		c->skipped++;
		return 0;
	}
	end = off + e->length;
	/* Each piece that lies on the stack, where it lies there. */
	for (i = map_find(c->map, c->map_nr, off); i < c->map_nr && c->map[i].from < end; i++) {
		const struct layout_seg *s = &c->map[i];
		uint64_t a = off > s->from ? off : s->from;
		uint64_t b = end < s->from + s->len ? end : s->from + s->len;

		if (piece(c, e->logical + (a - off), s->to + (a - s->from), b - a, unwritten))
			return -1;
	}
	return 0;
}

int layout_conv_end(struct layout_conv *c)
{
	return close_run(c);
}

static int run_cmp(const void *a, const void *b)
{
	const struct layout_run *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	return 0;
}

size_t layout_sort_dedupe(struct layout_run *r, size_t nr)
{
	size_t i, n = 0;

	if (!nr)
		return 0;
	qsort(r, nr, sizeof(*r), run_cmp);
	for (i = 1; i < nr; i++)
		if (run_cmp(&r[i], &r[n]))
			r[++n] = r[i];
	return n + 1;
}

size_t layout_format(const struct layout_run *r, size_t nr, size_t *pos, char *buf,
		     size_t max)
{
	static const char verb[] = "layout_runs";
	char word[LAYOUT_WORD_MAX + 2];
	size_t n = sizeof(verb) - 1, i;
	uint64_t prev_end = 0;
	int w;

	if (*pos >= nr || max < n)
		return 0;
	memcpy(buf, verb, n);
	for (i = *pos; i < nr; i++) {
		if (i > *pos && r[i].start >= prev_end)
			w = snprintf(word, sizeof(word), " +%" PRIx64 ":%" PRIx64,
				     r[i].start - prev_end, r[i].len);
		else
			w = snprintf(word, sizeof(word), " %" PRIx64 ":%" PRIx64, r[i].start,
				     r[i].len);
		if (n + (size_t)w > max)
			break;
		memcpy(buf + n, word, (size_t)w);
		n += (size_t)w;
		prev_end = r[i].start + r[i].len;
	}
	if (i == *pos)
		return 0;
	buf[n] = '\0';
	*pos = i;
	return n;
}
