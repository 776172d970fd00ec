// SPDX-License-Identifier: GPL-2.0
/*
 * The longest time one lock hold spends walking entries for a discard over
 * a 1M-segment cache, before (one walk of every entry) and after (chunks of
 * REDCAP_WALK_CHUNK), the time the vdisk model takes to price a request
 * whose cell is empty on a 1 PiB disk (2^20 columns), which it does on
 * every bio under both locks, and the decision of one read (rc_map_read(),
 * one lock hold) at 1M segments: its worst hold and how many model
 * pricings it makes, per kind of read; and the write cache's holds at 1M
 * segments, the dirty cap full; and an inactive cache giving its 1M
 * segments back and regrowing them.  The portable cores built with -O2
 * on the host.
 * usage: make lockhold && build/bench/lockhold
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "rc-core.h"
#include "vd-model.h"

#define ENTRIES		(1u << 20)
#define CHUNK		1024	/* REDCAP_WALK_CHUNK in redcap-target.c */
#define REPEAT		20

static int cmp_ull(const void *a, const void *b)
{
	unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;

	return x < y ? -1 : x > y;
}

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* A full cache: every entry VALID, half of them in the discarded range. */
static void fill(struct rc_cache *c)
{
	struct rc_read_state st;
	u32 i, idx;

	for (i = 0; i < ENTRIES; i++) {
		if (rc_read(c, &st, (u64)i * 2 << c->seg_shift, 1u << c->seg_shift, &idx) !=
		    RC_READ_FILL)
			abort();
		rc_fill_done(c, idx, 0, 256, false);
		rc_unpin(c, idx);
	}
}

/* The walk of the columns vd_model_estimate() did before the column index. */
static bool walk_estimate(const struct vd_model *m, u32 col, u64 *ns)
{
	u32 d;

	for (d = 0; d < m->cols; d++) {
		if (d <= col && m->t[VD_READ].col_filled[col - d]) {
			*ns = m->t[VD_READ].col_mean_sum[col - d] / m->t[VD_READ].col_filled[col - d];
			return true;
		}
		if (col + d < m->cols && m->t[VD_READ].col_filled[col + d]) {
			*ns = m->t[VD_READ].col_mean_sum[col + d] / m->t[VD_READ].col_filled[col + d];
			return true;
		}
	}
	return false;
}

/* One sample in column 0; a read priced at the far end of a 1 PiB disk. */
static void model_estimate(void)
{
	u64 cap = 1ull << 41, ns, t, walk = 0, idx = 0;
	struct vd_model m;
	void *mem = malloc(vd_model_mem_size(cap, 1, 64));
	int r;

	if (!mem || vd_model_init(&m, mem, cap, 1, 64) ||
	    vd_model_set_cell(&m, VD_READ, 0, 0, 1, 5000000))
		abort();
	for (r = 0; r < REPEAT; r++) {
		t = now_ns();
		if (!walk_estimate(&m, m.cols - 1, &ns))
			abort();
		t = now_ns() - t;
		walk = t > walk ? t : walk;
		t = now_ns();
		if (!vd_model_estimate(&m, VD_READ, cap - 8, 8, &ns))
			abort();
		t = now_ns() - t;
		idx = t > idx ? t : idx;
	}
	printf("vdisk model, %u columns, nearest filled column at the other end:\n", m.cols);
	printf("  walk of the columns (before): worst %.1f us\n", walk / 1e3);
	printf("  column index (now): worst %.1f us\n", idx / 1e3);
	free(mem);
}

/* The read path's pricer: a trained model, both virtual disks, counted. */
struct pricer {
	struct vd_model m;
	struct vd_vdisk vd[2];
	u32 calls;
};

static bool price(void *ctx, enum rc_vd vd, u64 sector, u32 sectors, u64 now, u64 *ns)
{
	struct pricer *p = ctx;
	u64 busy = p->vd[vd].busy_ns;

	p->calls++;
	vd_vdisk_submit(&p->vd[vd], &p->m, VD_READ, sector, sectors, now, 0, 0);
	*ns = p->vd[vd].busy_ns - busy;
	return true;
}

