// SPDX-License-Identifier: GPL-2.0
/*
 * redcapctl simulate: a block trace replayed through the emulated disk
 * alone and through redcap configurations (sim.c), with what each would
 * take and the counters the kernel target's stats message prints, under
 * the same names.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dmctl.h"
#include "sim.h"
#include "redcapctl.h"
#include "trace.h"
#include "vdisk-tables.h"

#define MAX_CONFIGS	128
#define GiB_SECTORS	(1ull << 21)

/* The counters of the target's stats message, in its order and under its names. */
#define COUNTERS(X)							\
	X(reads, reads) X(read_hits, read_hits)					\
	X(read_hits_waited, read_hits_waited)					\
	X(read_misses, read_misses)						\
	X(read_bypassed, read_bypassed) X(read_bypassed_busy, read_bypassed_busy) \
	X(caware_bypassed, read_bypassed_caware)				\
	X(read_bypassed_nomem, read_bypassed_nomem)				\
	X(read_bypassed_held, read_bypassed_held) X(read_resent, read_resent)	\
	X(read_bypassed_inactive, read_bypassed_inactive)			\
	X(read_bypassed_budget, read_bypassed_budget)				\
	X(read_bypassed_joined, read_bypassed_joined)				\
	X(read_joined, read_joined)						\
	X(prefetches, prefetches) X(prefetch_hits, prefetch_hits)		\
	X(prefetch_unused, prefetch_unused)					\
	X(prefetch_paired, prefetch_paired)					\
	X(sim_hits, sim_hits) X(sim_misses, sim_misses) X(fill_ios, fill_ios)	\
	X(fill_joined, fill_joined) X(fill_along, fill_along)			\
	X(fill_sectors, fill_sectors) X(fill_errors, fill_errors)		\
	X(fill_stale, fill_stale) X(writes, writes) X(write_sectors, write_sectors) \
	X(invalidations, invalidations) X(updates, updates)			\
	X(write_allocs, write_allocs) X(evictions, evictions)			\
	X(hdc_fills, hdc_fills) X(hdc_hits, hdc_hits) X(hdc_dropped, hdc_dropped) \
	X(x2_fills_saved, x2_fills_saved) X(x4_fills_saved, x4_fills_saved)

static void put_u64(json_object *o, const char *name, u64 v)
{
	json_object_object_add(o, name, json_object_new_int64((int64_t)v));
}

static void put_str(json_object *o, const char *name, const char *v)
{
	json_object_object_add(o, name, json_object_new_string(v));
}

/* The policy half: activation-deactivation and C-Aware, as redcap_emit_policy(). */
static void policy_json(json_object *st, const struct sim_result *r)
{
	const struct rc_adapt *a = &r->adapt;
	const struct rc_caware *w = &r->caware;
	char name[48];
	int i;

	put_str(st, "estimator", rc_estimator_name(a->estimator));
	for (i = 0; i < RC_TUN_NR; i++)
		put_u64(st, rc_tunable_name((enum rc_tunable)i), r->tun[i]);
	put_u64(st, "switches", a->switches);
	put_u64(st, "windows", a->windows);
	put_u64(st, "windows_unjudged", a->windows_unjudged);
	put_u64(st, "cache_time_us", a->total_cache_ns / 1000);
	put_u64(st, "est_disk_time_us", a->total_disk_ns / 1000);
	put_u64(st, "last_cache_time_us", a->last_cache_ns / 1000);
	put_u64(st, "last_est_disk_time_us", a->last_disk_ns / 1000);
	put_u64(st, "spell_cache_time_us", a->spell_cache_ns / 1000);
	put_u64(st, "spell_est_disk_time_us", a->spell_disk_ns / 1000);
	json_object_object_add(st, "budget_us",
			       json_object_new_int64(r->budget.balance / 1000));
	put_u64(st, "budget_earned_us", r->budget.earned_ns / 1000);
	put_u64(st, "budget_spent_us", r->budget.spent_ns / 1000);
	json_object_object_add(st, "budget_ghost_us",
			       json_object_new_int64(r->budget.ghost_ns / 1000));
	put_u64(st, "budget_ghost_earned_us", r->budget.ghost_earned_ns / 1000);
	put_u64(st, "budget_fill_extra_us", r->budget.extra_ns / 1000);
	for (i = 1; i <= 6; i++) {
		snprintf(name, sizeof(name), "caware_rule%d", i);
		put_u64(st, name, w->rule[i]);
	}
	put_u64(st, "caware_decays", w->decays);
	put_u64(st, "caware_probes", w->probes);
	for (i = 0; i < RC_CL_NR; i++) {
		snprintf(name, sizeof(name), "caware_%s_us", rc_class_name((enum rc_class)i));
		put_u64(st, name, w->cl[i].meantime / 1000);
		snprintf(name, sizeof(name), "caware_%s_n", rc_class_name((enum rc_class)i));
		put_u64(st, name, w->cl[i].n);
	}
}

