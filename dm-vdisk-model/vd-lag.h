/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A virtual disk that lags: the bare disk's price of a stream of requests,
 * served in the order the bare disk would have served them (the
 * virtual-disk paper's waiting queue).
 *
 * struct vd_vdisk prices a request when it is submitted, in submission
 * order.  Behind a cache, that is not the bare disk's order: a reader whose
 * reads hit sends them back to back, while on the bare disk it would have
 * waited for each, and the other readers' reads would have gone in
 * between.  Which readers those are depends on reads they have not sent
 * yet (docs/results/2026-12-07-pace-pricing-sim.md), so no price at
 * submission can know it.  This one queues each request and serves it
 * later, on its own clock:
 *
 * - a request that waits (VD_WAITS: its issuer waited for its stream's
 *   last request) is eligible once that one completes here, any other
 *   when it came;
 * - the disk serves the eligible request that became eligible first
 *   (a FIFO drive receives requests in that order): it arrives then on a
 *   struct vd_vdisk, priced at its distance from the ends served before
 *   it (with the model's drive cache when it has one);
 * - it never serves a request that became eligible after the real time
 *   it was last told (vd_lag_advance()): a request still to come may
 *   become eligible sooner, and go first.
 *
 * So it lags the real disk, by as much as the bare disk would have been
 * slower.  Its queue is a pool of @cap requests given at init: when it is
 * full, the earliest eligible request is served at once (counted in
 * ->forced), and the order is the submission order again for it.
 * Streams past VD_LAG_STREAMS share slots (one stream's order then).
 *
 * Locking: none; the caller serialises calls on one struct vd_lag.  No
 * allocation, never sleeps; a call serves at most the requests queued.
 */
#ifndef VD_LAG_H
#define VD_LAG_H

#include "rc-types.h"
#include "vd-model.h"

#define VD_LAG_STREAMS		32
#define VD_LAG_NONE		0xffffffffu
#define VD_LAG_ALL		((u64)-1)	/* vd_lag_advance(): serve everything */

struct vd_lag_req {
	u64 sector;
	u64 at;			/* ns: when it came */
	u32 sectors;
	u32 next;		/* its stream's next, or the free list's */
	u8 dir;			/* enum vd_dir */
	bool waits;		/* VD_WAITS */
};

struct vd_lag_stream {
	u32 id;
	bool used;
	u32 head, tail;		/* its queued requests, oldest first */
	u64 done;		/* ns: its last served request's completion */
};

struct vd_lag {
	struct vd_lag_req *req;	/* the pool, @cap */
	u32 cap;
	u32 free;		/* the free list */
	u32 queued;
	struct vd_lag_stream stream[VD_LAG_STREAMS];
	/*
	 * Where the requests are served, each as it becomes eligible: its
	 * busy_ns, requests and unestimated are this disk's.
	 */
	struct vd_vdisk disk;
	u64 forced;		/* served early: the queue was full */
};

static inline size_t vd_lag_mem_size(u32 cap)
{
	return (size_t)cap * sizeof(struct vd_lag_req);
}

/* An idle virtual disk at sector 0, its queue of @cap > 0 in @mem (vd_lag_mem_size()). */
void vd_lag_init(struct vd_lag *l, void *mem, u32 cap);

/*
 * Queue a request of @stream that came at @now; @how: VD_WAITS, VD_JOINS
 * (vd_vdisk_submit()) or 0.  The rest of a request cut above joins its
 * first part while that is queued; it is served after it anyway.  Serves
 * what it may by @now first.
 */
void vd_lag_submit(struct vd_lag *l, const struct vd_model *m, enum vd_dir dir,
		   u64 sector, u32 sectors, u64 now, u32 stream, unsigned int how);

/* Zeroes the counters; the queue stays. */
static inline void vd_lag_reset_stats(struct vd_lag *l)
{
	vd_vdisk_reset_stats(&l->disk);
	l->forced = 0;
}

/* Serve every queued request eligible by @now (VD_LAG_ALL: all of them). */
void vd_lag_advance(struct vd_lag *l, const struct vd_model *m, u64 now);

#endif