/* Every cell of the read table: a 7200 rpm disk's 8.5 ms seek (or 0.1 ms near) + transfer. */
static void train(struct vd_model *m)
{
	u32 row, col;

	for (row = 0; row < m->rows; row++)
		for (col = 0; col < m->cols; col++)
			if (vd_model_set_cell(m, VD_READ, row, col, 1,
					      (col ? 8500000 : 100000) + (row + 1) * 27000ull))
				abort();
}

#define READS		20000
#define DISK_SECTORS	(1ull << 31)	/* 1 TiB */

/*
 * @name: READS reads made by @next (sector and sectors of read i) through
 * a cache of ENTRIES x 128 KiB on redcapctl's default engine; each fill
 * completes before the next read.  Prints the pricings per read (mean,
 * worst) and the worst hold of rc_map_read().
 */
static void read_path(struct rc_cache *c, void *mem, struct pricer *pr, const char *name,
		      void (*next)(u32 i, u64 *sector, u32 *sectors))
{
	const struct rc_pricer p = { .price = price, .ctx = pr, .capacity = DISK_SECTORS,
				     .run_max = 8 };	/* 256 pages a bio */
	static unsigned long long holds[READS * 16];
	unsigned long long t, calls = 0, worst_calls = 0;
	struct rc_read_plan plan;
	size_t nholds = 0;
	u64 sector, now = 0;
	u32 i, k, sectors;

	rc_cache_init(c, mem, ENTRIES, 8, 0);
	rc_set_policy(c, RC_POLICY_DEFAULT);	/* the rest are rc_cache_init()'s */
	rc_set_estimator(c, RC_EST_VDISK);
	vd_vdisk_init(&pr->vd[0]);
	vd_vdisk_init(&pr->vd[1]);
	for (i = 0; i < READS; i++) {
		next(i, &sector, &sectors);
		while (sectors) {
			now += 1000000;
			pr->calls = 0;
			t = now_ns();
			rc_map_read(c, sector, sectors, now, &p, &plan);
			t = now_ns() - t;
			if (nholds < sizeof(holds) / sizeof(holds[0]))
				holds[nholds++] = t;
			calls += pr->calls;
			worst_calls = pr->calls > worst_calls ? pr->calls : worst_calls;
			for (k = 0; k < plan.nr_fills; k++) {
				if (rc_fill_done(c, plan.fills[k].idx, 0, 256, false) != RC_FILL_SERVE)
					abort();
				rc_fill_waiters_done(c, plan.fills[k].idx, RC_FILL_SERVE,
						     rc_fill_own(&plan.fills[k]), 1);
			}
			if (plan.act == RC_READ_HIT)
				rc_event(c, &(struct rc_event){ .kind = RC_EV_HIT, .idx = plan.idx,
								.sectors = plan.sectors,
								.start = now, .end = now + 1000 });
			else if (plan.act == RC_READ_BYPASS)
				rc_event(c, &(struct rc_event){ .kind = RC_EV_BYPASS,
								.sector = sector,
								.sectors = plan.sectors, .start = now,
								.end = now + 5000000 });
			sector += plan.sectors;
			sectors -= plan.sectors;
		}
	}
	qsort(holds, nholds, sizeof(holds[0]), cmp_ull);
	printf("  %-28s pricings per decision: mean %.2f, worst %llu; hold median %.1f us, "
	       "p99.9 %.1f us, worst %.1f us\n", name, (double)calls / nholds, worst_calls,
	       holds[nholds / 2] / 1e3, holds[nholds * 999 / 1000] / 1e3, holds[nholds - 1] / 1e3);
}

static u64 rnd(u32 i)
{
	u64 x = i * 0x9e3779b97f4a7c15ull;

	x ^= x >> 29;
	return x * 0xbf58476d1ce4e5b9ull;
}

static void random_4k(u32 i, u64 *sector, u32 *sectors)
{
	*sector = rnd(i) % (DISK_SECTORS / 8) * 8;
	*sectors = 8;
}

static void backward_64k(u32 i, u64 *sector, u32 *sectors)
{
	*sector = (u64)(READS - i) * 128;
	*sectors = 128;
}

static void forward_1m(u32 i, u64 *sector, u32 *sectors)
{
	*sector = (u64)i * 2048;
	*sectors = 2048;
}