/* The shadows' disk time as a share of the bare disk's: "12.3 %", or "-". */
static const char *shadow_cell(const struct sim_shadow *z, u32 k, char *buf, size_t n)
{
	if (!z->ok[k])
		return "-";
	snprintf(buf, n, "%.1f %%", z->ppm[k] / 1e4);
	return buf;
}

/* The RAM of shadow @k for config @c: half, once, twice, four times its own. */
static u64 shadow_ram(const struct sim_config *c, u32 k)
{
	return ((u64)c->nr_segs * c->seg_sectors * 512 << k) >> 1;
}

static json_object *shadows_json(const struct sim_config *c, const struct sim_result *r)
{
	json_object *arr = json_object_new_array(), *o;
	u32 i, k;

	for (i = 0; i < RC_SHADOW_SIZES; i++) {
		for (k = 0; k < RC_SHADOW_RAMS; k++) {
			const struct sim_shadow *z = &r->shadow[i];

			o = json_object_new_object();
			put_u64(o, "segment_bytes", rc_shadow_seg_bytes(i));
			put_u64(o, "ram_bytes", shadow_ram(c, k));
			put_u64(o, "sampled_1_in", z->rate_shift < 32 ? 1ULL << z->rate_shift : 0);
			json_object_object_add(o, "disk_time_of_bare", z->ok[k] ?
					       json_object_new_double(z->ppm[k] / 1e6) : NULL);
			put_u64(o, "misses", z->misses[k]);
			json_object_array_add(arr, o);
		}
	}
	return arr;
}

static json_object *result_json(const struct sim_config *c, const struct sim_result *r)
{
	json_object *o = json_object_new_object(), *st;

	put_str(o, "config", c->spec);
	json_object_object_add(o, "app_time_s", json_object_new_double(r->app_ns / 1e9));
	json_object_object_add(o, "disk_busy_s", json_object_new_double(r->disk_busy_ns / 1e9));
	put_u64(o, "disk_requests", r->disk_requests);
	/* the model's price of what the disk (bare) or the cache received */
	json_object_object_add(o, "vdisk_time_s", json_object_new_double(r->vdisk.busy_ns / 1e9));
	json_object_object_add(o, "vdisk_ordered_time_s", json_object_new_double(r->lag_busy_ns / 1e9));
	put_u64(o, "vdisk_ordered_forced", r->lag_forced);
	put_u64(o, "vdisk_unestimated", r->vdisk.unestimated);
	if (c->bare)
		return o;
	st = json_object_new_object();
	put_str(st, "state", r->active ? "active" : "inactive");
	put_str(st, "policy", rc_policy_name(c->policy));
	put_str(st, "write_policy", rc_write_policy_name(c->write_policy));
	put_u64(st, "segment_sectors", c->seg_sectors);
	put_u64(st, "segments", c->nr_segs);
	put_u64(st, "segments_valid", r->segments_valid);
	put_u64(st, "segments_ghost", r->segments_ghost);
#define X(name, field) put_u64(st, #name, r->ctr.field);
	COUNTERS(X)
#undef X
	put_u64(st, "hdc_pinned", r->hdc_pinned);
	put_u64(st, "hdc_max", r->hdc_max);
	put_u64(st, "hot_periods", r->hot_periods);
	put_u64(st, "vdisk_requests", r->vdisk.requests);
	put_u64(st, "vdisk_time_us", r->vdisk.busy_ns / 1000);
	put_u64(st, "vdisk_unestimated", r->vdisk.unestimated);
	policy_json(st, r);
	json_object_object_add(o, "stats", st);
	json_object_object_add(o, "shadows", shadows_json(c, r));
	return o;
}

