/* SPDX-License-Identifier: GPL-2.0 */
/*
 * redcap's counters as Prometheus metrics (metrics.c): the answers to the
 * target's "stats" message made into the text exposition format 0.0.4.
 */
#ifndef REDCAP_METRICS_H
#define REDCAP_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define METRICS_MAX_KEYS	256	/* key=value lines in a stats answer */
#define METRICS_NAME_MAX	128	/* a metric's name, its NUL included */

enum metrics_kind {
	METRICS_CACHE,		/* a redcap table: its stats answer */
	METRICS_LINEAR,		/* a linear table, without cache: nothing to read */
	METRICS_FAILED,		/* the stack could not be read */
};

enum metrics_type { METRICS_COUNTER, METRICS_GAUGE };

/* How a value of the stats answer becomes the metric's base unit. */
enum metrics_unit {
	METRICS_AS_IS,
	METRICS_SECTORS,	/* x 512: bytes */
	METRICS_US,		/* / 10^6: seconds */
	METRICS_MS,		/* / 10^3: seconds */
	METRICS_PERCENT,	/* / 100: a ratio */
};

/* One key=value line of a stats answer, and the metric it makes. */
struct metrics_kv {
	const char *key, *val;
	char metric[METRICS_NAME_MAX];	/* "": none (a text value, or a bad name) */
	enum metrics_type type;
	enum metrics_unit unit;
	const char *help;		/* NULL: a counter of no rule */
	bool negative;
	uint64_t magnitude;
};

/* One stack's part of a scrape. */
struct metrics_stack {
	const char *name;
	enum metrics_kind kind;
	int n;
	struct metrics_kv kv[METRICS_MAX_KEYS];
};

/*
 * Split @text, the answer to "stats" (key=value lines), in place into
 * @m->kv, and give each numeric key its metric; @text must outlive @m.
 * Does not block.  0 and @m->kind METRICS_CACHE, or -1 with why in @why
 * (@len bytes): a line that is not key=value, a key twice, too many lines,
 * a number out of range, a counter below zero, or text where a gauge's
 * number should be.
 */
int metrics_parse(struct metrics_stack *m, char *text, char *why, size_t len);

/*
 * Write the metrics of @nr stacks to @f, each metric family once with all
 * the stacks under it, in the order of @s.  Does not block beyond @f's
 * writes.  0, or -1 if writing to @f failed (errno says why).
 */
int metrics_write(FILE *f, const struct metrics_stack *s, size_t nr);

#endif