static void strided_4k(u32 i, u64 *sector, u32 *sectors)
{
	*sector = (u64)i * 24;
	*sectors = 8;
}

static void read_paths(void)
{
	void *mem = malloc(rc_cache_mem_size(ENTRIES));
	struct pricer *pr = malloc(sizeof(*pr));
	void *mmem = malloc(vd_model_mem_size(DISK_SECTORS, 64, 64));
	struct rc_cache c;

	if (!mem || !pr || !mmem || vd_model_init(&pr->m, mmem, DISK_SECTORS, 64, 64))
		abort();
	train(&pr->m);
	printf("one read's decision (rc_map_read()), %u entries x 128 KiB, %u reads each:\n",
	       ENTRIES, READS);
	read_path(&c, mem, pr, "random 4 KiB", random_4k);
	read_path(&c, mem, pr, "backward 64 KiB (TAC)", backward_64k);
	read_path(&c, mem, pr, "forward 1 MiB", forward_1m);
	read_path(&c, mem, pr, "strided 4 KiB / 8 KiB skip", strided_4k);
	free(mmem);
	free(pr);
	free(mem);
}

static void print_holds(const char *name, unsigned long long *holds, size_t n)
{
	qsort(holds, n, sizeof(holds[0]), cmp_ull);
	printf("  %-34s %zu holds: median %.1f us, p99.9 %.1f us, worst %.1f us\n", name, n,
	       holds[n / 2] / 1e3, holds[n * 999 / 1000] / 1e3, holds[n - 1] / 1e3);
}

/*
 * The write cache at 1M segments: random 4 KiB writes over a disk 4 times
 * the cache until the dirty cap (dirty 25 %: 262144 segments dirty), then
 * write-back batches of 32 entries (REDCAP_WB_BATCH) into at most 64
 * requests (REDCAP_WB_REQS) until none is dirty.  The holds: a write's
 * decision with its copy's bookkeeping (two holds in the kernel, timed as
 * one), a batch's choice (rc_wb_take(): the RC_WB_WINDOW oldest scanned),
 * and a request's completion (rc_wb_done() for each of its entries).
 */
static void write_back(void)
{
	void *mem = malloc(rc_cache_mem_size(ENTRIES));
	static unsigned long long writes[ENTRIES], takes[ENTRIES], dones[ENTRIES];
	size_t nw = 0, nt = 0, nd = 0;
	struct rc_wb_item it[32];
	struct rc_wb_req rq[64];
	unsigned long long t;
	struct rc_cache c;
	u32 i, k, j, n, nr, idx;

	if (!mem)
		abort();
	rc_cache_init(&c, mem, ENTRIES, 8, 0);
	rc_set_write_policy(&c, RC_WRITE_BACK);
	for (i = 0; c.nr_dirty < rc_dirty_max(&c); i++) {
		u64 sector = rnd(i) % (4ull * ENTRIES * 32) * 8;

		t = now_ns();
		if (rc_wc_write(&c, sector, 8, false, &idx) != RC_WC_CACHE)
			abort();
		rc_wc_copied(&c, idx, sector, 8, true);
		writes[nw++] = now_ns() - t;
	}
	while (c.nr_dirty) {
		n = 32;
		t = now_ns();
		nr = rc_wb_take(&c, NULL, it, &n, rq, 64, 2048);
		takes[nt++] = now_ns() - t;
		for (k = 0; k < nr; k++) {
			t = now_ns();
			for (j = 0; j < rq[k].nr; j++)
				rc_wb_done(&c, it[rq[k].first + j].idx, rq[k].sector, rq[k].sectors, 0,
					   !j);
			dones[nd++] = now_ns() - t;
		}
	}
	printf("the write cache, %u entries x 128 KiB, %zu writes to the dirty cap (%u):\n",
	       ENTRIES, nw, rc_dirty_max(&c));
	print_holds("a write (rc_wc_write(), copied)", writes, nw);
	print_holds("a batch (rc_wb_take(), 32 of 1024)", takes, nt);
	print_holds("a request done (rc_wb_done())", dones, nd);
	free(mem);
}

