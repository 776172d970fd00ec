// SPDX-License-Identifier: GPL-2.0
/*
 * A virtual disk that lags: requests served in the order the bare disk
 * would have served them (vd-lag.h).
 */
#include "vd-lag.h"

void vd_lag_init(struct vd_lag *l, void *mem, u32 cap)
{
	u32 i;

	memset(l, 0, sizeof(*l));
	vd_vdisk_init(&l->disk);
	l->req = mem;
	l->cap = cap;
	for (i = 0; i < cap; i++)
		l->req[i].next = i + 1 < cap ? i + 1 : VD_LAG_NONE;
	l->free = cap ? 0 : VD_LAG_NONE;
	for (i = 0; i < VD_LAG_STREAMS; i++)
		l->stream[i].head = l->stream[i].tail = VD_LAG_NONE;
}

/* When @st's oldest queued request is eligible. */
static u64 vd_lag_eligible(const struct vd_lag *l, const struct vd_lag_stream *st)
{
	const struct vd_lag_req *q = &l->req[st->head];

	return q->waits && st->done > q->at ? st->done : q->at;
}

/* The stream whose oldest request became eligible first, or NULL; *@at is when. */
static struct vd_lag_stream *vd_lag_next(struct vd_lag *l, u64 *at)
{
	struct vd_lag_stream *st, *best = NULL;
	u64 t;

	for (st = l->stream; st < l->stream + VD_LAG_STREAMS; st++) {
		if (st->head == VD_LAG_NONE)
			continue;
		t = vd_lag_eligible(l, st);
		if (!best || t < *at) {
			best = st;
			*at = t;
		}
	}
	return best;
}

/* Serve @st's oldest request, eligible at @at: it arrives on the disk then. */
static void vd_lag_serve(struct vd_lag *l, const struct vd_model *m,
			 struct vd_lag_stream *st, u64 at)
{
	u32 i = st->head;
	struct vd_lag_req *q = &l->req[i];

	st->done = vd_vdisk_submit(&l->disk, m, (enum vd_dir)q->dir, q->sector, q->sectors,
				   at, 0, 0);
	st->head = q->next;
	if (st->head == VD_LAG_NONE)
		st->tail = VD_LAG_NONE;
	q->next = l->free;
	l->free = i;
	l->queued--;
}

void vd_lag_advance(struct vd_lag *l, const struct vd_model *m, u64 now)
{
	struct vd_lag_stream *st;
	u64 at = 0;

	while ((st = vd_lag_next(l, &at)) && at <= now)
		vd_lag_serve(l, m, st, at);
}

/*
 * @stream's slot: its own, a free one, the idle one that completed longest
 * ago, or (every one busy) one it shares.
 */
static struct vd_lag_stream *vd_lag_stream_get(struct vd_lag *l, u32 stream)
{
	struct vd_lag_stream *st, *idle = NULL;

	for (st = l->stream; st < l->stream + VD_LAG_STREAMS; st++) {
		if (st->used && st->id == stream)
			return st;
		if (st->head == VD_LAG_NONE &&
		    (!idle || (idle->used && (!st->used || st->done < idle->done))))
			idle = st;
	}
	if (!idle)
		return &l->stream[stream % VD_LAG_STREAMS];
	idle->used = true;
	idle->id = stream;
	idle->done = 0;
	return idle;
}

void vd_lag_submit(struct vd_lag *l, const struct vd_model *m, enum vd_dir dir,
		   u64 sector, u32 sectors, u64 now, u32 stream, unsigned int how)
{
	struct vd_lag_stream *st;
	struct vd_lag_req *q;
	u64 at = 0;
	u32 i;

	/* the rest of a request cut above: the bare disk receives it whole */
	if (how & VD_JOINS) {
		st = vd_lag_stream_get(l, stream);
		if (st->tail != VD_LAG_NONE) {
			q = &l->req[st->tail];
			if (q->dir == (u8)dir && q->sector + q->sectors == sector) {
				q->sectors += sectors;
				return;
			}
		}
	}
	vd_lag_advance(l, m, now);
	if (l->free == VD_LAG_NONE) {
		st = vd_lag_next(l, &at);
		if (!st)
			return;		/* no pool at all */
		vd_lag_serve(l, m, st, at);
		l->forced++;
	}
	st = vd_lag_stream_get(l, stream);
	i = l->free;
	q = &l->req[i];
	l->free = q->next;
	q->sector = sector;
	q->sectors = sectors;
	q->at = now;
	q->dir = (u8)dir;
	q->waits = how & VD_WAITS;
	q->next = VD_LAG_NONE;
	if (st->tail == VD_LAG_NONE)
		st->head = i;
	else
		l->req[st->tail].next = i;
	st->tail = i;
	l->queued++;
}
