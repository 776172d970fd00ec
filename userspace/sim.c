// SPDX-License-Identifier: GPL-2.0
/*
 * The replay engine of redcapctl simulate: see sim.h.  A discrete-event
 * simulation: one heap of events ordered by (time, sequence), so that equal
 * times keep the order they were made in and a run is deterministic.
 */
#define _GNU_SOURCE	/* qsort_r */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "rc-args.h"

/* --- configurations ------------------------------------------------------ */

static int fail(char *err, const char *fmt, const char *arg)
{
	snprintf(err, SIM_ERR_MAX, fmt, arg);
	return -1;
}

/*
 * One "<key>=<value>" of a configuration, read by the target's own message
 * parser as "write_policy V", "estimator V" or "set <key> V": the same
 * names, limits and error texts as the dmsetup messages.
 */
static int config_option(struct sim_config *c, char *opt, const char *spec, char *err)
{
	char *eq = strchr(opt, '='), *argv[3], why[96];
	const char *msg;
	struct rc_msg m;
	unsigned int argc;

	if (!eq || eq == opt || !eq[1])
		return fail(err, "config '%s': an option is not <key>=<value>", spec);
	*eq = '\0';
	if (!strcmp(opt, "write_policy") || !strcmp(opt, "estimator")) {
		argv[0] = opt;
		argv[1] = eq + 1;
		argc = 2;
	} else {
		argv[0] = "set";
		argv[1] = opt;
		argv[2] = eq + 1;
		argc = 3;
	}
	msg = rc_parse_message(argc, argv, &m, why, sizeof(why));
	if (msg) {
		snprintf(err, SIM_ERR_MAX, "config '%s': %s", spec, msg);
		return -1;
	}
	if (m.verb == RC_MSG_WRITE_POLICY && m.value >= RC_WRITE_BACK)
		return fail(err, "config '%s': the simulator does not model the write cache", spec);
	if (m.verb == RC_MSG_WRITE_POLICY)
		c->write_policy = (enum rc_write_policy)m.value;
	else if (m.verb == RC_MSG_ESTIMATOR)
		c->estimator = (enum rc_estimator)m.value;
	else {
		c->tun[m.key] = m.uvalue;
		c->tun_given |= 1u << m.key;
	}
	return 0;
}

int sim_config_parse(const char *spec, struct sim_config *c, char *err)
{
	char buf[sizeof(c->spec)], *size, *policy, *opts, *opt, *end;
	unsigned long long n, bytes;
	int p;

	memset(c, 0, sizeof(*c));
	if (strlen(spec) >= sizeof(c->spec))
		return fail(err, "config '%.40s...': too long", spec);
	strcpy(c->spec, spec);
	if (!strcmp(spec, "bare")) {
		c->bare = true;
		return 0;
	}
	strcpy(buf, spec);
	size = strchr(buf, 'x');
	policy = strchr(buf, ':');
	if (!size || !policy || policy < size)
		return fail(err, "config '%s': not bare nor <segments>x<size>:<policy>", spec);
	*size++ = '\0';
	*policy++ = '\0';
	opts = strchr(policy, ',');
	if (opts)
		*opts++ = '\0';

	errno = 0;
	n = strtoull(buf, &end, 10);
	if (errno || end == buf || *end || !n || n > RC_MAX_ENTRIES)
		return fail(err, "config '%s': the number of segments is not 1 to 16777216", spec);
	c->nr_segs = (u32)n;
	errno = 0;
	bytes = strtoull(size, &end, 10);
	if (!errno && end != size && (*end == 'k' || *end == 'K') && !end[1])
		bytes <<= 10;
	else if (!errno && end != size && (*end == 'm' || *end == 'M') && !end[1])
		bytes <<= 20;
	else if (errno || end == size || *end)
		bytes = 0;
	if (bytes < 4096 || bytes > (1ull << 30) || (bytes & (bytes - 1)))
		return fail(err, "config '%s': the segment size is not a power of two "
			    "from 4k to 1024m", spec);
	c->seg_sectors = (u32)(bytes >> 9);

	p = rc_policy_parse(policy);
	if (p < 0)
		return fail(err, "config '%s': unknown policy", spec);
	c->policy = (enum rc_policy)p;
	c->write_policy = RC_WRITE_INVALIDATE;
	c->estimator = RC_EST_VDISK;
	for (opt = opts; opt; opt = opts) {
		opts = strchr(opt, ',');
		if (opts)
			*opts++ = '\0';
		if (config_option(c, opt, spec, err))
			return -1;
	}
	return 0;
}

/* --- events -------------------------------------------------------------- */

enum ev_kind {
	EV_ISSUE,		/* a request of the trace goes: a = request */
	EV_PART_DONE,		/* a piece of a request completed: a = request */
	EV_BYPASS_DONE,		/* a read piece the disk served: a = request, b = sector,
				 * c = sectors, d = when it went to the disk */
	EV_FILL_DONE,		/* a fill completed: a = entry (| AHEAD: no read
				 * started it: along or ahead), b = sectors read, c = its first
				 * sector (FROM_WRITE: a write's copy),
				 * d = when it went to the disk */
	EV_WRITE_DONE,		/* a write piece completed: a = request, b = sector,
				 * c = sectors, d = cookie */
	EV_RANGE_DONE,		/* a discard completed: a = request, b = first seg, c = nr */
	EV_HDC,			/* the disk goes idle: HDC may fill its next segment */
};

struct event {
	u64 time;
	u64 seq;
	enum ev_kind kind;
	u64 a, b, c, d;
};

