// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of the virtual disk that lags (dm-vdisk-model/vd-lag.c):
 * the bare disk's order for readers that waited, the real time it may not
 * run ahead of, its bounded queue, its stream slots, and its drive cache.
 */
#include "ctest.h"
#include "vd-lag.h"

#define CAP_400G	781250000ULL
#define MS		1000000ULL
#define US		1000ULL

/* A model whose read column c costs (c + 1) * 100 us: column 0 (no seek) 0.1 ms. */
static struct vd_model *mk_cols(void)
{
	struct vd_model *m = malloc(sizeof(*m));
	void *mem;
	u32 c;

	CHECK(m);
	mem = malloc(vd_model_mem_size(CAP_400G, 4, 4096));
	CHECK(mem);
	CHECK_EQ(vd_model_init(m, mem, CAP_400G, 4, 4096), 0);
	for (c = 0; c < m->cols; c++)
		CHECK_EQ(vd_model_set_cell(m, VD_READ, 0, c, 1, (c + 1) * 100000ULL), 0);
	return m;
}

/* Every column costs 1 ms. */
static struct vd_model *mk_flat(void)
{
	struct vd_model *m = mk_cols();
	u32 c;

	for (c = 0; c < m->cols; c++)
		CHECK_EQ(vd_model_set_cell(m, VD_READ, 0, c, 1, MS), 0);
	return m;
}

static void rm(struct vd_model *m)
{
	free(m->t[0].cells);
	free(m);
}

static struct vd_lag *mk_lag(u32 cap)
{
	struct vd_lag *l = malloc(sizeof(*l));
	void *mem = malloc(vd_lag_mem_size(cap));

	CHECK(l && mem);
	memset(mem, 0xa5, vd_lag_mem_size(cap));
	vd_lag_init(l, mem, cap);
	return l;
}

static void rm_lag(struct vd_lag *l)
{
	free(l->req);
	free(l);
}

/* The completion of @stream's last request served. */
static u64 done_of(const struct vd_lag *l, u32 stream)
{
	u32 i;

	for (i = 0; i < VD_LAG_STREAMS; i++)
		if (l->stream[i].used && l->stream[i].id == stream)
			return l->stream[i].done;
	CHECK(!"no such stream");
	return 0;
}

static void read8(struct vd_lag *l, const struct vd_model *m, u64 sector, u64 now, u32 stream,
		  unsigned int how)
{
	vd_lag_submit(l, m, VD_READ, sector, 8, now, stream, how);
}

/*
 * Reader A's reads came back to back (a cache served them), reader B's
 * after them: on the bare disk A waited for each, and B's went in between.
 */
CTEST(lag_a_waiting_read_lets_the_others_go_first)
{
	struct vd_model *m = mk_flat();
	struct vd_lag *l = mk_lag(16);

	read8(l, m, 0, 0, 7, 0);
	read8(l, m, 8, 1 * US, 7, VD_WAITS);
	read8(l, m, 16, 2 * US, 7, VD_WAITS);
	read8(l, m, 1000000, 3 * US, 8, VD_WAITS);	/* B's first: its own last is none */
	vd_lag_advance(l, m, VD_LAG_ALL);
	CHECK_EQ(done_of(l, 8), 2 * MS);	/* after A's first, before its second */
	CHECK_EQ(done_of(l, 7), 4 * MS);
	CHECK_EQ(l->disk.requests, 4);
	CHECK_EQ(l->disk.busy_ns, 4 * MS);
	CHECK_EQ(l->queued, 0);
	CHECK_EQ(l->forced, 0);

	/* Not waiting (the rest of a cut read, a read-ahead): in the order they came. */
	vd_lag_init(l, l->req, 16);
	read8(l, m, 0, 0, 7, 0);
	read8(l, m, 8, 1 * US, 7, 0);
	read8(l, m, 1000000, 3 * US, 8, 0);
	vd_lag_advance(l, m, VD_LAG_ALL);
	CHECK_EQ(done_of(l, 7), 2 * MS);
	CHECK_EQ(done_of(l, 8), 3 * MS);
	rm_lag(l);
	rm(m);
}

/*
 * It does not serve a request that became eligible after the real time it
 * was told: one still to come may go first, as B's does here.
 */
