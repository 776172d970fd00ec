// SPDX-License-Identifier: GPL-2.0
/*
 * redcapctl list, status, stats: a stack's statistics read into a model,
 * and its views: text for people, JSON, and Prometheus' text (metrics.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <langinfo.h>
#include <libdevmapper.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dmctl.h"
#include "metrics.h"
#include "redcapctl.h"

static uint64_t sv(const struct stack *k, const char *key)
{
	return stats_u64(&k->dev, &k->st, key, 0, UINT64_MAX);
}

static const char *ss(const struct stack *k, const char *key)
{
	return stats_str(&k->dev, &k->st, key);
}

static double hit_ratio(uint64_t hits, uint64_t reads)
{
	return reads ? (double)hits / (double)reads : 0.0;
}

/* The reads sent to the origin, by why. */
struct bypass {
	uint64_t inactive, busy, caware, budget, held, nomem, joined, write;
};

static void bypass_split(const struct stack *k, struct bypass *b)
{
	uint64_t total = sv(k, "read_bypassed"), named;

	b->inactive = sv(k, "read_bypassed_inactive");
	b->busy = sv(k, "read_bypassed_busy");
	b->caware = sv(k, "caware_bypassed");
	b->budget = sv(k, "read_bypassed_budget");
	b->held = sv(k, "read_bypassed_held");
	b->nomem = sv(k, "read_bypassed_nomem");
	b->joined = sv(k, "read_bypassed_joined");
	named = b->inactive + b->busy + b->caware + b->budget + b->held + b->nomem + b->joined;
	/* The rest: a write was in flight to the segment. */
	b->write = total > named ? total - named : 0;
}

/* Why the cache is in its state, for people: one line. */
static void state_reason(const struct stack *k, char *buf, size_t len)
{
	const char *policy = ss(k, "policy");
	bool active = !strcmp(ss(k, "state"), "active");
	double cache_ms = (double)sv(k, "last_cache_time_us") / 1000.0;
	double disk_ms = (double)sv(k, "last_est_disk_time_us") / 1000.0;

	if (!strcmp(policy, "always"))
		snprintf(buf, len, "policy always: every read miss fills the cache");
	else if (!strcmp(policy, "off"))
		snprintf(buf, len, "policy off: reads go to the origin; the cache is simulated");
	else if (!strcmp(policy, "caware"))
		snprintf(buf, len, "policy caware: C-Aware decides miss by miss");
	else if (sv(k, "windows") == sv(k, "windows_unjudged"))
		snprintf(buf, len, "no window of %" PRIu64 " reads judged yet",
			 sv(k, "window"));
	else
		snprintf(buf, len, "last window: the cache %s %.1f ms, the bare disk %.1f ms "
			 "(estimator %s, margin %" PRIu64 " %%)", active ? "took" : "would take",
			 cache_ms, disk_ms, ss(k, "estimator"), sv(k, "margin"));
}

static json_object *jstr(const char *s)
{
	return s ? json_object_new_string(s) : NULL;
}

static json_object *ju64(uint64_t v)
{
	return json_object_new_uint64(v);
}

/* A number printed with @fmt ("%.4f"), not json-c's 17 digits. */
static json_object *jdouble(double v, const char *fmt)
{
	char buf[64];

	snprintf(buf, sizeof(buf), fmt, v);
	return json_object_new_double_s(v, buf);
}