struct heap {
	struct event *ev;
	size_t nr, cap;
	u64 seq;
};

static bool ev_before(const struct event *x, const struct event *y)
{
	return x->time < y->time || (x->time == y->time && x->seq < y->seq);
}

static int heap_push(struct heap *h, u64 time, enum ev_kind kind, u64 a, u64 b, u64 c, u64 d)
{
	struct event e = { time, h->seq++, kind, a, b, c, d }, tmp;
	size_t i;

	if (h->nr == h->cap) {
		size_t cap = h->cap ? 2 * h->cap : 1024;
		struct event *ev = realloc(h->ev, cap * sizeof(*ev));

		if (!ev)
			return -1;
		h->ev = ev;
		h->cap = cap;
	}
	i = h->nr++;
	h->ev[i] = e;
	while (i && ev_before(&h->ev[i], &h->ev[(i - 1) / 2])) {
		tmp = h->ev[i];
		h->ev[i] = h->ev[(i - 1) / 2];
		h->ev[(i - 1) / 2] = tmp;
		i = (i - 1) / 2;
	}
	return 0;
}

static struct event heap_pop(struct heap *h)
{
	struct event top = h->ev[0], tmp;
	size_t i = 0, l, m;

	h->ev[0] = h->ev[--h->nr];
	for (;;) {
		l = 2 * i + 1;
		m = i;
		if (l < h->nr && ev_before(&h->ev[l], &h->ev[m]))
			m = l;
		if (l + 1 < h->nr && ev_before(&h->ev[l + 1], &h->ev[m]))
			m = l + 1;
		if (m == i)
			break;
		tmp = h->ev[i];
		h->ev[i] = h->ev[m];
		h->ev[m] = tmp;
		i = m;
	}
	return top;
}

/* --- the run ------------------------------------------------------------- */

struct req_state {
	u64 issue;		/* simulated issue time */
	u64 done;		/* latest completion of its pieces */
	u32 parts;		/* pieces in flight */
	u32 missed;		/* of them, pieces the cache did not serve at once */
	u32 next;		/* the process's next request, or UINT32_MAX */
	bool waited;		/* issued once the process's last completed */
};

/* A read piece waiting on a fill. */
struct waiter {
	u32 req;
	u32 sectors;
	u64 sector;
	u32 next;		/* next waiter of the same entry, or UINT32_MAX */
};

/*
 * A request the disk is serving, as the measuring vdisk above it sees it:
 * its sample goes into the model when it completes.  The drive serves in
 * arrival order, so completions come in the order of this queue.
 */
struct sample {
	u64 done;
	s64 distance;
	u64 service;
	u32 sectors;
	enum vd_dir dir;
};

struct sim {
	const struct trace *t;
	const struct sim_config *c;
	struct vd_drive drive;		/* the emulated disk, or ... */
	struct vd_vdisk mdisk;		/* ... the model's virtual disk as the disk */
	bool model_is_disk;
	bool frozen;			/* the model learns nothing */
	struct vd_model *model;		/* the measuring vdisk's model */
	void *model_mem;
	struct vd_vdisk meas;		/* the measuring vdisk's own virtual disk */
	u64 meas_last_done;
	struct sample *q;		/* samples in flight, a ring */
	size_t q_head, q_nr, q_cap;
	struct vd_vdisk vdisk, vdisk_cache;	/* the vdisk estimator's */
	struct vd_lag lag;		/* the bare disk's, in its order */
	void *lag_mem;
	struct rc_cache *cache;
	void *cache_mem;
	struct rc_hot hot;		/* HDC's counts, as the glue keeps them */
	void *hot_mem;
	struct rc_shadow shadow;	/* the shadows of the reads received */
	void *shadow_mem;
	/* HDC's worker, as the glue's (redcap_hdc_work()) */
	u32 hdc_periods;		/* hot_periods when it last chose */
	u64 *hdc_queue;			/* the chosen segments, by LBA */
	u32 hdc_nr, hdc_next;
	struct rc_hot_entry *hdc_top;	/* scratch of the choice */
	struct rc_hdc_cand *hdc_cand;
	bool hdc_timer;			/* an EV_HDC is queued */
	u64 disk_idle_at;		/* the disk's last queued request's completion */
	u64 last_issue;			/* the trace's last request issued */
	struct heap h;
	struct req_state *rs;
	struct waiter *w;		/* a pool */
	size_t nr_w, cap_w;
	u32 free_w;
	u32 *wait_head, *wait_tail;	/* entry -> its waiters */
	u64 capacity;
	u64 t0;				/* when the trace's time 0 is (after the warm-up) */
	bool open_loop;			/* sim_disk's */
	u64 last_done;
	u64 completed;			/* requests */
	u64 reads_inflight;		/* read pieces not served at once, in flight */
	char *err;
};

#define NONE32	UINT32_MAX
#define FROM_WRITE	UINT64_MAX
#define AHEAD		(1ull << 32)
#define JOINED		(1ull << 33)	/* in the request of the entry before */

static u64 copy_ns(u32 sectors)
{
	return ((u64)sectors * 512 * SIM_COPY_NS_PER_KIB) >> 10;
}

static int oom(struct sim *s)
{
	snprintf(s->err, SIM_ERR_MAX, "out of memory");
	return -1;
}

static int push(struct sim *s, u64 time, enum ev_kind kind, u64 a, u64 b, u64 c, u64 d)
{
	return heap_push(&s->h, time, kind, a, b, c, d) ? oom(s) : 0;
}