CTEST(lag_serves_nothing_eligible_after_now)
{
	struct vd_model *m = mk_flat();
	struct vd_lag *l = mk_lag(16);

	read8(l, m, 0, 0, 7, VD_WAITS);
	vd_lag_advance(l, m, 500 * US);
	CHECK_EQ(l->disk.requests, 1);		/* eligible at 0: served, done at 1 ms */
	CHECK_EQ(l->disk.busy_until, 1 * MS);
	read8(l, m, 8, 600 * US, 7, VD_WAITS);	/* eligible at 1 ms */
	read8(l, m, 1000000, 700 * US, 8, 0);	/* eligible at 0.7 ms */
	CHECK_EQ(l->queued, 2);
	vd_lag_advance(l, m, 800 * US);
	CHECK_EQ(l->disk.requests, 2);
	CHECK_EQ(done_of(l, 8), 2 * MS);	/* it went first */
	CHECK_EQ(l->queued, 1);
	vd_lag_advance(l, m, 900 * US);
	CHECK_EQ(l->queued, 1);			/* A's is eligible at 1 ms */
	vd_lag_advance(l, m, 1 * MS);
	CHECK_EQ(l->queued, 0);
	CHECK_EQ(done_of(l, 7), 3 * MS);
	CHECK_EQ(l->disk.busy_ns, 3 * MS);
	rm_lag(l);
	rm(m);
}

/* A full queue serves its earliest eligible request at once. */
CTEST(lag_full_queue_serves_its_earliest_at_once)
{
	struct vd_model *m = mk_flat();
	struct vd_lag *l = mk_lag(2);

	read8(l, m, 0, 0, 7, VD_WAITS);
	read8(l, m, 8, 1 * US, 7, VD_WAITS);	/* the first is served: done at 1 ms */
	CHECK_EQ(l->disk.requests, 1);
	read8(l, m, 16, 2 * US, 7, VD_WAITS);
	CHECK_EQ(l->queued, 2);
	CHECK_EQ(l->forced, 0);
	read8(l, m, 24, 3 * US, 7, VD_WAITS);	/* full: the second goes early */
	CHECK_EQ(l->forced, 1);
	CHECK_EQ(l->disk.requests, 2);
	CHECK_EQ(l->queued, 2);
	vd_lag_advance(l, m, VD_LAG_ALL);
	CHECK_EQ(l->disk.requests, 4);
	CHECK_EQ(l->disk.busy_ns, 4 * MS);
	CHECK_EQ(l->free != VD_LAG_NONE, true);
	rm_lag(l);
	rm(m);
}

/*
 * The head comes from the ends served before, in the disk's order: A's
 * second read, sequential to its first, is a seek back from B's once B's
 * went between.  Idle slots are taken over; with every slot busy, streams
 * share one and nothing is lost.
 */
CTEST(lag_prices_in_its_order_and_shares_slots)
{
	struct vd_model *m = mk_cols();
	struct vd_lag *l = mk_lag(128);
	const u64 b = 1000000;
	u32 k;

	read8(l, m, 0, 0, 7, VD_WAITS);
	read8(l, m, 8, 1 * US, 7, VD_WAITS);
	read8(l, m, b, 2 * US, 8, VD_WAITS);
	vd_lag_advance(l, m, VD_LAG_ALL);
	/* 0 at 0: column 0; B from 8; A's 8 from the nearest end, 8: column 0 */
	CHECK_EQ(l->disk.busy_ns, 100000 + (vd_model_col(m, b - 8) + 1) * 100000ULL + 100000);
	CHECK_EQ(done_of(l, 7), l->disk.busy_until);

	/* each stream's first is served as it comes, its second waits for it */
	vd_lag_init(l, l->req, 128);
	for (k = 1; k <= VD_LAG_STREAMS + 8; k++) {
		read8(l, m, k * 1000, 0, k, VD_WAITS);
		read8(l, m, k * 1000 + 8, 0, k, VD_WAITS);
	}
	CHECK_EQ(l->queued, 2 * (VD_LAG_STREAMS + 8) - l->disk.requests);
	CHECK(l->queued >= VD_LAG_STREAMS);
	vd_lag_advance(l, m, VD_LAG_ALL);
	CHECK_EQ(l->disk.requests, 2 * (VD_LAG_STREAMS + 8));
	CHECK_EQ(l->queued, 0);
	/* idle now: a new stream takes the slot that completed longest ago */
	read8(l, m, 0, 10000 * MS, 1000, VD_WAITS);
	vd_lag_advance(l, m, VD_LAG_ALL);
	CHECK_EQ(l->disk.requests, 2 * (VD_LAG_STREAMS + 8) + 1);
	CHECK_EQ(done_of(l, 1000), 10000 * MS + (vd_model_col(m, -(s64)(40 * 1000 + 16)) + 1) * 100000ULL);
	rm_lag(l);
	rm(m);
}

