// SPDX-License-Identifier: GPL-2.0
/*
 * redcapctl list, status, stats: a stack's statistics read into the model
 * of show.h, which its views print: text (show-text.c), JSON
 * (show-json.c), and Prometheus' text (metrics.c).
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
#include "kv.h"
#include "show.h"
#include "vdisk-tables.h"

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
	else if (active && sv(k, "spell_est_disk_time_us"))
		/* An active cache is judged on its spell (docs/redcap.rst). */
		snprintf(buf, len, "its windows since it came on: the cache took %.1f ms, the "
			 "bare disk %.1f ms (estimator %s, margin %" PRIu64 " %%)",
			 (double)sv(k, "spell_cache_time_us") / 1000.0,
			 (double)sv(k, "spell_est_disk_time_us") / 1000.0, ss(k, "estimator"),
			 sv(k, "margin"));
	else
		snprintf(buf, len, "last window: the cache %s %.1f ms, the bare disk %.1f ms "
			 "(estimator %s, margin %" PRIu64 " %%)", active ? "took" : "would take",
			 cache_ms, disk_ms, ss(k, "estimator"), sv(k, "margin"));
}

/* The model's counters that the target's stats answer has under their own names. */
#define STACK_COUNTERS(X)							\
	X(segments_valid) X(segments_filling) X(last_cache_time_us)		\
	X(last_est_disk_time_us) X(reads) X(read_hits) X(read_hits_waited)	\
	X(read_misses) X(read_bypassed) X(read_resent) X(fill_ios)		\
	X(fill_errors) X(writes) X(invalidations) X(switches) X(windows)
#define READ_COUNTER(key)	s->key = sv(k, #key);

/*
 * The model of stack @k for list and status, read once from its answers;
 * a bad answer exits.  Its strings point into @k, which must outlive it.
 */
static void stack_stats(const struct stack *k, struct stack_stats *s)
{
	uint64_t seg_bytes = (uint64_t)k->seg_sectors << 9;
	const struct dev *v = &k->vdev;

	*s = (struct stack_stats){
		.name = k->name, .origin = k->origin_path, .size_bytes = k->sectors << 9,
		.read_ahead_bytes = k->ra_bytes, .linear = !is_redcap(k),
	};
	if (s->linear) {
		snprintf(s->state_reason, sizeof(s->state_reason),
			 "a linear device over the origin, without cache");
		return;
	}
	s->segment_bytes = seg_bytes;
	s->segments = k->nr_segs;
	s->ram_bytes = seg_bytes * k->nr_segs;
	STACK_COUNTERS(READ_COUNTER)
	s->ram_used_bytes = s->segments_valid * seg_bytes;
	/* A module before segments_bare held all of it. */
	s->ram_held_bytes = s->ram_bytes;
	if (stats_find(&k->st, "segments_bare"))
		s->ram_held_bytes -= sv(k, "segments_bare") * seg_bytes;
	s->policy = ss(k, "policy");
	s->write_policy = ss(k, "write_policy");
	s->estimator = ss(k, "estimator");
	s->state = ss(k, "state");
	state_reason(k, s->state_reason, sizeof(s->state_reason));
	bypass_split(k, &s->bypassed);
	s->hit_ratio = hit_ratio(s->read_hits + s->read_hits_waited, s->reads);
	s->fill_bytes = sv(k, "fill_sectors") << 9;
	s->write_cache = ss(k, "write_cache");
	s->write_cached = sv(k, "write_cached");
	s->write_through = sv(k, "write_through");
	s->write_waits = sv(k, "write_waits");
	s->dirty_segments = sv(k, "dirty_segments");
	s->dirty_max = sv(k, "dirty_max");
	s->dirty_bytes = sv(k, "dirty_sectors") << 9;
	s->dirty_age_ms = sv(k, "dirty_age_ms");
	s->writeback_ios = sv(k, "writeback_ios");
	s->writeback_bytes = sv(k, "writeback_sectors") << 9;
	s->writeback_errors = sv(k, "writeback_errors");
	s->flushes = sv(k, "flushes");
	if (stats_find(&k->st, "x2_fills_saved")) {
		struct more_ram *m = &s->more_ram;

		m->have = true;
		/* every read request to the disk: the fills' and the bypassed ones' */
		m->requests = sv(k, "fill_ios") - sv(k, "fill_joined") + sv(k, "read_bypassed") -
			      sv(k, "read_joined");
		m->saved[0] = sv(k, "x2_fills_saved");
		m->saved[1] = sv(k, "x4_fills_saved");
	}
	s->has_model = k->has_vd;
	if (!k->has_vd)
		return;
	s->model_device = k->vname;
	s->model_mode = stats_str(v, &k->vst, "mode");
	s->model_learning = !strcmp(stats_str(v, &k->vst, "train"), "on");
	s->model_cells_filled = stats_u64(v, &k->vst, "cells_filled", 0, UINT64_MAX);
	s->model_read_samples = stats_u64(v, &k->vst, "read_samples", 0, UINT64_MAX);
	s->model_write_samples = stats_u64(v, &k->vst, "write_samples", 0, UINT64_MAX);
	s->model_dcache_known = vdt_dcache(v, &k->vst, "dcache", &s->model_dcache);
	vdt_dcache(v, &k->vst, "learnt_dcache", &s->model_dcache_learnt);
}