/* The model learns the samples of the requests completed by @now. */
static void learn(struct sim *s, u64 now)
{
	while (s->q_nr && s->q[s->q_head].done <= now) {
		const struct sample *x = &s->q[s->q_head];

		vd_model_add(s->model, x->dir, x->distance, x->sectors, x->service);
		s->q_head = (s->q_head + 1) % s->q_cap;
		s->q_nr--;
	}
}

static int queue_sample(struct sim *s, const struct sample *x)
{
	if (s->q_nr == s->q_cap) {
		size_t cap = s->q_cap ? 2 * s->q_cap : 256, i;
		struct sample *q = malloc(cap * sizeof(*q));

		if (!q)
			return -1;
		for (i = 0; i < s->q_nr; i++)
			q[i] = s->q[(s->q_head + i) % s->q_cap];
		free(s->q);
		s->q = q;
		s->q_head = 0;
		s->q_cap = cap;
	}
	s->q[(s->q_head + s->q_nr++) % s->q_cap] = *x;
	return 0;
}

/*
 * A request goes to the disk at @now, through the measuring vdisk; its
 * completion time in *@done.  -1 (with the reason) without memory, or when
 * the disk is a model that cannot price it.
 */
static int disk(struct sim *s, enum vd_dir dir, u64 sector, u32 sectors, u64 now, u64 *done)
{
	struct sample x = { .dir = dir, .sectors = sectors };
	u64 service, unest = s->mdisk.unestimated;

	/* As dm-vdisk: the distance its own virtual disk priced it at. */
	vd_vdisk_submit(&s->meas, s->model, dir, sector, sectors, now, 0, 0);
	x.distance = s->meas.distance;
	if (s->model_is_disk) {
		*done = vd_vdisk_submit(&s->mdisk, s->model, dir, sector, sectors, now, 0, 0);
		if (*done > s->disk_idle_at)
			s->disk_idle_at = *done;
		if (s->mdisk.unestimated != unest) {
			snprintf(s->err, SIM_ERR_MAX, "the model has no %s sample to price "
				 "sectors %llu+%u", dir == VD_READ ? "read" : "write",
				 (unsigned long long)sector, sectors);
			return -1;
		}
		return 0;
	}
	*done = vd_drive_submit(&s->drive, dir, sector, sectors, now, &service);
	if (*done > s->disk_idle_at)
		s->disk_idle_at = *done;
	/* As dm-vdisk learns it. */
	x.service = vd_service_of(now, s->meas_last_done, s->model->overlap_ns, *done);
	x.done = *done;
	s->meas_last_done = *done;
	if (s->frozen)
		return 0;
	return queue_sample(s, &x) ? oom(s) : 0;
}

/*
 * Price a request of @stream on virtual disk @v (the glue's
 * redcap_vdisk_submit()).
 */
static bool vdisk_price(struct sim *s, struct vd_vdisk *v, enum vd_dir dir, u64 sector,
			u32 sectors, u64 now, u32 stream, unsigned int how, u64 *ns)
{
	u64 busy = v->busy_ns, unest = v->unestimated;

	vd_vdisk_submit(v, s->model, dir, sector, sectors, now, stream, how);
	*ns = v->busy_ns - busy;
	return v->unestimated == unest;
}

#define SIM_RUN_PAGES	256

/* Report an event to the cache, as the glue does (rc_event()). */
static void event(struct sim *s, enum rc_event_kind kind, u64 sector, u32 sectors, u64 start,
		  u64 end)
{
	rc_event(s->cache, &(struct rc_event){ .kind = kind, .sector = sector,
					       .sectors = sectors, .start = start, .end = end });
}

static int part_done(struct sim *s, u32 req, u64 when)
{
	return push(s, when, EV_PART_DONE, req, 0, 0, 0);
}

/* A read piece sent to the disk as received, at @now. */
static int bypass(struct sim *s, u32 req, u64 sector, u32 sectors, u64 now)
{
	u64 done;

	if (disk(s, VD_READ, sector, sectors, now, &done))
		return -1;
	return push(s, done, EV_BYPASS_DONE, req, sector, sectors, now);
}

static int add_waiter(struct sim *s, u32 idx, u32 req, u64 sector, u32 sectors)
{
	u32 i;

	if (s->free_w != NONE32) {
		i = s->free_w;
		s->free_w = s->w[i].next;
	} else {
		if (s->nr_w == s->cap_w) {
			size_t cap = s->cap_w ? 2 * s->cap_w : 256;
			struct waiter *w = realloc(s->w, cap * sizeof(*w));

			if (!w)
				return oom(s);
			s->w = w;
			s->cap_w = cap;
		}
		i = (u32)s->nr_w++;
	}
	s->w[i] = (struct waiter){ req, sectors, sector, NONE32 };
	if (s->wait_head[idx] == NONE32)
		s->wait_head[idx] = i;
	else
		s->w[s->wait_tail[idx]].next = i;
	s->wait_tail[idx] = i;
	return 0;
}

/* A shadow's fill, priced by the model (the glue's redcap_shadow_price()). */
static bool shadow_price(void *ctx, s64 distance, u32 sectors, u64 *ns)
{
	struct sim *s = ctx;

	return vd_model_estimate(s->model, VD_READ, distance, sectors, ns);
}

/* A read piece's prices: its process, and whether it is its request's first. */
struct price_ctx {
	struct sim *s;
	u32 stream;
	unsigned int how[2];	/* by enum rc_vd: until the first request played */
	unsigned int ordered_how;	/* the bare disk's in its order (vd_lag_submit()) */
};

/*
 * rc_map_read()'s prices: a request played on one of the two virtual disks
 * (the glue's); the read received goes to the shadows with its bare price.
 */