/*
 * With the model's drive cache: two sequential readers whose reads came
 * back to back.  In the order they came, each reader's second read is in
 * its read-ahead; in the bare disk's, the other reader's read went
 * between, stopped the read-ahead, and it is a seek.
 */
CTEST(lag_with_a_drive_cache_sees_the_read_ahead_stopped)
{
	const struct vd_dcache dc = {
		.nr_segs = 2, .seg_sectors = 64, .ra_sectors = 32, .media_mbps = 512,
	};
	struct vd_model *m = mk_cols();
	struct vd_lag *l = mk_lag(16);
	const u64 b = 1000000;
	u64 fifo, ordered;

	CHECK_EQ(vd_model_set_dcache(m, &dc), 0);
	/* in the order they came: A, A, B, B */
	read8(l, m, 0, 0, 7, 0);
	read8(l, m, 16, 1 * US, 7, 0);
	read8(l, m, b, 2 * US, 8, 0);
	read8(l, m, b + 16, 3 * US, 8, 0);
	vd_lag_advance(l, m, VD_LAG_ALL);
	fifo = l->disk.busy_ns;
	/* in the bare disk's: A, B, A, B */
	vd_lag_init(l, l->req, 16);
	read8(l, m, 0, 0, 7, VD_WAITS);
	read8(l, m, 16, 1 * US, 7, VD_WAITS);
	read8(l, m, b, 2 * US, 8, VD_WAITS);
	read8(l, m, b + 16, 3 * US, 8, VD_WAITS);
	vd_lag_advance(l, m, VD_LAG_ALL);
	ordered = l->disk.busy_ns;
	CHECK(ordered > fifo + 2 * 100000);
	rm_lag(l);
	rm(m);
}

/*
 * The rest of a read cut above the disk joins its first part while that
 * is queued: one request of both sizes, as the bare disk received it.
 * Not one that does not continue it, nor one whose first part is served.
 */
CTEST(lag_the_rest_of_a_cut_read_joins_it)
{
	struct vd_model *m = mk_flat();
	struct vd_lag *l = mk_lag(16);

	CHECK_EQ(vd_model_set_cell(m, VD_READ, 1, 0, 1, 1500 * US), 0);	/* 8 KiB */
	read8(l, m, 0, 0, 7, VD_WAITS);
	read8(l, m, 8, 0, 7, VD_JOINS);
	CHECK_EQ(l->queued, 1);
	vd_lag_advance(l, m, VD_LAG_ALL);
	CHECK_EQ(l->disk.requests, 1);
	CHECK_EQ(l->disk.busy_ns, 1500 * US);
	/* not a continuation: a request of its own, after the first is served */
	read8(l, m, 100, 10 * MS, 7, VD_WAITS);
	read8(l, m, 200, 10 * MS, 7, VD_JOINS);
	CHECK_EQ(l->disk.requests, 2);
	CHECK_EQ(l->queued, 1);
	vd_lag_advance(l, m, VD_LAG_ALL);
	CHECK_EQ(l->disk.requests, 3);
	/* its first part already served: a request of its own */
	read8(l, m, 208, 20 * MS, 7, VD_JOINS);
	CHECK_EQ(l->queued, 1);
	vd_lag_advance(l, m, VD_LAG_ALL);
	CHECK_EQ(l->disk.requests, 4);
	CHECK_EQ(l->disk.busy_ns, 1500 * US + 3 * MS);
	rm_lag(l);
	rm(m);
}
