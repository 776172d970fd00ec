// SPDX-License-Identifier: GPL-2.0
/*
 * The JSON view of redcapctl's statistics (show.h): status', list's and
 * stats' objects, whose schema is docs/redcapctl.schema.json.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "redcapctl.h"
#include "show.h"

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

static json_object *jrate(double v)
{
	return jdouble(v, "%.1f");
}

static void add(json_object *o, const char *key, json_object *v)
{
	json_object_object_add(o, key, v);
}

static json_object *bypass_json(const struct bypass *b)
{
	json_object *o = json_object_new_object();

	add(o, "inactive", ju64(b->inactive));
	add(o, "busy", ju64(b->busy));
	add(o, "caware", ju64(b->caware));
	add(o, "budget", ju64(b->budget));
	add(o, "held", ju64(b->held));
	add(o, "nomem", ju64(b->nomem));
	add(o, "joined", ju64(b->joined));
	add(o, "write", ju64(b->write));
	return o;
}

static json_object *shadows_json(const struct shadows *h)
{
	json_object *o = json_object_new_object(), *a = json_object_new_array(), *z, *t;
	int i, r;

	add(o, "bare_disk_time_us", ju64(h->bare_us));
	for (i = 0; i < SHADOW_SIZES; i++) {
		if (!h->size[i].sampled)
			continue;
		z = json_object_new_object();
		t = json_object_new_object();
		add(z, "segment_bytes", ju64(h->size[i].segment_bytes));
		add(z, "sampled_1_in", ju64(h->size[i].sampled));
		add(z, "reads", ju64(h->size[i].reads));
		for (r = 0; r < SHADOW_RAMS; r++)
			if (h->size[i].ok[r])
				add(t, shadow_rams[r], json_object_new_double(h->size[i].ppm[r] / 1e6));
		add(z, "disk_time_of_bare", t);
		json_object_array_add(a, z);
	}
	add(o, "sizes", a);
	return o;
}

static json_object *more_ram_json(const struct more_ram *m)
{
	json_object *o = json_object_new_object(), *z;
	static const char *const name[2] = { "x2", "x4" };
	int i;

	add(o, "read_requests", ju64(m->requests));
	for (i = 0; i < 2; i++) {
		z = json_object_new_object();
		add(z, "fills_saved", ju64(m->saved[i]));
		add(z, "change", jdouble(more_ram_change(m, i), "%.6g"));
		add(o, name[i], z);
	}
	return o;
}

/* A drive cache's shape, or null for none. */
static json_object *dcache_json(const struct vd_dcache *d)
{
	json_object *o;

	if (!d->nr_segs)
		return NULL;
	o = json_object_new_object();
	add(o, "segments", ju64(d->nr_segs));
	add(o, "segment_bytes", ju64((uint64_t)d->seg_sectors * 512));
	add(o, "readahead_bytes", ju64((uint64_t)d->ra_sectors * 512));
	add(o, "media_mbps", ju64(d->media_mbps));
	return o;
}