static bool price(void *ctx, enum rc_vd vd, u64 sector, u32 sectors, u64 now, u64 *ns)
{
	struct price_ctx *pc = ctx;
	struct sim *s = pc->s;
	bool ok;

	if (vd == RC_VD_BARE) {
		vd_lag_submit(&s->lag, s->model, VD_READ, sector, sectors, now, pc->stream,
			      pc->ordered_how);
		pc->ordered_how = 0;
	}
	ok = vdisk_price(s, vd == RC_VD_BARE ? &s->vdisk : &s->vdisk_cache, VD_READ, sector,
			 sectors, now, pc->stream, pc->how[vd], ns);
	pc->how[vd] = 0;
	if (vd == RC_VD_BARE)
		rc_shadow_read(&s->shadow, sector, sectors, s->vdisk.distance, *ns,
			       s->cache->hot_periods);
	return ok;
}

/*
 * Send the disk requests of @plan down at @now (the glue's
 * redcap_start_fills()), each entry's completion an event of its own, and
 * among them in sector order the read it bypasses, request @req's piece
 * at @sector (@req NONE32: none).
 */
static int start_fills(struct sim *s, const struct rc_read_plan *plan, u64 now, u32 req,
		       u64 sector)
{
	const struct rc_fill_item *f = plan->fills;
	const struct rc_fill_req *r;
	u32 k;
	u64 done;

	for (r = plan->reqs; r < plan->reqs + plan->nr_reqs; r++) {
		if (req != NONE32 && r->sector > sector) {
			if (bypass(s, req, sector, plan->sectors, now))
				return -1;
			req = NONE32;
		}
		if (disk(s, VD_READ, r->sector, r->sectors, now, &done))
			return -1;
		for (k = r->first; k < r->first + r->nr; k++)
			if (push(s, done, EV_FILL_DONE, f[k].idx | (rc_fill_own(&f[k]) ? 0 : AHEAD) |
				 (k > r->first ? JOINED : 0), rc_seg_len(s->cache, f[k].seg, s->capacity),
				 f[k].seg * s->c->seg_sectors, now))
				return -1;
	}
	return req != NONE32 ? bypass(s, req, sector, plan->sectors, now) : 0;
}

/*
 * The read piece of a request at @sector, @sectors to the request's end, as
 * the glue's redcap_map_read(): rc_map_read() takes its first segment, or
 * for a bypass the segments that join it.  *@len is set to the sectors it
 * took.
 */
static int read_piece(struct sim *s, u32 req, u64 sector, u32 sectors, u64 now, u32 *len)
{
	const struct trace_req *r = &s->t->req[req];
	/*
	 * The glue's redcap_map_read(): the first piece waits with no read in
	 * flight but hits; on the bare disk a later one is the rest of it.
	 */
	unsigned int how = sector == r->sector && !s->reads_inflight ? VD_WAITS : 0;
	/*
	 * On the bare disk in its order, a request's first piece waits for its
	 * process's last if the process waited for it (the trace's
	 * dependency), whatever else is in flight.
	 */
	struct price_ctx pc = { .s = s, .stream = r->pid,
				.ordered_how = sector != r->sector ? VD_JOINS :
					       s->rs[req].waited ? VD_WAITS : 0,
				.how = { [RC_VD_BARE] = how | (sector != r->sector ? VD_JOINS : 0),
					 [RC_VD_CACHE] = how } };
	/* 256 pages of 4 KiB per request, as the glue's BIO_MAX_VECS */
	const struct rc_pricer pricer = { .price = price, .ctx = &pc, .capacity = s->capacity,
					  .run_max = SIM_RUN_PAGES / (s->c->seg_sectors / 8) };
	struct rc_read_plan plan;
	u64 copied;

	rc_map_read(s->cache, sector, sectors, now, &pricer, &plan);
	*len = plan.sectors;
	if (plan.act != RC_READ_HIT) {
		s->reads_inflight++;
		s->rs[req].missed++;
	}
	if ((plan.act == RC_READ_FILL || plan.act == RC_READ_WAIT) &&
	    add_waiter(s, plan.idx, req, sector, plan.sectors))
		return -1;
	/* MERGE: the write cache, which the simulator refuses */
	if (start_fills(s, &plan, now, plan.act == RC_READ_BYPASS ||
			plan.act == RC_READ_MERGE ? req : NONE32, sector))
		return -1;
	if (plan.act != RC_READ_HIT)
		return 0;
	copied = now + copy_ns(plan.sectors);
	rc_event(s->cache, &(struct rc_event){ .kind = RC_EV_HIT, .idx = plan.idx,
					       .sectors = plan.sectors, .start = now, .end = copied });
	return part_done(s, req, copied);
}

/* A fill (or a write's copy into an entry) completed: its waiters go. */
static int fill_done(struct sim *s, const struct event *e)
{
	u32 idx = (u32)e->a, own = e->c != FROM_WRITE && !(e->a & AHEAD), i, next, n = 0;
	enum rc_fill_action act;
	u64 now = e->time, t;

	if (e->c != FROM_WRITE)
		event(s, RC_EV_FILL, e->c, (u32)e->b, e->d, now);
	act = rc_fill_done(s->cache, idx, 0, (u32)e->b, e->a & JOINED);
	i = s->wait_head[idx];
	s->wait_head[idx] = NONE32;
	for (; i != NONE32; i = next) {
		struct waiter *w = &s->w[i];

		if (act == RC_FILL_SERVE) {
			t = now + copy_ns(w->sectors);
			event(s, RC_EV_WAITED, 0, 0, s->rs[w->req].issue, t);
			if (part_done(s, w->req, t))
				return -1;
		} else if (bypass(s, w->req, w->sector, w->sectors, now)) {
			return -1;	/* re-sent to the origin */
		}
		next = w->next;
		w->next = s->free_w;
		s->free_w = i;
		n++;
	}
	rc_fill_waiters_done(s->cache, idx, act, n, own);
	return 0;
}

