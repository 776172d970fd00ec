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
	if (c->policy != RC_POLICY_ALWAYS && c->policy != RC_POLICY_OFF)
		return fail(err, "config '%s': only the policies always and off are "
			    "simulated yet", spec);
	c->write_policy = RC_WRITE_INVALIDATE;
	for (opt = opts; opt; opt = opts) {
		opts = strchr(opt, ',');
		if (opts)
			*opts++ = '\0';
		if (!strncmp(opt, "write_policy=", 13) &&
		    (p = rc_write_policy_parse(opt + 13)) >= 0)
			c->write_policy = (enum rc_write_policy)p;
		else
			return fail(err, "config '%s': unknown option", spec);
	}
	return 0;
}

/* --- events -------------------------------------------------------------- */

enum ev_kind {
	EV_ISSUE,		/* a request of the trace goes: a = request */
	EV_PART_DONE,		/* a piece of a request completed: a = request */
	EV_FILL_DONE,		/* a fill completed: a = entry, b = sectors read */
	EV_WRITE_DONE,		/* a write piece completed: a = request, b = seg, c = cookie */
	EV_RANGE_DONE,		/* a discard completed: a = request, b = first seg, c = nr */
};

struct event {
	u64 time;
	u64 seq;
	enum ev_kind kind;
	u64 a, b, c;
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

static int heap_push(struct heap *h, u64 time, enum ev_kind kind, u64 a, u64 b, u64 c)
{
	struct event e = { time, h->seq++, kind, a, b, c }, tmp;
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
	u32 next;		/* the process's next request, or UINT32_MAX */
};

/* A read piece waiting on a fill. */
struct waiter {
	u32 req;
	u32 sectors;
	u64 sector;
	u32 next;		/* next waiter of the same entry, or UINT32_MAX */
};

struct sim {
	const struct trace *t;
	const struct sim_config *c;
	struct vd_drive drive;
	struct rc_cache *cache;
	void *cache_mem;
	struct heap h;
	struct req_state *rs;
	struct waiter *w;		/* a pool */
	size_t nr_w, cap_w;
	u32 free_w;
	u32 *wait_head, *wait_tail;	/* entry -> its waiters */
	u64 capacity;
	u64 last_done;
	u64 completed;			/* requests */
	char *err;
};

#define NONE32	UINT32_MAX

static u64 copy_ns(u32 sectors)
{
	return ((u64)sectors * 512 * SIM_COPY_NS_PER_KIB) >> 10;
}

static int oom(struct sim *s)
{
	snprintf(s->err, SIM_ERR_MAX, "out of memory");
	return -1;
}

static u64 disk(struct sim *s, enum vd_dir dir, u64 sector, u32 sectors, u64 now)
{
	u64 service;

	return vd_drive_submit(&s->drive, dir, sector, sectors, now, &service);
}

static int part_done(struct sim *s, u32 req, u64 when)
{
	return heap_push(&s->h, when, EV_PART_DONE, req, 0, 0) ? oom(s) : 0;
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

static int read_piece(struct sim *s, u32 req, u64 sector, u32 sectors, u64 now)
{
	u64 seg = rc_sector_to_seg(s->cache, sector), start, fill;
	enum rc_read_action act;
	u32 idx = RC_NONE;

	act = rc_read(s->cache, seg, &idx);
	switch (act) {
	case RC_READ_HIT:
		rc_unpin(s->cache, idx);
		return part_done(s, req, now + copy_ns(sectors));
	case RC_READ_FILL:
		start = seg * s->c->seg_sectors;
		fill = s->capacity - start < s->c->seg_sectors ? s->capacity - start
							       : s->c->seg_sectors;
		if (heap_push(&s->h, disk(s, VD_READ, start, (u32)fill, now), EV_FILL_DONE, idx,
			      fill, 0))
			return oom(s);
		return add_waiter(s, idx, req, sector, sectors);
	case RC_READ_WAIT:
		return add_waiter(s, idx, req, sector, sectors);
	case RC_READ_BYPASS:
		break;
	}
	return part_done(s, req, disk(s, VD_READ, sector, sectors, now));
}

static int fill_done(struct sim *s, u32 idx, u32 sectors, u64 now)
{
	enum rc_fill_action act = rc_fill_done(s->cache, idx, 0, sectors);
	u32 i = s->wait_head[idx], next, n = 0;

	s->wait_head[idx] = NONE32;
	for (; i != NONE32; i = next) {
		struct waiter *w = &s->w[i];
		u64 when = act == RC_FILL_SERVE ? now + copy_ns(w->sectors)
						: disk(s, VD_READ, w->sector, w->sectors, now);

		if (part_done(s, w->req, when))
			return -1;
		next = w->next;
		w->next = s->free_w;
		s->free_w = i;
		n++;
	}
	/* The first waiter of a read fill is its own miss. */
	if (act == RC_FILL_SERVE) {
		if (n > 1)
			rc_count_waited(s->cache, n - 1);
		rc_unpin(s->cache, idx);
	} else if (n > 1) {
		rc_count_resent(s->cache, n - 1);
	}
	return 0;
}

/* A request goes: its pieces, as dm splits it for the target. */
static int issue(struct sim *s, u32 req, u64 now)
{
	const struct trace_req *r = &s->t->req[req];
	struct req_state *st = &s->rs[req];
	u64 sector = r->sector, end = r->sector + r->sectors, piece_end, first, nr;
	u32 seg_sectors = s->c->seg_sectors;
	enum vd_dir dir = r->op == TRACE_READ ? VD_READ : VD_WRITE;

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
		return part_done(s, req, disk(s, dir, r->sector, r->sectors, now));
	}
	if (r->op == TRACE_DISCARD) {
		/* dm does not split discards at segment boundaries. */
		first = r->sector / seg_sectors;
		nr = (end - 1) / seg_sectors - first + 1;
		st->parts = 1;
		rc_range_start(s->cache, first, nr, r->sectors);
		return heap_push(&s->h, now, EV_RANGE_DONE, req, first, nr) ? oom(s) : 0;
	}
	st->parts = (u32)((end - 1) / seg_sectors - sector / seg_sectors + 1);
	for (; sector < end; sector = piece_end) {
		piece_end = (sector / seg_sectors + 1) * seg_sectors;
		if (piece_end > end)
			piece_end = end;
		if (r->op == TRACE_READ) {
			if (read_piece(s, req, sector, (u32)(piece_end - sector), now))
				return -1;
		} else {
			u64 seg = sector / seg_sectors;
			u32 cookie = rc_write_start(s->cache, seg, (u32)(piece_end - sector), true);
			u64 when = disk(s, VD_WRITE, sector, (u32)(piece_end - sector), now);

			if (heap_push(&s->h, when, EV_WRITE_DONE, req, seg, cookie))
				return oom(s);
		}
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
	if (++s->completed % SIM_PROGRESS_EVERY == 0 && s->c->progress)
		s->c->progress(s->completed, s->t->nr, s->c->progress_arg);
	if (st->next != NONE32 && depends(s->t, req, st->next))
		return heap_push(&s->h, st->done + think(s->t, req, st->next), EV_ISSUE,
				 st->next, 0, 0) ? oom(s) : 0;
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
		if (i + 1 < t->nr && t->req[order[i + 1]].pid == t->req[order[i]].pid)
			s->rs[order[i]].next = order[i + 1];
		if ((!i || t->req[order[i - 1]].pid != t->req[order[i]].pid) &&
		    heap_push(&s->h, t->req[order[i]].time_ns, EV_ISSUE, order[i], 0, 0)) {
			free(order);
			return oom(s);
		}
	}
	free(order);
	return 0;
}

static int step(struct sim *s, const struct event *e)
{
	struct req_state *st;
	enum rc_write_action wa;
	u32 idx;

	switch (e->kind) {
	case EV_ISSUE:
		if (issue(s, (u32)e->a, e->time))
			return -1;
		st = &s->rs[e->a];
		/* A request the trace shows issued while this one was in flight. */
		if (st->next != NONE32 && !depends(s->t, (u32)e->a, st->next) &&
		    heap_push(&s->h, e->time + s->t->req[st->next].time_ns -
				     s->t->req[e->a].time_ns, EV_ISSUE, st->next, 0, 0))
			return oom(s);
		return 0;
	case EV_PART_DONE:
		return request_done(s, (u32)e->a, e->time);
	case EV_FILL_DONE:
		return fill_done(s, (u32)e->a, (u32)e->b, e->time);
	case EV_WRITE_DONE:
		wa = rc_write_done(s->cache, e->b, (u32)e->c, 0, true, &idx);
		if (wa == RC_WRITE_COPY)
			rc_unpin(s->cache, idx);
		return request_done(s, (u32)e->a, e->time);
	case EV_RANGE_DONE:
		rc_range_done(s->cache, e->b, e->c);
		return request_done(s, (u32)e->a, e->time);
	}
	return 0;
}

int sim_run(const struct trace *t, const struct vd_drive_params *drive, u64 capacity,
	    const struct sim_config *c, struct sim_result *r, char *err)
{
	struct sim s = { .t = t, .c = c, .capacity = capacity, .err = err,
			 .free_w = NONE32 };
	int ret = -1;
	size_t i;

	memset(r, 0, sizeof(*r));
	if (vd_drive_init(&s.drive, drive, capacity, capacity, 1)) {
		snprintf(err, SIM_ERR_MAX, "the drive's parameters cannot drive an emulation");
		return -1;
	}
	s.rs = calloc(t->nr ? t->nr : 1, sizeof(*s.rs));
	if (!s.rs)
		return oom(&s);
	if (!c->bare) {
		s.cache_mem = malloc(sizeof(*s.cache) + rc_cache_mem_size(c->nr_segs));
		s.wait_head = malloc(c->nr_segs * sizeof(*s.wait_head));
		s.wait_tail = malloc(c->nr_segs * sizeof(*s.wait_tail));
		if (!s.cache_mem || !s.wait_head || !s.wait_tail) {
			oom(&s);
			goto out;
		}
		s.cache = s.cache_mem;
		if (rc_cache_init(s.cache, (char *)s.cache_mem + sizeof(*s.cache), c->nr_segs,
				  (u32)__builtin_ctz(c->seg_sectors))) {
			snprintf(err, SIM_ERR_MAX, "the cache cannot be built");
			goto out;
		}
		rc_set_policy(s.cache, c->policy);
		s.cache->write_policy = c->write_policy;
		for (i = 0; i < c->nr_segs; i++)
			s.wait_head[i] = NONE32;
	}
	if (link_processes(&s))
		goto out;
	while (s.h.nr) {
		struct event e = heap_pop(&s.h);

		if (step(&s, &e))
			goto out;
	}
	r->app_ns = s.last_done;
	r->disk_busy_ns = s.drive.st.busy_ns;
	r->disk_requests = s.drive.st.requests;
	r->requests = t->nr;
	if (s.cache) {
		r->ctr = s.cache->ctr;
		r->active = rc_active(s.cache);
	}
	ret = 0;
out:
	free(s.h.ev);
	free(s.rs);
	free(s.w);
	free(s.cache_mem);
	free(s.wait_head);
	free(s.wait_tail);
	return ret;
}