const char *const shadow_rams[SHADOW_RAMS] = { "half", "x1", "x2", "x4" };

/*
 * The target's shadows, for status' advice: none without a model, or from
 * a module that does not answer "shadows" (loaded before an upgrade).
 */
static void stack_shadows(const struct stack *k, struct stack_stats *s)
{
	struct shadows *h = &s->shadows;
	char *text, *p, *key, *val = NULL, what[16];
	unsigned int kib, i, r;
	int n, got;

	*h = (struct shadows){ .live = -1 };
	if (s->linear || !s->has_model || dm_send(&k->dev, "shadows", &text))
		return;
	h->have = true;
	for (i = 0; i < SHADOW_SIZES; i++) {
		h->size[i].segment_bytes = 32768ULL << i;
		if (h->size[i].segment_bytes == s->segment_bytes)
			h->live = (int)i;
	}
	for (p = text; (got = kv_next(&p, &key, &val));) {
		uint64_t v;

		if (got < 0)
			continue;
		v = strtoull(val, NULL, 10);
		if (!strcmp(key, "shadow_bare_us"))
			h->bare_us = v;
		if (sscanf(key, "shadow_%uk_%15s%n", &kib, what, &n) != 2 || key[n])
			continue;
		for (i = 0; i < SHADOW_SIZES && h->size[i].segment_bytes != kib * 1024ULL; i++)
			;
		if (i == SHADOW_SIZES)
			continue;
		if (!strcmp(what, "sampled"))
			h->size[i].sampled = v;
		else if (!strcmp(what, "reads"))
			h->size[i].reads = v;
		for (r = 0; r < SHADOW_RAMS; r++)
			if (!strcmp(what, shadow_rams[r])) {
				h->size[i].ok[r] = true;
				h->size[i].ppm[r] = v;
			}
	}
	free(text);
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
	char **names, **n;
	struct stack_stats *s;
	struct stack *k;
	size_t nr = 0;

	dmctl_operands(argc, argv, i, 0, 0);
	names = stack_names();
	for (n = names; *n; n++)
		;
	k = xmalloc((size_t)(n - names) * sizeof(*k));
	s = xmalloc((size_t)(n - names) * sizeof(*s));
	for (n = names; *n; n++) {
		if (stack_load(*n, &k[nr])) {
			status = 1;
			continue;
		}
		stack_stats(&k[nr], &s[nr]);
		nr++;
	}
	if (json)
		json_print(list_json(s, nr), false);
	else
		list_text(s, nr);
	for (i = 0; i < (int)nr; i++)
		stack_free(&k[i]);
	for (n = names; *n; n++)
		free(*n);
	free(names);
	free(k);
	free(s);
	return status;
}

int cmd_status(int argc, char **argv)
{
	bool json = false;
	int i = dmctl_parse_opts(argc, argv, list_options, dmctl_flag_opt, &json);
	struct stack_stats s;
	struct stack k;

	dmctl_operands(argc, argv, i, 1, 1);
	if (stack_load(argv[i], &k))
		return 1;
	stack_stats(&k, &s);
	stack_shadows(&k, &s);
	if (json)
		json_print(stack_json(&s), false);
	else
		stack_text(&s);
	stack_free(&k);
	return 0;
}

/* --- stats: rates -------------------------------------------------------- */

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

/* The rates of stats between samples @a and @b (which @r points to). */
static void rates_of(const char *name, const struct sample *a, const struct sample *b,
		     struct rates *r)
{
	double dt = b->t - a->t;
	const struct bypass *p = &a->bp, *q = &b->bp;

	*r = (struct rates){
		.name = name, .interval = dt, .now = b,
		.reads = rate(a->reads, b->reads, dt), .hits = rate(a->hits, b->hits, dt),
		.misses = rate(a->misses, b->misses, dt),
		.bypassed = rate(a->bypassed, b->bypassed, dt),
		.fill_mib = rate(a->fill_sectors, b->fill_sectors, dt) * 512 / MIB,
		.bypassed_by = {
			.inactive = rate(p->inactive, q->inactive, dt),
			.busy = rate(p->busy, q->busy, dt),
			.caware = rate(p->caware, q->caware, dt),
			.budget = rate(p->budget, q->budget, dt),
			.held = rate(p->held, q->held, dt),
			.nomem = rate(p->nomem, q->nomem, dt),
			.joined = rate(p->joined, q->joined, dt),
			.write = rate(p->write, q->write, dt),
		},
	};
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
	struct rates r;
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
	/*
	 * One write a view: a terminal's stdout is line buffered, and a
	 * screen read between the lines of a redraw showed half a view.
	 */
	if (o.watch)
		setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sample_take(argv[i], &a);
	while (pause_for(o.interval)) {
		sample_take(argv[i], &b);
		rates_of(argv[i], &a, &b, &r);
		history_add(&h, r.reads > 0 ? r.hits / r.reads : NAN,
			    (rate(a.disk_us, b.disk_us, r.interval) -
			     rate(a.cache_us, b.cache_us, r.interval)) / 1e6);
		if (json)
			json_print(rates_json(&r), o.watch);
		else
			rates_text(&r, o.watch, o.interval, &h);
		if (!o.watch)
			return 0;
		a = b;
	}
	/* Interrupted: the end a --watch is meant to have. */
	return o.watch ? 0 : 130;
}