/* status's object: the schema is docs/redcapctl.schema.json. */
static json_object *stack_json(const struct stack *k)
{
	json_object *o = json_object_new_object(), *b, *m;
	char buf[512];
	struct bypass bp;
	uint64_t reads, hits;

	json_object_object_add(o, "schema", json_object_new_int(SCHEMA_VERSION));
	json_object_object_add(o, "name", jstr(k->name));
	snprintf(buf, sizeof(buf), "/dev/mapper/%s", k->name);
	json_object_object_add(o, "device", jstr(buf));
	json_object_object_add(o, "origin", jstr(k->origin_path));
	json_object_object_add(o, "size_bytes", ju64(k->sectors << 9));
	json_object_object_add(o, "read_ahead_bytes", ju64(k->ra_bytes));
	if (!is_redcap(k)) {
		json_object_object_add(o, "state", jstr("linear"));
		json_object_object_add(o, "state_reason",
				       jstr("a linear device over the origin, without cache"));
		return o;
	}
	json_object_object_add(o, "segment_bytes", ju64((uint64_t)k->seg_sectors << 9));
	json_object_object_add(o, "segments", ju64(k->nr_segs));
	json_object_object_add(o, "ram_bytes", ju64((uint64_t)k->seg_sectors * k->nr_segs << 9));
	json_object_object_add(o, "segments_valid", ju64(sv(k, "segments_valid")));
	json_object_object_add(o, "segments_filling", ju64(sv(k, "segments_filling")));
	json_object_object_add(o, "ram_used_bytes",
			       ju64(sv(k, "segments_valid") * ((uint64_t)k->seg_sectors << 9)));
	json_object_object_add(o, "policy", jstr(ss(k, "policy")));
	json_object_object_add(o, "write_policy", jstr(ss(k, "write_policy")));
	json_object_object_add(o, "estimator", jstr(ss(k, "estimator")));
	json_object_object_add(o, "state", jstr(ss(k, "state")));
	state_reason(k, buf, sizeof(buf));
	json_object_object_add(o, "state_reason", jstr(buf));
	json_object_object_add(o, "last_cache_time_us", ju64(sv(k, "last_cache_time_us")));
	json_object_object_add(o, "last_est_disk_time_us", ju64(sv(k, "last_est_disk_time_us")));
	reads = sv(k, "reads");
	hits = sv(k, "read_hits") + sv(k, "read_hits_waited");
	json_object_object_add(o, "reads", ju64(reads));
	json_object_object_add(o, "read_hits", ju64(sv(k, "read_hits")));
	json_object_object_add(o, "read_hits_waited", ju64(sv(k, "read_hits_waited")));
	json_object_object_add(o, "read_misses", ju64(sv(k, "read_misses")));
	json_object_object_add(o, "read_bypassed", ju64(sv(k, "read_bypassed")));
	bypass_split(k, &bp);
	b = json_object_new_object();
	json_object_object_add(b, "inactive", ju64(bp.inactive));
	json_object_object_add(b, "busy", ju64(bp.busy));
	json_object_object_add(b, "caware", ju64(bp.caware));
	json_object_object_add(b, "budget", ju64(bp.budget));
	json_object_object_add(b, "held", ju64(bp.held));
	json_object_object_add(b, "nomem", ju64(bp.nomem));
	json_object_object_add(b, "joined", ju64(bp.joined));
	json_object_object_add(b, "write", ju64(bp.write));
	json_object_object_add(o, "read_bypassed_by_reason", b);
	json_object_object_add(o, "read_resent", ju64(sv(k, "read_resent")));
	json_object_object_add(o, "hit_ratio", jdouble(hit_ratio(hits, reads), "%.6g"));
	json_object_object_add(o, "fill_ios", ju64(sv(k, "fill_ios")));
	json_object_object_add(o, "fill_bytes", ju64(sv(k, "fill_sectors") << 9));
	json_object_object_add(o, "fill_errors", ju64(sv(k, "fill_errors")));
	json_object_object_add(o, "writes", ju64(sv(k, "writes")));
	json_object_object_add(o, "invalidations", ju64(sv(k, "invalidations")));
	json_object_object_add(o, "switches", ju64(sv(k, "switches")));
	json_object_object_add(o, "windows", ju64(sv(k, "windows")));
	if (!k->has_vd) {
		json_object_object_add(o, "model", NULL);
		return o;
	}
	m = json_object_new_object();
	json_object_object_add(m, "device", jstr(k->vname));
	json_object_object_add(m, "mode", jstr(stats_str(&k->vdev, &k->vst, "mode")));
	json_object_object_add(m, "learning", json_object_new_boolean(
		!strcmp(stats_str(&k->vdev, &k->vst, "train"), "on")));
	json_object_object_add(m, "cells_filled",
			       ju64(stats_u64(&k->vdev, &k->vst, "cells_filled", 0, UINT64_MAX)));
	json_object_object_add(m, "read_samples",
			       ju64(stats_u64(&k->vdev, &k->vst, "read_samples", 0, UINT64_MAX)));
	json_object_object_add(m, "write_samples",
			       ju64(stats_u64(&k->vdev, &k->vst, "write_samples", 0, UINT64_MAX)));
	json_object_object_add(o, "model", m);
	return o;
}