/* A write piece completed (the glue's end_io of a write). */
static int write_done(struct sim *s, const struct event *e)
{
	u32 req = (u32)e->a, sectors = (u32)e->c, idx;
	u64 sector = e->b, seg = sector / s->c->seg_sectors, now = e->time, copied;
	u64 start = s->rs[req].issue;
	enum rc_write_action act;

	act = rc_write_done(s->cache, seg, (u32)e->d, 0, true, &idx);
	if (act == RC_WRITE_COPY) {
		rc_unpin(s->cache, idx);
		return part_done(s, req, now + copy_ns(sectors));
	}
	/* A whole segment may fill an entry (C-Aware's write rules). */
	if (sectors == s->c->seg_sectors && !(sector & (s->c->seg_sectors - 1)) &&
	    rc_write_allocate(s->cache, seg, (u32)e->d, &idx)) {
		copied = now + copy_ns(sectors);
		rc_event(s->cache, &(struct rc_event){ .kind = RC_EV_WRITE_COPY, .start = start,
						       .copy = now, .end = copied });
		if (push(s, copied, EV_FILL_DONE, idx, sectors, FROM_WRITE, now))
			return -1;
		return part_done(s, req, copied);
	}
	event(s, RC_EV_WRITE, 0, 0, start, now);
	return part_done(s, req, now);
}

/* A request goes: its pieces, as dm splits it for the target. */
static int issue(struct sim *s, u32 req, u64 now)
{
	const struct trace_req *r = &s->t->req[req];
	struct req_state *st = &s->rs[req];
	u64 sector = r->sector, end = r->sector + r->sectors, first, done, ns;
	u32 seg_sectors = s->c->seg_sectors, n;
	enum vd_dir dir = r->op == TRACE_READ ? VD_READ : VD_WRITE;

	s->last_issue = now;
	if (end > s->capacity) {
		snprintf(s->err, SIM_ERR_MAX, "request %u (sectors %llu+%u) is beyond the disk's "
			 "%llu sectors", req, (unsigned long long)r->sector, r->sectors,
			 (unsigned long long)s->capacity);
		return -1;
	}
	st->issue = now;
	st->done = now;
	if (s->c->bare) {
		st->parts = 1;
		if (r->op == TRACE_DISCARD)
			return part_done(s, req, now);
		vdisk_price(s, &s->vdisk, dir, r->sector, r->sectors, now, 0, 0, &ns);
		vd_lag_submit(&s->lag, s->model, dir, r->sector, r->sectors, now, r->pid,
			      s->rs[req].waited ? VD_WAITS : 0);
		if (disk(s, dir, r->sector, r->sectors, now, &done))
			return -1;
		return part_done(s, req, done);
	}
	if (r->op == TRACE_DISCARD) {
		/* dm does not split discards at segment boundaries. */
		st->parts = 1;
		rc_range_start(s->cache, r->sector, r->sectors);
		return push(s, now, EV_RANGE_DONE, req, r->sector, r->sectors, 0);
	}
	if (r->op == TRACE_READ) {
		/* Its pieces complete as events, never before all are issued. */
		for (st->parts = 0; sector < end; sector += n, st->parts++)
			if (read_piece(s, req, sector, (u32)(end - sector), now, &n))
				return -1;
		return 0;
	}
	st->parts = (u32)((end - 1) / seg_sectors - sector / seg_sectors + 1);
	for (; sector < end; sector += n) {
		n = rc_in_seg(s->cache, sector, (u32)(end - sector));
		/*
		 * A write goes to the disk whatever the cache does: both
		 * virtual disks see it; the bare one would have had it whole.
		 */
		vdisk_price(s, &s->vdisk, VD_WRITE, sector, n, now, 0,
			    sector != r->sector ? VD_JOINS : 0, &ns);
		vd_lag_submit(&s->lag, s->model, VD_WRITE, sector, n, now, r->pid,
			      sector != r->sector ? VD_JOINS : 0);
		vdisk_price(s, &s->vdisk_cache, VD_WRITE, sector, n, now, 0, 0, &ns);
		first = rc_write_start(s->cache, sector / seg_sectors, n, true);
		if (disk(s, VD_WRITE, sector, n, now, &done) ||
		    push(s, done, EV_WRITE_DONE, req, sector, n, first))
			return -1;
	}
	return 0;
}

/* The trace's next request of @req's process, and whether it waits for @req. */
static bool depends(const struct trace *t, u32 req, u32 next)
{
	const struct trace_req *a = &t->req[req], *b = &t->req[next];

	return a->done_ns == TRACE_NO_TIME || b->time_ns >= a->done_ns;
}

static u64 think(const struct trace *t, u32 req, u32 next)
{
	const struct trace_req *a = &t->req[req], *b = &t->req[next];

	return a->done_ns == TRACE_NO_TIME ? 0 : b->time_ns - a->done_ns;
}