/*
 * Memory given back at 1M segments, every one VALID, the cache inactive:
 * the shrinker's holds (rc_give_back(), 16 entries of a walk of at most
 * 256: REDCAP_GIVE_CHUNK, REDCAP_GIVE_WALK), then active again the
 * regrow's two holds a chunk: the walk for 16 bare entries and their
 * rc_regrown() once their pages are had.
 */
static void give_back(void)
{
	void *mem = malloc(rc_cache_mem_size(ENTRIES));
	static unsigned long long gives[ENTRIES / 16 + 1], walks[ENTRIES / 16 + 1],
		installs[ENTRIES / 16 + 1];
	size_t ng = 0, nw = 0, ni = 0;
	unsigned long long t;
	struct rc_cache c;
	u32 out[16], from = 0, i = 0, n, k, walked;

	if (!mem)
		abort();
	rc_cache_init(&c, mem, ENTRIES, 8, 0);
	fill(&c);
	rc_set_policy(&c, RC_POLICY_OFF);
	for (;;) {
		t = now_ns();
		n = rc_give_back(&c, &from, 256, out, 16);
		t = now_ns() - t;
		if (!n)
			break;
		gives[ng++] = t;
	}
	if (c.nr_bare != ENTRIES)
		abort();
	rc_set_policy(&c, RC_POLICY_ALWAYS);
	while (i < ENTRIES) {
		t = now_ns();
		for (n = 0, walked = 0; i < ENTRIES && walked < 256 && n < 16; i++, walked++)
			if (rc_bare(&c, i))
				out[n++] = i;
		walks[nw++] = now_ns() - t;
		t = now_ns();
		for (k = 0; k < n; k++)
			rc_regrown(&c, out[k]);
		installs[ni++] = now_ns() - t;
	}
	if (c.nr_bare)
		abort();
	printf("memory given back and regrown, %u entries x 128 KiB:\n", ENTRIES);
	print_holds("given back (rc_give_back(), 16)", gives, ng);
	print_holds("regrow's walk for 16 bare entries", walks, nw);
	print_holds("regrow's 16 rc_regrown()", installs, ni);
	free(mem);
}

int main(void)
{
	struct rc_cache c;
	void *mem = malloc(rc_cache_mem_size(ENTRIES));
	unsigned long long full_max = 0, chunk_max = 0, t;
	static unsigned long long chunks[REPEAT * (ENTRIES / CHUNK)];
	size_t nchunks = 0;
	int r;

	if (!mem)
		return 1;
	for (r = 0; r < REPEAT; r++) {
		struct rc_range_zero z;
		u32 i = 0;

		rc_cache_init(&c, mem, ENTRIES, 8, 0);
		fill(&c);
		t = now_ns();
		rc_range_start(&c, 0, (u64)ENTRIES << c.seg_shift);
		t = now_ns() - t;
		full_max = t > full_max ? t : full_max;
		rc_range_done(&c, 0, (u64)ENTRIES << c.seg_shift);

		rc_cache_init(&c, mem, ENTRIES, 8, 0);
		fill(&c);
		rc_range_begin(&c, 0, (u64)ENTRIES << c.seg_shift, &z);
		while (i < ENTRIES) {
			t = now_ns();
			i = rc_range_walk(&c, 0, (u64)ENTRIES << c.seg_shift, i, CHUNK);
			t = now_ns() - t;
			chunk_max = t > chunk_max ? t : chunk_max;
			chunks[nchunks++] = t;
		}
		rc_range_done(&c, 0, (u64)ENTRIES << c.seg_shift);
	}
	model_estimate();
	read_paths();
	write_back();
	give_back();
	printf("entries=%u chunk=%u repeats=%d\n", ENTRIES, CHUNK, REPEAT);
	printf("one walk of every entry: worst %.1f us\n", full_max / 1e3);
	qsort(chunks, nchunks, sizeof(chunks[0]), cmp_ull);
	printf("chunked walk: %zu chunks, median %.1f us, p99 %.1f us, worst %.1f us\n",
	       nchunks, chunks[nchunks / 2] / 1e3, chunks[nchunks * 99 / 100] / 1e3,
	       chunk_max / 1e3);
	free(mem);
	return 0;
}
