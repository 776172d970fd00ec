// SPDX-License-Identifier: GPL-2.0
/*
 * redcapctl simulate: a block trace replayed through the emulated disk
 * alone and through redcap configurations (sim.c), with what each would
 * take and the counters the kernel target's stats message prints, under
 * the same names.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dmctl.h"
#include "sim.h"
#include "simulate.h"
#include "trace.h"

#define MAX_CONFIGS	32
#define GiB_SECTORS	(1ull << 21)

/* The counters as the target's stats message names them. */
#define COUNTERS(X)							\
	X(reads) X(read_hits) X(read_hits_waited) X(read_misses)		\
	X(read_bypassed) X(read_bypassed_inactive) X(read_resent)		\
	X(sim_hits) X(sim_misses) X(fill_ios) X(fill_sectors) X(fill_stale)	\
	X(writes) X(write_sectors) X(invalidations) X(updates) X(evictions)

static json_object *result_json(const struct sim_config *c, const struct sim_result *r)
{
	json_object *o = json_object_new_object(), *st;

	json_object_object_add(o, "config", json_object_new_string(c->spec));
	json_object_object_add(o, "app_time_s", json_object_new_double(r->app_ns / 1e9));
	json_object_object_add(o, "disk_busy_s", json_object_new_double(r->disk_busy_ns / 1e9));
	json_object_object_add(o, "disk_requests", json_object_new_int64((int64_t)r->disk_requests));
	if (c->bare)
		return o;
	st = json_object_new_object();
	json_object_object_add(st, "state", json_object_new_string(r->active ? "active"
									     : "inactive"));
	json_object_object_add(st, "policy", json_object_new_string(rc_policy_name(c->policy)));
	json_object_object_add(st, "segment_sectors", json_object_new_int64(c->seg_sectors));
	json_object_object_add(st, "segments", json_object_new_int64(c->nr_segs));
#define X(name) json_object_object_add(st, #name, json_object_new_int64((int64_t)r->ctr.name));
	COUNTERS(X)
#undef X
	json_object_object_add(o, "stats", st);
	return o;
}

static void print_table(const char *disk, u64 capacity, const struct trace *t,
			const struct sim_config *c, const struct sim_result *r, int n)
{
	const struct sim_result *bare = NULL;
	int i;

	for (i = 0; i < n; i++)
		if (c[i].bare)
			bare = &r[i];
	printf("%zu requests on %s (%llu sectors)\n\n", t->nr, disk, (unsigned long long)capacity);
	printf("%-24s %10s %8s %10s %9s %9s %11s %9s %13s %s\n", "config", "app s", "vs bare",
	       "disk s", "disk reqs", "read_hits", "read_misses", "fill_ios", "read_bypassed",
	       "state");
	for (i = 0; i < n; i++) {
		char vs[16] = "-";

		if (bare && bare->app_ns)
			snprintf(vs, sizeof(vs), "%+.1f %%",
				 100.0 * ((double)r[i].app_ns - bare->app_ns) / bare->app_ns);
		printf("%-24s %10.3f %8s %10.3f %9llu ", c[i].spec, r[i].app_ns / 1e9, vs,
		       r[i].disk_busy_ns / 1e9, (unsigned long long)r[i].disk_requests);
		if (c[i].bare)
			printf("%9s %11s %9s %13s %s\n", "-", "-", "-", "-", "-");
		else
			printf("%9llu %11llu %9llu %13llu %s\n",
			       (unsigned long long)r[i].ctr.read_hits,
			       (unsigned long long)r[i].ctr.read_misses,
			       (unsigned long long)r[i].ctr.fill_ios,
			       (unsigned long long)r[i].ctr.read_bypassed,
			       r[i].active ? "active" : "inactive");
	}
}