/*
 * Each cache config's shadows: the disk time of a plain LRU segment cache
 * of each segment size and RAM, as a share of the bare disk's.
 */
static void print_shadows(const struct sim_config *c, const struct sim_result *r, int n)
{
	char buf[RC_SHADOW_RAMS][32];
	u32 i, k;
	int j;

	for (j = 0; j < n; j++) {
		if (c[j].bare)
			continue;
		printf("\nshadows of %s: disk time of an LRU cache, of the bare disk's\n",
		       c[j].spec);
		for (k = 0; k < RC_SHADOW_RAMS; k++)
			fmt_size(shadow_ram(&c[j], k), buf[k], sizeof(buf[k]));
		printf("%-9s %9s %9s %9s %9s\n", "segment", buf[0], buf[1], buf[2], buf[3]);
		for (i = 0; i < RC_SHADOW_SIZES; i++) {
			printf("%-9s", fmt_size(rc_shadow_seg_bytes(i), buf[0], sizeof(buf[0])));
			for (k = 0; k < RC_SHADOW_RAMS; k++)
				printf(" %9s", shadow_cell(&r[j].shadow[i], k, buf[k],
							   sizeof(buf[k])));
			printf("\n");
		}
	}
}

static void print_table(const char *disk, u64 capacity, const struct trace *t,
			const struct sim_config *c, const struct sim_result *r, int n)
{
	const struct sim_result *bare = NULL;
	int i, w = 24;

	for (i = 0; i < n; i++) {
		if (c[i].bare)
			bare = &r[i];
		if ((int)strlen(c[i].spec) > w)
			w = (int)strlen(c[i].spec);
	}
	printf("%zu requests on %s (%llu sectors)\n\n", t->nr, disk, (unsigned long long)capacity);
	printf("%-*s %10s %8s %10s %9s %9s %11s %9s %13s %8s %s\n", w, "config", "app s",
	       "vs bare", "disk s", "disk reqs", "read_hits", "read_misses", "fill_ios",
	       "read_bypassed", "switches", "state");
	for (i = 0; i < n; i++) {
		char vs[16] = "-";

		if (bare && bare->app_ns)
			snprintf(vs, sizeof(vs), "%+.1f %%",
				 100.0 * ((double)r[i].app_ns - bare->app_ns) / bare->app_ns);
		printf("%-*s %10.3f %8s %10.3f %9llu ", w, c[i].spec, r[i].app_ns / 1e9, vs,
		       r[i].disk_busy_ns / 1e9, (unsigned long long)r[i].disk_requests);
		if (c[i].bare)
			printf("%9s %11s %9s %13s %8s %s\n", "-", "-", "-", "-", "-", "-");
		else
			printf("%9llu %11llu %9llu %13llu %8llu %s\n",
			       (unsigned long long)r[i].ctr.read_hits,
			       (unsigned long long)r[i].ctr.read_misses,
			       (unsigned long long)r[i].ctr.fill_ios,
			       (unsigned long long)r[i].ctr.read_bypassed,
			       (unsigned long long)r[i].adapt.switches,
			       r[i].active ? "active" : "inactive");
	}
}

/* Long traces in a terminal: how far each configuration is, redrawn in place. */
static void progress(u64 done, u64 total, void *arg)
{
	fprintf(stderr, "\rsimulate: %s: %llu of %llu requests (%.0f %%)", (const char *)arg,
		(unsigned long long)done, (unsigned long long)total, 100.0 * done / total);
}

static void model_cell(void *arg, char dir, uint32_t row, uint32_t col, uint32_t n,
		       uint64_t sum)
{
	vd_model_set_cell(arg, dir == 'r' ? VD_READ : VD_WRITE, row, col, n, sum);
}

/* An empty model of this geometry (exits if it is not valid). */
static struct vd_model *new_model(u64 capacity, u32 rows, void **mem)
{
	struct vd_model *m = xmalloc(sizeof(*m));
	size_t sz = vd_model_mem_size(capacity, rows, SIM_MODEL_RINGS);

