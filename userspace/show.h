/* SPDX-License-Identifier: GPL-2.0 */
/*
 * redcapctl's statistics, as casadm keeps them: a model that list, status
 * and stats fill from the target's answers (show.c), and its views, text
 * for people (show-text.c) and JSON (show-json.c); Prometheus' is metrics.c.
 */
#ifndef REDCAP_SHOW_H
#define REDCAP_SHOW_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "vd-model.h"

/* The reads sent to the origin, by why. */
struct bypass {
	uint64_t inactive, busy, caware, budget, held, nomem, joined, write;
};

/*
 * The target's shadow caches (its "shadows" answer): for each segment size
 * and half, once, twice and four times the cache's RAM, the disk time of
 * an LRU cache of that shape as parts per million of the bare disk's.
 */
#define SHADOW_SIZES	6
#define SHADOW_RAMS	4
struct shadows {
	bool have;			/* the target answered (status only) */
	uint64_t bare_us;		/* the model's price of the reads, bare */
	int live;			/* the size of the stack's segments, or -1 */
	struct {
		uint64_t segment_bytes, sampled, reads;
		bool ok[SHADOW_RAMS];
		uint64_t ppm[SHADOW_RAMS];
	} size[SHADOW_SIZES];
};

/* The target's names of the shadows' RAM: half, x1, x2, x4. */
extern const char *const shadow_rams[SHADOW_RAMS];

/* A stack as list and status show it: its geometry, state and counters. */
struct stack_stats {
	const char *name, *origin;
	uint64_t size_bytes, read_ahead_bytes;
	bool linear;			/* a linear device without cache: none of the rest */
	uint64_t segment_bytes, segments, ram_bytes, segments_valid, segments_filling;
	uint64_t ram_used_bytes;
	uint64_t ram_held_bytes;	/* the pages held: less what went back to the kernel */
	const char *policy, *write_policy, *estimator, *state;
	char state_reason[256];		/* why the state, for people */
	uint64_t last_cache_time_us, last_est_disk_time_us;
	uint64_t reads, read_hits, read_hits_waited, read_misses, read_bypassed, read_resent;
	struct bypass bypassed;
	double hit_ratio;
	uint64_t fill_ios, fill_bytes, fill_errors, writes, invalidations, switches, windows;
	/* the write cache: write_cache "none" without one, and the rest 0 */
	const char *write_cache;
	uint64_t write_cached, write_through, write_waits, dirty_segments, dirty_max, dirty_bytes;
	uint64_t dirty_age_ms;
	uint64_t writeback_ios, writeback_bytes, writeback_errors, flushes;
	bool has_model;			/* the model layer NAME-vd, and: */
	const char *model_device, *model_mode;
	bool model_learning;
	uint64_t model_cells_filled, model_read_samples, model_write_samples;
	/*
	 * The drive cache the model prices and the one it learnt (vdisk(4)
	 * "The drive's cache"); segments 0: none.  Not known from a module
	 * that does not learn it (loaded before an upgrade).
	 */
	bool model_dcache_known;
	struct vd_dcache model_dcache, model_dcache_learnt;
	struct shadows shadows;		/* status: the RAM advice for half the RAM */
	/*
	 * The RAM advice for more RAM (redcap(4) shadows, the eviction
	 * history): of the requests the reads sent down, the fills a cache of
	 * twice and four times the segments would not have made; none from a
	 * module without the history.
	 */
	struct more_ram {
		bool have;
		uint64_t requests;
		uint64_t saved[2];	/* twice, four times */
	} more_ram;
};

/* The change of the reads' disk time that @m predicts for more RAM @i (0: twice), a fraction. */
static inline double more_ram_change(const struct more_ram *m, int i)
{
	return m->requests && m->saved[i] ? -(double)m->saved[i] / (double)m->requests : 0;
}

/* The counters of one stats sample, at time t. */
struct sample {
	double t;
	uint64_t reads, hits, misses, bypassed, fill_sectors;
	uint64_t cache_us, disk_us;	/* the judged windows' two sides */
	struct bypass bp;
	char state[16], policy[24];
	uint32_t valid, segments;
};

/* stats: what changed from sample a to sample b, per second. */
struct rates {
	const char *name;
	double interval;
	const struct sample *now;	/* b: its state, totals and segments */
	double reads, hits, misses, bypassed, fill_mib;
	struct {
		double inactive, busy, caware, budget, held, nomem, joined, write;
	} bypassed_by;
};

/*
 * --watch's history, for a person: the hit ratio and the disk time saved
 * (the bare disk's estimated time less the cache's, in seconds a second)
 * of the last SPARK_N intervals, oldest first.  NAN: no reads.
 */
#define SPARK_N		60
struct history {
	double hit[SPARK_N], saved[SPARK_N];
	int n;
};

/* show-json.c: the objects of docs/redcapctl.schema.json. */
json_object *stack_json(const struct stack_stats *s);
json_object *list_json(const struct stack_stats *s, size_t n);
json_object *rates_json(const struct rates *r);
/* @o printed and put; @plain: on one line (stats --watch: JSON Lines). */
void json_print(json_object *o, bool plain);

/* show-text.c: for people. */
void stack_text(const struct stack_stats *s);
void list_text(const struct stack_stats *s, size_t n);
/* @watch: redrawn on a terminal, every @interval s, with @h's sparklines. */
void rates_text(const struct rates *r, bool watch, double interval, const struct history *h);

#endif