static void json_print(json_object *o)
{
	puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
					    JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
}

static uint64_t jget(json_object *o, const char *key)
{
	json_object *v = json_object_object_get(o, key);

	return v ? json_object_get_uint64(v) : 0;
}

static const char *jgets(json_object *o, const char *key)
{
	json_object *v = json_object_object_get(o, key);

	return v ? json_object_get_string(v) : "";
}

static void stack_print(const struct stack *k)
{
	json_object *o = stack_json(k), *b, *m;
	char a[32], c[32], d[32];

	printf("%s: /dev/mapper/%s\n", k->name, k->name);
	printf("  origin:     %s\n", k->origin_path);
	printf("  read-ahead: %s\n", fmt_size(k->ra_bytes, a, sizeof(a)));
	if (!is_redcap(k)) {
		printf("  state:      linear: %s\n", jgets(o, "state_reason"));
		json_object_put(o);
		return;
	}
	printf("  cache:      %s = %u x %s; %" PRIu64 " segments hold data (%s), %" PRIu64
	       " filling\n", fmt_size(jget(o, "ram_bytes"), a, sizeof(a)), k->nr_segs,
	       fmt_size(jget(o, "segment_bytes"), c, sizeof(c)), jget(o, "segments_valid"),
	       fmt_size(jget(o, "ram_used_bytes"), d, sizeof(d)), jget(o, "segments_filling"));
	printf("  policy:     %s, write policy %s, estimator %s\n", jgets(o, "policy"),
	       jgets(o, "write_policy"), jgets(o, "estimator"));
	printf("  state:      %s: %s\n", jgets(o, "state"), jgets(o, "state_reason"));
	printf("  reads:      %" PRIu64 ": %" PRIu64 " hits, %" PRIu64 " hits after a wait, %"
	       PRIu64 " misses, %" PRIu64 " bypassed, %" PRIu64 " resent\n", jget(o, "reads"),
	       jget(o, "read_hits"), jget(o, "read_hits_waited"), jget(o, "read_misses"),
	       jget(o, "read_bypassed"), jget(o, "read_resent"));
	b = json_object_object_get(o, "read_bypassed_by_reason");
	printf("  bypassed:   inactive %" PRIu64 ", busy %" PRIu64 ", C-Aware %" PRIu64
	       ", budget %" PRIu64 ", suspending %" PRIu64 ", no memory %" PRIu64
	       ", joined %" PRIu64 ", write in flight %" PRIu64 "\n",
	       jget(b, "inactive"), jget(b, "busy"), jget(b, "caware"), jget(b, "budget"),
	       jget(b, "held"), jget(b, "nomem"), jget(b, "joined"), jget(b, "write"));
	printf("  hit ratio:  %.1f %%\n",
	       100.0 * json_object_get_double(json_object_object_get(o, "hit_ratio")));
	printf("  fills:      %" PRIu64 " (%s), %" PRIu64 " failed\n", jget(o, "fill_ios"),
	       fmt_size(jget(o, "fill_bytes"), a, sizeof(a)), jget(o, "fill_errors"));
	printf("  writes:     %" PRIu64 ", %" PRIu64 " cached segments invalidated\n",
	       jget(o, "writes"), jget(o, "invalidations"));
	printf("  switches:   %" PRIu64 " in %" PRIu64 " windows\n", jget(o, "switches"),
	       jget(o, "windows"));
	m = json_object_object_get(o, "model");
	if (m)
		printf("  model:      %s, %s, learning %s, %" PRIu64 " cells filled, %" PRIu64
		       " reads and %" PRIu64 " writes timed\n", jgets(m, "device"),
		       jgets(m, "mode"),
		       json_object_get_boolean(json_object_object_get(m, "learning")) ? "on" : "off",
		       jget(m, "cells_filled"), jget(m, "read_samples"), jget(m, "write_samples"));
	else
		printf("  model:      none (created with --no-model)\n");
	json_object_put(o);
}