	*mem = sz ? xmalloc(sz) : NULL;
	if (!*mem || vd_model_init(m, *mem, capacity, rows, SIM_MODEL_RINGS))
		die("simulate: a model of %u rows over %llu sectors is not valid", rows,
		    (unsigned long long)capacity);
	return m;
}

/*
 * The tables of @file (redcapctl model save) as a model over the capacity
 * the file was saved with, or over @capacity for a version 1 file.
 */
static struct vd_model *read_model(const char *file, u64 capacity, void **mem)
{
	struct vdt_file_info info;
	struct vd_model *m;

	vdt_read_cells("simulate: --model", file, &info, NULL, NULL);
	if (info.capacity)
		capacity = info.capacity;
	if (!capacity)
		usage_error("simulate: --model: %s does not say the disk's capacity (a version 1 "
			    "file): give --capacity", file);
	if (info.window != VD_WINDOW)
		die("simulate: --model: %s: window=%u, the model keeps %u samples a cell", file,
		    info.window, VD_WINDOW);
	if (info.rows > VD_MAX_ROWS || vdt_device_cols(&info) != vd_model_cols(capacity))
		die("simulate: --model: %s: tables of rows=%u cols=%u do not fit a disk of %llu "
		    "sectors", file, info.rows, info.cols, (unsigned long long)capacity);
	m = new_model(capacity, info.rows, mem);
	vdt_read_cells("simulate: --model", file, &info, model_cell, m);
	vd_model_set_overlap(m, info.overlap_us * 1000);	/* in range: the file was checked */
	vd_model_set_dcache(m, &info.dcache);			/* likewise */
	return m;
}

static uint32_t model_row(void *arg, char dir, uint32_t row, struct vdt_cell *cells)
{
	const struct vd_model *m = arg;
	uint32_t col, n, nr = 0;
	uint64_t sum;

	for (col = 0; col < m->cols; col++)
		if (!vd_model_get_cell(m, dir == 'r' ? VD_READ : VD_WRITE, row, col, &n, &sum) && n)
			cells[nr++] = (struct vdt_cell){ col, n, sum };
	return nr;
}

/*
 * --issue-times: the trace as the first configuration replayed it, a csv
 * trace whose times are the simulated issue times.
 */
static void write_issue_times(const char *file, const struct trace *t, const u64 *issue_ns)
{
	static const char op[] = { [TRACE_READ] = 'R', [TRACE_WRITE] = 'W',
				   [TRACE_DISCARD] = 'D' };
	FILE *f = fopen(file, "w");
	size_t i;

	if (!f)
		die("simulate: --issue-times: %s: %s", file, strerror(errno));
	fputs("time_ns,pid,op,sector,sectors\n", f);
	for (i = 0; i < t->nr; i++)
		fprintf(f, "%llu,%u,%c,%llu,%u\n", (unsigned long long)issue_ns[i],
			t->req[i].pid, op[t->req[i].op],
			(unsigned long long)t->req[i].sector, t->req[i].sectors);
	if (fclose(f))
		die("simulate: --issue-times: %s: %s", file, strerror(errno));
}

/* What the model layer learnt, as model save writes it; the disk's id: sim-<disk>. */
static void save_model(const char *file, const struct vd_model *m, const char *disk)
{
	struct vdt_file_info info = { .rows = m->rows, .cols = m->cols, .window = VD_WINDOW,
				      .capacity = m->capacity, .overlap_us = m->overlap_ns / 1000,
				      .dcache = m->dc };
	char *id;

	if (asprintf(&id, "sim-%s", disk) < 0)
		die("out of memory");
	vdt_write("simulate: --save-model", file, &info, id, model_row, (void *)m);
	free(id);
}

static u64 extent(const struct trace *t)
{
	u64 end = 0;
	size_t i;

	for (i = 0; i < t->nr; i++)
		if (t->req[i].sector + t->req[i].sectors > end)
			end = t->req[i].sector + t->req[i].sectors;
	return end;
}

/* The command line. */
struct sim_args {
	const char *path, *warm_path, *disk, *model_file, *save_file, *issue_file;
	enum trace_format fmt;
	unsigned long long capacity;
	bool json, frozen, drive_cache, shadows, open_loop;
	int n;
	struct sim_config *configs;
};