static int request_done(struct sim *s, u32 req, u64 now)
{
	struct req_state *st = &s->rs[req];

	if (now > st->done)
		st->done = now;
	if (--st->parts)
		return 0;
	if (st->done > s->last_done)
		s->last_done = st->done;
	s->reads_inflight -= st->missed;
	if (++s->completed % SIM_PROGRESS_EVERY == 0 && s->c->progress)
		s->c->progress(s->completed, s->t->nr, s->c->progress_arg);
	if (st->next != NONE32 && depends(s->t, req, st->next)) {
		s->rs[st->next].waited = true;
		return push(s, st->done + think(s->t, req, st->next), EV_ISSUE, st->next, 0, 0, 0);
	}
	return 0;
}

static int cmp_pid(const void *x, const void *y, void *arg)
{
	const struct trace *t = arg;
	u32 a = *(const u32 *)x, b = *(const u32 *)y;

	if (t->req[a].pid != t->req[b].pid)
		return t->req[a].pid < t->req[b].pid ? -1 : 1;
	return a < b ? -1 : a > b;
}

/* Links each request to its process's next one; the first of each process goes. */
static int link_processes(struct sim *s)
{
	const struct trace *t = s->t;
	u32 *order = malloc(t->nr * sizeof(*order));
	size_t i;

	if (!order)
		return oom(s);
	for (i = 0; i < t->nr; i++) {
		order[i] = (u32)i;
		s->rs[i].next = NONE32;
	}
	qsort_r(order, t->nr, sizeof(*order), cmp_pid, (void *)t);
	for (i = 0; i < t->nr; i++) {
		if (s->open_loop) {
			if (push(s, s->t0 + t->req[i].time_ns, EV_ISSUE, (u32)i, 0, 0, 0)) {
				free(order);
				return -1;
			}
			continue;
		}
		if (i + 1 < t->nr && t->req[order[i + 1]].pid == t->req[order[i]].pid)
			s->rs[order[i]].next = order[i + 1];
		if ((!i || t->req[order[i - 1]].pid != t->req[order[i]].pid) &&
		    push(s, s->t0 + t->req[order[i]].time_ns, EV_ISSUE, order[i], 0, 0, 0)) {
			free(order);
			return -1;
		}
	}
	free(order);
	return 0;
}

/* --- HDC, as the glue's worker (redcap_hdc_work()) ------------------------ */

/* Choose the set to pin and unpin what left it (redcap_hdc_choose()). */
static int hdc_choose(struct sim *s)
{
	u32 max = rc_hdc_max(s->cache), n, k = 0, i;
	void *p;

	if (max) {
		p = realloc(s->hdc_top, 2 * (size_t)max * sizeof(*s->hdc_top));
		if (!p)
			return oom(s);
		s->hdc_top = p;
		p = realloc(s->hdc_cand, 2 * (size_t)max * sizeof(*s->hdc_cand));
		if (!p)
			return oom(s);
		s->hdc_cand = p;
		p = realloc(s->hdc_queue, (size_t)max * sizeof(*s->hdc_queue));
		if (!p)
			return oom(s);
		s->hdc_queue = p;
		n = rc_hot_top(&s->hot, 2 * max, s->hdc_top);
		for (i = 0; i < n; i++)
			s->hdc_cand[i] = (struct rc_hdc_cand){ .region = s->hdc_top[i].region,
				.count = s->hdc_top[i].count,
				.pinned = rc_hdc_pinned(s->cache, s->hdc_top[i].region) };
		k = rc_hdc_choose(s->hdc_cand, n, max);
		for (i = 0; i < k; i++)
			s->hdc_queue[i] = s->hdc_cand[i].region;
	}
	rc_hdc_want(s->cache, s->hdc_queue, k);
	rc_hdc_keep(s->cache, s->hdc_queue, k, 0, s->cache->nr_entries);
	s->hdc_nr = k;
	s->hdc_next = 0;
	return 0;
}

/*
 * After each event at @now: the choice a period's end or a share cut
 * (more pinned than it allows) calls for, then the halving; and a fill of the next chosen segment not
 * cached once the disk is idle (nothing queued on it), one at a time.
 */
static int hdc_step(struct sim *s, u64 now)
{
	enum rc_hdc_pin r;
	u64 sector, done, idle;
	u32 idx, sectors;

	if (s->cache->hot_periods != s->hdc_periods || s->cache->nr_hdc > rc_hdc_max(s->cache)) {
		if (hdc_choose(s))
			return -1;
		if (s->cache->hot_periods != s->hdc_periods)
			rc_hot_age_start(s->cache);
		s->hdc_periods = s->cache->hot_periods;
	}
	/* The disk's idle time after the trace's last request is not the run's. */
	while (s->hdc_next < s->hdc_nr && s->completed < s->t->nr) {
		idle = s->disk_idle_at > s->last_issue + RC_HDC_IDLE_NS ? s->disk_idle_at :
		       s->last_issue + RC_HDC_IDLE_NS;
		r = now < idle ? RC_HDC_BUSY : rc_hdc_pin(s->cache, s->hdc_queue[s->hdc_next], &idx);
		if (r == RC_HDC_BUSY) {
			if (s->hdc_timer)
				return 0;
			s->hdc_timer = true;
			return push(s, now < idle ? idle : now + 1000000, EV_HDC, 0, 0, 0, 0);
		}
		if (r == RC_HDC_FULL)
			break;
		sector = s->hdc_queue[s->hdc_next++] * s->c->seg_sectors;
		if (r == RC_HDC_FILL) {
			sectors = rc_seg_len(s->cache, sector / s->c->seg_sectors, s->capacity);
			if (disk(s, VD_READ, sector, sectors, now, &done))
				return -1;
			return push(s, done, EV_FILL_DONE, idx | AHEAD, sectors, sector, now);
		}
	}
	s->hdc_next = s->hdc_nr;
	return 0;
}