/* list's and status' options. */
const struct option list_options[] = {
	{ "json", no_argument, NULL, 'j' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

int cmd_list(int argc, char **argv)
{
	bool json = false;
	int i = dmctl_parse_opts(argc, argv, list_options, dmctl_flag_opt, &json), status = 0;
	json_object *all = json_object_new_array(), *o;
	char **names, ram[32], seg[32];
	struct stack k;

	dmctl_operands(argc, argv, i, 0, 0);
	names = stack_names();
	for (char **n = names; *n; n++) {
		if (stack_load(*n, &k)) {
			status = 1;
			continue;
		}
		json_object_array_add(all, stack_json(&k));
		stack_free(&k);
	}
	if (json) {
		o = json_object_new_object();
		json_object_object_add(o, "schema", json_object_new_int(SCHEMA_VERSION));
		json_object_object_add(o, "stacks", all);
		json_print(o);
	} else {
		if (json_object_array_length(all))
			printf("%-16s %-20s %-9s %-8s %-16s %-8s %s\n", "NAME", "ORIGIN", "CACHE",
			       "SEGMENT", "POLICY", "STATE", "HITS");
		for (size_t j = 0; j < json_object_array_length(all); j++) {
			o = json_object_array_get_idx(all, j);
			if (!strcmp(jgets(o, "state"), "linear")) {
				printf("%-16s %-20s %-9s %-8s %-16s %-8s %s\n", jgets(o, "name"),
				       jgets(o, "origin"), "-", "-", "-", "linear", "-");
				continue;
			}
			printf("%-16s %-20s %-9s %-8s %-16s %-8s %.1f%%\n", jgets(o, "name"),
			       jgets(o, "origin"), fmt_size(jget(o, "ram_bytes"), ram, sizeof(ram)),
			       fmt_size(jget(o, "segment_bytes"), seg, sizeof(seg)),
			       jgets(o, "policy"), jgets(o, "state"), 100.0 *
			       json_object_get_double(json_object_object_get(o, "hit_ratio")));
		}
		json_object_put(all);
	}
	for (char **n = names; *n; n++)
		free(*n);
	free(names);
	return status;
}

int cmd_status(int argc, char **argv)
{
	bool json = false;
	int i = dmctl_parse_opts(argc, argv, list_options, dmctl_flag_opt, &json);
	struct stack k;

	dmctl_operands(argc, argv, i, 1, 1);
	if (stack_load(argv[i], &k))
		return 1;
	if (json)
		json_print(stack_json(&k));
	else
		stack_print(&k);
	stack_free(&k);
	return 0;
}

/* --- stats: rates -------------------------------------------------------- */

struct sample {
	double t;
	uint64_t reads, hits, misses, bypassed, fill_sectors;
	uint64_t cache_us, disk_us;	/* the judged windows' two sides */
	struct bypass bp;
	char state[16], policy[24];
	uint32_t valid, segments;
};

static void sample_take(const char *name, struct sample *s)
{
	struct stack k;

	if (stack_load(name, &k))
		exit(1);
	if (!is_redcap(&k))
		die("%s: a linear device without cache has no statistics", name);
	s->t = now_s();
	s->reads = sv(&k, "reads");
	s->hits = sv(&k, "read_hits") + sv(&k, "read_hits_waited");
	s->misses = sv(&k, "read_misses");
	s->bypassed = sv(&k, "read_bypassed");
	s->fill_sectors = sv(&k, "fill_sectors");
	s->cache_us = sv(&k, "cache_time_us");
	s->disk_us = sv(&k, "est_disk_time_us");
	bypass_split(&k, &s->bp);
	snprintf(s->state, sizeof(s->state), "%s", ss(&k, "state"));
	snprintf(s->policy, sizeof(s->policy), "%s", ss(&k, "policy"));
	s->valid = (uint32_t)sv(&k, "segments_valid");
	s->segments = k.nr_segs;
	stack_free(&k);
}

/* Counters zeroed meanwhile (reset-stats) count from zero. */
static double rate(uint64_t a, uint64_t b, double dt)
{
	return (double)(b >= a ? b - a : b) / dt;
}

static json_object *jrate(double v)
{
	return jdouble(v, "%.1f");
}

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

static void history_add(struct history *h, double hit, double saved)
{
	if (h->n == SPARK_N) {
		memmove(h->hit, h->hit + 1, (SPARK_N - 1) * sizeof(*h->hit));
		memmove(h->saved, h->saved + 1, (SPARK_N - 1) * sizeof(*h->saved));
		h->n--;
	}
	h->hit[h->n] = hit;
	h->saved[h->n++] = saved;
}

/*
 * @v (@n values) as a sparkline of eighth blocks, 0 to @hi: the lowest
 * block for 0 or less, a space for NAN.
 */
static void sparkline(const double *v, int n, double hi)
{
	static const char *const blocks[] = { "\u2581", "\u2582", "\u2583", "\u2584",
					      "\u2585", "\u2586", "\u2587", "\u2588" };
	static const char ascii[] = "_.-~=+*#";	/* a terminal without UTF-8 */
	static int utf8 = -1;

	if (utf8 < 0) {
		setlocale(LC_CTYPE, "");
		utf8 = !strcmp(nl_langinfo(CODESET), "UTF-8");
	}
	for (int i = 0; i < n; i++) {
		int b = hi > 0 && v[i] > 0 ? (int)(v[i] / hi * 8) : 0;

		b = b > 7 ? 7 : b;
		if (isnan(v[i]))
			putchar(' ');
		else if (utf8)
			fputs(blocks[b], stdout);
		else
			putchar(ascii[b]);
	}
}

static void history_show(const struct history *h, double interval)
{
	double lo = INFINITY, hi = -INFINITY, peak = 0, sum = 0;

	for (int i = 0; i < h->n; i++) {
		if (!isnan(h->hit[i])) {
			lo = fmin(lo, h->hit[i]);
			hi = fmax(hi, h->hit[i]);
		}
		peak = fmax(peak, h->saved[i]);
		sum += h->saved[i] * interval;
	}
	printf("  hit ratio   ");
	sparkline(h->hit, h->n, 1.0);
	if (lo <= hi)
		printf("%*s  %.1f to %.1f %%", SPARK_N - h->n, "", 100 * lo, 100 * hi);
	else
		printf("%*s  no reads", SPARK_N - h->n, "");
	printf("\n  disk saved  ");
	sparkline(h->saved, h->n, peak);
	printf("%*s  %.2f s in all, at most %.2f s a second\n", SPARK_N - h->n, "", sum, peak);
	printf("              (the last %g s)\n", h->n * interval);
}

static void stats_show(const char *name, const struct sample *a, const struct sample *b,
		       bool json, bool watch, double interval, const struct history *h)
{
	double dt = b->t - a->t, reads = rate(a->reads, b->reads, dt);
	double hits = rate(a->hits, b->hits, dt);
	const struct bypass *p = &a->bp, *q = &b->bp;
	json_object *o, *r;
	char clock[16];
	time_t t = time(NULL);

	if (json) {
		o = json_object_new_object();
		json_object_object_add(o, "schema", json_object_new_int(SCHEMA_VERSION));
		json_object_object_add(o, "name", jstr(name));
		json_object_object_add(o, "interval_s", jdouble(dt, "%.3f"));
		json_object_object_add(o, "state", jstr(b->state));
		json_object_object_add(o, "policy", jstr(b->policy));
		json_object_object_add(o, "reads", ju64(b->reads));
		json_object_object_add(o, "reads_per_s", jrate(reads));
		json_object_object_add(o, "hits_per_s", jrate(hits));
		json_object_object_add(o, "misses_per_s", jrate(rate(a->misses, b->misses, dt)));
		json_object_object_add(o, "bypassed_per_s", jrate(rate(a->bypassed, b->bypassed, dt)));
		r = json_object_new_object();
		json_object_object_add(r, "inactive", jrate(rate(p->inactive, q->inactive, dt)));
		json_object_object_add(r, "busy", jrate(rate(p->busy, q->busy, dt)));
		json_object_object_add(r, "caware", jrate(rate(p->caware, q->caware, dt)));
		json_object_object_add(r, "budget", jrate(rate(p->budget, q->budget, dt)));
		json_object_object_add(r, "held", jrate(rate(p->held, q->held, dt)));
		json_object_object_add(r, "nomem", jrate(rate(p->nomem, q->nomem, dt)));
		json_object_object_add(r, "joined", jrate(rate(p->joined, q->joined, dt)));
		json_object_object_add(r, "write", jrate(rate(p->write, q->write, dt)));
		json_object_object_add(o, "bypassed_per_s_by_reason", r);
		json_object_object_add(o, "fill_mib_per_s",
				       jrate(rate(a->fill_sectors, b->fill_sectors, dt) * 512 / MIB));
		json_object_object_add(o, "hit_ratio", jdouble(reads > 0 ? hits / reads : 0.0,
							       "%.6g"));
		/* --watch: one object per line (JSON Lines), for a pipe. */
		puts(json_object_to_json_string_ext(o, watch ? JSON_C_TO_STRING_PLAIN :
						    JSON_C_TO_STRING_PRETTY));
		json_object_put(o);
		fflush(stdout);
		return;
	}
	strftime(clock, sizeof(clock), "%H:%M:%S", localtime(&t));
	if (watch && isatty(STDOUT_FILENO))
		fputs("\033[H\033[2J", stdout);	/* redraw in place */
	printf("%s at %s: %s, policy %s, %u of %u segments hold data", name, clock, b->state,
	       b->policy, b->valid, b->segments);
	if (watch)
		printf(" (every %g s; Ctrl-C stops)", interval);
	printf("\n  reads/s     %10.1f   (%" PRIu64 " reads in all)\n", reads, b->reads);
	printf("  hits/s      %10.1f   %.1f %% of the reads\n", hits,
	       reads > 0 ? 100.0 * hits / reads : 0.0);
	printf("  misses/s    %10.1f\n", rate(a->misses, b->misses, dt));
	printf("  bypassed/s  %10.1f   inactive %.1f, busy %.1f, C-Aware %.1f, budget %.1f,"
	       " suspending %.1f, no memory %.1f, joined %.1f,"
	       " write in flight %.1f\n",
	       rate(a->bypassed, b->bypassed, dt), rate(p->inactive, q->inactive, dt),
	       rate(p->busy, q->busy, dt), rate(p->caware, q->caware, dt),
	       rate(p->budget, q->budget, dt), rate(p->held, q->held, dt),
	       rate(p->nomem, q->nomem, dt), rate(p->joined, q->joined, dt),
	       rate(p->write, q->write, dt));
	printf("  fill MiB/s  %10.1f\n", rate(a->fill_sectors, b->fill_sectors, dt) * 512 / MIB);
	if (watch)
		history_show(h, interval);
	if (watch && !isatty(STDOUT_FILENO))
		putchar('\n');
	fflush(stdout);
}

/* Sleep @s seconds; false if a signal came. */
static bool pause_for(double s)
{
	struct timespec ts = { .tv_sec = (time_t)s,
			       .tv_nsec = (long)((s - floor(s)) * 1e9) };

	return !nanosleep(&ts, NULL) && !interrupted;
}

/* --- stats --format prometheus: the counters as they are, for a scraper ---- */

/*
 * Read the stack @name into @m for the metrics, its answer to "stats" in
 * *@text (malloc'd, or NULL).  0, or -1 with why in @why: nothing printed,
 * so that --all can go on with the other stacks.
 */
static int metrics_read(const char *name, struct metrics_stack *m, char **text, char *why,
			size_t len)
{
	char *ttype, *params;
	const char *err;
	uint64_t sectors;
	struct dev d;
	int r = -1;

	m->name = name;
	m->kind = METRICS_FAILED;
	*text = NULL;
	if (dm_target_get(DM_DEVICE_TABLE, name, &sectors, &ttype, &params)) {
		snprintf(why, len, "%s", dm_why);
		return -1;
	}
	if (!strcmp(ttype, "linear")) {
		m->kind = METRICS_LINEAR;
		r = 0;
	} else if (strcmp(ttype, "redcap")) {
		snprintf(why, len, "its table is '%s', neither redcap nor linear", ttype);
	} else {
		dev_resolve(name, &d);
		err = dm_send(&d, "stats", text);
		if (err)
			snprintf(why, len, "message 'stats': %s", err);
		else
			r = metrics_parse(m, *text, why, len);
		if (r)
			m->kind = METRICS_FAILED;
	}
	free(ttype);
	free(params);
	return r;
}

/*
 * @path replaced whole by @size bytes of @buf: a file of its own beside it
 * (a name that does not end in .prom, which node_exporter skips), renamed
 * over it.  Not synced: it is rewritten at every scrape, and one lost in a
 * crash is no loss.  0, or -1 printed.
 */
static int file_replace(const char *path, const char *buf, size_t size)
{
	char *tmp;
	ssize_t n;
	int fd, err, r;

	if (asprintf(&tmp, "%s.XXXXXX", path) < 0)
		die("out of memory");
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		err = errno;
		free(tmp);
		return fail("stats: %s: %s", path, strerror(err));
	}
	for (size_t done = 0; done < size; done += (size_t)n) {
		n = write(fd, buf + done, size - done);
		if (n < 0)
			goto bad;
	}
	/* node_exporter reads it as the user prometheus; mkostemp made it 0600. */
	if (fchmod(fd, 0644))
		goto bad;
	r = close(fd);
	fd = -1;
	if (r || rename(tmp, path))
		goto bad;
	free(tmp);
	return 0;
bad:
	err = errno;
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	free(tmp);
	return fail("stats: %s: %s", path, strerror(err));
}

/*
 * stats --format prometheus: NAME (NULL: every stack) read once and
 * printed, or written to @out; nothing at all unless every part is there.
 * With --all a stack that cannot be read is left out with a warning, and
 * shows as redcap_scrape_error.
 */
static int stats_prometheus(const char *name, const char *out)
{
	char **names, *one[2] = { NULL, NULL }, **text, why[PATH_MAX + 128], *buf;
	struct metrics_stack *m;
	struct devinfo di;
	size_t nr = 0, size;
	FILE *mem;
	int r = 0;

	if (name) {
		r = stack_lookup(name, false, &di);
		if (!r)
			fail("%s: no such redcap stack", name);
		if (r <= 0)
			return 1;
		r = 0;
		one[0] = xstrdup(name);
		names = one;
	} else {
		names = stack_names();
	}
	while (names[nr])
		nr++;
	m = xmalloc((nr ? nr : 1) * sizeof(*m));
	text = xmalloc((nr ? nr : 1) * sizeof(*text));
	for (size_t i = 0; i < nr; i++) {
		if (!metrics_read(names[i], &m[i], &text[i], why, sizeof(why)))
			continue;
		if (name) {
			fail("%s: %s", name, why);
			r = -1;
			break;
		}
		warn("%s: %s (redcap_scrape_error 1)", names[i], why);
	}
	if (!r) {
		mem = open_memstream(&buf, &size);
		if (!mem || metrics_write(mem, m, nr) || fclose(mem))
			die("out of memory");
		if (out && strcmp(out, "-")) {
			r = file_replace(out, buf, size);
		} else if (fwrite(buf, 1, size, stdout) != size || fflush(stdout)) {
			fail("stats: standard output: %s", strerror(errno));
			r = -1;
		}
		free(buf);
	}
	for (size_t i = 0; i < nr; i++) {
		free(text[i]);
		free(names[i]);
	}
	if (names != one)
		free(names);
	free(text);
	free(m);
	return r ? 1 : 0;
}

enum stats_format { STATS_TEXT, STATS_JSON, STATS_PROMETHEUS };

static const char * const stats_formats[] = {
	[STATS_TEXT] = "text", [STATS_JSON] = "json", [STATS_PROMETHEUS] = "prometheus",
};

struct stats_opts {
	bool json, watch, all;
	int format;			/* enum stats_format, or -1: not given */
	const char *out;
	double interval;
};

static void stats_opt(int c, const char *arg, void *ctx)
{
	struct stats_opts *o = ctx;
	char *end;

	switch (c) {
	case 'j':
		o->json = true;
		return;
	case 'a':
		o->all = true;
		return;
	case 'o':
		if (!*arg)
			usage_error("stats: --out: an empty file name");
		o->out = arg;
		return;
	case 'f':
		for (o->format = STATS_PROMETHEUS; o->format >= 0; o->format--)
			if (!strcmp(arg, stats_formats[o->format]))
				return;
		usage_error("stats: --format: '%s' is not text, json or prometheus", arg);
	}
	o->watch = true;
	if (!arg)
		return;
	errno = 0;
	o->interval = strtod(arg, &end);
	if (errno || end == arg || *end || !(o->interval >= 0.1 && o->interval <= 3600))
		usage_error("stats: --watch=%s: seconds from 0.1 to 3600", arg);
}

/* stats' options. */
const struct option stats_options[] = {
	{ "json", no_argument, NULL, 'j' },
	{ "watch", optional_argument, NULL, 'w' },
	{ "format", required_argument, NULL, 'f' },
	{ "all", no_argument, NULL, 'a' },
	{ "out", required_argument, NULL, 'o' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

int cmd_stats(int argc, char **argv)
{
	struct stats_opts o = { .format = -1, .interval = 1.0 };
	int i = dmctl_parse_opts(argc, argv, stats_options, stats_opt, &o);
	struct sigaction sa = { .sa_handler = on_interrupt };
	struct history h = { .n = 0 };
	struct sample a, b;
	bool json;

	/* --json is --format json, as it was before --format. */
	if (o.json && o.format >= 0 && o.format != STATS_JSON)
		usage_error("stats: --json and --format %s: one format only",
			    stats_formats[o.format]);
	if (o.format != STATS_PROMETHEUS) {
		if (o.all)
			usage_error("stats: --all needs --format prometheus");
		if (o.out)
			usage_error("stats: --out needs --format prometheus");
	} else if (o.watch) {
		usage_error("stats: --watch does not go with --format prometheus");
	}
	dmctl_operands(argc, argv, i, o.all ? 0 : 1, o.all ? 0 : 1);
	if (o.format == STATS_PROMETHEUS)
		return stats_prometheus(o.all ? NULL : argv[i], o.out);
	json = o.json || o.format == STATS_JSON;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sample_take(argv[i], &a);
	while (pause_for(o.interval)) {
		double dt, reads;

		sample_take(argv[i], &b);
		dt = b.t - a.t;
		reads = rate(a.reads, b.reads, dt);
		history_add(&h, reads > 0 ? rate(a.hits, b.hits, dt) / reads : NAN,
			    (rate(a.disk_us, b.disk_us, dt) - rate(a.cache_us, b.cache_us, dt)) / 1e6);
		stats_show(argv[i], &a, &b, json, o.watch, o.interval, &h);
		if (!o.watch)
			return 0;
		a = b;
	}
	/* Interrupted: the end a --watch is meant to have. */
	return o.watch ? 0 : 130;
}