static void sim_opt(int c, const char *arg, void *ctx)
{
	struct sim_args *a = ctx;
	char err[SIM_ERR_MAX], *end;

	switch (c) {
	case 't':
		a->path = arg;
		break;
	case 'w':
		a->warm_path = arg;
		break;
	case 'f':
		if (trace_format_parse(arg) < 0)
			usage_error("simulate: --format: '%s' is not blkparse or csv", arg);
		a->fmt = (enum trace_format)trace_format_parse(arg);
		break;
	case 'd':
		a->disk = arg;
		break;
	case 'm':
		a->model_file = arg;
		break;
	case 's':
		a->save_file = arg;
		break;
	case 'C':
		a->capacity = strtoull(arg, &end, 10);
		if (end == arg || *end || !a->capacity)
			usage_error("simulate: --capacity: '%s' is not a number of sectors", arg);
		break;
	case 'c':
		if (a->n == MAX_CONFIGS)
			usage_error("simulate: at most %d --config", MAX_CONFIGS);
		if (sim_config_parse(arg, &a->configs[a->n], err))
			usage_error("simulate: %s", err);
		a->n++;
		break;
	case 'j':
		a->json = true;
		break;
	case 'n':
		a->frozen = true;
		break;
	case 'D':
		a->drive_cache = true;
		break;
	case 'S':
		a->shadows = true;
		break;
	case 'I':
		a->issue_file = arg;
		break;
	case 'O':
		a->open_loop = true;
		break;
	}
}