static int event_step(struct sim *s, const struct event *e)
{
	struct req_state *st;

	learn(s, e->time);	/* nothing queued while frozen or the model is the disk */
	switch (e->kind) {
	case EV_ISSUE:
		if (issue(s, (u32)e->a, e->time))
			return -1;
		st = &s->rs[e->a];
		/* A request the trace shows issued while this one was in flight. */
		if (st->next != NONE32 && !depends(s->t, (u32)e->a, st->next))
			return push(s, e->time + s->t->req[st->next].time_ns -
					       s->t->req[e->a].time_ns, EV_ISSUE, st->next, 0, 0, 0);
		return 0;
	case EV_PART_DONE:
		return request_done(s, (u32)e->a, e->time);
	case EV_BYPASS_DONE:
		if (s->cache)
			event(s, RC_EV_BYPASS, e->b, (u32)e->c, e->d, e->time);
		return request_done(s, (u32)e->a, e->time);
	case EV_FILL_DONE:
		return fill_done(s, e);
	case EV_WRITE_DONE:
		return write_done(s, e);
	case EV_RANGE_DONE:
		rc_range_done(s->cache, e->b, e->c);
		return request_done(s, (u32)e->a, e->time);
	case EV_HDC:
		break;
	}
	return 0;
}

static int step(struct sim *s, const struct event *e)
{
	if (e->kind == EV_HDC)
		s->hdc_timer = false;
	else if (event_step(s, e))
		return -1;
	return s->cache ? hdc_step(s, e->time) : 0;
}

/* Copies every cell of @from into @to, of the same geometry, and what it assumes. */
static int model_copy(struct vd_model *to, const struct vd_model *from)
{
	u32 dir, row, col, n;
	u64 sum;

	if (to->rows != from->rows || to->cols != from->cols)
		return -1;
	vd_model_reset(to);
	for (dir = 0; dir < VD_NR_DIRS; dir++)
		for (row = 0; row < from->rows; row++)
			for (col = 0; col < from->cols; col++)
				if (!vd_model_get_cell(from, (enum vd_dir)dir, row, col, &n, &sum) &&
				    n && vd_model_set_cell(to, (enum vd_dir)dir, row, col, n, sum))
					return -1;
	return vd_model_set_overlap(to, from->overlap_ns) ||
	       vd_model_set_dcache(to, &from->dc) ? -1 : 0;
}

/* The measuring vdisk's model: @from's tables, or empty; on @s->capacity. */
static int model_setup(struct sim *s, const struct vd_model *from,
		       const struct vd_dcache *dcache)
{
	u32 rows = from ? from->rows : VD_DEFAULT_ROWS;
	u64 cap = from ? from->capacity : s->capacity;
	size_t sz = vd_model_mem_size(cap, rows, SIM_MODEL_RINGS);

	s->model = malloc(sizeof(*s->model));
	s->model_mem = sz ? malloc(sz) : NULL;
	if (!s->model || !s->model_mem)
		return oom(s);
	if (vd_model_init(s->model, s->model_mem, cap, rows, SIM_MODEL_RINGS)) {
		snprintf(s->err, SIM_ERR_MAX, "the model's geometry is not valid");
		return -1;
	}
	if (from && model_copy(s->model, from)) {
		snprintf(s->err, SIM_ERR_MAX, "the model's tables do not fit its geometry");
		return -1;
	}
	if (dcache && vd_model_set_dcache(s->model, dcache)) {
		snprintf(s->err, SIM_ERR_MAX, "the model's drive cache is not valid");
		return -1;
	}
	s->lag_mem = malloc(vd_lag_mem_size(SIM_LAG_REQUESTS));
	if (!s->lag_mem)
		return oom(s);
	vd_lag_init(&s->lag, s->lag_mem, SIM_LAG_REQUESTS);
	return 0;
}

static void shadow_result(struct sim *s, struct sim_result *r)
{
	const struct rc_shadow *sh = &s->shadow;
	struct rc_shadow_eval ev;
	u32 i, k;

	rc_shadow_eval(sh, shadow_price, s, &ev);
	for (i = 0; i < RC_SHADOW_SIZES; i++) {
		r->shadow[i].rate_shift = sh->sz[i].rate_shift;
		for (k = 0; k < RC_SHADOW_RAMS; k++) {
			r->shadow[i].ok[k] = ev.ok[i][k];
			r->shadow[i].ppm[k] = ev.ppm[i][k];
			r->shadow[i].misses[k] = ev.misses[i][k];
		}
	}
}

static int cache_setup(struct sim *s)
{
	const struct sim_config *c = s->c;
	size_t i;

	u64 regions = (s->capacity + c->seg_sectors - 1) / c->seg_sectors;
	u64 cache_bytes = (u64)c->nr_segs * c->seg_sectors * 512;

	s->cache_mem = malloc(sizeof(*s->cache) + rc_cache_mem_size(c->nr_segs));
	s->hot_mem = calloc(1, rc_hot_mem_size(regions, rc_hot_slots_for(c->nr_segs)));
	s->wait_head = malloc(c->nr_segs * sizeof(*s->wait_head));
	s->wait_tail = malloc(c->nr_segs * sizeof(*s->wait_tail));
	if (!s->cache_mem || !s->hot_mem || !s->wait_head || !s->wait_tail)
		return oom(s);
	s->shadow_mem = malloc(rc_shadow_mem_size(cache_bytes, RC_SHADOW_ENTRIES));
	if (!s->shadow_mem)
		return oom(s);
	rc_shadow_init(&s->shadow, s->shadow_mem, cache_bytes, RC_SHADOW_ENTRIES);
	s->cache = s->cache_mem;
	if (rc_cache_init(s->cache, (char *)s->cache_mem + sizeof(*s->cache), c->nr_segs,
			  (u32)__builtin_ctz(c->seg_sectors), 0)) {
		snprintf(s->err, SIM_ERR_MAX, "the cache cannot be built");
		return -1;
	}
	rc_hot_init(&s->hot, s->hot_mem, regions, rc_hot_slots_for(c->nr_segs));
	rc_hot_attach(s->cache, &s->hot, 0);
	rc_set_policy(s->cache, c->policy);
	rc_set_write_policy(s->cache, c->write_policy);
	rc_set_estimator(s->cache, c->estimator);
	for (i = 0; i < RC_TUN_NR; i++)
		if (c->tun_given & (1u << i))
			rc_set_tunable(s->cache, (enum rc_tunable)i, c->tun[i]);
	for (i = 0; i < c->nr_segs; i++)
		s->wait_head[i] = NONE32;
	return 0;
}