json_object *stack_json(const struct stack_stats *s)
{
	json_object *o = json_object_new_object(), *m;
	char dev[DM_NAME_LEN + 16];

	add(o, "schema", json_object_new_int(SCHEMA_VERSION));
	add(o, "name", jstr(s->name));
	snprintf(dev, sizeof(dev), "/dev/mapper/%s", s->name);
	add(o, "device", jstr(dev));
	add(o, "origin", jstr(s->origin));
	add(o, "size_bytes", ju64(s->size_bytes));
	add(o, "read_ahead_bytes", ju64(s->read_ahead_bytes));
	if (s->linear) {
		add(o, "state", jstr("linear"));
		add(o, "state_reason", jstr(s->state_reason));
		return o;
	}
	add(o, "segment_bytes", ju64(s->segment_bytes));
	add(o, "segments", ju64(s->segments));
	add(o, "ram_bytes", ju64(s->ram_bytes));
	add(o, "segments_valid", ju64(s->segments_valid));
	add(o, "segments_filling", ju64(s->segments_filling));
	add(o, "ram_used_bytes", ju64(s->ram_used_bytes));
	add(o, "ram_held_bytes", ju64(s->ram_held_bytes));
	add(o, "policy", jstr(s->policy));
	add(o, "write_policy", jstr(s->write_policy));
	add(o, "estimator", jstr(s->estimator));
	add(o, "state", jstr(s->state));
	add(o, "state_reason", jstr(s->state_reason));
	add(o, "last_cache_time_us", ju64(s->last_cache_time_us));
	add(o, "last_est_disk_time_us", ju64(s->last_est_disk_time_us));
	add(o, "reads", ju64(s->reads));
	add(o, "read_hits", ju64(s->read_hits));
	add(o, "read_hits_waited", ju64(s->read_hits_waited));
	add(o, "read_misses", ju64(s->read_misses));
	add(o, "read_bypassed", ju64(s->read_bypassed));
	add(o, "read_bypassed_by_reason", bypass_json(&s->bypassed));
	add(o, "read_resent", ju64(s->read_resent));
	add(o, "hit_ratio", jdouble(s->hit_ratio, "%.6g"));
	add(o, "fill_ios", ju64(s->fill_ios));
	add(o, "fill_bytes", ju64(s->fill_bytes));
	add(o, "fill_errors", ju64(s->fill_errors));
	add(o, "writes", ju64(s->writes));
	add(o, "invalidations", ju64(s->invalidations));
	if (strcmp(s->write_cache, "none")) {
		json_object *w = json_object_new_object();

		add(w, "state", jstr(s->write_cache));
		add(w, "dirty_segments", ju64(s->dirty_segments));
		add(w, "dirty_max_segments", ju64(s->dirty_max));
		add(w, "dirty_bytes", ju64(s->dirty_bytes));
		add(w, "dirty_age_s", jdouble((double)s->dirty_age_ms / 1000, "%.3f"));
		add(w, "writes_cached", ju64(s->write_cached));
		add(w, "writes_through", ju64(s->write_through));
		add(w, "writes_waited", ju64(s->write_waits));
		add(w, "writeback_ios", ju64(s->writeback_ios));
		add(w, "writeback_bytes", ju64(s->writeback_bytes));
		add(w, "writeback_errors", ju64(s->writeback_errors));
		add(w, "flushes", ju64(s->flushes));
		add(o, "write_cache", w);
	}
	add(o, "switches", ju64(s->switches));
	add(o, "windows", ju64(s->windows));
	if (s->more_ram.have)
		add(o, "more_ram", more_ram_json(&s->more_ram));
	if (!s->has_model) {
		add(o, "model", NULL);
		return o;
	}
	m = json_object_new_object();
	add(m, "device", jstr(s->model_device));
	add(m, "mode", jstr(s->model_mode));
	add(m, "learning", json_object_new_boolean(s->model_learning));
	add(m, "cells_filled", ju64(s->model_cells_filled));
	add(m, "read_samples", ju64(s->model_read_samples));
	add(m, "write_samples", ju64(s->model_write_samples));
	if (s->model_dcache_known) {
		json_object *dc = json_object_new_object();

		add(dc, "priced", dcache_json(&s->model_dcache));
		add(dc, "learnt", dcache_json(&s->model_dcache_learnt));
		add(m, "drive_cache", dc);
	}
	add(o, "model", m);
	if (s->shadows.have)
		add(o, "shadows", shadows_json(&s->shadows));
	return o;
}

json_object *list_json(const struct stack_stats *s, size_t n)
{
	json_object *o = json_object_new_object(), *all = json_object_new_array();

	for (size_t i = 0; i < n; i++)
		json_object_array_add(all, stack_json(&s[i]));
	add(o, "schema", json_object_new_int(SCHEMA_VERSION));
	add(o, "stacks", all);
	return o;
}

json_object *rates_json(const struct rates *r)
{
	json_object *o = json_object_new_object(), *b = json_object_new_object();

	add(o, "schema", json_object_new_int(SCHEMA_VERSION));
	add(o, "name", jstr(r->name));
	add(o, "interval_s", jdouble(r->interval, "%.3f"));
	add(o, "state", jstr(r->now->state));
	add(o, "policy", jstr(r->now->policy));
	add(o, "reads", ju64(r->now->reads));
	add(o, "reads_per_s", jrate(r->reads));
	add(o, "hits_per_s", jrate(r->hits));
	add(o, "misses_per_s", jrate(r->misses));
	add(o, "bypassed_per_s", jrate(r->bypassed));
	add(b, "inactive", jrate(r->bypassed_by.inactive));
	add(b, "busy", jrate(r->bypassed_by.busy));
	add(b, "caware", jrate(r->bypassed_by.caware));
	add(b, "budget", jrate(r->bypassed_by.budget));
	add(b, "held", jrate(r->bypassed_by.held));
	add(b, "nomem", jrate(r->bypassed_by.nomem));
	add(b, "joined", jrate(r->bypassed_by.joined));
	add(b, "write", jrate(r->bypassed_by.write));
	add(o, "bypassed_per_s_by_reason", b);
	add(o, "fill_mib_per_s", jrate(r->fill_mib));
	add(o, "hit_ratio", jdouble(r->reads > 0 ? r->hits / r->reads : 0.0, "%.6g"));
	return o;
}

void json_print(json_object *o, bool plain)
{
	puts(json_object_to_json_string_ext(o, (plain ? JSON_C_TO_STRING_PLAIN :
						JSON_C_TO_STRING_PRETTY) |
					    JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	fflush(stdout);
}