/* simulate's options (the command table's, redcapctl.c). */
const struct option simulate_options[] = {
	{ "trace", required_argument, NULL, 't' },
	{ "warm", required_argument, NULL, 'w' },
	{ "format", required_argument, NULL, 'f' },
	{ "disk", required_argument, NULL, 'd' },
	{ "model", required_argument, NULL, 'm' },
	{ "save-model", required_argument, NULL, 's' },
	{ "no-train", no_argument, NULL, 'n' },
	{ "drive-cache", no_argument, NULL, 'D' },
	{ "capacity", required_argument, NULL, 'C' },
	{ "config", required_argument, NULL, 'c' },
	{ "json", no_argument, NULL, 'j' },
	{ "shadows", no_argument, NULL, 'S' },
	{ "issue-times", required_argument, NULL, 'I' },
	{ "open-loop", no_argument, NULL, 'O' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

int cmd_simulate(int argc, char **argv)
{
	static struct sim_config configs[MAX_CONFIGS];
	static struct sim_result results[MAX_CONFIGS];
	static struct vd_drive scratch;	/* the emulated drive's overlap is measured on */
	struct sim_args a = { .fmt = TRACE_FMT_BLKPARSE, .configs = configs };
	const struct vd_drive_profile *prof = NULL;
	struct sim_disk sd = { 0 };
	struct vd_dcache dc = { 0 };
	struct vd_model *model = NULL;
	void *model_mem = NULL, *learnt_mem = NULL;
	char err[TRACE_ERR_MAX > SIM_ERR_MAX ? TRACE_ERR_MAX : SIM_ERR_MAX];
	struct trace t = { 0 }, warm = { 0 };
	int i, first;

	first = dmctl_parse_opts(argc, argv, simulate_options, sim_opt, &a);
	if (first != argc)
		usage_error("simulate: unexpected '%s'", argv[first]);
	if (!a.path)
		usage_error("simulate: --trace FILE is needed");
	if (!a.n)
		usage_error("simulate: at least one --config is needed (bare, or e.g. 64x128k:always)");
	if (a.drive_cache && a.model_file && !a.disk)
		usage_error("simulate: --drive-cache needs a --disk");
	if (a.disk || !a.model_file) {
		if (!a.disk)
			a.disk = "hdd7200";
		prof = vd_drive_profile(a.disk);
		if (!prof)
			usage_error("simulate: --disk: no disk profile '%s' (hdd7200, hdd15k, "
				    "st1, nbd)", a.disk);
		sd.drive = &prof->p;
	}

	if (trace_open(a.path, a.fmt, &t, err, sizeof(err)))
		die("simulate: %s", err);
	if (a.warm_path) {
		if (trace_open(a.warm_path, a.fmt, &warm, err, sizeof(err)))
			die("simulate: --warm: %s", err);
		sd.warm = &warm;
	}
	if (a.model_file) {
		model = read_model(a.model_file, a.capacity, &model_mem);
		if (!a.capacity)
			a.capacity = model->capacity;
	}
	if (!a.capacity)
		a.capacity = ((extent(&t) > extent(&warm) ? extent(&t) : extent(&warm)) +
			      GiB_SECTORS - 1) / GiB_SECTORS * GiB_SECTORS;
	if (a.drive_cache) {
		/* the model assumes the cache the emulated drive has */
		dc.nr_segs = prof->p.nr_segs < VD_DCACHE_MAX_SEGS ? prof->p.nr_segs :
			     VD_DCACHE_MAX_SEGS;
		dc.seg_sectors = prof->p.seg_sectors;
		dc.ra_sectors = prof->p.ra_sectors;
		dc.media_mbps = prof->p.media_mbps;
		sd.dcache = &dc;
	}
	sd.model = model;
	sd.frozen = a.frozen;
	sd.open_loop = a.open_loop;
	sd.capacity = a.capacity;
	if (a.save_file)
		sd.learnt = new_model(model ? model->capacity : a.capacity,
				      model ? model->rows : VD_DEFAULT_ROWS, &learnt_mem);
	if (a.issue_file) {
		configs[0].issue_ns = calloc(t.nr, sizeof(*configs[0].issue_ns));
		if (!configs[0].issue_ns)
			die("simulate: out of memory");
	}
	for (i = 0; i < a.n; i++) {
		bool shown = isatty(STDERR_FILENO) && t.nr >= SIM_PROGRESS_EVERY;

		if (shown) {
			configs[i].progress = progress;
			configs[i].progress_arg = configs[i].spec;
		}
		if (sim_run(&t, &sd, &configs[i], &results[i], err))
			die("%ssimulate: %s: %s", shown ? "\n" : "", configs[i].spec, err);
		if (shown)
			fprintf(stderr, "\rsimulate: %s: %zu requests, done%20s\n", configs[i].spec,
				t.nr, "");
		if (i == 0 && a.save_file) {
			/* What vdiskctl train would measure of the emulated drive. */
			if (prof)
				vd_model_set_overlap(sd.learnt, vd_drive_overlap(&scratch, &prof->p,
										 a.capacity, a.capacity));
			save_model(a.save_file, sd.learnt, a.disk ? a.disk : "model");
		}
		sd.learnt = NULL;
		if (i == 0 && a.issue_file) {
			write_issue_times(a.issue_file, &t, configs[0].issue_ns);
			free(configs[0].issue_ns);
			configs[0].issue_ns = NULL;
		}
	}

	if (a.json) {
		json_object *top = json_object_new_object(), *arr = json_object_new_array();

		json_object_object_add(top, "trace", json_object_new_string(a.path));
		json_object_object_add(top, "requests", json_object_new_int64((int64_t)t.nr));
		json_object_object_add(top, "warm", a.warm_path ?
				       json_object_new_string(a.warm_path) : NULL);
		json_object_object_add(top, "warm_requests", json_object_new_int64((int64_t)warm.nr));
		json_object_object_add(top, "disk", a.disk ? json_object_new_string(a.disk) : NULL);
		json_object_object_add(top, "model", a.model_file ?
				       json_object_new_string(a.model_file) : NULL);
		json_object_object_add(top, "capacity_sectors",
				       json_object_new_int64((int64_t)a.capacity));
		for (i = 0; i < a.n; i++)
			json_object_array_add(arr, result_json(&configs[i], &results[i]));
		json_object_object_add(top, "results", arr);
		puts(json_object_to_json_string_ext(top, JSON_C_TO_STRING_PRETTY |
							 JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(top);
	} else {
		print_table(a.disk ? a.disk : a.model_file, a.capacity, &t, configs, results, a.n);
		if (a.shadows)
			print_shadows(configs, results, a.n);
	}
	trace_free(&t);
	trace_free(&warm);
	free(model_mem);
	free(model);
	free(learnt_mem);
	return 0;
}