/* Every request of @t through @s, its time 0 at @t0, until nothing is left to do. */
static int replay(struct sim *s, const struct trace *t, u64 t0)
{
	free(s->rs);
	s->t = t;
	s->t0 = t0;
	s->last_done = t0;
	s->completed = 0;
	s->reads_inflight = 0;
	s->rs = calloc(t->nr ? t->nr : 1, sizeof(*s->rs));
	if (!s->rs)
		return oom(s);
	if (link_processes(s))
		return -1;
	while (s->h.nr) {
		struct event e = heap_pop(&s->h);

		if (step(s, &e))
			return -1;
	}
	return 0;
}

/* After the warm-up: the bench's vdisk "reset" and redcap "reset_stats". */
static void warm_done(struct sim *s)
{
	if (s->model_is_disk)
		vd_vdisk_init(&s->mdisk);
	else
		vd_drive_reset(&s->drive);
	if (s->cache)
		rc_reset_counters(s->cache);
	vd_vdisk_reset_stats(&s->vdisk);
	vd_vdisk_reset_stats(&s->vdisk_cache);
	vd_lag_advance(&s->lag, s->model, VD_LAG_ALL);
	vd_lag_reset_stats(&s->lag);
	if (s->cache)
		rc_shadow_reset_stats(&s->shadow);
}

int sim_run(const struct trace *t, const struct sim_disk *d, const struct sim_config *c,
	    struct sim_result *r, char *err)
{
	struct sim s = { .t = t, .c = c, .capacity = d->capacity, .err = err,
			 .free_w = NONE32, .model_is_disk = !d->drive,
			 .frozen = d->frozen || !d->drive, .open_loop = d->open_loop };
	int ret = -1, i;
	size_t k;

	memset(r, 0, sizeof(*r));
	if (!d->drive && !d->model) {
		snprintf(err, SIM_ERR_MAX, "neither a drive nor a model to be the disk");
		return -1;
	}
	if (d->drive && vd_drive_init(&s.drive, d->drive, d->capacity, d->capacity, 1)) {
		snprintf(err, SIM_ERR_MAX, "the drive's parameters cannot drive an emulation");
		return -1;
	}
	if (model_setup(&s, d->model, d->dcache) || (!c->bare && cache_setup(&s)))
		goto out;
	if (d->warm) {
		if (replay(&s, d->warm, 0))
			goto out;
		warm_done(&s);
	}
	if (replay(&s, t, s.last_done))
		goto out;
	if (d->learnt) {
		learn(&s, UINT64_MAX);
		if (model_copy(d->learnt, s.model)) {
			snprintf(err, SIM_ERR_MAX, "the model to keep has another geometry");
			goto out;
		}
	}
	r->app_ns = s.last_done - s.t0;
	if (c->issue_ns)
		for (k = 0; k < t->nr; k++)
			c->issue_ns[k] = s.rs[k].issue - s.t0;
	if (s.model_is_disk) {
		r->disk_busy_ns = s.mdisk.busy_ns;
		r->disk_requests = s.mdisk.requests;
	} else {
		r->disk_busy_ns = s.drive.st.busy_ns;
		r->disk_requests = s.drive.st.requests;
	}
	r->requests = t->nr;
	r->vdisk = s.vdisk;
	vd_lag_advance(&s.lag, s.model, VD_LAG_ALL);
	r->lag_busy_ns = s.lag.disk.busy_ns;
	r->lag_forced = s.lag.forced;
	if (s.cache) {
		r->ctr = s.cache->ctr;
		r->adapt = s.cache->adapt;
		r->caware = s.cache->caware;
		r->budget = s.cache->budget;
		for (i = 0; i < RC_TUN_NR; i++)
			r->tun[i] = rc_get_tunable(s.cache, (enum rc_tunable)i);
		r->segments_valid = s.cache->nr_valid;
		r->segments_ghost = s.cache->nr_ghost;
		r->hdc_pinned = s.cache->nr_hdc;
		r->hdc_max = rc_hdc_max(s.cache);
		r->hot_periods = s.cache->hot_periods;
		r->active = rc_active(s.cache);
		shadow_result(&s, r);
	}
	ret = 0;
out:
	free(s.h.ev);
	free(s.rs);
	free(s.w);
	free(s.q);
	free(s.cache_mem);
	free(s.shadow_mem);
	free(s.hot_mem);
	free(s.hdc_queue);
	free(s.hdc_top);
	free(s.hdc_cand);
	free(s.wait_head);
	free(s.wait_tail);
	free(s.model_mem);
	free(s.model);
	free(s.lag_mem);
	return ret;
}