/* Long traces in a terminal: how far each configuration is, redrawn in place. */
static void progress(u64 done, u64 total, void *arg)
{
	fprintf(stderr, "\rsimulate: %s: %llu of %llu requests (%.0f %%)", (const char *)arg,
		(unsigned long long)done, (unsigned long long)total, 100.0 * done / total);
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

int redcapctl_simulate(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "trace", required_argument, NULL, 't' },
		{ "format", required_argument, NULL, 'f' },
		{ "disk", required_argument, NULL, 'd' },
		{ "capacity", required_argument, NULL, 'C' },
		{ "config", required_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
	static struct sim_config configs[MAX_CONFIGS];
	static struct sim_result results[MAX_CONFIGS];
	const char *path = NULL, *disk = "hdd7200";
	const struct vd_drive_profile *prof;
	enum trace_format fmt = TRACE_FMT_BLKPARSE;
	char err[TRACE_ERR_MAX > SIM_ERR_MAX ? TRACE_ERR_MAX : SIM_ERR_MAX];
	unsigned long long capacity = 0;
	struct trace t = { 0 };
	bool json = false;
	int n = 0, o, i;
	char *end;

	optind = 1;
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 't':
			path = optarg;
			break;
		case 'f':
			if (trace_format_parse(optarg) < 0)
				usage_error("simulate: --format: '%s' is not blkparse or csv", optarg);
			fmt = (enum trace_format)trace_format_parse(optarg);
			break;
		case 'd':
			disk = optarg;
			break;
		case 'C':
			capacity = strtoull(optarg, &end, 10);
			if (end == optarg || *end || !capacity)
				usage_error("simulate: --capacity: '%s' is not a number of sectors",
					    optarg);
			break;
		case 'c':
			if (n == MAX_CONFIGS)
				usage_error("simulate: at most %d --config", MAX_CONFIGS);
			if (sim_config_parse(optarg, &configs[n], err))
				usage_error("simulate: %s", err);
			n++;
			break;
		case 'j':
			json = true;
			break;
		default:
			usage_error(NULL);
		}
	}
	if (optind != argc)
		usage_error("simulate: unexpected '%s'", argv[optind]);
	if (!path)
		usage_error("simulate: --trace FILE is needed");
	if (!n)
		usage_error("simulate: at least one --config is needed (bare, or e.g. 64x128k:always)");
	prof = vd_drive_profile(disk);
	if (!prof)
		usage_error("simulate: --disk: no disk profile '%s' (hdd7200, hdd15k)", disk);

	if (trace_open(path, fmt, &t, err, sizeof(err)))
		die("simulate: %s", err);
	if (!capacity)
		capacity = (extent(&t) + GiB_SECTORS - 1) / GiB_SECTORS * GiB_SECTORS;
	for (i = 0; i < n; i++) {
		bool shown = isatty(STDERR_FILENO) && t.nr >= SIM_PROGRESS_EVERY;

		if (shown) {
			configs[i].progress = progress;
			configs[i].progress_arg = configs[i].spec;
		}
		if (sim_run(&t, &prof->p, capacity, &configs[i], &results[i], err))
			die("%ssimulate: %s: %s", shown ? "\n" : "", configs[i].spec, err);
		if (shown)
			fprintf(stderr, "\rsimulate: %s: %zu requests, done%20s\n", configs[i].spec,
				t.nr, "");
	}

	if (json) {
		json_object *top = json_object_new_object(), *arr = json_object_new_array();

		json_object_object_add(top, "trace", json_object_new_string(path));
		json_object_object_add(top, "requests", json_object_new_int64((int64_t)t.nr));
		json_object_object_add(top, "disk", json_object_new_string(disk));
		json_object_object_add(top, "capacity_sectors",
				       json_object_new_int64((int64_t)capacity));
		for (i = 0; i < n; i++)
			json_object_array_add(arr, result_json(&configs[i], &results[i]));
		json_object_object_add(top, "results", arr);
		puts(json_object_to_json_string_ext(top, JSON_C_TO_STRING_PRETTY |
							 JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(top);
	} else {
		print_table(disk, capacity, &t, configs, results, n);
	}
	trace_free(&t);
	return 0;
}
